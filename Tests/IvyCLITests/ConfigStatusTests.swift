import Foundation
import GRDB
import IvyCore
import Testing

@Suite("ivy config and ivy status")
struct ConfigStatusTests {
    let ivy: IvyHome
    init() throws { ivy = try IvyHome() }

    @Test("list shows every key with its default; set, get and unset round-trip")
    func roundTrip() async throws {
        let list = try await ivy.run("config", "list").stdout
        for key in [
            "sync_enabled", "auto_sync_cooldown", "concurrency", "client_id", "client_secret", "health_url",
            "last_sync_time", "last_success", "last_error",
        ] {
            #expect(list.contains(key))
        }
        #expect(try await ivy.run("config", "get", "auto_sync_cooldown").stdout == "300\n")
        #expect(try await ivy.run("config", "set", "sync_enabled", "no").stdout == "sync_enabled = false\n")
        #expect(try await ivy.run("config", "get", "sync_enabled").stdout == "false\n")
        #expect(try await ivy.run("config", "unset", "sync_enabled").status == 0)
        #expect(try await ivy.run("config", "get", "sync_enabled").stdout == "true\n")
        #expect(try await ivy.run("config", "get", "client_id").stdout == "")
    }

    @Test("the client secret is stored but never printed")
    func secretHidden() async throws {
        let secret = "GOCSPX-very-secret-value"
        let set = try await ivy.run("config", "set", "client_secret", secret)
        let get = try await ivy.run("config", "get", "client_secret")
        let list = try await ivy.run("config", "list")
        for result in [set, get, list] {
            #expect(!result.stdout.contains(secret) && !result.stderr.contains(secret))
        }
        #expect(get.stdout == "(set)\n")
        #expect(try ivy.sql("SELECT value FROM settings WHERE key = 'client_secret'").first?["value"] == secret)
    }

    @Test(
        "unknown keys, bad values and ivy's own keys are refused",
        arguments: [
            (["config", "get", "colour"], "unknown key 'colour'"),
            (["config", "set", "colour", "red"], "known keys"),
            (["config", "set", "trash_day", "5"], "unknown key 'trash_day'; did you mean 'trash_days'? The known"),
            (["config", "get", "Sync_Timout"], "did you mean 'sync_timeout'?"),
            (["config", "set", "auto_sync_cooldown", "soon"], "whole number"),
            (["config", "set", "sync_enabled", "perhaps"], "true or false"),
            (["config", "set", "concurrency", "0"], "1 to 32"),
            (["config", "set", "last_sync_time", "5"], "recorded by ivy"),
            (["config", "unset", "last_error"], "recorded by ivy"),
        ])
    func refused(arguments: [String], message: String) async throws {
        let result = try await ivy.run(arguments)
        #expect(result.status == 64)
        #expect(result.stderr.contains(message), "stderr: \(result.stderr)")
        if FileManager.default.fileExists(atPath: ivy.home + "/library.db") {
            #expect(try ivy.count("SELECT count(*) FROM settings") == 0)
        }
    }

    @Test("status reports the local state, as JSON with the documented keys")
    func status() async throws {
        let book = try await ivy.id("book", "add", "--title", "Dune")
        _ = try await ivy.id("book", "add", "--title", "Emma")
        try ivy.execute("UPDATE sync_queue SET attempts = 3, last_error = 'offline' WHERE entity_id = '\(book)'")
        try ivy.execute("INSERT INTO sync_manifest (entity_type, entity_id) VALUES ('book', '\(book)')")
        try ivy.execute(
            "INSERT INTO settings (key, value) VALUES "
                + "('last_sync_time', '1795000000000'), ('last_error', 'Drive is full')"
        )
        let object = try #require(try await ivy.run("status", "--json").json() as? [String: Any])
        #expect(
            Set(object.keys).isSuperset(of: [
                "authenticated", "account", "pending", "failed", "last_sync", "last_success", "last_error",
                "manifest_entries",
            ]))
        #expect(object["refresh_token_present"] as? Bool == false)
        #expect(object["authenticated"] as? Bool == false)
        #expect(object["account"] is NSNull)
        #expect(object["pending"] as? Int == 1)
        #expect(object["failed"] as? Int == 1)
        #expect(object["manifest_entries"] as? Int == 1)
        #expect(object["last_sync"] as? String == "2026-11-18T11:06:40Z")
        #expect(object["last_error"] as? String == "Drive is full")
        #expect(object["last_success"] is NSNull)
        let human = try await ivy.run("status").stdout
        #expect(human.contains("failed            1"))
        #expect(human.contains("last error        Drive is full"))
    }

    @Test("status gives the library's figures: books (archived ones), clips, and the audio's MP3s and bytes")
    func figures() async throws {
        let book = try await ivy.id("book", "add", "--title", "Dune")
        let archived = try await ivy.id("book", "add", "--title", "Emma")
        #expect(try await ivy.run("book", "archive", archived).status == 0)
        for (index, size) in [1000, 2500].enumerated() {
            _ = try await ivy.id(
                "clip", "add", "--book", book, "--start", String(index), "--duration", "1", "--audio",
                try ivy.mp3("c\(index).mp3", size: size))
        }
        let object = try #require(try await ivy.runBinaryAsync("status", "--json").json() as? [String: Any])
        #expect(object["books"] as? Int == 2 && object["books_archived"] as? Int == 1, "\(object)")
        #expect(object["clips"] as? Int == 2 && object["audio_files"] as? Int == 2, "\(object)")
        #expect(object["audio_bytes"] as? Int == 3500, "\(object)")
        #expect(object["quota_units_today"] as? Int == 0 && object["requests_today"] as? Int == 0, "\(object)")
        let human = try await ivy.runBinaryAsync("status").stdout
        #expect(human.contains("\nbooks             2 (1 archived)\nclips             2\n"), "\(human)")
        #expect(human.contains("\naudio             3,500 bytes in 2 MP3s\n"), "\(human)")
        #expect(
            human.contains(
                "\ngoogle quota      0 units in 0 requests in the last 24 hours; 0 today (Google's day, from midnight "
                    + "Pacific time)\n"), "\(human)")
    }

    @Test("status says where the library, the sign-in and the log are, and whether a sync runs now")
    func whereAndWhether() async throws {
        _ = try await ivy.id("book", "add", "--title", "Dune")
        let idle = try await ivy.run("status")
        #expect(idle.stdout.contains("sync running      no\n"), "\(idle.stdout)")
        #expect(idle.stdout.contains("library           \(ivy.home)/library.db\n"))
        #expect(idle.stdout.contains("sign-in file      \(ivy.home)/token.json\n"))
        #expect(idle.stdout.contains("log               \(ivy.home)/ivy.log\n"))
        let lock = try HeldLock(path: ivy.home + "/ivy.lock")
        let busy = try #require(try await ivy.run("status", "--json").json() as? [String: Any])
        #expect(busy["sync_running"] as? Bool == true && busy["sync_process"] as? Int == Int(getpid()))
        #expect(busy["library"] as? String == ivy.home + "/library.db")
        #expect(busy["token_file"] as? String == ivy.home + "/token.json")
        #expect(busy["log_file"] as? String == ivy.home + "/ivy.log")
        #expect(try await ivy.run("status").stdout.contains("sync running      yes (process \(getpid()))\n"))
        lock.release()
        let after = try #require(try await ivy.run("status", "--json").json() as? [String: Any])
        #expect(after["sync_running"] as? Bool == false && after["sync_process"] is NSNull)
    }
}

@Suite("Home directory and database file")
struct HomeTests {
    let ivy: IvyHome
    init() throws { ivy = try IvyHome() }

    @Test("--home wins over IVY_HOME, before or after the command name")
    func homeOption() async throws {
        let other = ivy.path + "/other"
        #expect(try await ivy.run("--home", other, "book", "add", "--title", "A").status == 0)
        #expect(try await ivy.run("book", "add", "--title", "B", "--home", other).status == 0)
        #expect(FileManager.default.fileExists(atPath: other + "/library.db"))
        #expect(try await ivy.run("book", "list", "--home", other).lines.count == 3)
        #expect(try await ivy.run("book", "list").stdout.contains("No books"))
    }

    @Test("without IVY_HOME, files follow XDG with private directories")
    func xdgLayout() async throws {
        var environment = ivy.environment
        environment["IVY_HOME"] = nil
        environment["XDG_DATA_HOME"] = ivy.path + "/data"
        ivy.environment = environment
        let book = try await ivy.id("book", "add", "--title", "Dune")
        _ = try await ivy.id(
            "clip", "add", "--book", book, "--start", "0", "--duration", "1", "--audio", try ivy.mp3("a.mp3"))
        let data = ivy.path + "/data/ivy"
        #expect(FileManager.default.fileExists(atPath: data + "/library.db"))
        for directory in [data, data + "/audio"] {
            let mode = try FileManager.default.attributesOfItem(atPath: directory)[.posixPermissions] as? Int
            #expect(mode == 0o700, "\(directory)")
        }
        // The standard fallback: ~/.local/share when XDG_DATA_HOME is unset.
        environment["XDG_DATA_HOME"] = nil
        ivy.environment = environment
        _ = try await ivy.id("book", "add", "--title", "Emma")
        #expect(FileManager.default.fileExists(atPath: ivy.path + "/.local/share/ivy/library.db"))
    }

    @Test("a library.db that is not SQLite is named in the error and left as it was")
    func notSQLite() async throws {
        try FileManager.default.createDirectory(atPath: ivy.home, withIntermediateDirectories: true)
        let content = Data(String(repeating: "my notes, not a database\n", count: 300).utf8)
        _ = FileManager.default.createFile(atPath: ivy.home + "/library.db", contents: content)
        let result = try await ivy.run("book", "add", "--title", "Dune")
        #expect(result.status == 1)
        #expect(result.stderr.contains(ivy.home + "/library.db") && result.stderr.contains("not an SQLite database"))
        #expect(FileManager.default.contents(atPath: ivy.home + "/library.db") == content)
        let entries = try FileManager.default.contentsOfDirectory(atPath: ivy.home)
        #expect(entries == ["library.db"])
    }

    @Test("a library.db from a newer ivy is refused, not migrated")
    func newerSchema() async throws {
        _ = try await ivy.id("book", "add", "--title", "Dune")
        try ivy.execute("INSERT INTO grdb_migrations (identifier) VALUES ('v2: from a newer ivy')")
        let result = try await ivy.run("book", "list")
        #expect(result.status == 1)
        #expect(result.stderr.contains("newer version of ivy") && result.stderr.contains("library.db"))
    }

    @Test("books written by another program are listed")
    func externalWriter() async throws {
        // Commands that only read create nothing, so a change makes the library.
        _ = try await ivy.id("config", "set", "concurrency", "4")
        try ivy.execute(
            "INSERT INTO books (id, title, position, created_at, updated_at) "
                + "VALUES ('abc-123', 'From elsewhere', 61, 1, 1)"
        )
        let list = try await ivy.run("book", "list")
        #expect(list.stdout.contains("From elsewhere") && list.stdout.contains("0:01:01"))
        let refused = try await ivy.run("status")
        #expect(refused.status == 0)
    }
}

@Suite("Help and version")
struct HelpTests {
    static let commands: [[String]] = [
        [], ["book"], ["book", "add"], ["book", "list"], ["book", "show"], ["book", "update"], ["book", "archive"],
        ["book", "unarchive"], ["book", "delete"], ["clip"], ["clip", "add"], ["clip", "list"], ["clip", "show"],
        ["clip", "update"], ["clip", "delete"], ["config"], ["config", "list"], ["config", "get"], ["config", "set"],
        ["config", "unset"], ["status"], ["login"], ["logout"], ["sync"], ["queue"], ["retry-failed"],
        ["reset-manifest"], ["check"], ["doctor"], ["trash"], ["trash", "list"], ["trash", "restore"],
        ["trash", "empty"], ["history"], ["restore"], ["export"], ["import"], ["completion"],
    ]

    @Test("the README names exactly the commands whose --help offers --json")
    func jsonCommands() async throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        let paragraph = try #require(readme.components(separatedBy: "\n\n").first { $0.contains("takes `--json`") })
        var named: Set<String> = []
        for match in paragraph.matches(of: /`([a-z -]+)(\|[a-z|]+)?`/) {
            let words = String(match.output.1).split(separator: " ").map(String.init)
            let alternatives = match.output.2.map { $0.dropFirst().split(separator: "|").map(String.init) } ?? []
            named.insert(words.joined(separator: " "))
            for other in alternatives { named.insert((words.dropLast() + [other]).joined(separator: " ")) }
        }
        var offering: Set<String> = []
        for command in Self.commands where !command.isEmpty {
            let help = try await IvyHome().run(command + ["--help"]).stdout
            if help.contains("\n  --json") { offering.insert(command.joined(separator: " ")) }
        }
        #expect(named.filter { !$0.hasPrefix("ivy ") && $0 != "--json" } == offering, "\(named) \(offering)")
    }

    @Test("completion prints the script a release installs, for bash, zsh and fish; another shell is refused")
    func completion() async throws {
        let ivy = try IvyHome()
        for shell in ["bash", "zsh", "fish"] {
            let printed = try await ivy.runBinaryAsync("completion", shell)
            let generated = try await ivy.runBinaryAsync("--generate-completion-script", shell)
            #expect(printed.status == 0 && printed.stderr.isEmpty, "\(shell): \(printed.stderr)")
            #expect(printed.stdout.hasSuffix("\n") && printed.stdout.contains("completion"), "\(shell)")
            let trimmed = printed.stdout.hasSuffix("\n") ? String(printed.stdout.dropLast()) : printed.stdout
            #expect(printed.stdout == generated.stdout || trimmed == generated.stdout, "\(shell)")
        }
        let tcsh = try await ivy.runBinaryAsync("completion", "tcsh")
        #expect(tcsh.status == 64 && tcsh.stderr.hasPrefix("Error: no completion for 'tcsh'; give bash, zsh or fish\n"))
    }

    @Test("every command has --help", arguments: commands)
    func help(command: [String]) async throws {
        let result = try await IvyHome().run(command + ["--help"])
        #expect(result.status == 0)
        #expect(result.stdout.contains("USAGE:"))
    }

    @Test("--version prints the version and the commit the binary's stamp names, or that it names none")
    func version() async throws {
        let ivy = try IvyHome()
        let plain = try await ivy.run("--version")
        #expect(plain.status == 0)
        #expect(
            plain.stdout.range(
                of: #"^ivy \d+\.\d+\.\d+ \(commit unknown: not built by scripts/package\)\n$"#,
                options: .regularExpression) != nil, "\(plain.stdout)")
        ivy.build = BuildStamp(commit: "abc1234")
        #expect(try await ivy.run("--version").stdout.hasSuffix(" (commit abc1234)\n"))
        ivy.build = BuildStamp(commit: "abc1234", dirty: true)
        #expect(try await ivy.run("--version").stdout.hasSuffix(" (commit abc1234, with uncommitted changes)\n"))
        ivy.build = BuildStamp(outsideGit: true)
        #expect(try await ivy.run("--version").stdout.hasSuffix(" (built outside git: no commit)\n"))
    }

    @Test("an unknown command is a usage error")
    func unknownCommand() async throws {
        let result = try await IvyHome().run("frobnicate")
        #expect(result.status == 64)
    }

    @Test(
        "the binary ends as the in-process run does: the same status and error text",
        arguments: [
            ["frobnicate"], ["book", "add", "--title", " "], ["book", "show", "00000000-0000-4000-8000-000000000000"],
            ["sync"], ["reset-manifest"], ["logout", "--yes"],
        ])
    func binaryAgrees(arguments: [String]) async throws {
        let ivy = try IvyHome()
        let binary = try await ivy.runBinaryAsync(arguments)
        let inProcess = try await ivy.run(arguments)
        #expect(binary.status == inProcess.status && binary.status != 0)
        #expect(binary.stderr == inProcess.stderr)
        #expect(binary.stdout == inProcess.stdout)
    }
}
