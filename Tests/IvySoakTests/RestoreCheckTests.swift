import Foundation
import Testing

@testable import IvySoak

/// The soak's restore check and oracles: what they accept and what they count.
@Suite("The soak's restore check and oracles")
struct RestoreCheckTests {
    static func book(_ id: String, title: String, hidden: Bool = false, updated: Double = 1) -> JSON {
        .object([
            "id": .string(id), "title": .string(title), "position": .number(0), "hidden": .bool(hidden),
            "created_at": .number(1), "updated_at": .number(updated),
        ])
    }

    static func library(_ books: [JSON]) -> DeviceState {
        var state = DeviceState()
        for book in books { state.books[book["id"]?.string ?? ""] = book }
        return state
    }

    /// A device that joined after WHEN held nothing then: what was made before WHEN stays
    /// as it is, what was made after is deleted, and deleting the former is counted apart.
    @Test("the late joiner's rule: made before WHEN left as is, made after deleted")
    func lateJoiner() {
        var ledger = Ledger()
        ledger.created("old", .book, origin: "a", at: 100_000, real: 100_000)
        ledger.created("new", .book, origin: "a", at: 300_000, real: 300_000)
        // Made by a clock 200 s ahead: made after by its created_at, before in fact.
        ledger.created("skewed", .book, origin: "c", at: 350_000, real: 150_000)
        let before = Self.library([Self.book("old", title: "Dune", updated: 250), Self.book("new", title: "Emma")])
        let right = RestoreCheck(
            device: "d", label: "t", when: 200_000, recorded: DeviceState(), before: before,
            after: Self.library([
                Self.book("old", title: "Dune", updated: 250), Self.book("new", title: "Emma", hidden: true),
            ]),
            ledger: ledger)
        #expect(right.mismatches.isEmpty && right.deletedExisting.isEmpty, "\(right)")
        let wrong = RestoreCheck(
            device: "d", label: "t", when: 200_000, recorded: DeviceState(), before: before,
            after: Self.library([Self.book("old", title: "Dune", hidden: true), Self.book("new", title: "Emma")]),
            ledger: ledger)
        #expect(wrong.deletedExisting.count == 1 && wrong.mismatches.count == 1, "\(wrong)")
        // Where the clocks disagree, left as is and deleted are both right.
        for hidden in [false, true] {
            let either = RestoreCheck(
                device: "d", label: "t", when: 200_000, recorded: DeviceState(),
                before: Self.library([Self.book("skewed", title: "Ubik")]),
                after: Self.library([Self.book("skewed", title: "Ubik", hidden: hidden)]), ledger: ledger)
            #expect(either.mismatches.isEmpty && either.deletedExisting.isEmpty, "\(either)")
        }
    }

    @Test("what the device held then comes back, but for updated_at")
    func heldThen() {
        var ledger = Ledger()
        ledger.created("x", .book, origin: "a", at: 100_000, real: 100_000)
        let recorded = Self.library([Self.book("x", title: "Dune", updated: 150)])
        let before = Self.library([Self.book("x", title: "Emma", updated: 250)])
        let back = RestoreCheck(
            device: "a", label: "t", when: 200_000, recorded: recorded, before: before,
            after: Self.library([Self.book("x", title: "Dune", updated: 400)]), ledger: ledger)
        #expect(back.mismatches.isEmpty && back.deletedExisting.isEmpty)
        let not = RestoreCheck(
            device: "a", label: "t", when: 200_000, recorded: recorded, before: before, after: before, ledger: ledger
        )
        #expect(not.mismatches.count == 1)
    }

    /// A book made a moment after WHEN by a device that knew Google's time only to a second
    /// may carry a `created_at` before WHEN: left as is or deleted, both are right.
    @Test("made just after WHEN by a clock a second off: either way")
    func justAfter() {
        var ledger = Ledger()
        ledger.created("soon", .book, origin: "a", stamps: 199_500...201_500, real: 200_500...200_600)
        #expect(RestoreCheck.madeBefore("soon", when: 200_000, ledger: ledger) == nil)
        ledger.created("late", .book, origin: "a", stamps: 204_000...206_000, real: 205_000...205_100)
        #expect(RestoreCheck.madeBefore("late", when: 200_000, ledger: ledger) == false)
    }

    /// A restore of named books and clips never deletes, and leaves everything else exactly
    /// as it was; a whole-library restore deletes a clip the device held deleted at WHEN.
    @Test("named restores touch only what they name; a clip deleted then goes")
    func namedAndTombstoned() {
        var ledger = Ledger()
        ledger.created("x", .book, origin: "a", at: 100_000, real: 100_000)
        ledger.created("y", .book, origin: "a", at: 100_000, real: 100_000)
        let recorded = Self.library([Self.book("x", title: "Dune", updated: 150), Self.book("y", title: "Emma")])
        let before = Self.library([
            Self.book("x", title: "Ubik", updated: 250), Self.book("y", title: "Kim", updated: 260),
        ])
        let right = RestoreCheck(
            device: "a", label: "t", when: 200_000, named: ["x"], recorded: recorded, before: before,
            after: Self.library([
                Self.book("x", title: "Dune", updated: 400), Self.book("y", title: "Kim", updated: 260),
            ]),
            ledger: ledger)
        #expect(right.mismatches.isEmpty && right.deletedExisting.isEmpty, "\(right)")
        let touched = RestoreCheck(
            device: "a", label: "t", when: 200_000, named: ["x"], recorded: recorded, before: before,
            after: Self.library([Self.book("x", title: "Dune", updated: 400), Self.book("y", title: "Emma")]),
            ledger: ledger)
        #expect(touched.mismatches.count == 1, "\(touched)")

        ledger.created("c", .clip, origin: "a", at: 100_000, real: 100_000)
        var back = DeviceState()
        back.clips["c"] = .object(["id": .string("c"), "book_id": .string("x"), "created_at": .number(1)])
        for (tombstoned, gone, ok) in [(Set(["c"]), true, true), ([], true, false), (["c"], false, false)] {
            let check = RestoreCheck(
                device: "a", label: "t", when: 200_000, recorded: DeviceState(), tombstoned: tombstoned, before: back,
                after: gone ? DeviceState() : back, ledger: ledger)
            #expect((check.mismatches.isEmpty && check.deletedExisting.isEmpty) == ok, "\(check)")
        }
    }

    /// Versions younger than the span must stay; the current version of what a device holds
    /// must always be there.
    @Test("pruned past: a young version gone, or none of what a device holds")
    func prunedPast() {
        let ledger = Ledger()
        func version(_ number: Int, _ id: String) -> JSON {
            .object(["version": .number(Double(number)), "entity_id": .string(id), "deleted": .bool(false)])
        }
        var kept = PastKept(started: 0)
        let holds = Self.library([Self.book("x", title: "Dune")])
        kept.observe(
            "a", versions: [version(1, "x"), version(2, "x")], holds: holds, at: 1_000, ledger: ledger, label: "1")
        kept.observe("a", versions: [version(2, "x")], holds: holds, at: 2_000, ledger: ledger, label: "2")
        #expect(kept.pruned.count == 1, "\(kept.pruned)")
        // Version 2, written after the start, may go once the span has passed since.
        kept.observe(
            "a", versions: [version(2, "x"), version(3, "x")], holds: holds, at: 3_000, ledger: ledger, label: "3")
        kept.observe(
            "a", versions: [version(3, "x")], holds: holds, at: PastKept.span + 3_000, ledger: ledger, label: "4")
        #expect(kept.pruned.count == 1, "\(kept.pruned)")
        kept.observe("a", versions: [], holds: holds, at: PastKept.span + 4_000, ledger: ledger, label: "5")
        #expect(kept.pruned.count == 2, "\(kept.pruned)")
    }

    @Test("a merged note is made of written notes; anything else is invented")
    func mergedNotes() {
        let written: Set<String> = [JSON.string("a r1: Dune").text, JSON.string("b r2: Emma").text]
        let merged = "a r1: Dune\n\n--- Conflict (Nov 28, 2026) ---\nb r2: Emma"
        #expect(Oracles.merged(.string(merged), of: written))
        #expect(!Oracles.merged(.string(merged + "!"), of: written))
        #expect(!Oracles.merged(.string("a r1: Dune"), of: written))
    }

    /// Settled once a clean sync alone carried a write to Drive and another clean sync alone
    /// brought it to the device; a deletion is a change like a write.
    @Test("settled: Drive and the device know every change")
    func settled() {
        var ledger = Ledger()
        ledger.created("X", .clip, origin: "a", at: 0)
        ledger.deviceWrote("a", "X", .clip, fields: ["note": .null], round: 1, creation: true)
        #expect(!ledger.settled("X", on: "a"))
        ledger.syncEnded(ledger.syncStarting("a"), clean: true, alone: true)
        #expect(ledger.settled("X", on: "a") && !ledger.settled("X", on: "b"))
        ledger.syncEnded(ledger.syncStarting("b"), clean: true, alone: true)
        #expect(ledger.settled("X", on: "b"))
        ledger.deletedClip("X", by: "b")
        #expect(!ledger.settled("X", on: "a") && !ledger.settled("X", on: nil))
    }
}
