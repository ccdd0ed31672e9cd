import Foundation
import IvyCore
import IvyGoogle
import IvyStore
import IvySystem
import Logging

/// Why an operation did not finish, and what that means for the rest of the sync. The rule
/// is written once, in `SyncFailure.of(_:)`, and every operation goes through it:
///
/// - **The whole sync stops** (`stopsSync`) when no later item could do better: the sign-in
///   gave no access token (a `GoogleError`: signed out, client refused, Google unreachable),
///   so every later request would fail the same way; the disk under the home is full or
///   read-only (`StorageError`), so every later write would; or the sync was cancelled (its deadline
///   passed: what was in flight is not that item's failure). What finished before is
///   already recorded.
/// - **One item fails** for everything else, and the sync goes on:
///   - `unusableRemote`: Drive's copy cannot be used (over a size cap, unreadable, malformed,
///     another id, a clip without its MP3). Reported as skipped, never applied, and not a
///     failure that would repeat every run.
///   - `changedDuringSync`: the local row changed while the sync ran, or a file an upload
///     would replace changed on Drive after the listing. Nothing is written; the next sync
///     plans it afresh.
///   - `permanent`: a local cause no retry can fix (audio missing or over the cap, an entity
///     that cannot be encoded, unreadable kept keys). A push is held back at once.
///   - `retryable`: anything else, every answer from Drive included (one odd 400 must not
///     bury a change). A push counts one attempt and is retried until
///     `QueueItem.maximumAttempts`.
enum SyncFailure: Error {
    case stopsSync(any Error)
    case unusableRemote(file: String, reason: String)
    case changedDuringSync
    case permanent(String)
    case retryable(String)

    /// What an error thrown while carrying out one item means for the sync.
    static func of(_ error: any Error) -> SyncFailure {
        switch error {
        case let error as GoogleError: .stopsSync(error)
        // A full or read-only disk fails every later download and write the same way.
        case let error as StorageError: .stopsSync(error)
        case is CancellationError: .stopsSync(CancellationError())
        case let failure as SyncFailure where !failure.failsTheItem: failure
        // Stopped at the deadline: what was in flight is not this item's failure.
        case _ where Task.isCancelled: .stopsSync(CancellationError())
        case let failure as SyncFailure: failure
        default: .retryable(error.localizedDescription)
        }
    }

    /// Whether the item is reported as failed (and a push retried or held back).
    var failsTheItem: Bool {
        switch self {
        case .permanent, .retryable: true
        case .stopsSync, .unusableRemote, .changedDuringSync: false
        }
    }
}
