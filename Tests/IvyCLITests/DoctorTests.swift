import Foundation
import GRDB
import GoogleEmulator
import IvyCommands
import IvyCore
import IvyTestSupport
import Testing

@testable import IvyStore

/// Issue 30: `ivy doctor` names each problem with its fix, and exits 1 when there is one.
@Suite("ivy doctor")
struct DoctorTests {
    private static func findings(_ result: RunResult) throws -> [String: [String: Any]] {
        let array = try #require(try result.json() as? [[String: Any]])
        return Dictionary(array.map { ($0["check"] as? String ?? "", $0) }) { first, _ in first }
    }

    /// Every finding of one check (`home` can have several), in order.
    private static func all(_ check: String, _ result: RunResult) throws -> [[String: Any]] {
        try #require(try result.json() as? [[String: Any]]).filter { $0["check"] as? String == check }
    }

    @Test("a healthy setup: sign-in refreshes, Drive answers, the clock agrees; exit 0")
    func healthy() async throws {
        try await withEmulator { emulator in
            let device = try await SignInHarness.signedIn(emulator)
            #expect(try await device.ivy.run("sync").status == 0)
            let doctor = try await device.ivy.run("doctor")
            #expect(doctor.status == 0, "\(doctor.stdout)\(doctor.stderr)")
            #expect(doctor.stdout.contains("ok      sign-in: alice@example.com refreshes"), "\(doctor.stdout)")
            #expect(doctor.stdout.contains("ok      drive: Google Drive answers"), "\(doctor.stdout)")
            #expect(doctor.stdout.contains("ok      clock: within"), "\(doctor.stdout)")
            #expect(doctor.stdout.contains("warning health url: none"), "\(doctor.stdout)")
        }
    }

    @Test("a revoked sign-in is a problem whose fix is ivy login")
    func revoked() async throws {
        try await withEmulator { emulator in
            let device = try await SignInHarness.signedIn(emulator)
            await emulator.state.revoke(email: "alice@example.com")
            let doctor = try await device.ivy.runBinaryAsync("doctor", "--json")
            #expect(doctor.status == 1)
            let signIn = try #require(try Self.findings(doctor)["sign-in"])
            #expect(signIn["level"] as? String == "problem")
            #expect(signIn["fix"] as? String == "run `ivy login`", "\(signIn)")
        }
    }

    @Test("a missing OAuth client is a problem that says how to configure one; signed out is reported")
    func missingClient() async throws {
        let ivy = try IvyHome()
        let doctor = try await ivy.runBinaryAsync("doctor", "--json")
        #expect(doctor.status == 1)
        let findings = try Self.findings(doctor)
        #expect(findings["oauth client"]?["level"] as? String == "problem")
        #expect((findings["oauth client"]?["fix"] as? String)?.contains("ivy config set client_id") == true)
        #expect(findings["sign-in"]?["fix"] as? String == "run `ivy login`")
    }

    @Test("a crontab line whose program cron cannot find is a problem; none at all is a warning")
    func crontab() async throws {
        let ivy = try IvyHome()
        let bin = ivy.path + "/bin"
        try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
        let listing = ivy.path + "/crontab.txt"
        try "# m h dom mon dow command\n*/10 * * * * ivy sync --auto\n".write(
            toFile: listing, atomically: true, encoding: .utf8)
        try "#!/bin/sh\ncat \"\(listing)\"\n".write(toFile: bin + "/crontab", atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: bin + "/crontab")
        let path = ["PATH": bin + ":/usr/bin:/bin"]
        let first = try await ivy.runBinaryAsync(["doctor", "--json"], environment: path)
        let broken = try Self.findings(first)["schedule"]
        #expect(broken?["level"] as? String == "problem", "\(String(describing: broken))")
        #expect((broken?["detail"] as? String)?.contains("cannot find or run") == true)
        #expect((broken?["fix"] as? String)?.contains("full path") == true)

        try "".write(toFile: listing, atomically: true, encoding: .utf8)
        let none = try Self.findings(try await ivy.runBinaryAsync(["doctor", "--json"], environment: path))["schedule"]
        #expect(none?["level"] as? String == "warning")
        #expect((none?["fix"] as? String)?.contains("crontab -e") == true)
    }

    /// The environment that makes `ivy doctor` in `ivy` read `listing` as the user's crontab
    /// (a `crontab` whose `-l` prints it), and installs the built ivy at `~/.local/bin/ivy` of
    /// `ivy`'s HOME unless `installed` is false.
    private static func crontab(_ listing: String, in ivy: IvyHome, installed: Bool = true) throws -> [String: String] {
        let bin = ivy.path + "/fake-bin"
        let manager = FileManager.default
        try manager.createDirectory(atPath: bin, withIntermediateDirectories: true)
        let file = ivy.path + "/crontab.txt"
        try listing.write(toFile: file, atomically: true, encoding: .utf8)
        try "#!/bin/sh\ncat \"\(file)\"\n".write(toFile: bin + "/crontab", atomically: true, encoding: .utf8)
        try manager.setAttributes([.posixPermissions: 0o755], ofItemAtPath: bin + "/crontab")
        let local = ivy.path + "/.local/bin"
        try manager.createDirectory(atPath: local, withIntermediateDirectories: true)
        try? manager.removeItem(atPath: local + "/ivy")
        if installed {
            try manager.createSymbolicLink(atPath: local + "/ivy", withDestinationPath: BuiltProgram.ivy.path)
        }
        return ["PATH": bin + ":/usr/bin:/bin"]
    }

    /// Every crontab line README.md, the pages of docs/ and the man page show (`… sync --auto` after five time
    /// fields or an `@` word, on a line of its own or inside the README's `echo '…'`).
    static func documentedCronLines() throws -> [(file: String, line: String)] {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let schedule =
            #/
            (?:^|[\s'"])
            ( (?:@[a-z]+ | [0-9*][0-9*\/,-]* (?:\s+[0-9A-Za-z*][0-9A-Za-z*\/,-]*){4})
              \s+ [^'"\n]* sync\ --auto [^'"\n]* )
            /#
        var found: [(String, String)] = []
        let pages = try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("docs").path)
            .filter { $0.hasSuffix(".md") }.sorted().map { "docs/" + $0 }
        for name in ["README.md", "man/ivy.1"] + pages {
            var text = try String(contentsOf: root.appendingPathComponent(name), encoding: .utf8)
            if name.hasSuffix(".1") {
                // roff's escapes for what a crontab line can hold.
                for (escape, character) in [(#"\-"#, "-"), (#"\(ti"#, "~"), (#"\(aq"#, "'"), (#"\e"#, #"\"#)] {
                    text = text.replacingOccurrences(of: escape, with: character)
                }
            }
            for line in text.split(separator: "\n") {
                if let match = line.firstMatch(of: schedule) {
                    found.append((name, String(match.1).trimmingCharacters(in: .whitespaces)))
                }
            }
        }
        return found
    }

    @Test(
        """
        every crontab line the README, docs/ and the man page show is ok once ivy is installed where it says (HOME set \
        by the crontab), and a problem before
        """)
    func documentedCrontabLines() async throws {
        let lines = try Self.documentedCronLines()
        #expect(lines.contains { $0.file == "README.md" } && lines.contains { $0.file == "man/ivy.1" }, "\(lines)")
        for (file, line) in lines {
            let ivy = try IvyHome()
            let listing = "# m h dom mon dow command\nHOME=\(ivy.path)\n\(line)\n"
            let installed = try await ivy.runBinaryAsync(
                ["doctor", "--json"], environment: try Self.crontab(listing, in: ivy))
            let found = try Self.findings(installed)["schedule"]
            #expect(found?["level"] as? String == "ok", "\(file): \(line): \(String(describing: found))")
            #expect(
                (found?["detail"] as? String)?.hasPrefix("cron runs \(ivy.path)/.local/bin/ivy ") == true,
                "\(file): \(line): \(String(describing: found))")

            let missing = try await ivy.runBinaryAsync(
                ["doctor", "--json"], environment: try Self.crontab(listing, in: ivy, installed: false))
            let broken = try Self.findings(missing)["schedule"]
            #expect(broken?["level"] as? String == "problem", "\(file): \(line): \(String(describing: broken))")
        }
    }

    @Test(
        "a crontab line is read as cron's shell runs it: variables, ~, quotes, leading assignments, cd, redirections",
        arguments: [
            ("*/10 * * * * ~/.local/bin/ivy sync --auto", "ok", "cron runs {home}/.local/bin/ivy sync --auto"),
            ("*/10 * * * * ${HOME}/.local/bin/ivy sync --auto", "ok", "cron runs {home}/.local/bin/ivy sync --auto"),
            (
                #"*/10 * * * * "$HOME/.local/bin/ivy" sync --auto >>"$HOME/ivy.log" 2>&1"#, "ok",
                "cron runs {home}/.local/bin/ivy sync --auto"
            ),
            (
                "BIN = {home}/.local/bin\n*/10 * * * * $BIN/ivy sync --auto", "ok",
                "cron runs {home}/.local/bin/ivy sync --auto"
            ),
            (
                "*/10 * * * * IVY_HOME=/srv/ivy $HOME/.local/bin/ivy sync --auto", "ok",
                "cron runs {home}/.local/bin/ivy sync --auto"
            ),
            (
                "*/10 * * * * cd /tmp && $HOME/.local/bin/ivy --home /srv/ivy sync --auto", "ok",
                "cron runs {home}/.local/bin/ivy --home /srv/ivy sync --auto"
            ),
            ("@hourly cd .local/bin; ./ivy sync --auto", "ok", "cron runs {home}/.local/bin/ivy sync --auto"),
            (
                "PATH={home}/.local/bin:/usr/bin:/bin\n*/10 * * * * ivy sync --auto", "ok",
                "cron runs {home}/.local/bin/ivy sync --auto"
            ),
            (
                "*/10 * * * * PATH=$HOME/.local/bin:$PATH ivy sync --auto", "ok",
                "cron runs {home}/.local/bin/ivy sync --auto"
            ),
            (
                "SHELL=/bin/bash\n*/10 * * * * exec nice -n 19 ~/.local/bin/ivy sync --auto -q", "ok",
                "cron runs {home}/.local/bin/ivy sync --auto -q"
            ),
            (
                "*/10 * * * * '$HOME/.local/bin/ivy' sync --auto", "problem",
                "the crontab line runs $HOME/.local/bin/ivy, which cron (PATH=/usr/bin:/bin) cannot find or run"
            ),
            (
                "*/10 * * * * $IVY_BIN/ivy sync --auto", "problem",
                "the crontab line runs $IVY_BIN/ivy (/ivy under cron), which cron (PATH=/usr/bin:/bin) cannot find "
                    + "or run; cron sets no $IVY_BIN (only HOME, LOGNAME, SHELL, PATH and the crontab's own NAME=value "
                    + "lines)"
            ),
            (
                "*/10 * * * * ivy sync --auto", "problem",
                "the crontab line runs ivy, which cron (PATH=/usr/bin:/bin) cannot find or run"
            ),
            (
                "*/10 * * * * $(command -v ivy) sync --auto", "warning",
                "cannot tell which program the crontab line `*/10 * * * * $(command -v ivy) sync --auto` runs: it "
                    + "uses `$(…)`, which doctor does not follow"
            ),
        ])
    func crontabAsCronRunsIt(lines: String, level: String, detail: String) async throws {
        let ivy = try IvyHome()
        let listing = "HOME=\(ivy.path)\n" + lines.replacingOccurrences(of: "{home}", with: ivy.path) + "\n"
        let doctor = try await ivy.runBinaryAsync(
            ["doctor", "--json"], environment: try Self.crontab(listing, in: ivy))
        let found = try #require(try Self.findings(doctor)["schedule"], "\(doctor.stdout)")
        #expect(found["level"] as? String == level, "\(found)")
        #expect(found["detail"] as? String == detail.replacingOccurrences(of: "{home}", with: ivy.path), "\(found)")
    }

    @Test("cron's HOME is the passwd entry's, not the HOME of the shell doctor runs in")
    func cronHomeFromPasswd() async throws {
        let ivy = try IvyHome()
        let entry = try #require(getpwuid(getuid()))
        let home = String(cString: entry.pointee.pw_dir)
        #expect(home != ivy.path)
        // Installed under this shell's HOME only: cron would not find it there.
        let doctor = try await ivy.runBinaryAsync(
            ["doctor", "--json"],
            environment: try Self.crontab("*/10 * * * * $HOME/.local/bin/ivy sync --auto\n", in: ivy))
        let found = try #require(try Self.findings(doctor)["schedule"], "\(doctor.stdout)")
        let program = home + "/.local/bin/ivy"
        if FileManager.default.isExecutableFile(atPath: program) {
            #expect(found["detail"] as? String == "cron runs \(program) sync --auto", "\(found)")
        } else {
            #expect(found["level"] as? String == "problem", "\(found)")
            #expect(
                found["detail"] as? String
                    == "the crontab line runs $HOME/.local/bin/ivy (\(program) under cron), which cron "
                    + "(PATH=/usr/bin:/bin) cannot find or run", "\(found)")
        }
    }

    @Test(
        "a clock 10 minutes off Google's Date header, either way, is a problem whose fix is time synchronisation",
        arguments: [-600.0, 600.0])
    func clockOff(offset: Double) async throws {
        try await withEmulator { emulator in
            let device = try await SignInHarness.signedIn(emulator)
            // Google's clock ten minutes behind or ahead of this machine's, over live HTTP to the built ivy.
            await emulator.state.setDateOffset(seconds: offset)
            let doctor = try await device.ivy.runBinaryAsync("doctor")
            #expect(doctor.status == 1, "\(doctor.stdout)\(doctor.stderr)")
            #expect(
                doctor.stdout.contains(
                    "problem clock: this clock is 10 minutes off Google's (merges compare times); "
                        + "fix: turn on time synchronisation (timedatectl set-ntp true)"), "\(doctor.stdout)")
            #expect(doctor.stdout.contains("ok      drive: Google Drive answers"), "\(doctor.stdout)")

            await emulator.state.setDateOffset(seconds: 0)
            let fixed = try await device.ivy.runBinaryAsync("doctor")
            #expect(fixed.stdout.contains("ok      clock: within"), "\(fixed.stdout)")
        }
    }

    @Test("doctor asks Google's device sign-in whether it takes ivy's scope, and names a refusal as a problem")
    func signInScope() async throws {
        try await withEmulator { emulator in
            let device = try await SignInHarness.signedIn(emulator)
            let scope = "https://www.googleapis.com/auth/drive.file"
            let fine = try await device.ivy.runBinaryAsync("doctor")
            #expect(
                fine.stdout.contains(
                    "ok      sign-in scope: Google's device sign-in takes \(scope) from this client\n"),
                "\(fine.stdout)")
            #expect(
                await emulator.state.requests.filter { $0.path == "/device/code" }.count == 2,
                "one for the login, one for doctor: a code asked for and never used")

            await emulator.state.addFault(FaultRule(pathContains: "/device/code", status: 400, reason: "invalid_scope"))
            let refused = try await device.ivy.runBinaryAsync("doctor")
            #expect(refused.status == 1)
            #expect(
                refused.stdout.contains(
                    "problem sign-in scope: Google's device sign-in refuses the scope ivy asks for, \(scope): "
                        + "Injected fault.; fix: `ivy login` cannot work until it is allowed again; a newer ivy may "
                        + "ask for another\n"), "\(refused.stdout)")
        }
    }

    @Test("twin Ivy folders on Drive are a problem that names them, oldest first, with how to merge them")
    func folderTwins() async throws {
        try await withEmulator { emulator in
            let device = try await SignInHarness.signedIn(emulator)
            #expect(try await device.ivy.run("sync").status == 0)
            let once = try Self.findings(try await device.ivy.run("doctor", "--json"))["folders"]
            #expect(once?["level"] as? String == "ok", "\(String(describing: once))")
            #expect((once?["detail"] as? String)?.hasSuffix("exists once") == true)

            // A second device made its own books folder at the same moment.
            let folders = await emulator.state.dump(email: "alice@example.com").filter {
                $0.mimeType == DriveFile.folderType
            }
            let ivy = try #require(folders.first { $0.name == "Ivy" })
            let books = try #require(folders.first { $0.name == "books" })
            await emulator.state.advanceClock(by: 1)
            let twin = await emulator.state.putFile(
                email: "alice@example.com", name: "books", parents: [ivy.id], content: Data(),
                mimeType: DriveFile.folderType)
            let doctor = try await device.ivy.run("doctor", "--json")
            #expect(doctor.status == 1)
            let found = try #require(try Self.findings(doctor)["folders"])
            #expect(found["level"] as? String == "problem")
            #expect(
                found["detail"] as? String == "2 folders Ivy/books: \(books.id), \(twin.id) (oldest first)", "\(found)")
            #expect((found["fix"] as? String)?.contains("move the files of each newer twin into the oldest") == true)
        }
    }

    @Test("deletions the last sync held back are a problem whose fix is sync --allow-deletes; gone once it ran")
    func heldDeletions() async throws {
        try await withEmulator { emulator in
            let device = try await SignInHarness.signedIn(emulator)
            let book = try await device.ivy.id("book", "add", "--title", "Dune")
            let audio = try device.ivy.mp3("a.mp3")
            for index in 0..<12 {
                _ = try await device.ivy.id(
                    "clip", "add", "--book", book, "--start", String(index), "--duration", "1", "--audio", audio)
            }
            #expect(try await device.ivy.run("sync").status == 0)
            #expect(
                try Self.findings(try await device.ivy.run("doctor", "--json"))["held deletions"]?["level"] as? String
                    == "ok")

            // Another device deleted every clip on Drive: too many for this library to follow unasked.
            for file in await emulator.state.dump(email: "alice@example.com") where file.name.hasPrefix("clip_") {
                try await emulator.state.trash(id: file.id)
            }
            let held = try await device.ivy.run("sync")
            #expect(held.stderr.contains("Held back: 12 of the 12 clips"), "\(held.stderr)")
            let doctor = try await device.ivy.runBinaryAsync("doctor", "--json")
            #expect(doctor.status == 1)
            let deletions = try #require(try Self.findings(doctor)["held deletions"])
            #expect(deletions["level"] as? String == "problem")
            #expect(
                deletions["detail"] as? String
                    == "the last sync deleted nothing here: 12 of the 12 clips this library synced would be "
                    + "deleted here, and the Drive listing is taken as incomplete",
                "\(deletions)")
            #expect((deletions["fix"] as? String)?.contains("`ivy sync --allow-deletes`") == true)

            #expect(try await device.ivy.run("sync", "--allow-deletes").status == 0)
            let after = try Self.findings(try await device.ivy.run("doctor", "--json"))["held deletions"]
            #expect(after?["level"] as? String == "ok" && after?["detail"] as? String == "none")
        }
    }

    @Test("a home others can list is a warning, one they can write to a problem, a readable library.db a problem")
    func permissions() async throws {
        let ivy = try IvyHome()
        _ = try await ivy.id("book", "add", "--title", "Dune")
        let database = ivy.home + "/library.db"
        #expect(
            try Self.all("home", try await ivy.runBinaryAsync("doctor", "--json")).map { $0["level"] as? String } == [
                "ok"
            ])

        chmod(ivy.home, 0o755)
        chmod(database, 0o644)
        let loose = try await ivy.runBinaryAsync("doctor", "--json")
        #expect(loose.status == 1)
        let found = try Self.all("home", loose)
        #expect(found.count == 2, "\(found)")
        #expect(found.first?["level"] as? String == "warning")
        #expect(found.first?["detail"] as? String == "\(ivy.home) has mode 755: other users can list the files in it")
        #expect(found.first?["fix"] as? String == "chmod 700 \(ivy.home)")
        #expect(found.last?["level"] as? String == "problem")
        #expect(found.last?["detail"] as? String == "\(database) has mode 644: other users can read it")
        #expect(found.last?["fix"] as? String == "chmod 600 \(database)")
        // Doctor changes nothing, modes included.
        #expect(try FileManager.default.attributesOfItem(atPath: database)[.posixPermissions] as? Int == 0o644)

        // (A read-only SQLite connection leaves -wal and -shm files with the database's mode.)
        for file in [database, database + "-wal", database + "-shm"] { chmod(file, 0o600) }
        chmod(ivy.home, 0o775)
        // Every other command refuses this home: doctor says why, and checks nothing that would write in it.
        let open = try await ivy.runBinaryAsync("doctor")
        #expect(open.status == 1 && open.stderr.isEmpty, "\(open.stderr)")
        #expect(
            open.lines.first
                == "problem home: \(ivy.home) can be written by others (mode 775): ivy refuses to use it; "
                + "fix: chmod 700 \(ivy.home)", "\(open.stdout)")
        #expect(open.lines.dropFirst().first?.hasPrefix("ok      disk: ") == true, "\(open.stdout)")
        #expect(
            open.lines.dropFirst(2) == [
                "warning other checks: not run: ivy uses no home it refuses; "
                    + "fix: fix the home, then run `ivy doctor` again"
            ], "\(open.stdout)")
        chmod(ivy.home, 0o700)
    }

    @Test(
        "free space under 100 MB is a warning",
        arguments: [
            (Int64(5_000_000_000), DoctorFinding.Level.ok, "5000 MB free"),
            (100_000_000, .ok, "100 MB free"),
            (99_999_999, .warning, "99 MB free where the library is"),
            (0, .warning, "0 MB free where the library is"),
        ])
    func disk(free: Int64, level: DoctorFinding.Level, detail: String) {
        let finding = DoctorRules.disk(freeBytes: free)
        #expect(finding.level == level)
        #expect(finding.detail.hasPrefix(detail), "\(finding.detail)")
        #expect(finding.fix == (level == .ok ? nil : "free some disk space"))
    }

    @Test(
        "directory modes: what ivy refuses is a problem, what others can only list a warning; readable files a problem")
    func modes() {
        let user: UInt32 = 1000
        #expect(DoctorRules.directory("/h", mode: 0o40700, owner: user, user: user) == nil)
        #expect(DoctorRules.directory("/h", mode: 0o40750, owner: user, user: user)?.level == .warning)
        #expect(DoctorRules.directory("/h", mode: 0o40770, owner: user, user: user)?.level == .problem)
        #expect(DoctorRules.directory("/h", mode: 0o40757, owner: user, user: user)?.level == .problem)
        let foreign = DoctorRules.directory("/h", mode: 0o40700, owner: 0, user: user)
        #expect(
            foreign?.level == .problem && foreign?.detail == "/h belongs to another user (uid 0): ivy refuses to use it"
        )
        #expect(DoctorRules.file("/h/token.json", mode: 0o100600) == nil)
        #expect(DoctorRules.file("/h/token.json", mode: 0o100640)?.fix == "chmod 600 /h/token.json")
    }

    @Test("a library an older ivy made: doctor says its migrations are pending and applies none (the file unchanged)")
    func olderLibrary() async throws {
        let ivy = try IvyHome()
        try FileManager.default.createDirectory(
            atPath: ivy.home, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        let database = ivy.home + "/library.db"
        let queue = try DatabaseQueue(path: database)
        try Schema.migrator.migrate(queue, upTo: "v9: trash keeps what a restore replaces")
        try queue.close()
        chmod(database, 0o600)
        let before = try Data(contentsOf: URL(fileURLWithPath: database))

        let doctor = try await ivy.runBinaryAsync("doctor", "--json")
        let library = try #require(try Self.findings(doctor)["library"])
        #expect(library["level"] as? String == "warning")
        #expect(
            (library["detail"] as? String)?.contains("of this ivy not applied yet (v10: history") == true, "\(library)")
        #expect((library["fix"] as? String)?.contains("the next command that changes the library") == true)
        #expect(try Data(contentsOf: URL(fileURLWithPath: database)) == before, "doctor migrated nothing")
        #expect(!FileManager.default.fileExists(atPath: database + "-wal"))

        // What the fix says is true: the next command that writes migrates it.
        _ = try await ivy.id("book", "add", "--title", "Dune")
        let current = try Self.findings(try await ivy.runBinaryAsync("doctor", "--json"))["library"]
        #expect(
            current?["level"] as? String == "ok" && (current?["detail"] as? String)?.hasSuffix("are current") == true)
    }

    @Test("doctor never holds the sync lock while Google's token endpoint keeps it waiting: a sync runs meanwhile")
    func noLockAcrossTheNetwork() async throws {
        try await withEmulator { emulator in
            let device = try await SignInHarness.signedIn(emulator)
            _ = try await device.ivy.id("book", "add", "--title", "Dune")
            await emulator.state.addFault(FaultRule(method: "POST", pathContains: "/token", hold: true))
            let doctor = device.ivy.start(["doctor", "--json"])
            await emulator.state.waitForHeld(count: 1)
            // The device's access token is fresh: the sync needs no token request of its own.
            let sync = try await device.ivy.run("sync")
            #expect(sync.status == 0, "\(sync.stderr)")
            #expect(sync.stdout.hasPrefix("Synced: 1 uploaded"), "\(sync.stdout)")
            let status = try #require(try await device.ivy.run("status", "--json").json() as? [String: Any])
            #expect(status["sync_running"] as? Bool == false, "doctor holds no lock")
            await emulator.state.clearFaults()
            await emulator.state.releaseHeld()
            let done = await doctor.finish()
            #expect(try Self.findings(done)["sign-in"]?["level"] as? String == "ok", "\(done.stdout)")
        }
    }

    @Test(
        "a server that takes the request and never answers: doctor ends at its deadline and names that server",
        // A guard against the hang it tests, not a measure: a loaded machine gets all it needs.
        .timeLimit(.minutes(10)))
    func silentServer() async throws {
        try await withEmulator { emulator in
            let device = try await SignInHarness.signedIn(emulator)
            await emulator.state.addFault(FaultRule(method: "GET", pathContains: "/drive/v3/about", hold: true))
            // Long enough for the sign-in's refresh on a loaded machine (10 s once ran out, in a
            // whole suite run beside two builds); the held answer never comes.
            device.ivy.doctorDeadline = .seconds(30)
            let doctor = try await device.ivy.run("doctor", "--json")
            #expect(doctor.status == 1)
            let network = try #require(try Self.findings(doctor)["network"], "\(doctor.stdout)")
            #expect(
                network["detail"] as? String
                    == "the server this sign-in was made at, \(emulator.baseURL.absoluteString), "
                    + "did not answer within 30 s")
            #expect(network["level"] as? String == "problem")
            #expect(try Self.findings(doctor)["sign-in"]?["level"] as? String == "ok", "found before the deadline")
            await emulator.state.releaseHeld()
        }
    }
}
