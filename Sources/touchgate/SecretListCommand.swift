import ArgumentParser
import Foundation
import TouchgateVault

extension Secret {
    /// `touchgate secret list`: names and policies, never values.
    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List stored secrets: names and policies, never values.",
            discussion: "Works while the vault is locked.")

        @OptionGroup var common: CommonOptions

        func run() async throws {
            try await CommandRunner.run(json: common.json) { console in
                let items = try VaultContext.open().vault.items()
                let text = items.isEmpty ? "no secrets stored" : items.map { item in
                    var line = "\(item.name)  \(item.policy)"
                    if item.freshTouch { line += "  (fresh touch)" }
                    if item.isInvalidated { line += "  (invalidated: fingers changed; store it again)" }
                    return line
                }.joined(separator: "\n")
                console.result([("items", .array(items.map { item in
                    .object([("name", .string(item.name)), ("policy", .string(item.policy)),
                             ("fresh", .bool(item.freshTouch)), ("bound-to-fingers", .bool(item.enrollmentDigest != nil)),
                             ("invalidated", .bool(item.isInvalidated)),
                             ("updated", .string(ISO8601DateFormatter().string(from: item.updatedAt)))])
                }))], text: text)
                return Exit.success
            }
        }
    }

    /// `touchgate secret rm NAME`: deletes an item.
    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "rm",
            abstract: "Delete a stored secret.",
            discussion: "Needs the vault unlocked, not a touch (deleting releases nothing); audited.")

        @OptionGroup var common: CommonOptions

        @Argument(help: "The item's name.")
        var name: String

        func run() async throws {
            let name = self.name
            try await CommandRunner.run(json: common.json) { console in
                let context = try VaultContext.open()
                _ = try context.requireKey()
                guard try context.vault.deleteItem(named: name) else {
                    try context.record(.itemDelete, .error, item: name, reason: "no such item")
                    throw VaultError.itemNotFound(name: name)
                }
                try context.record(.itemDelete, .success, item: name, reason: "deleted by user")
                console.result([("result", "deleted"), ("name", .string(name))], text: "Deleted '\(name)'.")
                return Exit.success
            }
        }
    }
}
