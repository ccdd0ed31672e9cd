import Foundation
import GRDB
import GoogleEmulator
import IvyTestSupport
import Synchronization
import Testing

/// `ivy sync --watch --json` as a child process: its JSON lines as they come, ended with SIGTERM.
final class WatchProcess: Sendable {
    let child: Child
    private let cursor = Mutex(0)

    private init(_ child: Child) { self.child = child }

    /// Starts the watch in `ivy`'s home (`interval` seconds between looks at Drive) for as long
    /// as `body` runs; then it is killed, if it still runs, whatever `body` did.
    static func with<T>(
        _ ivy: IvyHome, interval: Int = 2, arguments: [String] = [], _ body: (WatchProcess) async throws -> T
    ) async throws -> T {
        let command = ivy.command(["sync", "--watch", "--json", "--interval", String(interval)] + arguments)
        return try await withChild(command) { child in try await body(WatchProcess(child)) }
    }

    /// The next event (after those already read) for which `matches` holds; events passed
    /// over on the way are returned too, in order. Fails the test if the watch ends first or
    /// nothing matches within ten minutes (a guard against hanging, not a synchronisation).
    @discardableResult
    func next(
        _ what: String, sourceLocation: SourceLocation = #_sourceLocation,
        where matches: @escaping @Sendable ([String: Any]) -> Bool
    ) async throws -> (match: [String: Any], passed: [[String: Any]]) {
        let start = cursor.withLock { $0 }
        let found: (Int, [Int])?
        do {
            found = try await child.waitUntil("print \(what)", within: .seconds(600)) { progress -> (Int, [Int])? in
                let lines = Self.lines(progress.stdout)
                var passed: [Int] = []
                for index in lines.indices.dropFirst(start) {
                    if matches(Self.decode(lines[index])) { return (index, passed) }
                    passed.append(index)
                }
                return nil
            }
        } catch let error as ChildError {
            Issue.record("\(error)", sourceLocation: sourceLocation)
            throw error
        }
        guard let found else {
            Issue.record("the watch never printed \(what); it printed: \(lines)", sourceLocation: sourceLocation)
            throw WatchTestError.noSuchEvent(what)
        }
        cursor.withLock { $0 = found.0 + 1 }
        let lines = lines
        return (Self.decode(lines[found.0]), found.1.map { Self.decode(lines[$0]) })
    }

    /// The whole lines it printed so far.
    var lines: [String] { Self.lines(child.stdout) }

    private static func lines(_ text: String) -> [String] {
        text.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init)
    }

    static func decode(_ line: String) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]) ?? ["unreadable": line]
    }

    /// Sends `signal` and waits for the process to end; its status and standard error.
    func stop(_ signal: Int32 = SIGTERM) async throws -> (status: Int32, stderr: String) {
        child.send(signal)
        let result = try await child.finish()
        return (result.status, result.stderr)
    }
}

enum WatchTestError: Error {
    case noSuchEvent(String)
}

extension [String: Any] {
    var event: String? { self["event"] as? String }
    var trigger: String? { self["trigger"] as? String }
    var report: [String: Any] { self["report"] as? [String: Any] ?? [:] }

    /// How many books (or clips) the sync reported under `key` (`uploaded`, `downloaded`...).
    func books(_ key: String) -> Int { (report[key] as? [String: Int])?["books"] ?? 0 }

    var isIdle: Bool {
        event == "sync"
            && ["uploaded", "downloaded", "merged", "deleted_remote", "deleted_local"].allSatisfy {
                books($0) == 0
            }
    }
}

@Suite("ivy sync --watch through the binary")
struct WatchTests {
    @Test("it syncs when it starts, and a local change about a second later with no command; SIGTERM exits 0")
    func localChange() async throws {
        try await withEmulator { emulator in
            let laptop = try await SignInHarness.signedIn(emulator)
            try await laptop.addLibrary(books: 2, clips: 0)
            // Polls too far apart to carry the change: only the local trigger can.
            try await WatchProcess.with(laptop.ivy, interval: 600) { watch in
                let start = try await watch.next("the first sync") { $0.event == "sync" }.match
                #expect(start.trigger == "start" && start.books("uploaded") == 2, "\(start)")

                let id = try await laptop.ivy.id("book", "add", "--title", "Typed while watching")
                let local = try await watch.next("the local change's sync") { $0.event == "sync" }.match
                #expect(local.trigger == "local change" && local.books("uploaded") == 1, "\(local)")
                let names = await emulator.state.dump().map(\.name)
                #expect(names.contains("book_\(id).json"), "\(names)")
                #expect(try laptop.ivy.count("SELECT count(*) FROM sync_queue") == 0)

                let stopped = try await watch.stop()
                #expect(stopped.status == 0 && stopped.stderr.isEmpty, "\(stopped)")
                let log = try String(contentsOfFile: laptop.ivy.home + "/ivy.log", encoding: .utf8)
                #expect(
                    log.contains("watch started") && log.contains("trigger=local change")
                        && log.contains("watch stopped"))
            }
        }
    }

    @Test("a change made on another device arrives at the next poll; an idle poll costs one request")
    func remoteChange() async throws {
        try await withEmulator { emulator in
            let phone = try await SignInHarness.signedIn(emulator)
            try await phone.addLibrary(books: 1, clips: 0)
            #expect(try await phone.ivy.run("sync").status == 0)
            let server = try await SignInHarness.signedIn(emulator)
            try await WatchProcess.with(server.ivy, interval: 2) { watch in
                let first = try await watch.next("the first sync") { $0.event == "sync" }.match
                #expect(first.books("downloaded") == 1, "\(first)")
                let idle = try await watch.next("an idle poll") { $0.trigger == "poll" }.match
                #expect(idle.isIdle && idle.report["requests"] as? Int == 1, "\(idle)")

                let id: String = try #require(phone.ivy.sql("SELECT id FROM books").first?["id"])
                #expect(try await phone.ivy.run("book", "update", id, "--title", "Renamed on the phone").status == 0)
                #expect(try await phone.ivy.run("sync").status == 0)
                let pulled = try await watch.next("the download") { $0.books("downloaded") == 1 }.match
                #expect(pulled.trigger == "poll", "\(pulled)")
                #expect(try server.ivy.sql("SELECT title FROM books").first?["title"] == "Renamed on the phone")
                #expect(try await watch.stop().status == 0)
            }
        }
    }

    @Test("SIGTERM mid-sync finishes the operations in flight, starts no more, exits 0; the next sync does the rest")
    func sigtermMidSync() async throws {
        try await withEmulator { emulator in
            let laptop = try await SignInHarness.signedIn(emulator)
            try await laptop.addLibrary(books: 30, clips: 0)
            await emulator.state.addFault(FaultRule(method: "POST", pathContains: "/upload/", hold: true))
            try await WatchProcess.with(laptop.ivy, interval: 600) { watch in
                await emulator.state.waitForHeld(count: 1)
                watch.child.send(SIGTERM)
                try await watch.next("the stop heard") { $0.event == "stopping" }
                await emulator.state.clearFaults()
                await emulator.state.releaseHeld()
                let synced = try await watch.next("the interrupted sync") { $0.event == "sync" }.match
                let stopped = try await watch.stop()
                #expect(stopped.status == 0 && stopped.stderr.isEmpty, "\(stopped)")
                let uploaded = synced.books("uploaded")
                let left = synced.report["left_for_next_sync"] as? Int ?? 0
                #expect(uploaded > 0 && left > 0 && uploaded + left == 30, "\(synced)")
                #expect(try laptop.ivy.count("SELECT count(*) FROM sync_queue") == left)
                #expect(try laptop.ivy.count("SELECT count(*) FROM sync_manifest") == uploaded)

                let rest = try await laptop.ivy.run("sync", "--json")
                #expect(rest.status == 0, "\(rest.stderr)")
                let report = try #require(try rest.json() as? [String: Any])
                #expect(["report": report].books("uploaded") == left, "\(rest.stdout)")
                let names = await emulator.state.dump().filter { !$0.isFolder }.map(\.name)
                #expect(names.count == 30 && Set(names).count == 30, "every book once on Drive: \(names.count)")
            }
        }
    }

    @Test("a second SIGTERM stops at once, with Drive still holding the uploads; the next sync loses nothing")
    func secondSignal() async throws {
        try await withEmulator { emulator in
            let laptop = try await SignInHarness.signedIn(emulator)
            try await laptop.addLibrary(books: 20, clips: 0)
            await emulator.state.addFault(FaultRule(method: "POST", pathContains: "/upload/", hold: true))
            try await WatchProcess.with(laptop.ivy, interval: 600) { watch in
                await emulator.state.waitForHeld(count: 1)
                watch.child.send(SIGTERM)
                try await watch.next("the stop heard") { $0.event == "stopping" }
                let stopped = try await watch.stop()
                #expect(stopped.status == 0, "\(stopped)")
                let log = try String(contentsOfFile: laptop.ivy.home + "/ivy.log", encoding: .utf8)
                #expect(log.contains("sync cancelled") && log.contains("watch stopped"), "\(log)")
                #expect(!log.contains("backing off") && !watch.lines.contains { $0.contains("failed") }, "\(log)")
                #expect(try laptop.ivy.sql("SELECT value FROM settings WHERE key = 'last_error'").isEmpty)
                await emulator.state.clearFaults()
                await emulator.state.releaseHeld()

                let rest = try await laptop.ivy.run("sync")
                #expect(rest.status == 0, "\(rest.stderr)")
                let names = await emulator.state.dump().filter { !$0.isFolder }.map(\.name)
                #expect(names.count == 20 && Set(names).count == 20, "every book once on Drive: \(names.count)")
            }
        }
    }

    @Test("cron's --auto skips silently while a watch sync runs; between watch syncs the lock is free")
    func interleaving() async throws {
        try await withEmulator { emulator in
            let laptop = try await SignInHarness.signedIn(emulator)
            try await laptop.addLibrary(books: 1, clips: 0)
            #expect(try await laptop.ivy.run("config", "set", "auto_sync_cooldown", "0").status == 0)
            // Only local changes start the watch's syncs here, so the test decides when they run.
            try await WatchProcess.with(laptop.ivy, interval: 600) { watch in
                try await watch.next("the first sync") { $0.event == "sync" }

                // A watch sync held on Drive's answer holds the lock: cron's --auto skips, silently.
                await emulator.state.addFault(
                    FaultRule(method: "GET", pathContains: "/drive/v3/changes?", nth: 1, hold: true))
                try laptop.ivy.execute("UPDATE books SET title = 'Edited while the watch syncs'")
                await emulator.state.waitForHeld(count: 1)
                let auto = try await laptop.ivy.runBinaryAsync("sync", "--auto")
                #expect(auto.status == 0 && auto.stdout.isEmpty && auto.stderr.isEmpty, "\(auto)")
                await emulator.state.clearFaults()
                await emulator.state.releaseHeld()
                let pushed = try await watch.next("the edit's upload") { $0.books("uploaded") == 1 }.match
                #expect(pushed.trigger == "local change", "\(pushed)")

                // Between the watch's syncs, syncs by hand and from cron run.
                #expect(try await laptop.ivy.runBinaryAsync("sync").status == 0)
                let lock = try HeldLock(path: laptop.ivy.home + "/ivy.lock")
                try laptop.ivy.execute("UPDATE books SET title = 'Edited while another sync runs'")
                let busy = try await watch.next("the busy lock") { $0.event == "busy" }.match
                #expect((busy["reason"] as? String)?.contains("another sync is running (process \(getpid()))") == true)
                lock.release()
                let after = try await watch.next("the sync once the lock is free") { $0.event == "sync" }.match
                #expect(after.books("uploaded") == 1, "\(after)")
                #expect(try await watch.stop().status == 0)
            }
        }
    }

    @Test("with Drive down it backs off (twice the interval, logged) and recovers by itself when Drive is back")
    func backoffAndRecovery() async throws {
        let first = try await GoogleEmulator.start()
        var second: GoogleEmulator?
        do {
            let laptop = try await SignInHarness.signedIn(first)
            try await WatchProcess.with(laptop.ivy, interval: 2) { watch in
                try await watch.next("the first sync") { $0.event == "sync" }
                await first.stop()
                _ = try await laptop.ivy.id("book", "add", "--title", "Added while Drive is down")
                let failed = try await watch.next("a failed sync") { $0.event == "failed" }.match
                #expect(failed["retry_in_s"] as? Int == 4, "\(failed)")
                #expect((failed["error"] as? String)?.isEmpty == false)
                let port = try #require(first.baseURL.port)
                second = try await GoogleEmulator.start(port: port, state: first.state)
                let recovered = try await watch.next("the sync after Drive is back") { $0.event == "sync" }.match
                #expect(recovered.trigger == "retry" && recovered.books("uploaded") == 1, "\(recovered)")
                #expect(try await watch.stop().status == 0)
                let log = try String(contentsOfFile: laptop.ivy.home + "/ivy.log", encoding: .utf8)
                #expect(log.contains("watch backing off") && log.contains("retry_in_s=4"), "\(log)")
            }
        } catch {
            await second?.stop()
            throw error
        }
        await second?.stop()
    }

    @Test(
        "in a journal (no terminal, no --json), the watch says when it goes on after a sign-in, not only when it stops")
    func resumedInJournal() async throws {
        try await withEmulator { emulator in
            let laptop = try await SignInHarness.signedIn(emulator)
            _ = try await laptop.ivy.id("book", "add", "--title", "Dune")
            try await withChild(laptop.ivy.command(["sync", "--watch", "--interval", "2"])) { watch in
                let first = try await watch.firstMatch(of: /(Synced: 1 uploaded)/, what: "the first sync")
                #expect(first != nil, "\(watch.stdout)\(watch.stderr)")
                await emulator.state.revoke(email: "alice@example.com")
                let waiting = try await watch.firstMatch(
                    of: /(signed out \(.*\); waiting for `ivy login`)/, in: .error, what: "the sign-out")
                #expect(waiting != nil, "\(watch.stderr)")
                #expect(try await laptop.login().status == 0)
                let resumed = try await watch.firstMatch(
                    of: /\d{4}-\d\d-\d\d \d\d:\d\d:\d\d [+-]\d\d:\d\d (signed in again: syncing goes on)\n/,
                    what: "that it goes on")
                #expect(resumed != nil, "\(watch.stdout)")
                watch.send(SIGTERM)
                #expect(try await watch.finish().status == 0)
            }
        }
    }

    @Test("signed out at Google: it says so once and waits; after ivy login it goes on by itself")
    func signedOut() async throws {
        try await withEmulator { emulator in
            let laptop = try await SignInHarness.signedIn(emulator)
            try await WatchProcess.with(laptop.ivy, interval: 2) { watch in
                try await watch.next("the first sync") { $0.event == "sync" }
                await emulator.state.revoke(email: "alice@example.com")
                let waiting = try await watch.next("the sign-out") { $0.event == "waiting" }.match
                #expect((waiting["reason"] as? String)?.contains("ivy login") == true, "\(waiting)")
                _ = try await laptop.ivy.id("book", "add", "--title", "Added while signed out")
                #expect(try await laptop.login().status == 0)
                let resumed = try await watch.next("the sync after login") { $0.event == "sync" }
                #expect(resumed.match.books("uploaded") == 1, "\(resumed.match)")
                #expect(!resumed.passed.contains { $0.event == "waiting" }, "said once: \(resumed.passed)")
                #expect(
                    resumed.passed.last?.event == "resumed"
                        && resumed.passed.last?["reason"] as? String == "signed in again: syncing goes on",
                    "said before the sync: \(resumed.passed)")
                #expect(try await watch.stop().status == 0)
            }
        }
    }
}

@Suite("ivy sync --watch in-process")
struct WatchCommandTests {
    @Test(
        "options it refuses, each with the fix",
        arguments: [
            (["sync", "--interval", "5"], "--interval is for --watch"),
            (["sync", "--watch", "--interval", "1"], "from 2 to 86400 seconds"),
            (["sync", "--watch", "--interval", "86401"], "from 2 to 86400 seconds"),
            (["sync", "--watch", "--auto"], "use one of them"),
            (["sync", "--watch", "--dry-run"], "ivy sync --dry-run"),
            (["sync", "--watch", "--allow-deletes"], "ivy sync --allow-deletes"),
        ])
    func refused(arguments: [String], message: String) async throws {
        let result = try await IvyHome().run(arguments)
        #expect(result.status == 64 && result.stderr.contains(message), "\(result.stderr)")
    }

    @Test("on a terminal it keeps one status line; interrupted, it clears it and exits 0")
    func statusLine() async throws {
        try await withEmulator { emulator in
            let laptop = try await SignInHarness.signedIn(emulator)
            let watch = laptop.ivy.start(["sync", "--watch"], errorOnTerminal: true)
            _ = await watch.error.first(/(up to date)/)
            watch.interrupt()
            let result = await watch.finish()
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stderr.hasPrefix("\r\u{1B}[Kwatching:") && result.stderr.hasSuffix("\r\u{1B}[K"))
            #expect(!result.stderr.contains("\n"), "one line, rewritten: \(result.stderr.debugDescription)")
            #expect(result.stdout == "Stopped watching.\n")
        }
    }

    @Test("without --json or a terminal (a service's journal) it prints what changed, not idle polls")
    func journal() async throws {
        try await withEmulator { emulator in
            let laptop = try await SignInHarness.signedIn(emulator)
            try await laptop.addLibrary(books: 1, clips: 0)
            let watch = laptop.ivy.start(["sync", "--watch", "--interval", "2"])
            _ = await watch.output.first(/(Synced: 1 uploaded)/)
            watch.interrupt()
            let result = await watch.finish()
            #expect(result.status == 0)
            let lines = result.stdout.split(separator: "\n")
            #expect(lines.first?.hasPrefix("Watching: ") == true, "\(lines)")
            #expect(lines.dropFirst().first?.contains(" Synced: 1 uploaded; ") == true, "\(lines)")
            #expect(
                lines.dropFirst(2) == [
                    "Stopping: the operations in flight finish first; interrupt again to stop at once",
                    "Stopped watching.",
                ], "no line for an idle poll: \(lines)")
        }
    }
}
