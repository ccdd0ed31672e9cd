import Foundation
import GoogleEmulator
import IvyCore
import IvyStore
import IvySync
import Testing

/// Issue 19: an odd answer from Drive never buries a change, and a retried create never
/// makes a second file.
@Suite("Attempts and retried creates")
struct HeldChangesTests {
    @Test("a 400 from Drive counts one attempt: the next sync uploads and nothing is failed")
    func oneBadRequestIsOneAttempt() async throws {
        try await withWorld { world in
            let a = try await world.device("a")
            let book = try await a.addBook("Dune")
            await world.state.addFault(
                FaultRule(method: "POST", pathContains: "/upload", times: 1, status: 400, reason: "badRequest"))
            let first = try await a.sync()
            #expect(first.failures.map(\.entity) == ["book \(book.id)"])
            let item = try #require(try await a.library.queueItems().first)
            #expect(item.attempts == 1 && !item.hasFailed, "one odd answer must not hold the change back")
            let second = try await a.sync()
            #expect(second.uploaded.books == 1 && second.failures.isEmpty)
            #expect(try await a.library.queueItems().isEmpty)
            #expect(await world.names() == ["book_\(book.id).json"])
        }
    }

    @Test("Drive answering 4xx on three syncs fails the item at the third, not before")
    func threeSyncsThenHeld() async throws {
        try await withWorld { world in
            let a = try await world.device("a")
            _ = try await a.addBook("Dune")
            await world.state.addFault(
                FaultRule(method: "POST", pathContains: "/upload", status: 403, reason: "forbidden"))
            for attempt in 1...3 {
                _ = try await a.sync()
                let item = try #require(try await a.library.queueItems().first)
                #expect(item.attempts == attempt)
                #expect(item.hasFailed == (attempt == 3))
            }
        }
    }

    /// The three answers Drive documents for a create that carries a pre-generated id.
    static let retriedCreates: [(String, FaultRule)] = [
        // The file is made but the answer is lost: the retry with the same id answers 409.
        (
            "409 after a lost answer",
            FaultRule(method: "POST", pathContains: "uploadType=multipart", times: 1, dropAfterBytes: 100_000_000)
        ),
        // 409, yet the file is gone by the time ivy reads it: a fresh id, one more create.
        (
            "404 after 409",
            FaultRule(method: "POST", pathContains: "uploadType=multipart", times: 1, status: 409, reason: "conflict")
        ),
        (
            "400 fileIdNotUsable",
            FaultRule(
                method: "POST", pathContains: "uploadType=multipart", times: 1, status: 400, reason: "fileIdNotUsable")
        ),
    ]

    @Test("a retried create ends with exactly one file and no failed item", arguments: 0..<3)
    func retriedCreate(_ index: Int) async throws {
        let (name, fault) = Self.retriedCreates[index]
        try await withWorld { world in
            let a = try await world.device("a")
            let book = try await a.addBook("Dune")
            await world.state.addFault(fault)
            let report = try await a.sync()
            #expect(report.failures.isEmpty, "\(name): \(report.failures)")
            #expect(report.uploaded.books == 1, "\(name)")
            #expect(await world.names() == ["book_\(book.id).json"], "\(name)")
            #expect(try await a.library.queueItems().isEmpty, "\(name)")
            #expect(await world.state.faultsFired == 1, "\(name): the fault was exercised")
            let again = try await a.sync()
            #expect(again.transferredNothing, "\(name): \(again.summary)")
        }
    }
}
