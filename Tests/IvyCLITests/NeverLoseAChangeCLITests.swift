import Foundation
import GRDB
import GoogleEmulator
import IvyTestSupport
import Testing

@Suite("Limits that keep a change from being lost, through the binary")
struct NeverLoseAChangeCLITests {
    @Test("a hung Drive: sync stops at sync_timeout with an error naming the setting, and frees the lock")
    func deadlineFreesTheLock() async throws {
        try await withEmulator { emulator in
            let device = try await SignInHarness.signedIn(emulator)
            try await device.addLibrary(books: 1, clips: 0)
            #expect(try await device.ivy.run("config", "set", "sync_timeout", "2").status == 0)
            await emulator.state.addFault(
                FaultRule(method: "GET", pathContains: "/drive/v3/files", delayMilliseconds: 120_000))
            let hung = try await device.ivy.run("sync")
            #expect(hung.status == 1)
            #expect(hung.stderr.contains("sync_timeout"), "\(hung.stderr)")
            #expect(try await device.ivy.run("status").stdout.contains("sync_timeout"), "last error records it")
            await emulator.state.clearFaults()
            #expect(try await device.ivy.run("config", "set", "sync_timeout", "600").status == 0)
            let next = try await device.ivy.run("sync")
            #expect(next.status == 0, "the lock was freed: \(next.stderr) \(next.stdout)")
            #expect(try device.ivy.count("SELECT count(*) FROM sync_queue") == 0)
        }
    }

    /// ivy-soak seed 1, one run in six: device b's upload of a merged clip deleted Drive's JSON
    /// and was killed before its create. Its next syncs waited out `replace_grace` as for
    /// another device's replace, so a device that had missed the app's edit restored its older
    /// copy first, and b's merge then took that copy for a newer edit: the app's fields were
    /// lost on every device. The mark that says "missing by my own doing" must be on disk
    /// before the delete, not written after a failed create that a kill never reaches.
    @Test("kill -9 between a replace's delete and its create: the next sync puts its copy back before an older one")
    func killedReplace() async throws {
        try await withEmulator { emulator in
            let laptop = try await SignInHarness.signedIn(emulator)
            try await laptop.addLibrary(books: 1, clips: 0)
            #expect(try await laptop.ivy.run("sync").status == 0)
            let desk = try await SignInHarness.signedIn(emulator)
            #expect(try await desk.ivy.run("sync").status == 0)
            #expect(try await desk.ivy.run("config", "set", "replace_grace", "0").status == 0)
            let id: String = try #require(try laptop.ivy.sql("SELECT id FROM books").first?["id"])

            // The phone app moves the position on Drive; the laptop reads it, the desk does not.
            let file = try #require(
                await emulator.state.dump().first { $0.name == "book_\(id).json" && !$0.explicitlyTrashed })
            var fields = try #require(try JSONSerialization.jsonObject(with: file.content) as? [String: Any])
            fields["position"] = 5000
            fields["updated_at"] = Int64(Date().timeIntervalSince1970 * 1000)
            try await emulator.state.trash(id: file.id)
            await emulator.state.putFile(
                email: "alice@example.com", name: file.name, parents: file.parents,
                content: try JSONSerialization.data(withJSONObject: fields), mimeType: "application/json")
            #expect(try await laptop.ivy.run("sync").status == 0)
            #expect(try await laptop.ivy.run("book", "update", id, "--title", "Laptop title").status == 0)

            // Killed with Drive's file deleted and its create held.
            await emulator.state.addFault(
                FaultRule(method: "POST", pathContains: "upload/drive/v3/files", status: 503, hold: true))
            try await withChild(laptop.ivy.command(["sync"])) { sync in
                await emulator.state.waitForHeld(count: 1)
                sync.send(SIGKILL)
                let exit = try await sync.wait()
                #expect(exit == .signalled(SIGKILL))
            }
            await emulator.state.clearFaults()
            await emulator.state.releaseHeld()
            let live = await emulator.state.dump().filter { $0.name == "book_\(id).json" && !$0.explicitlyTrashed }
            #expect(live.isEmpty, "the kill came between the delete and the create")

            let repaired = try await laptop.ivy.run("sync", "--json")
            #expect(repaired.status == 0, "\(repaired.stderr)")
            let report = try #require(try repaired.json() as? [String: Any])
            #expect((report["uploaded"] as? [String: Int])?["books"] == 1, "put back at once: \(report)")
            #expect(try await desk.ivy.run("sync").status == 0)
            #expect(try await laptop.ivy.run("sync").status == 0)
            for device in [laptop, desk] {
                let book = try #require(try device.ivy.sql("SELECT title, position FROM books").first)
                #expect(book["title"] as String == "Laptop title")
                #expect(book["position"] as Double == 5000, "the app's position survives")
            }
        }
    }

    @Test("sync_timeout accepts 1 to 86400 seconds")
    func timeoutSetting() async throws {
        let ivy = try IvyHome()
        #expect(try await ivy.run("config", "get", "sync_timeout").stdout == "1800\n")
        for bad in ["0", "86401", "ten"] {
            let result = try await ivy.run("config", "set", "sync_timeout", bad)
            #expect(result.status != 0 && result.stderr.contains("from 1 to 86400"), "\(bad): \(result.stderr)")
        }
        #expect(try await ivy.run("config", "set", "sync_timeout", "3600").status == 0)
    }

    @Test("clip update refuses a note that would make the backup JSON larger than ivy accepts from Drive")
    func noteOverTheCap() async throws {
        let ivy = try IvyHome()
        let book = try await ivy.id("book", "add", "--title", "Dune")
        let audio = try ivy.mp3("a.mp3")
        let clip = try await ivy.id(
            "clip", "add", "--book", book, "--start", "1", "--duration", "2", "--audio", audio, "--note", "short")
        // The phone app keeps a large key of its own in this clip (kept by ivy, written back to Drive).
        let kept = String(repeating: "k", count: 1_040_000)
        try ivy.execute(
            "INSERT INTO backup_extras (entity_type, entity_id, json) "
                + "VALUES ('clip', '\(clip)', '{\"waveform\":\"\(kept)\"}')"
        )
        let note = String(repeating: "n", count: 20_000)  // one argument may be at most 128 KiB on Linux
        let updated = try await ivy.run("clip", "update", clip, "--note", note)
        #expect(updated.status == 1)
        #expect(
            updated.stderr.contains("1,048,576") && updated.stderr.contains("shorten its note or transcription"),
            "\(updated.stderr.prefix(300))")
        #expect(try ivy.sql("SELECT note FROM clips").first?["note"] as String? == "short")
        #expect(try await ivy.run("clip", "update", clip, "--note", "a little longer").status == 0)
    }
}
