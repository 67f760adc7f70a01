// swift-tools-version:6.0
// Touchgate: fingerprint-gated secrets for Linux. Layers are described in
// docs/ARCHITECTURE.md, whose module table a test keeps equal to this file; dependencies
// point down only.
import PackageDescription

let package = Package(
    name: "Touchgate",
    platforms: [.macOS(.v13)],
    products: [
        .executable(name: "touchgate", targets: ["touchgate"]),
        .executable(name: "touchgate-cli", targets: ["touchgate-cli"]),
        .executable(name: "touchgate-client", targets: ["touchgate-client"]),
        .library(name: "FingerprintKit", targets: ["FingerprintKit"]),
        .library(name: "TouchgatePolicy", targets: ["TouchgatePolicy"]),
        // Doubles for the policy core's ports (a scripted sensor and passphrase, a manual
        // clock, in-memory state and audit), for tests of anything built on it.
        .library(name: "TouchgatePolicyTesting", targets: ["TouchgatePolicyTesting"]),
        .library(name: "TouchgateVault", targets: ["TouchgateVault"]),
        .library(name: "TouchgateAPI", targets: ["TouchgateAPI"]),
        .library(name: "TouchgateService", targets: ["TouchgateService"]),
        .executable(name: "touchgate-collector", targets: ["touchgate-collector"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/swiftlang/swift-subprocess", from: "1.0.2"),
        // Its FilePath and FileDescriptor, which swift-subprocess's API takes.
        .package(url: "https://github.com/apple/swift-system", from: "1.8.1"),
    ],
    targets: [
        // libfprint-2 (and, through its pkg-config file, GLib/GObject/GIO).
        .systemLibrary(
            name: "CFPrint",
            pkgConfig: "libfprint-2",
            providers: [.apt(["libfprint-2-dev", "libglib2.0-dev"])]
        ),
        // libsodium: Argon2id, XChaCha20-Poly1305, BLAKE2b, guarded memory.
        .systemLibrary(
            name: "CSodium",
            pkgConfig: "libsodium",
            providers: [.apt(["libsodium-dev"])]
        ),
        // libpwquality: how strong a new vault passphrase is (the checks passwd and cryptsetup use).
        .systemLibrary(
            name: "CPWQuality",
            pkgConfig: "pwquality",
            providers: [.apt(["libpwquality-dev"])]
        ),
        // Nettle, hogweed and GMP (Debian's maintained libraries, on nearly every system through
        // GnuTLS): what libsodium lacks, ECDSA on P-256 for SSH keys and the Secret Service's
        // session algorithm (1024-bit Diffie-Hellman by mpz_powm_sec, HKDF-SHA256, AES-128-CBC).
        // Before, swift-crypto: every build compiled BoringSSL, and its Foundation import
        // brought ICU's data into every program linking it.
        .systemLibrary(name: "CNettle", pkgConfig: "hogweed", providers: [.apt(["nettle-dev", "libgmp-dev"])]),
        // GIO's D-Bus (GDBusConnection, GVariant): the Secret Service door on the session bus.
        .systemLibrary(name: "CGio", pkgConfig: "gio-2.0", providers: [.apt(["libglib2.0-dev"])]),
        // libpq: the PostgreSQL client library the fleet collection speaks through.
        // libpq, loaded at run time (dlopen) by fleet collection only: linked, it and its
        // twenty libraries cost every `touchgate` command about 4 ms of start-up.
        .target(name: "CPQ", linkerSettings: [.linkedLibrary("dl")]),
        // SQLite (Debian's libsqlite3-0): the store's database, through TouchgateVault's own thin layer.
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        // zlib, for PNG files written by `touchgate capture`.
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        // Only what Swift cannot call directly (variadic prctl, struct ucred).
        .target(name: "CTouchgateSys"),
        // The TPM (tpm2-tss ESYS), loaded at run time (dlopen) only by a vault bound to one:
        // linked, libtss2-esys brings libcrypto into every command's start-up. The C is a
        // trust boundary (sessions, handles, wiping) kept small: see tg_tpm.h.
        .target(name: "CTouchgateTPM", cSettings: [.unsafeFlags(["-Wall", "-Wextra", "-Werror"])],
                linkerSettings: [.linkedLibrary("dl"), .linkedLibrary("pthread")]),
        .target(name: "FingerprintKit", dependencies: ["CFPrint", "TouchgateBasics"]),
        .target(name: "TouchgateImageIO", dependencies: ["CZlib"]),
        .target(name: "TouchgatePolicy"),
        .target(name: "TouchgatePolicyTesting", dependencies: ["TouchgatePolicy"]),
        .target(
            name: "TouchgateVault",
            dependencies: [
                "TouchgatePolicy", "TouchgateBasics", "CSodium", "CTouchgateSys", "CTouchgateTPM", "CSQLite",
            ]
        ),
        // What every layer and the thin `touchgate` front share without Foundation: error codes
        // and exit statuses, events, the rules for shown text, reading a passphrase.
        .target(name: "TouchgateBasics", dependencies: ["CTouchgateSys"]),
        // SHA-256, ECDSA on P-256, HKDF-SHA256 and AES-128-CBC over Nettle, the secret values
        // in secret memory: the few primitives libsodium does not have.
        .target(name: "TouchgateCrypto", dependencies: ["CNettle", "TouchgateBasics"]),
        // Requests, results, events and error codes: what --json renders and the daemon speaks.
        .target(name: "TouchgateAPI", dependencies: ["TouchgateBasics"]),
        // The SSH agent protocol without I/O: the wire format, requests and answers, what a
        // signature is for, Ed25519 key blobs. Pure Swift, fuzzed (fuzz/ssh-agent.swift).
        .target(name: "TouchgateSSH", dependencies: ["TouchgateBasics"]),
        // FIDO2 without I/O: CBOR, CTAPHID framing, CTAP 2.1's requests and answers,
        // authenticator data. Pure Swift, fuzzed (fuzz/ctap.swift).
        .target(name: "TouchgateFIDO"),
        // The shipping use case's port and what the collector shares with it without the
        // service (the collector's package must not need libfprint, GLib or libpwquality).
        .target(name: "TouchgateShipping", dependencies: ["TouchgateVault", "TouchgatePolicy", "TouchgateAPI", "TouchgateBasics", "CSodium"]),
        // Every use case, for an explicit principal; the CLI and the daemon only adapt it.
        .target(
            name: "TouchgateService",
            dependencies: [
                "FingerprintKit", "TouchgatePolicy", "TouchgateVault", "TouchgateAPI", "TouchgateImageIO", "TouchgateSSH",
                "TouchgateShipping", "TouchgateFIDO",
                "CTouchgateSys", "CSodium", "CPWQuality", "TouchgateCrypto", .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Central collection on PostgreSQL (libpq): the shipping port's adapter, the schema, and
        // the collector's verify and query. Only `audit ship` and touchgate-collector use it.
        .target(
            name: "TouchgateFleet",
            dependencies: ["CPQ", "TouchgateShipping", "TouchgateVault", "TouchgatePolicy", "TouchgateAPI", "TouchgateBasics"]
        ),
        // Both ends of the daemon's socket: listening, connecting, peer credentials, framing.
        .target(name: "TouchgateSocket", dependencies: ["TouchgateAPI", "TouchgateBasics", "CTouchgateSys"]),
        // touchgated's request handling: the socket protocol over TouchgateService (no use case lives here).
        .target(
            name: "TouchgateDaemon",
            dependencies: ["FingerprintKit", "TouchgateBasics", "TouchgatePolicy", "TouchgateService", "TouchgateSocket",
                           "TouchgateAPI", "TouchgateVault", "TouchgateShipping", .product(name: "Logging", package: "swift-log")]
        ),
        // The Secret Service (org.freedesktop.secrets) on the user's session bus, over
        // `any TouchgateRequests`: touchgate agent's door for the desktop's keyring clients.
        .target(
            name: "TouchgateSecretService",
            dependencies: [
                "TouchgateAPI", "TouchgateBasics", "TouchgatePolicy", "CGio", "CNettle", "TouchgateCrypto",
            ]
        ),
        // The CLI's side of the daemon: the same requests, sent over the socket.
        .target(name: "TouchgateClient", dependencies: ["TouchgateSocket", "TouchgateAPI"]),
        .executableTarget(
            name: "touchgated",
            dependencies: ["TouchgatedCommand"]
        ),
        // touchgated's command line: options, the socket and state directory, signals, logging.
        // A library, so that the one installed program (touchgate-cli) runs it as touchgated too.
        .target(
            name: "TouchgatedCommand",
            dependencies: [
                "TouchgateBasics", "TouchgateDaemon", "TouchgateService", "TouchgateSocket", "TouchgateFleet", "TouchgateShipping",
                "TouchgatePasskeys", "TouchgateAPI",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // `touchgate`, the command people run: a small front without Foundation or libfprint,
        // linked fully statically, that starts in about a millisecond. It speaks to touchgated
        // itself for the per-touch requests (`verify`, `secret get`) and execs `touchgate-cli`
        // for everything else and for the personal (in-process) mode (docs/PROTOCOL.md, "Clients").
        // Static glibc makes the linker warn that the Swift runtime's optional dlopen of
        // prespecialized metadata cannot load libraries; it falls back to the runtime's own.
        .executableTarget(
            name: "touchgate",
            dependencies: ["TouchgateTerminal", "TouchgateAPI", "CTouchgateSys"],
            // FoundationEssentials' static library needs its own parts beside it, which the
            // driver names only for -static-stdlib: listed here, in one group.
            linkerSettings: [.unsafeFlags([
                "-static-executable", "-Xlinker", "--start-group", "-Xlinker", "-lFoundationEssentials",
                "-Xlinker", "-l_FoundationCollections", "-Xlinker", "-l_FoundationCShims",
                "-Xlinker", "-lswiftSynchronization", "-Xlinker", "--end-group",
            ])]
        ),
        // The terminal side of a command, with nothing heavier than FoundationEssentials: the
        // console, passphrases and questions at the terminal, Ctrl-C, and what `status`,
        // `secret list`, `verify` and `secret get` print; shared by the commands and the front.
        .target(name: "TouchgateTerminal", dependencies: ["TouchgateAPI"]),
        // A door: the SSH agent protocol on touchgate agent's socket, over the service as each
        // client's Caller reaches it (the contract and the caller alone).
        .target(name: "TouchgateSSHAgent", dependencies: ["TouchgateAPI", "TouchgateSSH", "TouchgateSocket", "TouchgateTerminal"]),
        // A door: the passkey authenticator (CTAP 2.1 over CTAPHID) on /dev/uhid or a socket,
        // over the service as the device's Caller reaches it; PIN/UV auth protocol 2's
        // crypto from TouchgateCrypto.
        .target(name: "TouchgatePasskeys", dependencies: [
            "TouchgateFIDO", "TouchgateAPI", "TouchgateCrypto", "TouchgateBasics", "TouchgateSocket",
        ]),
        // The helpers' doors: what askpass, pinentry (gpg-agent's Assuan) and git's credential
        // protocol ask, turned into requests for the program the helper acts for.
        .target(
            name: "TouchgateHelpers",
            dependencies: [
                "TouchgateAPI", "TouchgateTerminal",
                .product(name: "Subprocess", package: "swift-subprocess"),
                .product(name: "SystemPackage", package: "swift-system"),
            ]
        ),
        // Every command: arguments, rendering and the terminal, over `any TouchgateRequests`.
        // Nothing here links the service: what only a process holding the store can do is
        // asked of the `CommandHost` the executable passes in.
        .target(
            name: "TouchgateCommands",
            dependencies: [
                "TouchgateAPI", "TouchgateTerminal", "TouchgateClient", "TouchgatePolicy", "TouchgateSSH", "TouchgateSocket",
                "TouchgateSSHAgent", "TouchgateHelpers", "TouchgatePasskeys", "CTouchgateSys",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Subprocess", package: "swift-subprocess"),
                .product(name: "SystemPackage", package: "swift-system"),
            ]
        ),
        // Every command, in either mode, the personal mode in-process: what `touchgate` execs
        // when touchgated does not serve.
        .executableTarget(
            name: "touchgate-cli",
            dependencies: ["TouchgateCommands", "TouchgateService", "TouchgateVault", "TouchgateAPI", "TouchgateFleet", "TouchgateShipping",
                           "TouchgateDaemon", "TouchgateSocket", "TouchgateSecretService", "TouchgatedCommand", "TouchgateBasics",
                           .product(name: "Logging", package: "swift-log")]
        ),
        // Every command through touchgated, without the service: what `touchgate` execs when
        // the daemon serves.
        .executableTarget(name: "touchgate-client", dependencies: ["TouchgateCommands"]),
        // The fleet's central verifier and query tool, run by an auditor against the database.
        .executableTarget(
            name: "touchgate-collector",
            dependencies: [
                "TouchgateFleet", "TouchgateShipping", "TouchgateVault", "TouchgateAPI", "TouchgateBasics",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // Fixtures, the virtual-reader clients and process helpers shared by the tests.
        .target(name: "TouchgateTestSupport", dependencies: [
            "TouchgateImageIO",
            .product(name: "Subprocess", package: "swift-subprocess"),
            .product(name: "SystemPackage", package: "swift-system"),
        ], path: "Tests/TestSupport"),
        // Runs the fpcmoc recording's exact call sequence; FingerprintKitTests runs it under umockdev-run.
        .executableTarget(name: "fpcmoc-lifecycle", dependencies: ["FingerprintKit"], path: "Tests/ReplayPrograms/fpcmoc-lifecycle"),
        // Development tool: plays the finger on the virtual reader for the quick start and benchmarks.
        .executableTarget(name: "virtual-finger", dependencies: ["TouchgateTestSupport"], path: "Tools/virtual-finger"),
        // Benchmark helper for bench/run.sh: print galleries, audit logs, Argon2id and fsync timings.
        .executableTarget(
            name: "touchgate-bench",
            dependencies: ["TouchgateVault", "CSodium"],
            path: "bench/Sources/touchgate-bench"
        ),
        .testTarget(
            name: "FingerprintKitTests",
            dependencies: ["CFPrint", "FingerprintKit", "TouchgateImageIO", "TouchgateTestSupport", "fpcmoc-lifecycle"]
        ),
        .testTarget(name: "TouchgatePolicyTests", dependencies: ["TouchgatePolicy", "TouchgatePolicyTesting", .product(name: "Subprocess", package: "swift-subprocess"), .product(name: "SystemPackage", package: "swift-system")]),
        .testTarget(name: "TouchgateVaultTests", dependencies: ["TouchgateVault", "TouchgateBasics", "TouchgatePolicy", "CSodium", "CTouchgateSys", "TouchgateTestSupport", .product(name: "Subprocess", package: "swift-subprocess"), .product(name: "SystemPackage", package: "swift-system")]),
        .testTarget(name: "TouchgateServiceTests", dependencies: ["TouchgateService", "TouchgateShipping", "TouchgateBasics", "TouchgateAPI", "TouchgateSSH", "TouchgateVault", "TouchgateCrypto", "FingerprintKit", .product(name: "Logging", package: "swift-log"), "TouchgatePolicy", "TouchgatePolicyTesting", "TouchgateTerminal", .product(name: "Subprocess", package: "swift-subprocess")]),
        .testTarget(
            name: "TouchgateCLITests",
            dependencies: ["touchgate-cli", "touchgate-client", "touchgated", "touchgate-collector", "virtual-finger", "TouchgateImageIO",
                           "TouchgatePolicy", "TouchgateVault", "TouchgateShipping", "TouchgateTestSupport", "TouchgateSocket", "TouchgateAPI",
                           "TouchgateDaemon"],
            // The Python clients the Secret Service tests run, read from the source tree.
            exclude: ["SecretServiceClients", "MCPClients", "PasskeyClients"]
        ),
        .testTarget(name: "TouchgateCommandsTests", dependencies: [
            "TouchgateCommands", "TouchgateHelpers", "TouchgateTerminal", "TouchgateAPI", "TouchgateTestSupport",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ]),
        .testTarget(name: "TouchgateFIDOTests", dependencies: ["TouchgateFIDO", "TouchgateCrypto", "TouchgateBasics"]),
        .testTarget(name: "UdevTests", dependencies: [.product(name: "Subprocess", package: "swift-subprocess"), .product(name: "SystemPackage", package: "swift-system")]),
    ]
)

// Layers the compiler keeps: an existential is spelled `any`; a member is usable only
// where its module is imported (so every file, and every target in the list above,
// says what it uses; ArchitectureTests checks the targets' imports against this file); and
// an import is internal unless it says `public import`, so a module's public interface
// shows only the modules it means to expose (SQLite, libfprint and libsodium stay inside).
for target in package.targets where target.type != .system {
    target.swiftSettings = (target.swiftSettings ?? []) + [
        .enableUpcomingFeature("ExistentialAny"),
        .enableUpcomingFeature("MemberImportVisibility"),
        .enableUpcomingFeature("InternalImportsByDefault"),
    ]
}
