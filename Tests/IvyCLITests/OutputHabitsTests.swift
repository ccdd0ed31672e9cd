import Foundation
import GoogleEmulator
import IvyTestSupport
import Testing

/// Issue 17, item 3: the output habits of rclone and restic. `-q` errors only, `-v` a line
/// per operation, `ivy.log` as JSON lines, and `--json` on every command that prints a list.
@Suite("Output habits: -q, -v, --log-format json, --json lists")
struct OutputHabitsTests {
    @Test("sync -q prints nothing on success, and still the failure (exit 5) when an upload fails")
    func quiet() async throws {
        try await withEmulator { emulator in
            let device = try await SignInHarness.signedIn(emulator)
            try await device.addLibrary(books: 2, clips: 1)
            let synced = try await device.ivy.run("sync", "-q")
            #expect(synced.status == 0)
            #expect(synced.stdout.isEmpty && synced.stderr.isEmpty, "\(synced.stdout)\(synced.stderr)")
            #expect(try device.ivy.count("SELECT count(*) FROM sync_manifest") == 3, "the quiet sync did sync")

            let book = try await device.ivy.id("book", "add", "--title", "Dune")
            await emulator.state.addFault(
                FaultRule(method: "POST", pathContains: "/upload", status: 403, reason: "forbidden"))
            let failed = try await device.ivy.run("sync", "--quiet")
            #expect(failed.status == 5)
            #expect(failed.stdout.isEmpty, "\(failed.stdout)")
            #expect(failed.stderr.contains("failed: book \(book): "), "\(failed.stderr)")
        }
    }

    @Test("sync -q still says why a sync could not run, with its exit status")
    func quietError() async throws {
        let ivy = try IvyHome()
        _ = try await ivy.id("book", "add", "--title", "Dune")
        let result = try await ivy.run("sync", "-q")
        #expect(result.status == 3)
        #expect(result.stdout.isEmpty)
        #expect(result.stderr.contains("run `ivy login`"), "\(result.stderr)")
    }

    @Test("sync -v prints one line per operation as it finishes, then the summary")
    func verbose() async throws {
        try await withEmulator { emulator in
            let laptop = try await SignInHarness.signedIn(emulator)
            try await laptop.addLibrary(books: 3, clips: 0)
            let up = try await laptop.ivy.run("sync", "-v")
            #expect(up.status == 0, "\(up.stderr)")
            let uploaded = up.lines.filter { $0.hasPrefix("uploaded book ") }
            #expect(uploaded.count == 3, "\(up.stdout)")
            #expect(
                Set(uploaded.compactMap { $0.split(separator: "\"").dropFirst().first.map(String.init) })
                    == ["Book 0", "Book 1", "Book 2"])
            #expect(up.lines.count == 4 && up.lines.last?.hasPrefix("Synced: 3 uploaded") == true, "\(up.stdout)")

            let phone = try await SignInHarness.signedIn(emulator)
            let down = try await phone.ivy.run("sync", "--verbose")
            #expect(down.lines.filter { $0.hasPrefix("downloaded book ") && $0.hasSuffix("\"") }.count == 3)
            #expect(down.lines.last?.hasPrefix("Synced: 3 downloaded") == true, "\(down.stdout)")
        }
    }

    @Test("sync -v says a failure as it happens, once, on standard error")
    func verboseFailure() async throws {
        try await withEmulator { emulator in
            let device = try await SignInHarness.signedIn(emulator)
            let book = try await device.ivy.id("book", "add", "--title", "Dune")
            await emulator.state.addFault(
                FaultRule(method: "POST", pathContains: "/upload", status: 403, reason: "forbidden"))
            let result = try await device.ivy.run("sync", "-v")
            #expect(result.status == 5)
            let failures = result.stderr.split(separator: "\n").filter {
                $0.hasPrefix("failed: book \(book) \"Dune\": ")
            }
            #expect(failures.count == 1, "\(result.stderr)")
            #expect(result.lines.last?.hasPrefix("Synced: nothing to do") == true, "\(result.stdout)")
        }
    }

    @Test(
        "-q with -v (or with --json, --dry-run; -v with --auto) is a usage error",
        arguments: [
            (["sync", "-q", "-v"], "--quiet and --verbose"),
            (["sync", "--quiet", "--json"], "drop --quiet"),
            (["sync", "-v", "--json"], "drop --verbose"),
            (["sync", "-v", "--auto"], "drop --verbose"),
            (["sync", "-q", "--dry-run"], "--dry-run prints the plan"),
            (["sync", "--watch", "-q", "-v"], "--quiet and --verbose"),
        ])
    func conflicts(arguments: [String], message: String) async throws {
        let ivy = try IvyHome()
        let result = try await ivy.run(arguments)
        #expect(result.status == 64)
        #expect(result.stderr.contains(message), "\(result.stderr)")
        #expect(result.stdout.isEmpty)
    }

    @Test("in a watch's journal, -v prints each operation's line with its time, and -q only problems")
    func watchJournal() async throws {
        try await withEmulator { emulator in
            let laptop = try await SignInHarness.signedIn(emulator)
            try await laptop.addLibrary(books: 2, clips: 0)
            let verbose = laptop.ivy.start(["sync", "--watch", "-v"])
            _ = await verbose.output.first(/(Synced: 2 uploaded)/)
            verbose.interrupt()
            let said = await verbose.finish()
            #expect(said.status == 0, "\(said.stderr)")
            let uploaded = said.lines.filter {
                $0.wholeMatch(of: /\d{4}-\d\d-\d\d \d\d:\d\d:\d\d [+-]\d\d:\d\d uploaded book \S+ "Book \d"/) != nil
            }
            #expect(uploaded.count == 2, "\(said.stdout)")

            _ = try await laptop.ivy.id("book", "add", "--title", "Dune")
            let quiet = laptop.ivy.start(["sync", "--watch", "-q"])
            // The quiet watch prints nothing for a sync that went well: the queue says when it ran.
            var polls = 0
            while try laptop.ivy.count("SELECT count(*) FROM sync_queue") > 0, polls < 1500 {
                try await Task.sleep(for: .milliseconds(20))
                polls += 1
            }
            #expect(polls < 1500, "the quiet watch never synced")
            quiet.interrupt()
            let silent = await quiet.finish()
            #expect(silent.status == 0)
            #expect(silent.stdout.isEmpty && silent.stderr.isEmpty, "\(silent.stdout)\(silent.stderr)")
        }
    }

    /// Every line of ivy.log as a JSON object with time, level and message (recording failures).
    static func jsonLog(_ home: String) throws -> [[String: String]] {
        let log = try String(contentsOfFile: home + "/ivy.log", encoding: .utf8)
        let lines = log.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
        #expect(!lines.isEmpty && log.hasSuffix("\n"))
        return try lines.map { line in
            let object = try #require(
                try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: String], "\(line)")
            #expect(object["level"] != nil && object["message"] != nil, "\(line)")
            #expect(
                object["time"].flatMap { ISO8601DateFormatter.withFractionalSeconds.date(from: $0) } != nil, "\(line)")
            return object
        }
    }

    @Test("--log-format json writes ivy.log as one JSON object per line, a name with quotes and newlines escaped")
    func jsonLogOption() async throws {
        try await withEmulator { emulator in
            let device = try await SignInHarness.signedIn(emulator)
            try await device.addLibrary(books: 1, clips: 0)
            #expect(try await device.ivy.run("sync", "--log-format", "json").status == 0)
            let books = try #require(await emulator.state.dump().first { $0.isFolder && $0.name == "books" })
            let name = "say \"hi\"\n2026-01-01T00:00:00Z error forged\u{1B}[2J"
            await emulator.state.putFile(
                email: "alice@example.com", name: name, parents: [books.id], content: Data("{}".utf8))
            let sync = try await device.ivy.run("--log-format", "json", "sync")
            #expect(sync.status == 0, "\(sync.stderr)")
            let lines = try Self.jsonLog(device.ivy.home)
            #expect(lines.contains { $0["message"] == "skipped" && $0["entity"] == name }, "\(lines)")
            #expect(
                lines.contains { $0["message"] == "sync finished" && $0["level"] == "info" && $0["summary"] != nil })
            let token = try device.storedToken()
            let log = try String(contentsOfFile: device.ivy.home + "/ivy.log", encoding: .utf8)
            for case let secret as String in [token["access_token"], token["refresh_token"]] {
                #expect(!log.contains(secret), "a token in the log")
            }
        }
    }

    @Test("the setting log_format = json does the same; text stays the default, and --log-format text overrides")
    func jsonLogSetting() async throws {
        try await withEmulator { emulator in
            let device = try await SignInHarness.signedIn(emulator)
            try await device.addLibrary(books: 1, clips: 0)
            #expect(try await device.ivy.run("sync").status == 0)
            let text = try String(contentsOfFile: device.ivy.home + "/ivy.log", encoding: .utf8)
            #expect(!text.isEmpty && !text.contains("{"), "text by default: \(text)")
            #expect(text.split(separator: "\n").allSatisfy { !$0.hasPrefix("{") })
            try FileManager.default.removeItem(atPath: device.ivy.home + "/ivy.log")

            #expect(try await device.ivy.run("config", "set", "log_format", "JSON").stdout == "log_format = json\n")
            _ = try await device.ivy.id("book", "add", "--title", "Dune")
            #expect(try await device.ivy.run("sync").status == 0)
            #expect(try Self.jsonLog(device.ivy.home).contains { $0["message"] == "sync finished" })
            try FileManager.default.removeItem(atPath: device.ivy.home + "/ivy.log")

            #expect(try await device.ivy.run("sync", "--log-format", "text").status == 0)
            let overridden = try String(contentsOfFile: device.ivy.home + "/ivy.log", encoding: .utf8)
            #expect(overridden.contains(" info sync finished"), "\(overridden)")

            let bad = try await device.ivy.run("config", "set", "log_format", "yaml")
            #expect(bad.status == 64 && bad.stderr.contains("text or json"), "\(bad.stderr)")
            let badOption = try await device.ivy.run("sync", "--log-format", "yaml")
            #expect(badOption.status == 64, "\(badOption.stderr)")
        }
    }

    @Test("config list --json prints every setting as key, value and source; a secret's value is null")
    func configListJSON() async throws {
        let ivy = try IvyHome()
        #expect(try await ivy.run("config", "set", "client_secret", "GOCSPX-very-secret-value").status == 0)
        #expect(try await ivy.run("config", "set", "concurrency", "4").status == 0)
        let result = try await ivy.run("config", "list", "--json")
        #expect(result.status == 0)
        #expect(!result.stdout.contains("GOCSPX-very-secret-value"))
        let items = try #require(try result.json() as? [[String: Any]])
        let byKey = Dictionary(uniqueKeysWithValues: items.map { ($0["key"] as? String ?? "", $0) })
        #expect(byKey["concurrency"]?["value"] as? String == "4" && byKey["concurrency"]?["source"] as? String == "set")
        #expect(byKey["log_format"]?["value"] as? String == "text")
        #expect(byKey["log_format"]?["source"] as? String == "default")
        #expect(byKey["client_secret"]?["value"] is NSNull && byKey["client_secret"]?["source"] as? String == "set")
        #expect(byKey["client_id"]?["value"] is NSNull && byKey["client_id"]?["source"] as? String == "default")
        #expect(items.allSatisfy { Set($0.keys) == ["key", "value", "source"] })
    }
}

extension ISO8601DateFormatter {
    /// RFC 3339 with milliseconds, as ivy.log's JSON lines stamp them.
    static var withFractionalSeconds: ISO8601DateFormatter {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter
    }

    @Test("-q still says a change held back after failing, which makes the exit 5")
    func quietHeld() async throws {
        try await withEmulator { emulator in
            let device = try await SignInHarness.signedIn(emulator)
            try await device.addLibrary(books: 1, clips: 0)
            try device.ivy.execute("UPDATE sync_queue SET attempts = 3, last_error = 'Drive is full'")
            let result = try await device.ivy.run("sync", "-q")
            #expect(result.status == 5 && result.stdout.isEmpty, "\(result)")
            #expect(result.stderr.contains("1 change held back after failing 3 times"), "\(result.stderr)")
            #expect(result.stderr.contains("ivy retry-failed"))
        }
    }

    @Test(
        """
        every --json document has every key in snake case and every key present: an absent value \
        is null, and a time is RFC 3339 (its milliseconds under _ms), in book and clip show, queue, status, \
        doctor and a sync's report alike
        """)
    func oneConvention() async throws {
        try await withEmulator { emulator in
            let device = try await SignInHarness.signedIn(emulator)
            let book = try await device.ivy.id("book", "add", "--title", "Dune")
            let shown = try #require(try await device.ivy.run("book", "show", book, "--json").json() as? [String: Any])
            #expect(shown["artist"] is NSNull && shown["artwork"] is NSNull && shown["uri"] is NSNull, "\(shown)")
            #expect(shown["created_at"] is String && shown["updated_at_ms"] is Int, "\(shown)")
            let queued = try await device.ivy.run("queue", "--json").json()

            let synced = try await device.ivy.run("sync", "--json")
            #expect(synced.status == 0, "\(synced.stderr)")
            let report = try #require(try synced.json() as? [String: Any])
            #expect(report["deletions_held"] is NSNull && report.keys.contains("full_listing"), "\(report)")
            #expect(report["duration_ms"] is Int, "\(report)")

            var documents: [Any] = [report, shown, queued]
            for command in [
                ["status"], ["queue"], ["doctor"], ["book", "list"], ["clip", "list"], ["config", "list"],
            ] {
                documents.append(try await device.ivy.run(command + ["--json"]).json())
            }
            let status = try #require(documents[3] as? [String: Any])
            #expect(status["quota_units_24h"] is Int && status["requests_24h"] is Int, "\(status)")
            #expect(status["refresh_token_present"] as? Bool == true, "\(status)")
            let keys = documents.flatMap(Self.keys)
            #expect(!keys.isEmpty)
            #expect(keys.allSatisfy { $0.allSatisfy { $0.isLowercase || $0.isNumber || $0 == "_" } }, "\(keys)")
            // A number as large as a time in milliseconds (after 2001) only under a key ending _ms.
            let epochs = documents.flatMap { Self.numbers($0, key: "") }.filter { $0.value >= 1_000_000_000_000 }
            #expect(!epochs.isEmpty && epochs.allSatisfy { $0.key.hasSuffix("_ms") }, "\(epochs)")
            let times = documents.flatMap { Self.strings($0, key: "") }.filter {
                $0.key.hasSuffix("_at") || ["last_sync", "last_success", "next_auto_sync"].contains($0.key)
            }
            #expect(times.count >= 5, "\(times)")
            #expect(
                times.allSatisfy { $0.value.wholeMatch(of: /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ/) != nil }, "\(times)")
        }
    }

    /// Every number of a document with its key, nested ones too.
    private static func numbers(_ value: Any, key: String) -> [(key: String, value: Double)] {
        switch value {
        case let object as [String: Any]: object.flatMap { numbers($0.value, key: $0.key) }
        case let array as [Any]: array.flatMap { numbers($0, key: key) }
        case is Bool: []
        case let number as NSNumber: [(key, number.doubleValue)]
        default: []
        }
    }

    /// Every string of a document with its key, nested ones too.
    private static func strings(_ value: Any, key: String) -> [(key: String, value: String)] {
        switch value {
        case let object as [String: Any]: object.flatMap { strings($0.value, key: $0.key) }
        case let array as [Any]: array.flatMap { strings($0, key: key) }
        case let string as String: [(key, string)]
        default: []
        }
    }

    /// Every key of a document, nested ones too.
    private static func keys(_ value: Any) -> [String] {
        switch value {
        case let object as [String: Any]: object.keys + object.values.flatMap(keys)
        case let array as [Any]: array.flatMap(keys)
        default: []
        }
    }
}
