import Foundation
import GoogleEmulator
import IvyCore
import IvyStore
import IvySync
import Testing

@Suite("Safety valve, reset-manifest and account switch")
struct SafetyTests {
    @Test("when another device deleted all 12 clips, nothing is deleted here until --allow-deletes")
    func safetyValve() async throws {
        try await withWorld { world in
            let a = try await world.device("a")
            let b = try await world.device("b")
            let book = try await a.addBook("Dune")
            var clips: [Clip] = []
            for index in 0..<12 {
                try await clips.append(a.addClip(to: book, note: "clip \(index)", start: Double(index)))
            }
            #expect(try await a.sync().uploaded.pair == [1, 12])
            #expect(try await b.sync().downloaded.pair == [1, 12])

            for clip in clips { try await a.library.deleteClip(id: clip.id) }
            #expect(try await a.sync().deletedRemote.pair == [0, 12])
            #expect(await world.names() == ["book_\(book.id).json"])

            let held = try await b.sync()
            #expect(held.deletedLocal.total == 0)
            let reason = try #require(held.deletionsHeld)
            #expect(reason.contains("12 of the 12 clips") && reason.contains("--allow-deletes"), "\(reason)")
            #expect(held.held.count == 12)
            #expect(try await b.library.clips().count == 12)
            #expect(clips.allSatisfy { b.audio($0.id) != nil })
            #expect(await world.names() == ["book_\(book.id).json"], "holding back deletes uploads nothing")

            let allowed = try await b.sync(SyncRequest(allowDeletes: true))
            #expect(allowed.deletedLocal.pair == [0, 12] && allowed.deletionsHeld == nil)
            #expect(try await b.library.clips().isEmpty)
            #expect(clips.allSatisfy { b.audio($0.id) == nil })
            #expect(try await a.snapshot() == b.snapshot())
            #expect(try await b.library.queueItems().isEmpty)
        }
    }

    @Test("a hold a full listing confirmed is not listed again while it stands (a watch polling), until it changes")
    func standingHoldIsCheckedOnce() async throws {
        try await withWorld { world in
            let a = try await world.device("a")
            let b = try await world.device("b")
            let book = try await a.addBook("Dune")
            var clips: [Clip] = []
            for index in 0..<12 {
                try await clips.append(a.addClip(to: book, note: "clip \(index)", start: Double(index)))
            }
            _ = try await a.sync()
            _ = try await b.sync()
            for clip in clips { try await a.library.deleteClip(id: clip.id) }
            _ = try await a.sync()

            let held = try await b.sync()
            #expect(
                held.fullListing != nil && held.deletionsHeld != nil && held.checkedDoubt != nil,
                "\(held.checkedDoubt ?? "-") / \(held.deletionsHeld ?? "-")")
            // Without what the last sync checked, the same hold lists Drive in full again.
            #expect(try await b.sync().fullListing != nil)
            // A watch passes it on: the hold stands, Drive is not listed again, nothing is deleted.
            await world.state.clearRequests()
            let polled = try await b.sync(SyncRequest(knownDoubt: held.checkedDoubt))
            #expect(polled.fullListing == nil && polled.deletionsHeld == held.deletionsHeld, "\(polled.summary)")
            #expect(polled.requests == 1 && polled.checkedDoubt == held.checkedDoubt)
            #expect(try await b.library.clips().count == 12)
            // Another doubt than the one checked is checked again.
            let other = try await b.sync(SyncRequest(knownDoubt: "some other hold"))
            #expect(other.fullListing != nil)
        }
    }

    @Test("after reset-manifest a sync converges with no duplicate files on Drive and no conflict markers")
    func resetManifest() async throws {
        try await withWorld { world in
            let a = try await world.device("a")
            let b = try await world.device("b")
            let dune = try await a.addBook("Dune", position: 100)
            let emma = try await a.addBook("Emma", position: 200)
            try await a.addClip(to: dune, note: "first")
            try await a.addClip(to: dune, note: "second")
            try await a.addClip(to: emma, note: "third")
            #expect(try await a.sync().uploaded.pair == [2, 3])
            #expect(try await b.sync().downloaded.pair == [2, 3])
            let names = await world.names()
            #expect(names.count == 8)

            for device in [a, b] {
                try await device.library.resetManifest()
                #expect(try await device.library.localStatus().manifestEntries == 0)
                #expect(try await device.library.rememberedFolders() == nil)
                let report = try await device.sync()
                #expect(report.failures.isEmpty && report.conflicts.isEmpty, "\(device.name): \(report.summary)")
                #expect(
                    report.uploaded.total == 0 && report.downloaded.total == 0 && report.deletedLocal.total == 0,
                    "\(report.summary)")
                #expect(try await device.library.localStatus().manifestEntries == 5)
                #expect(await world.names() == names, "\(device.name): every name once, nothing replaced")
                let folders = await world.state.dump(email: alice).filter(\.isFolder).map(\.name).sorted()
                #expect(folders == ["Ivy", "books", "clips"])
            }
            for device in [a, b] {
                #expect(try await device.library.clips().allSatisfy { !($0.note ?? "").contains("--- Conflict (") })
                let quiet = try await device.sync()
                #expect(quiet.transferredNothing && quiet.requests == 1, "\(device.name): \(quiet.summary)")
            }
            #expect(try await a.snapshot() == b.snapshot())
        }
    }

    @Test(
        "after reset-manifest, an edit made elsewhere meanwhile is merged in without a conflict marker or a duplicate")
    func resetManifestWithRemoteEdit() async throws {
        try await withWorld { world in
            let pair = try await SyncedPair(world)
            let (a, b) = (pair.a, pair.b)
            try await b.edit(clip: pair.clip.id, ClipChanges(note: "written on B"))
            try await b.edit(book: pair.book.id, BookChanges(position: 6000))
            #expect(try await b.sync().uploaded.pair == [1, 1])

            try await a.library.resetManifest()
            let report = try await a.sync()
            #expect(report.failures.isEmpty && report.merged.pair == [1, 1], "\(report.summary)")
            #expect(try await a.clip(pair.clip.id)?.note == "written on B")
            #expect(try await a.book(pair.book.id)?.position == 6000)
            let names = await world.names()
            #expect(names.count == 3 && Set(names).count == 3)
            _ = try await b.sync()
            #expect(try await a.snapshot() == b.snapshot())
        }
    }

    @Test(
        """
        binding the library to another account resets the manifest; \
        the next sync uploads everything to that account's Drive
        """
    )
    func accountSwitch() async throws {
        try await withWorld { world in
            let a = try await world.device("a", as: alice)
            let dune = try await a.addBook("Dune")
            let emma = try await a.addBook("Emma")
            let clip = try await a.addClip(to: dune, note: "n")
            #expect(try await a.sync().uploaded.pair == [2, 1])
            let aliceNames = await world.names(alice)
            #expect(aliceNames.count == 4)
            #expect(await world.names(bob).isEmpty)

            #expect(
                try await a.library.bindAccount(permissionID: bobPermissionID, email: bob), "a different account resets"
            )
            #expect(try await a.library.manifestEntries().isEmpty)
            #expect(try await a.library.rememberedFolders() == nil)
            #expect(try await a.library.internalSetting(.accountEmail) == bob)
            try await #expect(
                a.library.bindAccount(permissionID: bobPermissionID, email: bob) == false,
                "the same account again does not")

            #expect(try await a.signIn(as: bob) == false)
            let report = try await a.sync()
            #expect(report.uploaded.pair == [2, 1] && report.failures.isEmpty, "\(report.summary)")
            let expected = [
                "book_\(dune.id).json", "book_\(emma.id).json", "clip_\(clip.id).json", "clip_\(clip.id).mp3",
            ].sorted()
            #expect(await world.names(bob) == expected)
            #expect(try await world.file("clip_\(clip.id).mp3", bob).content == a.audio(clip.id))
            #expect(await world.names(alice) == aliceNames, "alice's Drive is left as it was")

            let bobsOtherDevice = try await world.device("b", as: bob)
            #expect(try await bobsOtherDevice.sync().downloaded.pair == [2, 1])
            #expect(try await a.snapshot() == bobsOtherDevice.snapshot())
        }
    }
}
