import Foundation

/// Errors of the Google clients, worded to read after "Error: " and to name the fix.
/// None of them ever carries a token or the client secret.
package enum GoogleError: LocalizedError, Equatable, Sendable {
    case badEndpoint(String)
    /// The environment names another server than the one the saved sign-in was made at.
    case endpointMismatch(variable: String, named: String, signedAt: String)
    case missingCredentials
    /// The OAuth client configured now is not the one the sign-in was made with: a refresh
    /// token is good only with its own client, and Google's refusal would end the sign-in.
    case clientMismatch(signedInWith: String, configured: String)
    case invalidClient
    case accessDenied
    case codeExpired
    /// Too many sign-in codes asked for: Google's 403 `{"error_code":"rate_limit_exceeded"}`.
    case codeRateLimited
    /// Drive's 403 `accessNotConfigured`: the Drive API is off in the OAuth client's Cloud
    /// project. `link` is the console page Google names for enabling it.
    case driveAPIDisabled(link: String?)
    /// Drive's 403 `insufficientPermissions`: the sign-in does not include the drive.file scope.
    case missingDriveScope
    /// The refresh token was revoked or expired: signed out until `ivy login`.
    case signedOut(reason: String)
    case notSignedIn
    /// Half of an OAuth client given (which, and where), the other half nowhere.
    case incompleteCredentials(String)
    /// Google answered with an error; `reason` is Drive's `errors[0].reason` or the OAuth `error`.
    case http(status: Int, reason: String?, message: String)
    case network(String)
    case unexpectedResponse(String)
    /// Drive's per-project rate limit, still hit after the longer back-off: every user of
    /// the OAuth client's Cloud project draws on one quota, and it is spent for now. What to
    /// do differs for the client built into a release (everyone's) and one's own.
    case sharedQuotaExhausted(builtInClient: Bool)
    /// Google asked for a wait ivy does not take: longer than `RetryPolicy.longestWait`, or
    /// past the sync's deadline. The sync stops; every change stays queued.
    case retryLater(RetryLater)
    /// The server took ivy's requests and answered none for this many seconds (the sync's
    /// silence budget): the sync stops; every change stays queued.
    case noAnswer(seconds: Int)
    /// Drive's 403 `storageQuotaExceeded`: no upload can succeed until space is freed.
    case driveFull

    package var errorDescription: String? {
        switch self {
        case .badEndpoint(let message): message
        case .endpointMismatch(let variable, let named, let signedAt):
            "\(variable)=\(named), but this sign-in was made at \(signedAt) and its tokens go only there; "
                + "unset \(variable) to use it, or run `ivy login` to sign in at \(named)"
        case .missingCredentials:
            """
            no OAuth client configured, and this build of ivy has none built in (a release of ivy, built with \
            `scripts/package --client-id`, has one: install that, and `ivy login` needs nothing more). \
            Otherwise, in the Google Cloud project of the Ivy app, create an OAuth client of type \
            "TVs and Limited Input devices" (APIs & Services > Credentials > Create credentials > OAuth client ID), \
            then give it to ivy: `ivy config set client_id ID` and `ivy config set client_secret --from-file FILE` \
            (FILE holding the secret, or - for standard input; or set IVY_CLIENT_ID and IVY_CLIENT_SECRET). \
            It must be the same project as the app: drive.file only shows files made by that project.
            """
        case .incompleteCredentials(let what): "\(what): \(ClientResolution.halfClientFix)"
        case .clientMismatch(let signedInWith, let configured):
            "the saved sign-in was made with OAuth client \(signedInWith), but the client configured now is "
                + "\(configured) (IVY_CLIENT_ID, the setting client_id, or the one built into this release); "
                + "a sign-in refreshes only with its own client: "
                + "configure \(signedInWith) again, or run `ivy login` to sign in with \(configured)"
        case .invalidClient:
            "Google does not accept the OAuth client (invalid_client); check client_id and client_secret, and that "
                + "the client's type is \"TVs and Limited Input devices\""
        case .accessDenied: "the sign-in was denied in the browser; run `ivy login` to try again"
        case .codeExpired: "the sign-in code expired before it was approved; run `ivy login` again"
        case .codeRateLimited:
            "Google is not handing out more sign-in codes for this OAuth client right now (rate_limit_exceeded); "
                + "wait a few minutes, then run `ivy login` again"
        case .driveAPIDisabled(let link):
            "the Google Drive API is not enabled in the Google Cloud project of ivy's OAuth client "
                + "(accessNotConfigured); enable it at "
                + (link ?? "console.cloud.google.com: APIs & Services > Library > Google Drive API > Enable")
                + ", wait a few minutes, then try again"
        case .missingDriveScope:
            "the sign-in does not let ivy use its files in Google Drive (insufficientPermissions); run `ivy login` "
                + "again and allow access to the Drive files ivy uses"
        case .signedOut(let reason): "signed out: \(reason); run `ivy login`"
        case .notSignedIn: "not signed in; run `ivy login`"
        case .http(let status, let reason, let message):
            "Google answered \(status)\(reason.map { " (\($0))" } ?? ""): \(message)"
        case .network(let message): "cannot reach Google: \(message); check the network and try again"
        case .unexpectedResponse(let message): "unexpected answer from Google: \(message)"
        case .driveFull:
            "your Google Drive is full (storageQuotaExceeded), so this sync stopped sending files; your changes are "
                + "kept: free some space in Google Drive (`ivy doctor` shows how much is free), then run `ivy sync`"
        case .sharedQuotaExhausted(let builtInClient):
            Self.sharedQuotaName(builtInClient: builtInClient)
                + " is used up for now (defaultPerMinutePerProject), so ivy stopped; your changes are kept and the "
                + "next sync sends them. " + Self.sharedQuotaFix(builtInClient: builtInClient)
        case .retryLater(.askedTooLong):
            "Google asked ivy to wait more than \(Self.seconds(RetryPolicy.longestWait)) s before trying again "
                + "(Retry-After), so ivy stopped rather than wait; every change here stays queued and the next "
                + "sync sends it"
        case .retryLater(.pastDeadline):
            "the wait Google asked for before the next try would run past this sync's deadline (setting "
                + "sync_timeout), so the sync stopped; every change here stays queued and the next sync sends it"
        case .noAnswer(let seconds):
            "the server took ivy's requests but answered none for \(seconds) s, so this sync stopped; every change "
                + "here stays queued and the next sync sends it. If it keeps happening, check for a proxy or firewall "
                + "that holds connections open without passing them on"
        }
    }

    /// Why Google's wait was not taken.
    package enum RetryLater: Sendable, Equatable {
        /// `Retry-After` asked for more than `RetryPolicy.longestWait`.
        case askedTooLong
        /// The wait would still be going on at the sync's deadline.
        case pastDeadline
    }

    /// What to do about a spent per-project quota. The built-in client's project is shared by
    /// everyone on a release, so one's own client has a quota of its own; one's own client's
    /// project is spent by one's own devices, so they must spend less. The secret goes in a
    /// file or on standard input, never in the process list (`--client-secret-file`).
    package static func sharedQuotaFix(builtInClient: Bool) -> String {
        builtInClient
            ? "Your own OAuth client has a quota of its own: `ivy login --client-id ID --client-secret-file FILE` "
                + "(FILE holding the secret, or - for standard input)"
            : "It refills within a minute; if this keeps happening, fewer devices or a lower "
                + "`ivy config set quota_units_per_minute N` on each spends less of it"
    }

    /// Whose per-project quota was spent, as the start of a sentence.
    package static func sharedQuotaName(builtInClient: Bool) -> String {
        builtInClient
            ? "Google Drive's quota shared by everyone who uses ivy's OAuth client"
            : "Google Drive's quota of your OAuth client's Cloud project, shared by every device signed in with it,"
    }

    /// Whole seconds of `duration`, for messages.
    static func seconds(_ duration: Duration) -> Int64 { duration.components.seconds }

    /// Reads Drive's `{"error":{"code","message","errors":[{"reason"}]}}` or OAuth's flat
    /// `{"error","error_description"}`.
    package static func from(_ response: HTTPResponse) -> GoogleError {
        let answer = response.decoded(GoogleErrorAnswer.self)
        if let envelope = answer?.envelope {
            let reason = envelope.reason
            let message = envelope.message ?? "no message"
            switch (response.status, reason) {
            case (403, "accessNotConfigured"?):
                // Google's message names the page that enables the API in the right project.
                let link = message.firstMatch(of: /https:\/\/console\.(developers|cloud)\.google\.com\/[^\s"]+/)
                    .map { String($0.output.0) }
                return .driveAPIDisabled(link: link)
            case (403, "insufficientPermissions"?): return .missingDriveScope
            default: return .http(status: response.status, reason: reason, message: message)
            }
        }
        if let code = answer?.code {
            return .http(status: response.status, reason: code, message: answer?.description ?? code)
        }
        return .http(status: response.status, reason: nil, message: HTTPStatusText.text(response.status))
    }

    /// OAuth's flat `error` code of an answer, if it has one.
    static func oauthCode(_ response: HTTPResponse) -> String? {
        response.decoded(GoogleErrorAnswer.self)?.code
    }
}

enum HTTPStatusText {
    static func text(_ status: Int) -> String {
        switch status {
        case 400: "bad request"
        case 401: "unauthorized"
        case 403: "forbidden"
        case 404: "not found"
        case 429: "too many requests"
        case 500...599: "server error"
        default: "HTTP \(status)"
        }
    }
}

extension GoogleError {
    /// Whether `error` means Google could not be reached at all (no connection, no answer),
    /// rather than an answer: the one test for "unreachable", behind both cron's silence (the
    /// queue keeps every change for the next run) and `ivy sync`'s advice to check the network.
    package static func isUnreachable(_ error: any Error) -> Bool {
        if case .network = error as? GoogleError { return true }
        return (error as? DriveError)?.kind == .network
    }
}
