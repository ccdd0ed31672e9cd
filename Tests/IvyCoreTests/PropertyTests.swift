import Foundation
import IvyCore
import PropertyBased
import Testing

/// A small deterministic random source for simulations driven by one generated seed.
struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

@Suite("Merge and sync properties")
struct PropertyTests {
    static let texts = ["", "alpha", "beta", "gamma delta", "alpha\n\n--- Conflict (Jan 1, 2026) ---\nbeta"]

    static func book(_ value: (Int, Int, Bool, Int)) -> BookBackup {
        let titles = ["Dune", "Emma", "Ulysses"]
        let extras: [String: JSONValue] = value.1 % 3 == 0 ? ["k": .number(Double(value.1))] : [:]
        return BookBackup(
            id: "b1", title: titles[value.0], position: Double(value.1), hidden: value.2, createdAt: 1,
            updatedAt: Milliseconds(value.3), extras: extras)
    }

    static func clip(_ value: (Int, Int, Int, Int)) -> ClipBackup {
        let note = texts[value.0]
        let transcriptions: [String?] = [nil, "words", "other words"]
        return ClipBackup(
            id: "c1", bookID: "b1", start: Double(value.1), duration: 5, note: note.isEmpty ? nil : note,
            transcription: transcriptions[value.2], createdAt: 1, updatedAt: Milliseconds(value.3))
    }

    static var books: Generator<BookBackup, some Sequence & SendableMetatype> {
        zip(Gen.int(in: 0...2), Gen.int(in: 0...10_000), Gen.bool, Gen.int(in: 1...1_000))
            .map { (value: (Int, Int, Bool, Int)) -> BookBackup in book(value) }
    }

    static var clips: Generator<ClipBackup, some Sequence & SendableMetatype> {
        zip(Gen.int(in: 0...4), Gen.int(in: 0...500), Gen.int(in: 0...2), Gen.int(in: 1...1_000))
            .map { (value: (Int, Int, Int, Int)) -> ClipBackup in clip(value) }
    }

    static let now: Milliseconds = 5_000

    @Test("merge is idempotent: merging an entity with itself changes only updated_at")
    func idempotent() async {
        await propertyCheck(input: Self.books, Self.clips) { book, clip in
            var expectedBook = book
            expectedBook.updatedAt = Self.now
            #expect(Merge.book(local: book, remote: book, now: Self.now) == expectedBook)
            var expectedClip = clip
            expectedClip.updatedAt = Self.now
            #expect(Merge.clip(local: clip, remote: clip, now: Self.now) == expectedClip)
        }
    }

    @Test("replaying a merged result against either side changes nothing but updated_at")
    func replay() async {
        await propertyCheck(input: Self.books, Self.books, Self.clips, Self.clips) { a, b, c, d in
            let merged = Merge.book(local: a, remote: b, now: Self.now)
            for other in [a, b] {
                for again in [
                    Merge.book(local: merged, remote: other, now: Self.now + 1),
                    Merge.book(local: other, remote: merged, now: Self.now + 1),
                ] {
                    var expected = merged
                    expected.updatedAt = Self.now + 1
                    #expect(again == expected)
                }
            }
            let mergedClip = Merge.clip(local: c, remote: d, now: Self.now)
            for other in [c, d] {
                var expected = mergedClip
                expected.updatedAt = Self.now + 1
                #expect(Merge.clip(local: mergedClip, remote: other, now: Self.now + 1) == expected)
                #expect(Merge.clip(local: other, remote: mergedClip, now: Self.now + 1) == expected)
            }
        }
    }

    @Test("book merges agree on both devices, whichever side is local")
    func symmetricBooks() async {
        await propertyCheck(input: Self.books, Self.books) { a, b in
            #expect(Merge.book(local: a, remote: b, now: Self.now) == Merge.book(local: b, remote: a, now: Self.now))
        }
    }

    @Test("devices making random edits, deletes and syncs converge and lose nothing that was not deleted")
    func convergence() async {
        await propertyCheck(count: 300, input: Gen.int(in: 0...Int(Int32.max)), Gen.int(in: 2...3)) {
            seed, deviceCount in
            Self.simulate(seed: UInt64(seed), devices: deviceCount)
        }
    }

    /// Random edits, deletes and syncs on a few devices, then quiet syncs until settled.
    static func simulate(seed: UInt64, devices count: Int) {
        var random = SplitMix(state: seed)
        let drive = SimulatedDrive()
        let devices = (0..<count).map { SimulatedDevice("d\($0)", clock: Milliseconds(1_000 * ($0 + 1))) }
        var nextID = 0
        var everyBook: Set<BookID> = []
        var deletedSomewhere: Set<ClipID> = []
        var everyClip: Set<ClipID> = []
        // Text appended to a clip's note, counted once it reached a sync on its device.
        var pendingTokens: [String: [ClipID: [String]]] = [:]  // device → clip → tokens
        var publishedTokens: [ClipID: Set<String>] = [:]  // clip → tokens

        func newID<ID: TextIdentifier>() -> ID {
            nextID += 1
            return ID(String(nextID, radix: 16) + "-aa")
        }

        for step in 0..<Int.random(in: 10...40, using: &random) {
            let device = devices[Int.random(in: 0..<count, using: &random)]
            let books = device.books.keys.sorted()
            let clips = device.clips.keys.sorted()
            switch Int.random(in: 0..<10, using: &random) {
            case 0:
                let id: BookID = newID()
                device.addBook(id, title: "t\(step)", position: Double(Int.random(in: 0...100, using: &random)))
                everyBook.insert(id)
            case 1 where !books.isEmpty:
                let id = books[Int.random(in: 0..<books.count, using: &random)]
                let position = Double(Int.random(in: 0...1000, using: &random))
                device.editBook(id) {
                    $0.position = position
                    if step % 5 == 0 { $0.title = "t\(step)" }
                }
            case 2 where !books.isEmpty:
                device.editBook(books[Int.random(in: 0..<books.count, using: &random)]) { $0.hidden = true }
            case 3 where !books.isEmpty:
                let id: ClipID = newID()
                device.addClip(id, book: books[Int.random(in: 0..<books.count, using: &random)], note: "n\(step)")
                everyClip.insert(id)
            case 4...5 where !clips.isEmpty:
                let id = clips[Int.random(in: 0..<clips.count, using: &random)]
                let token = "x\(step)\(device.name)"
                device.editClip(id) { clip in
                    clip.note = (clip.note ?? "") + " " + token
                    if step % 4 == 0 { clip.start = Double(step) }
                }
                pendingTokens[device.name, default: [:]][id, default: []].append(token)
            case 6 where !clips.isEmpty:
                let id = clips[Int.random(in: 0..<clips.count, using: &random)]
                device.deleteClip(id)
                deletedSomewhere.insert(id)
                pendingTokens[device.name]?[id] = nil
            default:
                for (clip, tokens) in pendingTokens[device.name] ?? [:] where device.clips[clip] != nil {
                    publishedTokens[clip, default: []].formUnion(tokens)
                }
                pendingTokens[device.name] = [:]
                device.sync(with: drive)
            }
        }
        // Quiet syncs: everyone publishes and everyone catches up.
        for device in devices {
            for (clip, tokens) in pendingTokens[device.name] ?? [:] where device.clips[clip] != nil {
                publishedTokens[clip, default: []].formUnion(tokens)
            }
        }
        for _ in 0..<3 {
            for device in devices { device.sync(with: drive) }
        }

        let context = "seed \(seed), \(count) devices"
        let reference = devices[0]
        for device in devices.dropFirst() {
            #expect(device.library == reference.library, "\(context): \(device.name) differs from \(reference.name)")
            #expect(
                device.extras.filter { !$0.value.isEmpty } == reference.extras.filter { !$0.value.isEmpty },
                "\(context)")
        }
        for device in devices {
            #expect(device.plan(with: drive).isEmpty, "\(context): \(device.name) still has work after quiet syncs")
            #expect(device.queue.isEmpty, "\(context): \(device.name) has a queue left")
            #expect(Set(device.books.keys) == everyBook, "\(context): books are never lost")
            #expect(
                everyClip.subtracting(deletedSomewhere).isSubset(of: Set(device.clips.keys)),
                "\(context): a clip nobody deleted is gone")
        }
        #expect(drive.namesWithDuplicates.isEmpty, "\(context): duplicate files on Drive")
        #expect(
            drive.list().count == reference.books.count + 2 * reference.clips.count,
            "\(context): Drive holds exactly the library")
        for (clip, tokens) in publishedTokens where !deletedSomewhere.contains(clip) {
            let note = reference.clips[clip]?.note ?? ""
            for token in tokens {
                #expect(note.contains(token), "\(context): text \(token) added to clip \(clip) was lost")
            }
        }
    }
}
