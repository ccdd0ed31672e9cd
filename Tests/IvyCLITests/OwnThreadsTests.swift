import Foundation
import IvySystem
import IvyTestSupport
import Testing

/// Issue 39: nothing blocks Swift's cooperative pool (two threads on a 2-core machine; two
/// blocked calls there stop every task in the process). Every library call and every file
/// hash of a sync, run through `IvyCommand.main` as the binary runs it, is made on ivy's own
/// threads. The sync once ran in an unstructured task, which keeps no executor preference,
/// and every one of its calls ran on the pool.
@Suite("Blocking work stays off the cooperative pool")
struct OwnThreadsTests {
    @Test("ivy sync makes every library call and hash on ivy's own threads, uploads and downloads alike")
    func sync() async throws {
        try await withEmulator { emulator in
            let laptop = try await SignInHarness.signedIn(emulator)
            try await laptop.addLibrary(books: 2, clips: 2)
            let record = BlockingCalls.Record()
            let sent = try await BlockingCalls.watching(record) { try await laptop.ivy.run("sync") }
            #expect(sent.status == 0, "\(sent.stderr)")
            #expect(sent.stdout.hasPrefix("Synced: 4 uploaded"), "\(sent.stdout)")

            let desktop = try await SignInHarness.signedIn(emulator)
            let received = try await BlockingCalls.watching(record) { try await desktop.ivy.run("sync") }
            #expect(received.status == 0, "\(received.stderr)")
            #expect(received.stdout.hasPrefix("Synced: 4 downloaded"), "\(received.stdout)")
            #expect(record.offOwnThreads.isEmpty, "on the cooperative pool: \(Set(record.offOwnThreads).sorted())")
        }
    }

    @Test("a watch's looks and syncs make every library call on ivy's own threads")
    func watch() async throws {
        try await withEmulator { emulator in
            let laptop = try await SignInHarness.signedIn(emulator)
            try await laptop.addLibrary(books: 1, clips: 1)
            let record = BlockingCalls.Record()
            let watch = await BlockingCalls.watching(record) {
                laptop.ivy.start(["sync", "--watch", "--interval", "2"])
            }
            _ = await watch.output.first(/(Synced: 2 uploaded)/)
            watch.interrupt()
            let result = await watch.finish()
            #expect(result.status == 0, "\(result.stderr)")
            #expect(record.offOwnThreads.isEmpty, "on the cooperative pool: \(Set(record.offOwnThreads).sorted())")
        }
    }

    @Test("ivy export, check --archive and import read and write every file on ivy's own threads")
    func archive() async throws {
        let a = try IvyHome()
        _ = try await ArchiveTests.library(a)
        let file = a.path + "/library.zip"
        let b = try IvyHome()
        let record = BlockingCalls.Record()
        let statuses = try await BlockingCalls.watching(record) {
            [
                try await a.run("export", file).status, try await a.run("check", "--archive", file).status,
                try await b.run("import", file).status,
            ]
        }
        #expect(statuses == [0, 0, 0])
        #expect(record.offOwnThreads.isEmpty, "on the cooperative pool: \(Set(record.offOwnThreads).sorted())")
        #expect(try b.count("SELECT count(*) FROM clips") == 1)
    }

    @Test("the check notes a blocking call on the cooperative pool, and none on ivy's own threads")
    func noticed() async {
        let record = BlockingCalls.Record()
        await BlockingCalls.watching(record) {
            // An unstructured task keeps the watch (a task-local) but no executor preference.
            await Task { BlockingCalls.check("on the pool") }.value
            await BlockingExecutor.run { () async in BlockingCalls.check("on ivy's threads") }
        }
        BlockingCalls.check("not watched")
        #expect(record.offOwnThreads == ["on the pool"])
    }
}
