import Foundation
import GRDB
import GoogleEmulator
import IvyTestSupport
import Testing

/// A disk that is full, or read-only, under one directory, for one run of the binary: a small
/// tmpfs in a mount namespace of the run's own (`unshare --mount`; as a user who is not root,
/// in a user namespace too), holding a copy of the directory and bound over it, so ivy sees
/// the same paths. Full means filled with a file outside the bound directory, leaving `free`
/// bytes; read-only means the tmpfs remounted so. Afterwards the directory holds what ivy left
/// on that disk. When the namespace or the mount cannot be made, the run fails with status
/// 125 and says why: such a test fails, it never passes without a full disk.
enum Disk: Sendable, CustomTestStringConvertible {
    case full(leaving: Int)
    case readOnly

    var testDescription: String {
        switch self {
        case .full(let free): free == 0 ? "full" : "with \(free / 1024) KiB free"
        case .readOnly: "read-only"
        }
    }

    static let setupFailed: Int32 = 125

    fileprivate var mode: String {
        switch self {
        case .full(let free): String(free)
        case .readOnly: "ro"
        }
    }

    /// `$1` the directory, `$2` an empty directory to mount the tmpfs on, `$3` full's free
    /// bytes or `ro`; then the command.
    fileprivate static let script = #"""
        set -u
        dir=$1 disk=$2 mode=$3
        shift 3
        fail() { echo "the test's disk could not be set up: $*" >&2; exit 125; }
        mount -t tmpfs -o size=16m,mode=0700 ivy-test-disk "$disk" || fail "mount -t tmpfs"
        mkdir -m 0700 "$disk/dir" || fail "mkdir"
        cp -a "$dir/." "$disk/dir/" || fail "copying $dir in"
        mount --bind "$disk/dir" "$dir" || fail "mount --bind"
        if [ "$mode" = ro ]; then
            mount -o remount,ro "$disk" || fail "remounting read-only"
        else
            avail=$(( $(stat -f -c '%a * %S' "$disk") ))
            if [ $(( avail - mode )) -gt 0 ]; then
                head -c $(( avail - mode )) /dev/zero >"$disk/filler" 2>/dev/null
            fi
            [ $(( $(stat -f -c '%a * %S' "$disk") )) -le $(( mode + 4096 )) ] || fail "filling the disk"
        fi
        "$@"
        status=$?
        umount "$dir" || fail "umount"
        find "$dir" -mindepth 1 -delete && cp -a "$disk/dir/." "$dir/" || fail "copying $dir back"
        exit $status
        """#

    /// The wrapper `IvyHome.runBinaryAsync(_:environment:through:)` starts ivy through.
    func wrapper(over directory: String) throws -> [String] {
        let mountPoint = directory + ".disk"
        try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
        let unshare =
            geteuid() == 0
            ? ["/usr/bin/unshare", "--mount"] : ["/usr/bin/unshare", "--user", "--map-root-user", "--mount"]
        return unshare + ["/bin/sh", "-c", Self.script, "sh", directory, mountPoint, mode]
    }
}

extension IvyHome {
    /// Runs the binary with `directory` (the home unless given) on `disk`; fails the test
    /// when the disk could not be made.
    func run(
        on disk: Disk, _ arguments: String..., over directory: String? = nil, environment extra: [String: String] = [:]
    ) async throws -> RunResult {
        let result = try await runBinaryAsync(
            arguments, environment: extra, through: try disk.wrapper(over: directory ?? home))
        #expect(result.status != Disk.setupFailed, "\(result.stderr)")
        // unshare itself refused (exit 1, its own message): no namespace, so no disk to test on.
        #expect(
            !result.stderr.hasPrefix("unshare:"),
            """
            these tests make a small disk in a mount namespace, which needs root or unprivileged user \
            namespaces (sysctl kernel.unprivileged_userns_clone=1, or user.max_user_namespaces > 0): \
            \(result.stderr)
            """)
        return result
    }

    /// Every file and directory under `directory` (the home unless given), relative to it.
    func files(under directory: String? = nil) -> Set<String> {
        let root = directory ?? home
        let found = FileManager.default.enumerator(atPath: root)?.allObjects as? [String] ?? []
        return Set(found)
    }

    /// What a run must leave: the files there before, and at most SQLite's own log and
    /// shared-memory files beside the library, with nothing in the log.
    func expectNothingHalfWritten(before: Set<String>, _ sourceLocation: SourceLocation = #_sourceLocation) {
        let sqlite: Set = ["library.db-wal", "library.db-shm"]
        let after = files()
        #expect(after.subtracting(sqlite) == before.subtracting(sqlite), sourceLocation: sourceLocation)
        let log = (try? FileManager.default.attributesOfItem(atPath: home + "/library.db-wal"))?[.size] as? Int
        #expect((log ?? 0) == 0, "the write-ahead log holds a change", sourceLocation: sourceLocation)
    }
}

@Suite("A full or read-only disk: said as that, exit 1, nothing half-written")
struct DiskTroubleTests {
    @Test("a full disk: book add and config set say so and change nothing")
    func fullDisk() async throws {
        let ivy = try IvyHome()
        try await ivy.run("book", "add", "--title", "Dune")
        try await ivy.run("config", "set", "trash_days", "10")
        let before = ivy.files()
        let library = try ivy.library()
        for arguments in [["book", "add", "--title", "Full"], ["config", "set", "trash_days", "5"]] {
            let result = try await ivy.runBinaryAsync(
                arguments, through: try Disk.full(leaving: 0).wrapper(over: ivy.home))
            #expect(result.status == 1, "\(arguments): \(result.stderr)")
            #expect(
                result.stderr.hasPrefix("Error: no space left on device for \(ivy.home)/library.db: free some space"),
                "\(result.stderr)")
            #expect(result.stdout.isEmpty)
            ivy.expectNothingHalfWritten(before: before)
            #expect(try ivy.library() == library)
        }
    }

    @Test("clip add with audio bigger than the free space: refused whole, no partial copy")
    func clipAudio() async throws {
        let ivy = try IvyHome()
        let book = try await ivy.id("book", "add", "--title", "Dune")
        let audio = try ivy.mp3("big.mp3", size: 2 << 20)
        let before = ivy.files()
        let result = try await ivy.run(
            on: .full(leaving: 256 << 10), "clip", "add", "--book", book, "--start", "0", "--duration", "5",
            "--audio", audio)
        #expect(result.status == 1, "\(result.stderr)")
        #expect(result.stderr.hasPrefix("Error: no space left on device for \(ivy.home)/audio"), "\(result.stderr)")
        // The audio directory may have been made for the copy; nothing is left in it.
        #expect(ivy.files().subtracting(before).subtracting(["audio", "library.db-wal", "library.db-shm"]).isEmpty)
        #expect(ivy.files(under: ivy.home + "/audio").isEmpty)
        #expect(try ivy.count("SELECT count(*) FROM clips") == 0)
    }

    @Test("a sync whose download does not fit stops, says so, and keeps no part of it")
    func syncDownload() async throws {
        try await withEmulator { emulator in
            let laptop = try await SignInHarness.signedIn(emulator)
            let book = try await laptop.ivy.id("book", "add", "--title", "Dune")
            let audio = try laptop.ivy.mp3("big.mp3", size: 2 << 20)
            try await laptop.ivy.run(
                ["clip", "add", "--book", book, "--start", "0", "--duration", "5", "--audio", audio])
            #expect(try await laptop.ivy.run("sync").status == 0)
            let server = try await SignInHarness.signedIn(emulator)
            let result = try await server.ivy.run(on: .full(leaving: 512 << 10), "sync")
            #expect(result.status == 1, "\(result.stderr)")
            #expect(
                result.stderr.hasPrefix("Error: no space left on device for \(server.ivy.home)/audio: free some space"),
                "\(result.stderr)")
            #expect(!result.stderr.contains("network"))
            let audioFiles = server.ivy.files(under: server.ivy.home + "/audio")
            #expect(audioFiles.isEmpty, "left behind: \(audioFiles)")
            #expect(try server.ivy.count("SELECT count(*) FROM clips") == 0)
            // Nothing was retried: each file was asked for once, and the sync stopped.
            let downloads = await emulator.state.requests.filter { $0.query.contains("alt=media") }.map(\.path)
            #expect(Set(downloads).count == downloads.count, "\(downloads)")
        }
    }

    @Test("a trash on another disk that fills while the old audio is copied in: the sync stops and says so")
    func trashCopyFull() async throws {
        try await withEmulator { emulator in
            let laptop = try await SignInHarness.signedIn(emulator)
            let book = try await laptop.ivy.id("book", "add", "--title", "Dune")
            let clip = try await laptop.ivy.id(
                "clip", "add", "--book", book, "--start", "0", "--duration", "5", "--audio",
                try laptop.ivy.mp3("first.mp3", size: 600 << 10))
            #expect(try await laptop.ivy.run("sync").status == 0)
            let server = try await SignInHarness.signedIn(emulator)
            #expect(try await server.ivy.run("sync").status == 0)
            let before = FileManager.default.contents(atPath: server.ivy.home + "/audio/\(clip).mp3")
            try await laptop.ivy.run(
                [
                    "clip", "update", clip, "--audio",
                    try laptop.ivy.mp3("second.mp3", size: 600 << 10, header: Array("ID3\u{4}\u{1}second".utf8)),
                ])
            #expect(try await laptop.ivy.run("sync").status == 0)

            // The trash on a disk of its own: the old MP3 cannot be linked there, only copied,
            // and the copy runs out of space part way.
            let trash = server.ivy.home + "/trash"
            try FileManager.default.createDirectory(atPath: trash, withIntermediateDirectories: true)
            chmod(trash, 0o700)
            let result = try await server.ivy.run(on: .full(leaving: 256 << 10), "sync", over: trash)
            #expect(result.status == 1, "\(result.stderr)")
            #expect(
                result.stderr.hasPrefix("Error: no space left on device for \(trash): free some space"),
                "\(result.stderr)")
            #expect(!result.stderr.contains("cross-device"))
            #expect(FileManager.default.contents(atPath: server.ivy.home + "/audio/\(clip).mp3") == before)
            #expect(server.ivy.files(under: trash).isEmpty, "no part of a copy is left")
        }
    }

    @Test(
        "login with its config directory full or read-only: says so; no token file, no temporary file",
        arguments: [Disk.full(leaving: 0), .readOnly])
    func login(disk: Disk) async throws {
        try await withEmulator { emulator in
            let harness = try SignInHarness(emulator: emulator)
            let ivy = harness.ivy
            // The XDG layout, where the sign-in lives apart from the library.
            ivy.environment["IVY_HOME"] = nil
            let config = ivy.path + "/config"
            ivy.environment.merge([
                "XDG_CONFIG_HOME": config, "XDG_DATA_HOME": ivy.path + "/data", "XDG_STATE_HOME": ivy.path + "/state",
            ]) { $1 }
            try FileManager.default.createDirectory(
                atPath: config + "/ivy", withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            try await ivy.run("book", "add", "--title", "Dune")
            await emulator.state.setDeviceCode(interval: 0)
            let started = await emulator.state.requests.count
            async let login = ivy.run(on: disk, "login", over: config + "/ivy")
            await emulator.state.waitForRequests(count: started + 1)
            try await emulator.state.approve(userCode: nil, email: "alice@example.com")
            let result = try await login
            #expect(result.status == 1, "\(result.stderr)")
            let token = config + "/ivy/token.json"
            let expected =
                switch disk {
                case .full: "Error: no space left on device for \(token): free some space"
                case .readOnly: "Error: \(token) is on a read-only file system"
                }
            #expect(result.stderr.hasPrefix(expected), "\(result.stderr)")
            #expect(ivy.files(under: config + "/ivy").isEmpty)
            let library = try DatabaseQueue(path: ivy.path + "/data/ivy/library.db")
            let bound = try await library.read { db in
                try Int.fetchOne(db, sql: "SELECT count(*) FROM settings WHERE key = 'account_permission_id'")
            }
            #expect(bound == 0)
        }
    }

    @Test("a read-only home: every command that writes says so and exits 1; reading still works")
    func readOnlyHome() async throws {
        let ivy = try IvyHome()
        let book = try await ivy.id("book", "add", "--title", "Dune")
        let audio = try ivy.mp3("a.mp3")
        ivy.environment.merge([
            "IVY_CLIENT_ID": "id", "IVY_CLIENT_SECRET": "secret", "IVY_OAUTH_URL": "http://127.0.0.1:9",
            "IVY_DRIVE_URL": "http://127.0.0.1:9",
        ]) { $1 }
        let before = ivy.files()
        let library = try ivy.library()
        for arguments in [
            ["book", "add", "--title", "More"], ["book", "update", book, "--position", "60"],
            ["clip", "add", "--book", book, "--start", "0", "--duration", "5", "--audio", audio],
            ["config", "set", "trash_days", "5"], ["sync"], ["login"],
        ] {
            let result = try await ivy.runBinaryAsync(arguments, through: try Disk.readOnly.wrapper(over: ivy.home))
            #expect(result.status == 1, "\(arguments): \(result.stderr)")
            #expect(
                result.stderr.hasPrefix("Error: \(ivy.home)/library.db is on a read-only file system: remount it"),
                "\(arguments): \(result.stderr)")
        }
        let list = try await ivy.runBinaryAsync(["book", "list"], through: try Disk.readOnly.wrapper(over: ivy.home))
        #expect(list.status == 0 && list.stdout.contains("Dune"), "\(list.stderr)")
        #expect(ivy.files() == before)
        #expect(try ivy.library() == library)
    }

    @Test("a read-only home: ivy check still checks, as the other commands that only read do")
    func checkOnReadOnlyHome() async throws {
        try await withEmulator { emulator in
            let device = try await SignInHarness.signedIn(emulator)
            try await device.addLibrary(books: 1, clips: 1)
            #expect(try await device.ivy.run("sync").status == 0)
            let before = device.ivy.files()
            let check = try await device.ivy.run(on: .readOnly, "check")
            #expect(check.status == 0, "\(check.stdout)\(check.stderr)")
            #expect(check.stdout.hasPrefix("Backup OK"), "\(check.stdout)")
            #expect(device.ivy.files() == before)
        }
    }

    @Test("a log line a full disk cuts short is cut off whole: every line of a JSON log still parses")
    func logLineCutShort() async throws {
        try await withEmulator { emulator in
            let device = try await SignInHarness.signedIn(emulator)
            let ivy = device.ivy
            #expect(try await ivy.run("config", "set", "log_format", "json").status == 0)
            // The same home in XDG's layout, so that the log's directory can sit alone on a
            // full disk while the library and the sign-in have room.
            let state = ivy.path + "/state/ivy"
            for (variable, directory) in [
                ("XDG_CONFIG_HOME", "config"), ("XDG_DATA_HOME", "data"), ("XDG_STATE_HOME", "state"),
            ] {
                ivy.environment[variable] = ivy.path + "/" + directory
                try FileManager.default.createDirectory(
                    atPath: ivy.path + "/\(directory)/ivy", withIntermediateDirectories: true,
                    attributes: [.posixPermissions: 0o700])
            }
            ivy.environment["IVY_HOME"] = nil
            let files = FileManager.default
            try files.copyItem(atPath: ivy.home + "/token.json", toPath: ivy.path + "/config/ivy/token.json")
            for file in ["library.db", "library.db-wal"] where files.fileExists(atPath: ivy.home + "/" + file) {
                try files.copyItem(atPath: ivy.home + "/" + file, toPath: ivy.path + "/data/ivy/" + file)
            }
            _ = try await ivy.id("book", "add", "--title", "Dune")
            let logged = try await ivy.runBinaryAsync("sync")
            #expect(logged.status == 0, "\(logged.stderr)")
            let line = try String(contentsOfFile: state + "/ivy.log", encoding: .utf8)
            // 4,000 bytes of whole lines: tmpfs gives the log 4,096-byte pages, so a line of
            // more than 96 bytes starts in the log's page and runs on into one the disk lacks.
            #expect(line.utf8.count > 96 && line.hasSuffix("\n"), "\(line)")
            let filler = "{\"message\":\"" + String(repeating: "x", count: 3_985) + "\"}\n"
            #expect(filler.utf8.count == 4_000)
            try Data(filler.utf8).write(to: URL(fileURLWithPath: state + "/ivy.log"))

            _ = try await ivy.id("book", "add", "--title", "Emma")
            let cut = try await ivy.run(on: .full(leaving: 0), "sync", over: state)
            #expect(cut.status == 0, "a log that cannot be written loses a line, never the sync: \(cut.stderr)")
            let log = try String(contentsOfFile: state + "/ivy.log", encoding: .utf8)
            #expect(log == filler, "a line cut short was left: \(log.utf8.count) bytes")
            for entry in log.split(separator: "\n") {
                #expect((try? JSONSerialization.jsonObject(with: Data(entry.utf8))) != nil, "\(entry.prefix(80))")
            }
        }
    }

    @Test("a read-only home with no library yet: the first command says the disk is read-only")
    func readOnlyNewHome() async throws {
        let ivy = try IvyHome()
        try FileManager.default.createDirectory(
            atPath: ivy.home, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        #expect(!FileManager.default.fileExists(atPath: ivy.home + "/library.db"))
        let result = try await ivy.run(on: .readOnly, "book", "add", "--title", "Dune")
        #expect(result.status == 1, "\(result.stderr)")
        #expect(
            result.stderr.hasPrefix("Error: \(ivy.home)/library.db is on a read-only file system: remount it"),
            "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: ivy.home + "/library.db"))
    }
}

extension IvyHome {
    /// The books, clips and settings, as rows.
    fileprivate func library() throws -> String {
        let rows =
            try sql("SELECT * FROM books ORDER BY id") + sql("SELECT * FROM clips ORDER BY id")
            + sql("SELECT * FROM settings ORDER BY key") + sql("SELECT * FROM sync_queue ORDER BY entity_id")
        return rows.map(\.description).joined(separator: "\n")
    }
}
