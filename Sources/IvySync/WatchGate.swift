import Foundation
import IvyCore
import IvyStore

/// The gate before each of a watch's syncs: a library a newer ivy migrated since this one
/// opened it ends the watch (`NewerIvy`, thrown); `sync_enabled` false is a wait
/// (`.skipped(.syncDisabled)`), which goes on by itself once it is true again.
package struct WatchGate: SyncMiddleware {
    package init() {}

    package func handle(
        _ request: SyncRequest, door: SyncDoor, next: (SyncRequest) async throws -> SyncOutcome
    ) async throws -> SyncOutcome {
        if let newer = try await door.library.migratedByNewerIvy() { throw NewerIvy(errorDescription: newer) }
        guard try await door.library.setting(.syncEnabled) == "true" else { return .skipped(.syncDisabled) }
        return try await next(request)
    }
}

/// A newer ivy migrated the library since this one opened it: a watch must not go on.
package struct NewerIvy: LocalizedError {
    package let errorDescription: String?

    package init(errorDescription: String) {
        self.errorDescription = errorDescription
    }
}
