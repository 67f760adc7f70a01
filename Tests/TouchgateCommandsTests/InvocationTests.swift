import Testing
import TouchgateAPI

/// Where the personal store is, one rule for the vault and the clients.
@Suite struct InvocationTests {
    @Test("the personal store: XDG_DATA_HOME when absolute, else HOME's, else the fallback home, else none")
    func personalStoreDirectory() {
        func directory(_ variables: [String: String], home: String?) -> String? {
            Invocation.personalStoreDirectory({ variables[$0] }, home: { home })
        }
        #expect(directory(["XDG_DATA_HOME": "/d", "HOME": "/h"], home: "/p") == "/d/touchgate")
        #expect(directory(["XDG_DATA_HOME": "relative", "HOME": "/h"], home: "/p") == "/h/.local/share/touchgate")
        #expect(directory([:], home: "/p") == "/p/.local/share/touchgate")
        // No home at all names no store (not /.local/share/touchgate).
        #expect(directory([:], home: nil) == nil)
    }
}
