import IvyCore
import IvyGoogle
import IvyStore
import IvySystem

/// What a health-check ping's body says: counts, and the kinds of what went wrong, in words
/// from a fixed list. Never a path, a title or an error's own message, which may name a file
/// here (`…/home/USER/.local/share/ivy/audio/ID.mp3 is missing`): the service's page is not
/// this machine, and whoever can read it need not learn the home's layout or the user's name.
enum HealthText {
    /// A sync that ran to its end.
    static func of(_ report: SyncReport) -> String {
        var line = report.moved
        if report.leftForNextSync > 0 { line += "; stopped early, \(report.leftForNextSync) left for the next sync" }
        if !report.failures.isEmpty {
            line += "; \(report.failures.count) failed (\(kinds(report.failures)))"
        }
        if !report.skipped.isEmpty {
            let count = report.skipped.count
            line += count == 1 ? "; 1 Drive file skipped" : "; \(count) Drive files skipped"
        }
        if report.orphanClips > 0 {
            line +=
                report.orphanClips == 1
                ? "; 1 clip without its book" : "; \(report.orphanClips) clips without their book"
        }
        if !report.heldChanges.isEmpty {
            let count = report.heldChanges.count == 1 ? "1 change" : "\(report.heldChanges.count) changes"
            line +=
                "; \(count) held back after failing \(QueueItem.maximumAttempts) times "
                + "(\(kinds(report.heldChanges))); run `ivy retry-failed`"
        }
        if report.deletionsHeld != nil {
            line += "; local deletions held back by the safety valve; `ivy doctor` says why"
        }
        if report.historyDrill != nil {
            line += "; the restore drill found versions that do not come back as recorded; run `ivy check --history`"
        }
        return line
    }

    /// The distinct kinds of `problems`, in the order first met.
    private static func kinds(_ problems: [SyncReport.Problem]) -> String {
        var seen: [String] = []
        for problem in problems {
            let kind = kind(ofReason: problem.reason)
            if !seen.contains(kind) { seen.append(kind) }
        }
        return seen.joined(separator: ", ")
    }

    /// Why a sync could not run, as a kind.
    static func kind(of error: any Error) -> String {
        switch error {
        case let error as GoogleError:
            switch error {
            case .network: return "Google could not be reached"
            case .signedOut, .notSignedIn: return "signed out: run ivy login"
            case .driveFull: return "Google Drive is full"
            case .sharedQuotaExhausted: return "the Drive quota shared by ivy's OAuth client is used up"
            case .retryLater: return "Google asked ivy to wait"
            case .noAnswer: return "Google took the requests and answered none"
            case .http(let status, let reason, _): return "Google answered \(status)" + (reason.map { " \($0)" } ?? "")
            case .missingCredentials, .incompleteCredentials, .clientMismatch, .invalidClient:
                return "no usable OAuth client"
            case .badEndpoint, .endpointMismatch: return "the Google endpoints are refused"
            case .driveAPIDisabled, .missingDriveScope: return "Drive is not set up for ivy"
            case .accessDenied, .codeExpired, .codeRateLimited, .unexpectedResponse:
                return "Google refused the sign-in"
            }
        case let error as DriveError:
            return "Drive: \(error.kind.rawValue)" + (error.status.map { " (\($0))" } ?? "")
        case let error as StorageError:
            return error.problem == .full ? "the disk is full" : "the disk is read-only"
        case let error as StoreError:
            return error.isBusy ? "the library is busy" : "the library could not be used"
        case is CancellationError:
            return "stopped before its end"
        case is UnsafeDirectoryError:
            return "ivy refuses its home: another user could tamper with a directory of it; ivy doctor says which"
        default:
            return "error (\(type(of: error)))"
        }
    }

    /// The kind a failure's reason (as the queue keeps it) names, from a fixed list.
    static func kind(ofReason reason: String) -> String {
        let text = reason.lowercased()
        if text.contains("audio") && (text.contains("is missing") || text.contains("does not exist")) {
            return "audio missing here"
        }
        if text.contains("shorter clip") { return "audio over the size limit" }
        if text.contains("audio file") { return "audio unreadable here" }
        if text.contains("backup_extras") { return "kept keys unreadable" }
        if text.contains("storagequotaexceeded") || text.contains("drive is full") { return "Google Drive is full" }
        if text.contains("rate limit") { return "rate limited" }
        if let match = text.firstMatch(of: /answered (\d{3})/) { return "Drive answered \(match.1)" }
        if text.contains("cannot reach") || text.contains("could not be reached") {
            return "Drive could not be reached"
        }
        return "other error"
    }
}
