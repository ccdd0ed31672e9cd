import Foundation
import GRDB
import GoogleEmulator
import IvyTestSupport
import Testing

/// The mode bits of a file, or nil when it does not exist.
func mode(_ path: String) -> Int? {
    (try? FileManager.default.attributesOfItem(atPath: path))?[.posixPermissions] as? Int
}

/// Every file under `directory` with its bytes, to show that nothing changed.
func contents(of directory: String) throws -> [String: Data] {
    var result: [String: Data] = [:]
    let names = FileManager.default.enumerator(atPath: directory)?.allObjects as? [String] ?? []
    for name in names {
        var isDirectory: ObjCBool = false
        let path = directory + "/" + name
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue else {
            continue
        }
        result[name] = FileManager.default.contents(atPath: path) ?? Data()
    }
    return result
}

/// Runs `ivy` under a permissive umask, as a shell with `umask 002` would.
let looseUmask = ["/bin/sh", "-c", #"umask 002; exec "$0" "$@""#]

@Suite("Private files and directories")
struct PrivateFileTests {
    let ivy: IvyHome
    init() throws { ivy = try IvyHome() }

    @Test("under umask 002 library.db is created 0600, and its -wal and -shm get the same mode")
    func databaseModes() async throws {
        let added = try await ivy.runBinaryAsync(["book", "add", "--title", "Dune"], through: looseUmask)
        #expect(added.status == 0, "\(added.stderr)")
        let database = ivy.home + "/library.db"
        #expect(mode(database) == 0o600)

        // An older ivy left it readable by others; a connection held open here keeps the
        // -wal and -shm files in place while ivy writes.
        chmod(database, 0o644)
        let other = try DatabaseQueue(path: database)
        try await other.read { db in _ = try Int.fetchOne(db, sql: "SELECT count(*) FROM books") }
        #expect(mode(database + "-shm") == 0o644)
        let again = try await ivy.runBinaryAsync(["book", "add", "--title", "Emma"], through: looseUmask)
        #expect(again.status == 0, "\(again.stderr)")
        for file in [database, database + "-wal", database + "-shm"] {
            #expect(mode(file) == 0o600, "\(file)")
        }
        try other.close()
    }

    @Test("the lock and the log are 0600 under umask 002, and an older loose one is tightened")
    func lockAndLogModes() async throws {
        try FileManager.default.createDirectory(atPath: ivy.home, withIntermediateDirectories: true)
        chmod(ivy.home, 0o700)
        for name in ["ivy.lock", "ivy.log"] {
            _ = FileManager.default.createFile(atPath: ivy.home + "/" + name, contents: Data())
            chmod(ivy.home + "/" + name, 0o644)
        }
        let sync = try await ivy.runBinaryAsync(["sync"], through: looseUmask)
        #expect(sync.status == 3, "not signed in: \(sync.stderr)")
        #expect(mode(ivy.home + "/ivy.lock") == 0o600)
        #expect(mode(ivy.home + "/ivy.log") == 0o600)
    }

    /// A signed-in home whose Drive cannot be reached, so a sync gets as far as logging.
    func signedInUnreachable() async throws {
        try FileManager.default.createDirectory(atPath: ivy.home, withIntermediateDirectories: true)
        chmod(ivy.home, 0o700)
        let token: [String: Any] = [
            "access_token": "access", "refresh_token": "refresh", "expires_at": 4_000_000_000_000,
            "client_id": "client", "email": "alice@example.com", "permission_id": "p1",
        ]
        let tokenFile = ivy.home + "/token.json"
        try JSONSerialization.data(withJSONObject: token).write(to: URL(fileURLWithPath: tokenFile))
        chmod(tokenFile, 0o600)
        ivy.environment.merge([
            "IVY_OAUTH_URL": "http://127.0.0.1:9", "IVY_DRIVE_URL": "http://127.0.0.1:9",
            "IVY_CLIENT_ID": "client", "IVY_CLIENT_SECRET": "secret",
        ]) { $1 }
    }

    @Test(
        "a symbolic link planted at the lock or the log is refused with a clear error; its target is untouched",
        arguments: ["ivy.lock", "ivy.log"])
    func plantedLinks(name: String) async throws {
        try await signedInUnreachable()
        let target = ivy.path + "/precious.txt"
        let precious = Data("precious, not ivy's\n".utf8)
        _ = FileManager.default.createFile(atPath: target, contents: precious)
        try FileManager.default.createSymbolicLink(atPath: ivy.home + "/" + name, withDestinationPath: target)

        let result = try await ivy.run("sync")
        #expect(result.status == 1)
        #expect(
            result.stderr.contains(ivy.home + "/" + name) && result.stderr.contains("symbolic link"), "\(result.stderr)"
        )
        #expect(FileManager.default.contents(atPath: target) == precious)
        let logout = try await ivy.run("logout")
        if name == "ivy.lock" {
            #expect(logout.status == 1 && logout.stderr.contains("symbolic link"), "\(logout.stderr)")
        }
        #expect(FileManager.default.contents(atPath: target) == precious)
    }

    @Test(
        "a home others can write to, or that belongs to another user, is refused with the fix",
        arguments: [
            (0o770, -1, "its group can write to it"), (0o707, -1, "every user can write to it"),
            (0o700, 65534, "belongs to another user"),
        ])
    func unsafeHome(permissions: Int, owner: Int, message: String) async throws {
        _ = try await ivy.id("book", "add", "--title", "Dune")
        let before = try contents(of: ivy.home)
        chmod(ivy.home, mode_t(permissions))
        if owner >= 0 { chown(ivy.home, uid_t(owner), gid_t(owner)) }
        defer {
            chown(ivy.home, getuid(), getgid())
            chmod(ivy.home, 0o700)
        }
        for arguments in [["book", "list"], ["book", "add", "--title", "Emma"], ["status"], ["sync"]] {
            let result = try await ivy.run(arguments)
            #expect(result.status == 1, "\(arguments)")
            #expect(result.stderr.contains(message) && result.stderr.contains(ivy.home), "\(result.stderr)")
            #expect(result.stderr.contains("chmod 700 \(ivy.home)"), "\(result.stderr)")
        }
        #expect(try contents(of: ivy.home) == before)
    }

    @Test(
        "a home inside a directory that does not let the user in is refused with that reason, not 'cannot create'",
        .enabled(if: OpeningTests.readOnlyRunner != nil, "needs setpriv to drop root"))
    func unreachableHome() async throws {
        let runner = try #require(OpeningTests.readOnlyRunner)
        let closed = ivy.path + "/closed"
        try FileManager.default.createDirectory(atPath: closed + "/home", withIntermediateDirectories: true)
        // As root, permission bits do not bind: ivy runs as nobody, whom ivy.path may shut out
        // before `closed` does; either is the directory named.
        chmod(closed, 0o000)
        defer { chmod(closed, 0o700) }
        for arguments in [["book", "list"], ["book", "add", "--title", "Emma"], ["status"], ["sync", "--auto"]] {
            let result = try await ivy.runBinaryAsync(
                arguments, environment: ["IVY_HOME": closed + "/home"], through: runner)
            #expect(result.status == 1, "\(arguments)")
            #expect(
                result.stderr.contains("ivy cannot reach \(closed)/home: it is inside ")
                    && result.stderr.contains(
                        ", which does not let you in (mode ")
                    && result.stderr.hasSuffix(
                        "use a home of your own with --home or IVY_HOME\n"),
                "\(arguments): \(result.stderr)")
        }
        chmod(closed, 0o700)
        #expect(try FileManager.default.contentsOfDirectory(atPath: closed + "/home").isEmpty)
    }

    @Test("the XDG directories ivy uses are held to the same rule")
    func unsafeXDG() async throws {
        ivy.environment["IVY_HOME"] = nil
        ivy.environment["XDG_STATE_HOME"] = ivy.path + "/state"
        _ = try await ivy.id("book", "add", "--title", "Dune")
        try FileManager.default.createDirectory(atPath: ivy.path + "/state/ivy", withIntermediateDirectories: true)
        chmod(ivy.path + "/state/ivy", 0o777)
        let result = try await ivy.run("book", "list")
        #expect(result.status == 1)
        #expect(result.stderr.contains("chmod 700 \(ivy.path)/state/ivy"), "\(result.stderr)")
        chmod(ivy.path + "/state/ivy", 0o700)
        #expect(try await ivy.run("book", "list").status == 0)
    }
}

@Suite("Opening the library")
struct OpeningTests {
    let ivy: IvyHome
    init() throws { ivy = try IvyHome() }

    static let readCommands: [[String]] = [
        ["book", "list"], ["book", "list", "--json"], ["clip", "list"], ["status"], ["status", "--json"], ["queue"],
        ["config", "list"], ["config", "get", "concurrency"],
    ]

    @Test("commands that only read create nothing; a missing library reads as empty")
    func readersCreateNothing() async throws {
        for arguments in Self.readCommands {
            let result = try await ivy.run(arguments)
            #expect(result.status == 0, "\(arguments): \(result.stderr)")
        }
        #expect(try await ivy.run("config", "get", "concurrency").stdout == "8\n")
        #expect(try await ivy.run("book", "list", "--json").stdout == "[\n\n]\n")
        #expect(!FileManager.default.fileExists(atPath: ivy.home))
    }

    /// How to run ivy so that the home is really read-only for it: as root, permission bits do
    /// not bind, so ivy runs as `nobody` (who then owns the home) through setpriv.
    static let readOnlyRunner: [String]? = {
        guard geteuid() == 0 else { return [] }
        let setpriv = "/usr/bin/setpriv"
        guard FileManager.default.isExecutableFile(atPath: setpriv) else { return nil }
        return [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"]
    }()

    @Test(
        "commands that only read work on a read-only library in a read-only directory, and change nothing",
        .enabled(if: readOnlyRunner != nil, "needs setpriv to drop root"))
    func readOnlyHome() async throws {
        let runner = try #require(Self.readOnlyRunner)
        let book = try await ivy.id("book", "add", "--title", "Dune", "--position", "61")
        let clip = try await ivy.id(
            "clip", "add", "--book", book, "--start", "1", "--duration", "2", "--audio", try ivy.mp3("a.mp3"))
        _ = try await ivy.id("config", "set", "concurrency", "4")
        let owner: (uid_t, gid_t) = runner.isEmpty ? (getuid(), getgid()) : (65534, 65534)
        for path in [ivy.home, ivy.home + "/library.db", ivy.home + "/audio", ivy.home + "/audio/\(clip).mp3"] {
            chown(path, owner.0, owner.1)
        }
        chmod(ivy.home + "/library.db", 0o400)
        chmod(ivy.home + "/audio", 0o500)
        chmod(ivy.home, 0o500)
        defer {
            chmod(ivy.home, 0o700)
            chmod(ivy.home + "/audio", 0o700)
        }
        let before = try contents(of: ivy.home)

        let expectations: [([String], String)] = [
            (["book", "list"], "Dune"), (["book", "show", book], "0:01:01"), (["clip", "list", "--full-ids"], clip),
            (["clip", "show", clip], "0:00:02"), (["status"], "pending"), (["queue"], "upsert"),
            (["config", "list"], "concurrency"), (["config", "get", "concurrency"], "4"),
            (["history", book], "created"), (["history", "--conflicts"], "No conflicts recorded."),
        ]
        for (arguments, expected) in expectations {
            let result = try await ivy.runBinaryAsync(arguments, through: runner)
            #expect(result.status == 0 && result.stdout.contains(expected), "\(arguments): \(result.stderr)")
        }
        let write = try await ivy.runBinaryAsync(["book", "add", "--title", "Emma"], through: runner)
        #expect(write.status == 1 && write.stderr.contains("library.db"), "\(write.stderr)")
        #expect(try contents(of: ivy.home) == before)
    }

    @Test("commands that only read answer at once while another program holds a write transaction")
    func readersDoNotWait() async throws {
        let book = try await ivy.id("book", "add", "--title", "Dune")
        var configuration = Configuration()
        configuration.allowsUnsafeTransactions = true
        let writer = try DatabaseQueue(path: ivy.home + "/library.db", configuration: configuration)
        try await writer.writeWithoutTransaction { db in
            try db.execute(sql: "BEGIN IMMEDIATE")
            try db.execute(
                sql: "INSERT INTO books (id, title, created_at, updated_at) VALUES ('abc', 'Uncommitted', 1, 1)")
        }
        for arguments in Self.readCommands + [["book", "show", book]] {
            // The writer holds its transaction until the end of the test, so a reader that
            // waited for it would wait out the 10-second busy timeout and fail: its success is
            // the proof, with no clock in the assertion.
            let result = try await ivy.run(arguments)
            #expect(result.status == 0, "\(arguments): \(result.stderr)")
            #expect(!result.stdout.contains("Uncommitted"))
        }
        #expect(try await ivy.run("book", "list").stdout.contains("Dune"))
        try await writer.writeWithoutTransaction { db in try db.execute(sql: "ROLLBACK") }
        try writer.close()
    }

    @Test(
        "an SQLite database that is not an ivy library is refused, named, and left byte for byte as it was",
        arguments: ["delete", "wal"])
    func foreignDatabase(journal: String) async throws {
        try FileManager.default.createDirectory(atPath: ivy.home, withIntermediateDirectories: true)
        chmod(ivy.home, 0o700)
        let path = ivy.home + "/library.db"
        let foreign = try DatabaseQueue(path: path)
        try await foreign.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA journal_mode = \(journal)")
            try db.execute(sql: "CREATE TABLE recipes (name TEXT); INSERT INTO recipes VALUES ('soup')")
        }
        try foreign.close()
        let before = try #require(FileManager.default.contents(atPath: path))
        for arguments in [
            ["book", "add", "--title", "Dune"], ["book", "list"], ["status"], ["config", "set", "concurrency", "2"],
        ] {
            let result = try await ivy.run(arguments)
            #expect(result.status == 1, "\(arguments)")
            #expect(result.stderr.contains(path) && result.stderr.contains("not an ivy library"), "\(result.stderr)")
        }
        #expect(FileManager.default.contents(atPath: path) == before)
        let mode = try await DatabaseQueue(path: path).read { db in try String.fetchOne(db, sql: "PRAGMA journal_mode")
        }
        #expect(mode == journal)
        if journal == "delete" {
            #expect(try FileManager.default.contentsOfDirectory(atPath: ivy.home) == ["library.db"])
        }
    }

    @Test("another GRDB app's database is refused; an empty file becomes the library")
    func otherAppAndEmptyFile() async throws {
        try FileManager.default.createDirectory(atPath: ivy.home, withIntermediateDirectories: true)
        chmod(ivy.home, 0o700)
        let path = ivy.home + "/library.db"
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1: notes") { db in try db.execute(sql: "CREATE TABLE notes (text TEXT)") }
        let other = try DatabaseQueue(path: path)
        try migrator.migrate(other)
        try other.close()
        let refused = try await ivy.run("book", "add", "--title", "Dune")
        #expect(refused.status == 1 && refused.stderr.contains("not an ivy library"), "\(refused.stderr)")

        try FileManager.default.removeItem(atPath: path)
        _ = FileManager.default.createFile(atPath: path, contents: Data())
        #expect(try await ivy.run("book", "add", "--title", "Dune").status == 0)
        #expect(try await ivy.run("book", "list").stdout.contains("Dune"))
    }
}

@Suite("sync --auto and a busy library")
struct BusyLibraryTests {
    @Test("sync --auto is silent and exits 0 when another program holds a long write transaction")
    func autoSkipsBusy() async throws {
        try await withEmulator { emulator in
            let device = try await SignInHarness.signedIn(emulator)
            try await device.addLibrary(books: 1, clips: 0)
            var configuration = Configuration()
            configuration.allowsUnsafeTransactions = true
            let writer = try DatabaseQueue(path: device.ivy.home + "/library.db", configuration: configuration)
            try await writer.writeWithoutTransaction { db in
                try db.execute(sql: "BEGIN IMMEDIATE")
                try db.execute(
                    sql: "INSERT INTO books (id, title, created_at, updated_at) VALUES ('abc', 'Held', 1, 1)")
            }
            let auto = try await device.ivy.run("sync", "--auto")
            #expect(auto.status == 0 && auto.stdout.isEmpty && auto.stderr.isEmpty, "\(auto.stderr)")
            try await writer.writeWithoutTransaction { db in try db.execute(sql: "ROLLBACK") }
            try writer.close()
            #expect(try device.ivy.count("SELECT count(*) FROM settings WHERE key = 'last_error'") == 0)
            #expect(try await device.ivy.run("sync", "--auto").status == 0)
            #expect(await emulator.state.dump().contains { $0.name.hasPrefix("book_") })
        }
    }
}
