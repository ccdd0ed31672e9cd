import Foundation
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
