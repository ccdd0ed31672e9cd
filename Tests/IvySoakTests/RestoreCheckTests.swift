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
        ledger.created("old", .book, origin: "a", at: 100, real: 100)
        ledger.created("new", .book, origin: "a", at: 300, real: 300)
        // Made by a clock 200 ms ahead: made after by its created_at, before in fact.
        ledger.created("skewed", .book, origin: "c", at: 350, real: 150)
        let before = Self.library([Self.book("old", title: "Dune", updated: 250), Self.book("new", title: "Emma")])
        let right = RestoreCheck(
            device: "d", label: "t", when: (200, 200), recorded: DeviceState(), before: before,
            after: Self.library([
                Self.book("old", title: "Dune", updated: 250), Self.book("new", title: "Emma", hidden: true),
            ]),
            ledger: ledger)
        #expect(right.mismatches.isEmpty && right.deletedExisting.isEmpty, "\(right)")
        let wrong = RestoreCheck(
            device: "d", label: "t", when: (200, 200), recorded: DeviceState(), before: before,
            after: Self.library([Self.book("old", title: "Dune", hidden: true), Self.book("new", title: "Emma")]),
            ledger: ledger)
        #expect(wrong.deletedExisting.count == 1 && wrong.mismatches.count == 1, "\(wrong)")
        // Where the clocks disagree, left as is and deleted are both right.
        for hidden in [false, true] {
            let either = RestoreCheck(
                device: "d", label: "t", when: (200, 200), recorded: DeviceState(),
                before: Self.library([Self.book("skewed", title: "Ubik")]),
                after: Self.library([Self.book("skewed", title: "Ubik", hidden: hidden)]), ledger: ledger)
            #expect(either.mismatches.isEmpty && either.deletedExisting.isEmpty, "\(either)")
        }
    }

    @Test("what the device held then comes back, but for updated_at")
    func heldThen() {
        var ledger = Ledger()
        ledger.created("x", .book, origin: "a", at: 100, real: 100)
        let recorded = Self.library([Self.book("x", title: "Dune", updated: 150)])
        let before = Self.library([Self.book("x", title: "Emma", updated: 250)])
        let back = RestoreCheck(
            device: "a", label: "t", when: (200, 200), recorded: recorded, before: before,
            after: Self.library([Self.book("x", title: "Dune", updated: 400)]), ledger: ledger)
        #expect(back.mismatches.isEmpty && back.deletedExisting.isEmpty)
        let not = RestoreCheck(
            device: "a", label: "t", when: (200, 200), recorded: recorded, before: before, after: before, ledger: ledger
        )
        #expect(not.mismatches.count == 1)
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
