import Foundation
import GoogleEmulator
import IvyTestSupport
import Testing

/// Issue 19: a held change is always shown, cron hears once about a failure and nothing
/// about sign-in. What cron hears is what the `--auto` runs through the binary print.
@Suite("Nothing stuck in silence")
struct CronHearsOnceTests {
    @Test("a held change is named by every sync (exit 5), in --json and in status, until retry-failed")
    func heldChangeIsShown() async throws {
        try await withEmulator { emulator in
            let device = try await SignInHarness.signedIn(emulator)
            let book = try await device.ivy.id("book", "add", "--title", "Dune")
            await emulator.state.addFault(
                FaultRule(method: "POST", pathContains: "/upload", status: 403, reason: "forbidden"))
            for _ in 1...3 { #expect(try await device.ivy.run("sync").status == 5) }
            await emulator.state.clearFaults()

            let held = try await device.ivy.run("sync")
            #expect(held.status == 5, "exit 0 would mean everything is on Drive")
            #expect(held.stdout.contains("1 change held back after failing 3 times: book \(book) ("), "\(held.stdout)")
            #expect(held.stdout.contains("run `ivy retry-failed`"))
            let json = try #require(try await device.ivy.run("sync", "--json").json() as? [String: Any])
            let changes = try #require(json["held_changes"] as? [[String: Any]])
            #expect(changes.first?["entity"] as? String == "book \(book)")
            let status = try await device.ivy.run("status")
            #expect(status.stdout.contains("held back         book \(book): "), "\(status.stdout)")
            #expect(!status.stdout.contains("last error        -"))

            #expect(try await device.ivy.run("retry-failed").status == 0)
            let released = try await device.ivy.run("sync")
            #expect(released.status == 0 && !released.stdout.contains("held back"), "\(released.stdout)")
            #expect(await emulator.state.dump(email: "alice@example.com").contains { $0.name == "book_\(book).json" })
        }
    }

    @Test("--auto prints one line in the run where a change becomes held, then stays silent about it")
    func cronHearsOnce() async throws {
        try await withEmulator { emulator in
            let device = try await SignInHarness.signedIn(emulator)
            #expect(try await device.ivy.run("config", "set", "auto_sync_cooldown", "0").status == 0)
            let book = try await device.ivy.id("book", "add", "--title", "Dune")
            await emulator.state.addFault(
                FaultRule(method: "POST", pathContains: "/upload", status: 403, reason: "forbidden"))
            var heard: [String] = []
            var statuses: [Int32] = []
            for _ in 1...6 {
                let run = try await device.ivy.runBinaryAsync("sync", "--auto")
                statuses.append(run.status)
                heard.append(run.stdout + run.stderr)
            }
            #expect(statuses == [0, 0, 5, 0, 0, 0])
            #expect(heard[2].split(separator: "\n").count == 1)
            #expect(heard[2].contains("book \(book)") && heard[2].contains("ivy retry-failed"), "\(heard[2])")
            #expect(heard.enumerated().allSatisfy { $0.offset == 2 || $0.element.isEmpty }, "\(heard)")

            // Changed again, it is news again when it fails three more times.
            #expect(try await device.ivy.run("book", "update", book, "--position", "60").status == 0)
            var again: [Int32] = []
            for _ in 1...4 { again.append(try await device.ivy.runBinaryAsync("sync", "--auto").status) }
            #expect(again == [0, 0, 5, 0])
        }
    }

    @Test("--auto says deletions held back once, in the run that first holds them, then stays silent about them")
    func cronHearsHoldOnce() async throws {
        try await withEmulator { emulator in
            let device = try await SignInHarness.signedIn(emulator)
            #expect(try await device.ivy.run("config", "set", "auto_sync_cooldown", "0").status == 0)
            try await device.addLibrary(books: 1, clips: 12)
            #expect(try await device.ivy.run("sync").status == 0)
            // Another program empties Drive of the clips: more than the safety valve lets go.
            for file in await emulator.state.dump(email: "alice@example.com") where file.name.hasPrefix("clip_") {
                try await emulator.state.trash(id: file.id)
            }
            var heard: [String] = []
            for _ in 1...3 {
                let run = try await device.ivy.runBinaryAsync("sync", "--auto")
                heard.append(run.stdout + run.stderr)
            }
            #expect(heard[0].hasPrefix("ivy sync: held back: 12 of the 12 clips"), "\(heard[0])")
            #expect(heard[0].split(separator: "\n").count == 1, "\(heard[0])")
            #expect(heard.dropFirst().allSatisfy { $0.isEmpty }, "\(heard)")
            #expect(try device.ivy.count("SELECT count(*) FROM clips") == 12, "nothing deleted here")
        }
    }

    @Test("deletions the safety valve holds back are in status, text and --json, until a sync lets them go")
    func heldDeletionsInStatus() async throws {
        try await withEmulator { emulator in
            let device = try await SignInHarness.signedIn(emulator)
            try await device.addLibrary(books: 1, clips: 12)
            #expect(try await device.ivy.run("sync").status == 0)
            for file in await emulator.state.dump(email: "alice@example.com") where file.name.hasPrefix("clip_") {
                try await emulator.state.trash(id: file.id)
            }
            let held = try await device.ivy.runBinaryAsync("sync", "-v")
            let said = held.stdout + held.stderr
            // Said once: the listing taken as incomplete is part of the held line, not a skipped file.
            #expect(said.components(separatedBy: "--allow-deletes").count == 2, "\(said)")
            #expect(
                held.stderr.contains(
                    "Held back: 12 of the 12 clips this library synced would be deleted here, and the Drive listing is "
                        + "taken as incomplete; nothing was deleted locally and nothing the listing lacks was uploaded "
                        + "again. Check Drive, then run `ivy sync --allow-deletes` to go by the listing"),
                "\(said)")
            #expect(!said.contains("skipped"), "\(said)")
            let status = try await device.ivy.runBinaryAsync("status")
            #expect(status.stdout.contains("\ndeletions held    12 of the 12 clips"), "\(status.stdout)")
            let json = try #require(try await device.ivy.run("status", "--json").json() as? [String: Any])
            #expect((json["deletions_held"] as? String)?.hasPrefix("12 of the 12 clips") == true, "\(json)")

            #expect(try await device.ivy.runBinaryAsync("sync", "--allow-deletes").status == 0)
            #expect(!(try await device.ivy.runBinaryAsync("status")).stdout.contains("deletions held"))
            let after = try #require(try await device.ivy.run("status", "--json").json() as? [String: Any])
            #expect(after["deletions_held"] is NSNull, "\(after)")
        }
    }

    @Test("--auto is silent about sign-in: a revoked refresh token and a damaged token.json; status explains both")
    func signInNeverReachesCron() async throws {
        try await withEmulator { emulator in
            let device = try await SignInHarness.signedIn(emulator)
            #expect(try await device.ivy.run("config", "set", "auto_sync_cooldown", "0").status == 0)
            _ = try await device.ivy.id("book", "add", "--title", "Dune")
            await emulator.state.revoke(email: "alice@example.com")
            var token = try device.storedToken()
            token["expires_at"] = 0
            try JSONSerialization.data(withJSONObject: token).write(to: URL(fileURLWithPath: device.tokenFile))
            for _ in 1...3 {
                let auto = try await device.ivy.runBinaryAsync("sync", "--auto")
                #expect(auto.status == 0 && auto.stdout.isEmpty && auto.stderr.isEmpty, "\(auto.stderr)")
            }
            let revoked = try await device.ivy.run("status")
            #expect(
                revoked.stdout.contains("no: the sign-in stopped working: Google no longer accepts"),
                "\(revoked.stdout)")
            #expect(revoked.stdout.contains("(since ") && revoked.stdout.contains("run `ivy login`"))
            let interactive = try await device.ivy.run("sync")
            #expect(
                interactive.status == 3 && interactive.stderr.contains("the sign-in stopped working"),
                "\(interactive.stderr)")

            try Data("{ damaged".utf8).write(to: URL(fileURLWithPath: device.tokenFile))
            for _ in 1...3 {
                let auto = try await device.ivy.runBinaryAsync("sync", "--auto")
                #expect(auto.status == 0 && auto.stdout.isEmpty && auto.stderr.isEmpty, "\(auto.stderr)")
            }
            let damaged = try await device.ivy.run("status")
            #expect(
                damaged.stdout.contains("damaged or unreadable") && damaged.stdout.contains("run `ivy login`"),
                "\(damaged.stdout)")
            let json = try #require(try await device.ivy.run("status", "--json").json() as? [String: Any])
            #expect(json["authenticated"] as? Bool == false && json["signed_out_since"] is String)
        }
    }

    @Test("one 400 from Drive: the sync reports it, the next sync uploads, nothing is left failed")
    func oneBadRequest() async throws {
        try await withEmulator { emulator in
            let device = try await SignInHarness.signedIn(emulator)
            _ = try await device.ivy.id("book", "add", "--title", "Dune")
            await emulator.state.addFault(
                FaultRule(method: "POST", pathContains: "/upload", times: 1, status: 400, reason: "badRequest"))
            #expect(try await device.ivy.run("sync").status == 5)
            let next = try await device.ivy.run("sync")
            #expect(next.status == 0, "\(next.stdout)\(next.stderr)")
            #expect(try device.ivy.count("SELECT count(*) FROM sync_queue") == 0)
        }
    }

    @Test("--auto that cannot start (no OAuth client, another server named): cron hears once; logged; status shows it")
    func cannotStartHeardOnce() async throws {
        try await withEmulator { emulator in
            let device = try await SignInHarness.signedIn(emulator)
            #expect(try await device.ivy.run("config", "set", "auto_sync_cooldown", "0").status == 0)
            _ = try await device.ivy.id("book", "add", "--title", "Dune")
            for environment in [
                ["IVY_CLIENT_ID": "", "IVY_CLIENT_SECRET": ""],
                ["IVY_OAUTH_URL": "http://127.0.0.1:9", "IVY_DRIVE_URL": "http://127.0.0.1:9"],
            ] {
                var statuses: [Int32] = []
                var heard: [String] = []
                for _ in 1...3 {
                    let run = try await device.ivy.runBinaryAsync(["sync", "--auto"], environment: environment)
                    statuses.append(run.status)
                    heard.append(run.stdout + run.stderr)
                }
                #expect(statuses[0] != 0 && statuses[1...].allSatisfy { $0 == 0 }, "\(statuses) \(heard)")
                #expect(!heard[0].isEmpty && heard[1...].allSatisfy(\.isEmpty), "\(heard)")
                let status = try await device.ivy.run(["status"], environment: environment)
                #expect(!status.stdout.contains("last error        -"), "\(status.stdout)")
                let log = (try? String(contentsOfFile: device.ivy.home + "/ivy.log", encoding: .utf8)) ?? ""
                #expect(log.contains("sync could not start"), "\(log)")
            }
        }
    }
}
