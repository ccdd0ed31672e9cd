import Foundation

/// A Drive failure, typed by what to do about it. Keeps the HTTP status and Drive's reason
/// for the log; the message says what a person can do.
package struct DriveError: LocalizedError, Equatable, Sendable {
    package enum Kind: String, Sendable {
        case rateLimited, server, network, driveFull, notFound, forbidden, badRequest, unauthorized
        case fileTooLarge, integrity, unexpected
        /// The Cloud project or the sign-in is not set up for Drive: a person must act.
        case setup
    }

    package var kind: Kind
    package var status: Int?
    package var reason: String?
    package var message: String
    /// A rate limit on the whole Cloud project (every user of its OAuth client at once, as
    /// ErrorInfo's `quota_limit` `defaultPerMinutePerProject` says), not on this user alone.
    package var sharedQuota = false

    package init(_ kind: Kind, status: Int? = nil, reason: String? = nil, message: String, sharedQuota: Bool = false) {
        self.kind = kind
        self.status = status
        self.reason = reason
        self.message = message
        self.sharedQuota = sharedQuota
    }

    /// Worth trying again later (the same request may succeed).
    package var isRetryable: Bool {
        [.rateLimited, .server, .network, .integrity].contains(kind)
    }

    /// What a request that failed for good throws: a full Drive refuses every upload that
    /// follows as well, so it stops the whole sync with one message (`GoogleError.driveFull`)
    /// instead of failing each file in turn; anything else fails its own item.
    var escalated: any Error {
        kind == .driveFull ? GoogleError.driveFull : self
    }

    package var errorDescription: String? {
        switch kind {
        case .driveFull:
            "your Google Drive is full (storageQuotaExceeded); free some space, then run `ivy retry-failed` and `ivy "
                + "sync`"
        case .rateLimited where sharedQuota:
            "Google Drive's quota shared by everyone who uses this OAuth client is used up for now "
                + "(defaultPerMinutePerProject); the next sync tries again"
        case .rateLimited: "Google Drive is rate limiting ivy (\(reason ?? "429")); the next sync tries again"
        case .unauthorized: "Google refused the sign-in (401); run `ivy login`"
        default: message
        }
    }

    static func from(_ response: HTTPResponse, context: String) -> DriveError {
        let parsed = GoogleError.from(response)
        switch parsed {
        case .driveAPIDisabled:
            return DriveError(
                .setup, status: response.status, reason: "accessNotConfigured",
                message: "\(context): \(parsed.localizedDescription)")
        case .missingDriveScope:
            return DriveError(
                .setup, status: response.status, reason: "insufficientPermissions",
                message: "\(context): \(parsed.localizedDescription)")
        default: break
        }
        guard case .http(let status, let reason, let message) = parsed else {
            return DriveError(
                .unexpected, status: response.status, message: "\(context): unexpected answer \(response.status)")
        }
        let text = "\(context): Drive answered \(status)\(reason.map { " \($0)" } ?? ""): \(message)"
        switch (status, reason) {
        case (429, _), (403, "userRateLimitExceeded"?), (403, "rateLimitExceeded"?), (403, "RATE_LIMIT_EXCEEDED"?):
            let quotaLimit = response.decoded(GoogleErrorAnswer.self)?.envelope?.quotaLimit
            return DriveError(
                .rateLimited, status: status, reason: reason, message: text,
                sharedQuota: QuotaLimit.isProjectWide(quotaLimit))
        case (403, "storageQuotaExceeded"?), (403, "quotaExceeded"?):
            return DriveError(.driveFull, status: status, reason: reason, message: text)
        case (500...599, _): return DriveError(.server, status: status, reason: reason, message: text)
        case (404, _): return DriveError(.notFound, status: status, reason: reason, message: text)
        case (401, _): return DriveError(.unauthorized, status: status, reason: reason, message: text)
        case (403, _): return DriveError(.forbidden, status: status, reason: reason, message: text)
        default: return DriveError(.badRequest, status: status, reason: reason, message: text)
        }
    }
}

/// Whose quota a rate limit's `quota_limit` names. Google names the limits of its quota
/// metrics `…PerMinutePerUser` (one person's share of the project) and
/// `…PerMinutePerProject` (everyone's), as in `defaultPerMinutePerProject` or
/// `ReadRequestsPerMinutePerProject`.
enum QuotaLimit {
    static func isProjectWide(_ name: String?) -> Bool {
        guard let name = name?.lowercased() else { return false }
        return name.hasSuffix("perproject") && !name.contains("peruser")
    }
}
