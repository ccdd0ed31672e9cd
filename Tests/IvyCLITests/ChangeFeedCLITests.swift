import Foundation
import GRDB
import GoogleEmulator
import IvyTestSupport
import Testing

@Suite("ivy sync and Drive's change feed, through the binary")
struct ChangeFeedCLITests {
    /// The saved change token, or nil.
    private static func token(_ harness: SignInHarness) throws -> String? {
        try harness.ivy.sql("SELECT token FROM drive_mirror_token").first?["token"]
    }

    @Test("kill -9 while Drive holds the second page of changes: the next sync goes on and loses nothing")
    func killBetweenPages() async throws {
        try await withEmulator { emulator in
            let laptop = try await SignInHarness.signedIn(emulator)
            try await laptop.addLibrary(books: 4, clips: 0)
            #expect(try await laptop.ivy.run("sync").status == 0)
            let phone = try await SignInHarness.signedIn(emulator)
            #expect(try await phone.ivy.run("sync").status == 0)
            #expect(try await laptop.ivy.run("sync").status == 0, "the laptop's own uploads, through the feed")
            for (index, row) in try phone.ivy.sql("SELECT id FROM books ORDER BY id").enumerated() {
                let id: String = row["id"]
                #expect(try await phone.ivy.run("book", "update", id, "--position", "\(100 + index)").status == 0)
            }
            #expect(try await phone.ivy.run("sync").status == 0)
            let before = try Self.token(laptop)

            await emulator.state.setChangesPageSize(1)
            await emulator.state.addFault(
                FaultRule(method: "GET", pathContains: "/drive/v3/changes?", nth: 2, hold: true))
            try await withChild(laptop.ivy.command(["sync"])) { sync in
                await emulator.state.waitForHeld(count: 1)
                // The first page was applied, and its token saved with it, before the second was asked for.
                let afterFirstPage = try Self.token(laptop)
                #expect(afterFirstPage != nil && afterFirstPage != before)
                sync.send(SIGKILL)
                let exit = try await sync.wait()
                #expect(exit == .signalled(SIGKILL))
            }
            await emulator.state.releaseHeld()
            await emulator.state.clearFaults()

            await emulator.state.clearRequests()
            let again = try await laptop.ivy.run("sync", "--json")
            #expect(again.status == 0, "\(again.stderr)")
            let report = try #require(try again.json() as? [String: Any])
            #expect(report["full_listing"] is NSNull, "the chain goes on from the page saved: \(report)")
            #expect((report["downloaded"] as? [String: Int])?["books"] == 4, "\(report)")
            #expect(try laptop.library() == phone.library())
            #expect(await emulator.state.requests.allSatisfy { $0.path != "/drive/v3/files" }, "no full listing")
            let mirrored = try laptop.ivy.sql("SELECT name FROM drive_mirror ORDER BY name").map {
                $0["name"] as String
            }
            let onDrive = await emulator.state.dump().filter { !$0.isFolder }.map(\.name).sorted()
            #expect(mirrored == onDrive)
        }
    }

    @Test("sync --full lists Drive in full and says so; its help names it as the repair")
    func full() async throws {
        try await withEmulator { emulator in
            let device = try await SignInHarness.signedIn(emulator)
            try await device.addLibrary(books: 2, clips: 0)
            #expect(try await device.ivy.run("sync").status == 0)
            await emulator.state.clearRequests()
            let result = try await device.ivy.run("sync", "--full", "--json")
            #expect(result.status == 0, "\(result.stderr)")
            #expect((try result.json() as? [String: Any])?["full_listing"] as? String == "--full")
            let paths = await emulator.state.requests.map(\.path)
            #expect(paths.contains("/drive/v3/files") && !paths.contains("/drive/v3/changes"), "\(paths)")
            let help = try await device.ivy.run("sync", "--help").stdout
            #expect(help.contains("--full") && help.contains("repair"), "\(help)")
        }
    }
}
