import Foundation
import IvyCore
import IvyStore
import IvySync
import IvySystem
import Synchronization
import Testing

private final class Passes: Sendable {
    private let list = Mutex<[String]>([])
    func add(_ pass: String) { list.withLock { $0.append(pass) } }
    func taken() -> [String] {
        list.withLock { list in
            defer { list = [] }
            return list
        }
    }
}

/// Records each pass through it, in and out; `answers` ends the sync there, never calling `next`.
private struct Recorder: SyncMiddleware {
    let name: String
    let passes: Passes
    var answers: SyncOutcome?

    func handle(
        _ request: SyncRequest, door: SyncDoor, next: (SyncRequest) async throws -> SyncOutcome
    ) async throws -> SyncOutcome {
        passes.add("\(name) in")
        defer { passes.add("\(name) out") }
        if let answers { return answers }
        return try await next(request)
    }
}

@Suite("The door only opens; what a sync means to its caller is in its layers")
struct SyncLayersTests {
    @Test("layers run outermost first and see the outcome on the way out; one that answers ends the sync there")
    func order() async throws {
        try await withWorld { world in
            let a = try await world.device("a")
            let book = try await a.addBook("Dune")
            let passes = Passes()
            let door = a.door()
            let held = [
                Recorder(name: "outer", passes: passes),
                Recorder(name: "inner", passes: passes, answers: .skipped(.coolingDown)),
            ]
            let skipped = try await BlockingExecutor.run { try await door.sync(SyncRequest(), through: held) }
            guard case .skipped(.coolingDown) = skipped else { throw DeviceError("not skipped: \(skipped)") }
            #expect(passes.taken() == ["outer in", "inner in", "inner out", "outer out"])
            #expect(await world.names().isEmpty, "the door was never reached")

            let open = [Recorder(name: "outer", passes: passes), Recorder(name: "inner", passes: passes)]
            let synced = try await BlockingExecutor.run { try await door.sync(SyncRequest(), through: open) }
            guard case .finished(let report, nil) = synced else { throw DeviceError("not synced: \(synced)") }
            #expect(report.uploaded.books == 1)
            #expect(passes.taken() == ["outer in", "inner in", "inner out", "outer out"])
            #expect(await world.names() == ["book_\(book.id).json"])
        }
    }

    @Test("another sync holding the lock: the door alone says busy; through cron's policy it is a skip")
    func busyIsCronsSkip() async throws {
        try await withWorld { world in
            let a = try await world.device("a")
            _ = try await a.addBook("Dune")
            let door = a.door()
            guard case .acquired(let lock) = try SyncLock.acquire(path: a.paths.lockFile) else {
                throw DeviceError("the lock was taken")
            }
            try await withSyncLock(lock) {
                let alone = try await BlockingExecutor.run { try await door.sync(SyncRequest()) }
                guard case .busy(let pid) = alone else { throw DeviceError("not busy: \(alone)") }
                #expect(pid == getpid())
                let cron = try await BlockingExecutor.run {
                    try await door.sync(SyncRequest(), through: [CronPolicy()])
                }
                guard case .skipped(.anotherSyncRunning) = cron else { throw DeviceError("not skipped: \(cron)") }
            }
            #expect(await world.names().isEmpty)
        }
    }

    @Test("a watch's gate: sync_enabled false is a wait, and nothing reaches Drive")
    func watchGate() async throws {
        try await withWorld { world in
            let a = try await world.device("a")
            _ = try await a.addBook("Dune")
            _ = try await a.library.setSetting(.syncEnabled, to: "false")
            let door = a.door()
            let outcome = try await BlockingExecutor.run { try await door.sync(SyncRequest(), through: Watch.layers()) }
            guard case .skipped(.syncDisabled) = outcome else { throw DeviceError("not a wait: \(outcome)") }
            #expect(await world.names().isEmpty)
        }
    }
}
