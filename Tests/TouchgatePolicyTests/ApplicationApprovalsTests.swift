import Testing
import TouchgatePolicy

/// A program's approval for an item: for the reuse window, or, with none, for one use.
@Suite("application approvals")
struct ApplicationApprovalsTests {
    static func at(_ seconds: Int64, boot: BootID = "b") -> MonotonicInstant {
        MonotonicInstant(bootID: boot, sinceBoot: .seconds(seconds))
    }

    @Test("with a window: approved within it, never spent, gone after it and across a restart")
    func window() {
        var approvals = ApplicationApprovals()
        approvals.approve(item: "i", executable: "/usr/bin/x", at: Self.at(10), window: .seconds(60), singleUseWithoutWindow: true)
        #expect(approvals.isApproved(item: "i", executable: "/usr/bin/x", at: Self.at(70), window: .seconds(60)))
        let spent1 = approvals.consume(item: "i", executable: "/usr/bin/x", at: Self.at(20))
        #expect(!spent1, "a window's approval is not spent")
        #expect(approvals.isApproved(item: "i", executable: "/usr/bin/x", at: Self.at(20), window: .seconds(60)))
        #expect(!approvals.isApproved(item: "i", executable: "/usr/bin/x", at: Self.at(71), window: .seconds(60)))
        #expect(!approvals.isApproved(item: "i", executable: "/usr/bin/y", at: Self.at(20), window: .seconds(60)))
        #expect(!approvals.isApproved(item: "i", executable: "/usr/bin/x", at: Self.at(20, boot: "c"), window: .seconds(60)))
    }

    @Test("with no window: one use within its lifetime, then none; without the single-use choice, none at all")
    func singleUse() {
        var approvals = ApplicationApprovals()
        approvals.approve(item: "i", executable: "/usr/bin/x", at: Self.at(10), window: .zero, singleUseWithoutWindow: true)
        #expect(approvals.isApproved(item: "i", executable: "/usr/bin/x", at: Self.at(11), window: .zero))
        let spent2 = approvals.consume(item: "i", executable: "/usr/bin/y", at: Self.at(11))
        #expect(!spent2, "another program's")
        let spent3 = approvals.consume(item: "i", executable: "/usr/bin/x", at: Self.at(11))
        #expect(spent3)
        let spent4 = approvals.consume(item: "i", executable: "/usr/bin/x", at: Self.at(11))
        #expect(!spent4, "spent")
        #expect(!approvals.isApproved(item: "i", executable: "/usr/bin/x", at: Self.at(11), window: .zero))

        approvals.approve(item: "i", executable: "/usr/bin/x", at: Self.at(100), window: .zero, singleUseWithoutWindow: true)
        let late = Self.at(100 + Int64(ApplicationApprovals.singleUseLifetime.components.seconds) + 1)
        #expect(!approvals.isApproved(item: "i", executable: "/usr/bin/x", at: late, window: .zero))
        let spent5 = approvals.consume(item: "i", executable: "/usr/bin/x", at: late)
        #expect(!spent5, "past its lifetime")

        approvals.approve(item: "j", executable: "/usr/bin/x", at: Self.at(200), window: .zero)
        let spentJ = approvals.consume(item: "j", executable: "/usr/bin/x", at: Self.at(201))
        #expect(!approvals.isApproved(item: "j", executable: "/usr/bin/x", at: Self.at(201), window: .zero) && !spentJ)
    }
}
