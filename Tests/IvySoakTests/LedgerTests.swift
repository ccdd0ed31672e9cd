import Testing

@testable import IvySoak

/// The soak's model of who has seen what, which decides which last edits the checker holds
/// ivy to. It may err only towards seeing writes as concurrent (checking less).
@Suite("The soak's ledger")
struct LedgerTests {
    /// Seed 13 once reported "lost edit: book position = 10399.5: b wrote it", with every
    /// device at a's 13807: a's killed replace left the book missing on Drive, and a's and b's
    /// clean syncs each skipped it while its grace ran, yet the ledger let them carry a's
    /// write to Drive and on to b. The merge of two concurrent positions rightly took the
    /// furthest.
    @Test("a clean sync that skipped an entity carries neither side's writes of it")
    func skippedEntityTeachesNothing() throws {
        func b10399(leftAlone: Set<String>) throws -> (bKnowsOfA: Int, aWrote: Int) {
            var ledger = Ledger()
            ledger.created("X", .book, origin: "c", at: 0)
            ledger.deviceWrote("c", "X", .book, fields: ["position": .number(1)], round: 1, creation: true)
            for device in ["c", "a", "b"] {
                ledger.syncEnded(ledger.syncStarting(device), clean: true, alone: true)
            }
            ledger.deviceWrote("a", "X", .book, fields: ["position": .number(13807)], round: 4)
            ledger.syncEnded(ledger.syncStarting("a"), clean: true, alone: true, leftAlone: leftAlone)
            ledger.syncEnded(ledger.syncStarting("b"), clean: true, alone: true, leftAlone: leftAlone)
            ledger.deviceWrote("b", "X", .book, fields: ["position": .number(10399.5)], round: 6)
            let a = try #require(ledger.writes.last { $0.writer == "a" })
            let b = try #require(ledger.writes.last)
            return (b.known["a"] ?? -1, a.sequence)
        }
        let skipped = try b10399(leftAlone: ["X"])
        #expect(skipped.bKnowsOfA < skipped.aWrote, "b could not have seen a's write: they are concurrent")
        let carried = try b10399(leftAlone: [])
        #expect(carried.bKnowsOfA >= carried.aWrote, "synced both ways, b had seen a's write")
    }

    /// Seed 135 once reported "lost edit: clip note containing \"app r9: …\": app wrote it back",
    /// with every device at c's newer note: c replaced the app's r9 note, and the app, replacing
    /// the clip's audio before c's sync, wrote the r9 note back unchanged. The merge against a
    /// base holding the r9 note rightly took c's alone.
    @Test("a note the app only carried along may give way to the concurrent note it carried it past")
    func carriedNoteGivesWay() throws {
        var ledger = Ledger()
        ledger.created("X", .clip, origin: "b", at: 0)
        ledger.deviceWrote("b", "X", .clip, fields: ["note": .null], round: 6, creation: true)
        ledger.syncEnded(ledger.syncStarting("b"), clean: true, alone: true)
        let r9 = "app r9: Walden Ulysses Emma"
        ledger.appWrote("X", .clip, object: ["note": .string(r9)], changed: ["note"], round: 9)
        ledger.syncEnded(ledger.syncStarting("c"), clean: true, alone: true)
        let r16 = "c r16: Dune Ulysses Emma Middlemarch"
        ledger.deviceWrote("c", "X", .clip, fields: ["note": .string(r16)], round: 16)
        ledger.appWrote("X", .clip, object: ["note": .string(r9)], changed: ["audio"], round: 16)

        let notes = ledger.writes.filter { $0.field == "note" }
        let last = try #require(notes.last)
        #expect(last.writer == "app" && last.carried)
        let demand = try #require(ledger.demand(last, among: notes))
        #expect(demand.accepts(.string(r16)), "the three-way merge's result: c changed the note, the app did not")
        #expect(demand.accepts(.string(r9)), "a merge by the later write may take the app's copy")
        #expect(demand.accepts(.string(r16 + "\n\n--- Conflict (Nov 26, 2026) ---\n" + r9)))
        #expect(!demand.accepts(.string("b r6: something else")))

        // A note the app meant to write is still held to: the final note must contain it.
        ledger.appWrote("X", .clip, object: ["note": .string("app r17: Ubik")], changed: ["note"], round: 17)
        let all = ledger.writes.filter { $0.field == "note" }
        let meant = try #require(all.last)
        #expect(!meant.carried && ledger.demand(meant, among: all) == .containing(["app r17: Ubik"]))
    }
}
