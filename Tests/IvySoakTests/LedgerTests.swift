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
            ledger.created("X", .book, origin: "c")
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
}
