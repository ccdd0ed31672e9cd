// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "ivy",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "ivy", targets: ["IvyCLI"]),
        .executable(name: "ivy-emulator", targets: ["IvyEmulator"]),
        .executable(name: "ivy-soak", targets: ["IvySoak"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/x-sheep/swift-property-based", from: "2.0.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        // The emulator's server is Hummingbird's core on NIO, run as a ServiceLifecycle
        // `Service`: it names those packages' types itself.
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.3"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        // MD5 from a maintained library, for ivy (IvySystem) and for the emulator, which calls it
        // directly and never through ivy's code.
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
        // Child processes (the tests', ivy-soak's and `ivy-emulator --background`'s) are started,
        // read, signalled and reaped by swift-subprocess; its descriptors and paths are
        // swift-system's `FileDescriptor` and `FilePath`.
        .package(url: "https://github.com/swiftlang/swift-subprocess", from: "1.0.2"),
        .package(url: "https://github.com/apple/swift-system", from: "1.5.0"),
        // Zip archives, for `ivy export` and `ivy import`: a format every system opens.
        .package(url: "https://github.com/weichsel/ZIPFoundation", from: "0.9.20"),
        // ivy's only HTTP stack: HTTP/1.1 and HTTP/2 (by ALPN) over swift-nio-ssl's TLS, streamed
        // bodies, task cancellation, a CONNECT proxy. It replaced URLSession (libcurl) in issue 49.
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-nio-http2", from: "1.46.0"),
        // The emulator's certificate authority, made for each run: X.509 from swift-certificates.
        .package(url: "https://github.com/apple/swift-certificates", from: "1.21.1"),
        // An IP address in a certificate's subject alternative names is an ASN.1 octet string.
        .package(url: "https://github.com/apple/swift-asn1", from: "1.7.4"),
    ],
    targets: [
        // Pure: models, ids, time parsing, settings rules, paths. No I/O, no GRDB, no networking.
        .target(name: "IvyCore"),
        // The file system, the same way everywhere: private directories and files, the lock
        // file, the log file, file md5 and size; the threads blocking work runs on. Depends on no ivy module.
        .target(name: "IvySystem", dependencies: [.product(name: "Crypto", package: "swift-crypto")]),
        // Zip archives written whole or not at all, and read with every claimed size checked: the
        // only ZIPFoundation importer, for `ivy export`, `ivy import` and `ivy check --archive`.
        // Only IvyCommands imports it: ZIPFoundation imports CoreFoundation, whose `stat` then
        // hides Glibc's from every file of a module that loads it.
        .target(
            name: "IvyZip",
            dependencies: ["IvyCore", "IvySystem", .product(name: "ZIPFoundation", package: "ZIPFoundation")]
        ),
        // The only GRDB importer: library.db, migrations, change-capture triggers, audio files.
        .target(
            name: "IvyStore",
            dependencies: [
                "IvyCore",
                "IvySystem",
                .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        // HTTP over AsyncHTTPClient, Google's OAuth device flow, the token file and refresher, Drive v3.
        .target(
            name: "IvyGoogle",
            dependencies: [
                "IvyCore", "IvySystem",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        // The sync engine: lock, gate, list, plan, execute, record, report.
        .target(
            name: "IvySync",
            dependencies: [
                "IvyCore", "IvySystem", "IvyStore", "IvyGoogle", .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The commands of `ivy`, run on an injected context: the only ArgumentParser importer
        // besides the executables.
        .target(
            name: "IvyCommands",
            dependencies: [
                "IvyCore",
                "IvySystem",
                "IvyStore",
                "IvyGoogle",
                "IvySync",
                "IvyZip",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The slot in the binary's read-only data that scripts/package writes a release's stamp into.
        .target(name: "IvyStamp"),
        // glibc's malloc settings Swift's Glibc module leaves out (the cap on its arenas).
        .target(name: "IvyMemory"),
        // The `ivy` executable: builds the context from the process and runs IvyCommands on it.
        .executableTarget(
            name: "IvyCLI", dependencies: ["IvyCore", "IvyCommands", "IvyMemory", "IvyStamp", "IvySystem"]),
        // A loopback fake of Google's OAuth device flow and Drive v3, for tests, benchmarks
        // and trying ivy without a Google account.
        .target(
            name: "GoogleEmulator",
            dependencies: [
                "IvySystem",
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "HummingbirdHTTP2", package: "hummingbird"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .executableTarget(
            name: "IvyEmulator",
            dependencies: [
                "GoogleEmulator",
                "IvyCore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Subprocess", package: "swift-subprocess"),
                .product(name: "SystemPackage", package: "swift-system"),
            ]
        ),
        // ivy's programs run as child processes, always killed at the end; where the build put
        // them; `ivy login` approved as a person approves it. For the tests and ivy-soak.
        .target(
            name: "IvyProcesses",
            dependencies: [
                "IvySystem",
                "GoogleEmulator",
                .product(name: "Subprocess", package: "swift-subprocess"),
                .product(name: "SystemPackage", package: "swift-system"),
            ]
        ),
        // The convergence soak: three `ivy` installs and a stand-in for the phone app editing
        // one Drive under faults and kills. Depends on IvyCLI so `ivy` is built beside it.
        .executableTarget(
            name: "IvySoak",
            dependencies: [
                "GoogleEmulator",
                "IvyProcesses",
                "IvyCLI",
                "IvyCore",
                "IvySystem",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                // To forget a device's Google time, as a reboot does, and to read how sure it is.
                .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        // What every test target shares: temporary homes, test clocks, the emulator started and
        // always stopped, the pool watchdog; it re-exports IvyProcesses (child processes, built
        // programs, signing in as a person does).
        .target(
            name: "IvyTestSupport",
            dependencies: [
                "IvyCore", "IvyGoogle", "IvyStore", "IvySync", "IvySystem", "GoogleEmulator", "IvyProcesses",
                // A CONNECT proxy and a server that never answers, for the transport's tests.
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            path: "Tests/IvyTestSupport"
        ),
        .testTarget(
            name: "GoogleEmulatorTests",
            dependencies: [
                "GoogleEmulator", "IvyCore", "IvySystem", "IvyTestSupport",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        .testTarget(
            name: "IvyGoogleTests",
            dependencies: ["IvyGoogle", "IvyCore", "IvySystem", "GoogleEmulator", "IvyTestSupport"]
        ),
        .testTarget(
            name: "IvySyncTests",
            dependencies: [
                "IvySync", "IvyGoogle", "IvyStore", "IvyCore", "IvySystem", "GoogleEmulator", "IvyTestSupport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        .testTarget(
            name: "IvyCoreTests",
            dependencies: [
                "IvyCore",
                .product(name: "PropertyBased", package: "swift-property-based"),
            ]
        ),
        .testTarget(
            name: "IvyStoreTests",
            dependencies: [
                "IvyCore", "IvyStore", "IvySystem", "IvyTestSupport",
                .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        .testTarget(name: "IvySystemTests", dependencies: ["IvySystem"]),
        .testTarget(name: "IvyProcessesTests", dependencies: ["IvyProcesses", "IvyTestSupport"]),
        // Runs a short `ivy-soak`; depends on both executables so they are built first.
        .testTarget(name: "IvySoakTests", dependencies: ["IvySoak", "IvyCLI", "IvySystem", "IvyTestSupport"]),
        // Runs ivy's commands in-process on a test context, and the built `ivy` binary (built
        // first, as IvyCLI is a dependency) for what only a process shows.
        .testTarget(
            name: "IvyCLITests",
            dependencies: [
                "IvyCLI",
                // Built first too: the emulator walkthrough tests run its binary.
                "IvyEmulator",
                "IvyCommands",
                "IvyCore",
                "IvyGoogle",
                // Its migrations, to make a library as an older ivy left it.
                "IvyStore",
                "IvySystem",
                "GoogleEmulator",
                "IvyProcesses",
                "IvyTestSupport",
                // To damage an archive `ivy export` wrote, entry by entry.
                "IvyZip",
                .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
    ]
)

// A future language mode's rules now, in every target: `any` spelled out for existentials,
// and a member usable only in a file that imports the module declaring it.
let upcomingFeatures: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]
// IvyStamp and IvyMemory are C: no Swift settings.
for target in package.targets where !["IvyStamp", "IvyMemory"].contains(target.name) {
    target.swiftSettings = (target.swiftSettings ?? []) + upcomingFeatures
}
