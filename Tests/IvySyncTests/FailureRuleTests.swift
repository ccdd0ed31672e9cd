import Foundation
import IvyGoogle
import Testing

@testable import IvySync

/// The one rule of which errors stop a sync and which fail one item (`SyncFailure.of`).
@Suite("Which errors stop the sync")
struct FailureRuleTests {
    @Test("a sign-in that gives no token and a cancellation stop the sync")
    func stops() {
        guard case .stopsSync(let error) = SyncFailure.of(GoogleError.signedOut(reason: "revoked")) else {
            Issue.record("a GoogleError did not stop the sync")
            return
        }
        #expect(error as? GoogleError == .signedOut(reason: "revoked"))
        guard case .stopsSync(let cancelled) = SyncFailure.of(CancellationError()) else {
            Issue.record("a cancellation did not stop the sync")
            return
        }
        #expect(cancelled is CancellationError)
    }

    @Test("every answer from Drive fails one item and is retried; a local cause no retry fixes fails at once")
    func items() {
        let drive = DriveError(.badRequest, status: 400, message: "Drive answered 400")
        guard case .retryable(let message) = SyncFailure.of(drive) else {
            Issue.record("a Drive answer was not retryable")
            return
        }
        #expect(message == "Drive answered 400")
        guard case .permanent("missing") = SyncFailure.of(SyncFailure.permanent("missing")) else {
            Issue.record("a permanent failure changed")
            return
        }
        guard
            case .unusableRemote("clip_x.json", "bad") = SyncFailure.of(
                SyncFailure.unusableRemote(
                    file: "clip_x.json", reason: "bad"))
        else {
            Issue.record("an unusable remote changed")
            return
        }
        #expect(SyncFailure.permanent("x").failsTheItem && SyncFailure.retryable("x").failsTheItem)
        #expect(!SyncFailure.changedDuringSync.failsTheItem)
    }

    @Test("once cancelled, an item's failure is the cancellation's; a changed row keeps its meaning")
    func cancelled() async {
        let task = Task {
            while !Task.isCancelled { await Task.yield() }
            return (
                SyncFailure.of(SyncFailure.permanent("x")), SyncFailure.of(DriveError(.server, message: "503")),
                SyncFailure.of(SyncFailure.changedDuringSync)
            )
        }
        task.cancel()
        let (permanent, drive, changed) = await task.value
        guard case .stopsSync = permanent, case .stopsSync = drive, case .changedDuringSync = changed else {
            Issue.record("cancellation was not applied as the rule says")
            return
        }
    }
}
