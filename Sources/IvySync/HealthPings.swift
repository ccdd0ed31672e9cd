import Foundation
import IvyCore
import IvyGoogle
import Synchronization

/// A sync's health-check pings (setting `health_url`; see `HealthCheck`): `URL/start` once it
/// has a sign-in, and at the end `URL` or `URL/fail` with the summary. A skip pings nothing,
/// except one for a sign-in gone (`--auto` signed out), which pings `URL/fail` with the reason;
/// a dry run pings nothing at all. A watch's syncs ping by the watch's rules instead
/// (`WatchHealthPings`).
package struct HealthPings: SyncMiddleware {
    package init() {}

    package func handle(
        _ request: SyncRequest, door: SyncDoor, next: (SyncRequest) async throws -> SyncOutcome
    ) async throws -> SyncOutcome {
        guard !request.dryRun, let health = await door.healthCheck() else { return try await next(request) }
        var request = request
        let started = request.started
        request.started = {
            await started?()
            await health.ping(.start, "")
        }
        let outcome: SyncOutcome
        do {
            outcome = try await next(request)
        } catch {
            await health.ping(.fail, HealthText.kind(of: error))
            throw error
        }
        if case (let signal, let text)? = Self.ping(for: outcome) { await health.ping(signal, text) }
        return outcome
    }

    /// What a sync's end pings, if anything: skips for the cooldown, a disabled sync, a busy
    /// library or another sync are no news.
    static func ping(for outcome: SyncOutcome) -> (HealthCheck.Signal, String)? {
        switch outcome {
        case .finished(let report, _):
            return (report.isSuccess ? .success : .fail, HealthText.of(report))
        case .skipped(.signedOut), .signedOut:
            return (.fail, "signed out: run ivy login")
        case .skipped, .busy:
            return nil
        case .notSignedIn:
            return (.fail, "not signed in: run ivy login")
        case .failed(let error, _):
            if error is CancellationError { return nil }
            return (.fail, HealthText.kind(of: error))
        }
    }
}

/// A watch's health-check pings: a success at most once a minute (a watch syncs every few
/// seconds), a failure at once, a signed-out wait once when it begins (again only after a
/// sync went through); no `/start`. One for each watch: it remembers what it last pinged.
package final class WatchHealthPings: SyncMiddleware {
    /// What the watch last told its health check.
    private struct Told {
        /// When the last success was pinged; nil after a fail, so the next success is at once.
        var success: Milliseconds?
        /// A signed-out wait was pinged; it is pinged again only after a sync went through.
        var waiting = false
    }

    private let told = Mutex(Told())

    package init() {}

    package func handle(
        _ request: SyncRequest, door: SyncDoor, next: (SyncRequest) async throws -> SyncOutcome
    ) async throws -> SyncOutcome {
        let result: Result<SyncOutcome, any Error>
        do { result = .success(try await next(request)) } catch { result = .failure(error) }
        if case (let signal, let text)? = ping(for: result, now: door.clock.now()),
            let health = await door.healthCheck()
        {
            await health.ping(signal, text)
        }
        return try result.get()
    }

    private func ping(for result: Result<SyncOutcome, any Error>, now: Milliseconds) -> (HealthCheck.Signal, String)? {
        told.withLock { told in
            func failed(_ text: String) -> (HealthCheck.Signal, String) {
                told.success = nil
                return (.fail, text)
            }
            func waiting() -> (HealthCheck.Signal, String)? {
                told.success = nil
                if told.waiting { return nil }
                told.waiting = true
                // Not the reason: a damaged sign-in file's names its path here.
                return (.fail, "signed out: run ivy login")
            }
            switch result {
            case .success(.finished(let report, _)) where report.isSuccess:
                told.waiting = false
                if let last = told.success, now - last < 60_000 { return nil }
                told.success = now
                return (.success, HealthText.of(report))
            case .success(.finished(let report, _)):
                told.waiting = false
                return failed(HealthText.of(report))
            case .success(.skipped(.signedOut)), .success(.notSignedIn), .success(.signedOut):
                return waiting()
            case .success(.skipped), .success(.busy):
                return nil
            case .success(.failed(let error, _)):
                return error is CancellationError ? nil : failed(HealthText.kind(of: error))
            case .failure(GoogleError.endpointMismatch):
                return waiting()
            case .failure(is NewerIvy):
                return nil
            case .failure(let error):
                return failed(HealthText.kind(of: error))
            }
        }
    }
}
