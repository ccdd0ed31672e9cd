import Foundation
import GoogleEmulator
import IvyCore
import IvySync
import Testing

/// A merge applied here before its upload: what it took from Drive is its base from then on.
@Suite("The base of a merge not yet uploaded")
struct MergeBaseTests {
    /// The app's edit of a clip's JSON on Drive, by delete-then-create as the Ivy app does:
    /// read, change, stamp its own `updated_at`.
    private func appEdits(clip id: String, note: String, _ world: World) async throws {
        let name = "clip_\(id).json"
        let live = await world.files().filter { $0.name == name && !$0.explicitlyTrashed }
        #expect(live.count == 1, "\(live.count) live files called \(name)")
        let old = try #require(live.first)
        var fields = try #require(try JSONSerialization.jsonObject(with: old.content) as? [String: Any])
        fields["note"] = note
        fields["updated_at"] = world.clock.now + 1_000
        let content = try JSONSerialization.data(withJSONObject: fields, options: [.sortedKeys])
        try await world.state.trash(id: old.id)
        _ = await world.state.putFile(
            email: alice, name: name, parents: [try await world.folderID("clips")], content: content,
            mimeType: "application/json")
        await world.state.advanceClock(by: 1)
    }

    /// ivy-soak seed 20 once ended with a clip's note "app r5 … --- Conflict --- app r15": the
    /// device had merged the app's first note with its own change, was killed before the
    /// upload, and merged the app's second note later against the base from before the first,
    /// as if it had written the first itself.
    @Test("a merge whose upload failed is merged later against what it took from Drive: no false conflict")
    func failedUploadKeepsWhatItTook() async throws {
        try await withWorld { world in
            let pair = try await SyncedPair(world)
            let id = pair.clip.id
            try await appEdits(clip: id, note: "app: first", world)
            _ = try pair.a.edit(clip: id, ClipChanges(start: 180))
            // The merge is written here; its upload (delete, then create) fails at the delete.
            await world.state.addFault(FaultRule(method: "DELETE", status: 400, reason: "badRequest"))
            let failed = try await pair.a.sync()
            #expect(failed.failures.count == 1, "\(failed.failures)")
            #expect(try pair.a.clip(id)?.note == "app: first")
            await world.state.clearFaults()

            try await appEdits(clip: id, note: "app: second", world)
            let report = try await pair.a.sync()
            #expect(report.failures.isEmpty && report.conflicts.isEmpty, "\(report.conflicts)")
            let clip = try #require(try pair.a.clip(id))
            #expect(clip.note == "app: second", "the app's first note came back beside its second")
            #expect(clip.start == 180)
            _ = try await pair.b.sync()
            #expect(try pair.a.snapshot() == pair.b.snapshot())
        }
    }
}
