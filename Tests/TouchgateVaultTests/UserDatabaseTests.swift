import Foundation
import Testing
import TouchgateVault
import TouchgateBasics

@Suite("User database: login names for user ids")
struct UserDatabaseTests {
    @Test("a uid with an entry gets its login name; root is uid 0")
    func knownUsers() throws {
        #expect(UserDatabase.loginName(of: 0) == "root")
        let uid = getuid()
        // getpwuid_r, not getpwuid: other tests running at the same time look users up too,
        // and getpwuid's static entry would change under this one.
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 1 << 16)
        try #require(getpwuid_r(uid, &entry, &buffer, buffer.count, &result) == 0 && result != nil,
                     "this test needs an /etc/passwd entry for uid \(uid)")
        #expect(UserDatabase.loginName(of: UInt32(uid)) == String(cString: entry.pw_name))
    }

    @Test("a uid without an entry is named #<uid>")
    func unknownUser() throws {
        let uid: UInt32 = 3_999_999_999
        try #require(getpwuid(uid_t(uid)) == nil, "uid \(uid) unexpectedly has a password entry")
        #expect(UserDatabase.loginName(of: uid) == "#3999999999")
    }

    @Test("the vault's default owner is the effective user's login name")
    func currentUser() {
        #expect(Vault.currentUser == UserDatabase.loginName(of: UInt32(geteuid())))
    }
}
