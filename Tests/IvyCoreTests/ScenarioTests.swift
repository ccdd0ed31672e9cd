import Foundation
import IvyCore
import Testing

/// The seed design's worked scenarios, end to end through the planner, merge and the
/// simulated engine, with two or three devices sharing one simulated Drive.
@Suite("Worked scenarios")
struct ScenarioTests {
    let drive = SimulatedDrive()
    let phone = SimulatedDevice("phone", clock: 10_000)
    let tablet = SimulatedDevice("tablet", clock: 20_000)

    /// Both devices hold book b1 and clip c1, in sync.
    func sharedLibrary(note: String? = nil, position: Double = 5400) {
        phone.addBook("b1", title: "Dune", position: position)
        phone.addClip("c1", book: "b1", note: note)
        phone.sync(with: drive)
        tablet.sync(with: drive)
        #expect(phone.library == tablet.library)
    }

    @Test("changed since when: both edit offline, the tablet syncs first, the phone merges")
    func changedSinceWhen() {
        sharedLibrary()
        phone.editClip("c1") { $0.note = "Interesting point about X" }
        tablet.editClip("c1") { $0.note = "Remember to revisit this" }
        #expect(tablet.sync(with: drive).actions.map(\.action) == [.upload])
        let phonePlan = phone.sync(with: drive)
        #expect(phonePlan.actions.map(\.action) == [.merge])
        #expect(tablet.sync(with: drive).actions.map(\.action) == [.download])
        let note = phone.clips["c1"]?.note ?? ""
        #expect(note.hasPrefix("Interesting point about X\n\n--- Conflict ("))
        #expect(note.hasSuffix(") ---\nRemember to revisit this"))
        #expect(phone.library == tablet.library)
    }

    @Test(
        """
        Monday and Tuesday (the seed's flaw): edits queued offline are merged with the other device's, \
        never pushed over them; furthest position and both notes survive
        """
    )
    func mondayTuesday() {
        sharedLibrary(position: 5400)  // 1:30:00
        // Monday morning, phone offline on the subway: the changes sit in its queue.
        phone.editBook("b1") { $0.position = 8100 }  // 2:15:00
        phone.editClip("c1") { $0.note = "Great metaphor" }
        #expect(phone.queue.count == 2)
        // Monday evening, tablet online at home.
        tablet.editBook("b1") { $0.position = 6300 }  // 1:45:00
        tablet.editClip("c1") { $0.note = "use in essay" }
        tablet.sync(with: drive)
        // Tuesday morning, phone back online: its queued edits must not overwrite the tablet's.
        let plan = phone.sync(with: drive)
        #expect(plan.actions.map(\.action) == [.merge, .merge])
        #expect(phone.queue.isEmpty)
        tablet.sync(with: drive)
        for device in [phone, tablet] {
            #expect(device.books["b1"]?.position == 8100)
            let note = device.clips["c1"]?.note ?? ""
            #expect(note.hasPrefix("Great metaphor\n\n--- Conflict (") && note.hasSuffix("use in essay"))
        }
        #expect(phone.library == tablet.library)
    }

    @Test("delete on one device, edit on another: the clip is resurrected, whoever syncs first")
    func deleteVersusModify() {
        for deleterFirst in [true, false] {
            let drive = SimulatedDrive()
            let phone = SimulatedDevice("phone")
            let tablet = SimulatedDevice("tablet")
            phone.addBook("b1", title: "Dune")
            phone.addClip("c1", book: "b1", note: "original")
            phone.sync(with: drive)
            tablet.sync(with: drive)
            phone.deleteClip("c1")
            tablet.editClip("c1") { $0.note = "edited" }
            let order = deleterFirst ? [phone, tablet, phone] : [tablet, phone, tablet]
            for device in order { device.sync(with: drive) }
            phone.sync(with: drive)
            tablet.sync(with: drive)
            #expect(phone.clips["c1"]?.note == "edited", "deleter first: \(deleterFirst)")
            #expect(phone.library == tablet.library)
            #expect(drive.namesWithDuplicates.isEmpty)
        }
    }

    @Test("a delete with no edit elsewhere reaches every device")
    func deletePropagates() {
        sharedLibrary(note: "n")
        let laptop = SimulatedDevice("laptop")
        laptop.sync(with: drive)
        phone.deleteClip("c1")
        phone.sync(with: drive)
        #expect(tablet.sync(with: drive).actions.map(\.action) == [.deleteLocal])
        laptop.sync(with: drive)
        #expect(tablet.clips.isEmpty && laptop.clips.isEmpty)
        #expect(tablet.manifest[EntityKey(.clip, "c1")] == nil)
        #expect(drive.list().map(\.name) == ["book_b1.json"])
    }

    @Test("a new device downloads everything, then syncs incrementally")
    func newDevice() {
        sharedLibrary(note: "n")
        phone.addClip("c2", book: "b1")
        phone.sync(with: drive)
        let laptop = SimulatedDevice("laptop")
        let first = laptop.sync(with: drive)
        #expect(first.actions.map(\.action) == [.download, .download, .download])
        #expect(laptop.library == phone.library)
        #expect(laptop.sync(with: drive).isEmpty)
    }

    @Test("the same id created on two devices is merged, not duplicated")
    func sameIDOnTwoDevices() {
        phone.addBook("b1", title: "Dune", position: 100)
        tablet.addBook("b1", title: "Dune", position: 300)
        phone.sync(with: drive)
        #expect(tablet.sync(with: drive).actions.map(\.action) == [.merge])
        phone.sync(with: drive)
        #expect(phone.books["b1"]?.position == 300)
        #expect(phone.library == tablet.library)
        #expect(drive.namesWithDuplicates.isEmpty)
    }

    @Test("unknown keys written by another app survive a round trip through ivy")
    func unknownKeysSurvive() throws {
        let key = EntityKey(.book, "b1")
        drive.create(
            name: "book_b1.json",
            content: Data(#"{"id":"b1","title":"Dune","updated_at":5,"bookmarkColor":"teal"}"#.utf8))
        phone.sync(with: drive)
        #expect(phone.extras[key] == ["bookmarkColor": .string("teal")])
        phone.editBook("b1") { $0.position = 60 }
        phone.sync(with: drive)
        let file = try #require(drive.list().first)
        let uploaded = try BackupCodec.decodeBook(try #require(drive.content(file.id)), expectedID: "b1")
        #expect(uploaded.extras == ["bookmarkColor": .string("teal")])
        #expect(uploaded.hidden == false && uploaded.position == 60)
    }
}
