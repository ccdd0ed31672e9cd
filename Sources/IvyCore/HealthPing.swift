import Foundation

/// How the last health-check ping went, as each ping records it: what `ivy status` and
/// `ivy doctor` show, so a mistyped health URL is seen before a failing sync goes unheard.
package struct HealthPingRecord: Codable, Sendable, Equatable {
    /// When the ping ended: answered, failed, given up, or not sent.
    package var at: Milliseconds
    /// `start`, `success` or `fail`.
    package var signal: String
    /// The `health_url` setting it was sent for, as stored: a record made for another URL
    /// says nothing of this one.
    package var url: String
    /// The HTTP status the service answered; nil when it did not answer.
    package var status: Int?
    /// Why there is no status (a URL ivy refuses, no connection, no answer in time), worded to
    /// follow the ping's name: "was not sent: …", "could not be sent: …", "got no answer within
    /// 10 s".
    package var problem: String?

    package init(at: Milliseconds, signal: String, url: String, status: Int? = nil, problem: String? = nil) {
        self.at = at
        self.signal = signal
        self.url = url
        self.status = status
        self.problem = problem
    }

    /// The service took it: a 2xx answer. A redirect is no success: nothing was recorded where
    /// the ping was sent.
    package var succeeded: Bool { problem == nil && (200..<300).contains(status ?? 0) }

    /// What became of the ping, worded to follow its name ("the start ping answered 200"):
    /// `answered 200`, `answered 404 (not found)`, `answered 307 (a redirect, which ivy does not
    /// follow)`, or the problem.
    package var outcome: String {
        if let problem { return problem }
        guard let status else { return "got no answer" }
        switch status {
        case 300..<400: return "answered \(status) (a redirect, which ivy does not follow)"
        case 401, 403: return "answered \(status) (refused)"
        case 404: return "answered 404 (not found)"
        default: return "answered \(status)"
        }
    }
}

/// A URL as ivy shows it: a user name and password in it (`https://user:pass@host/…`) are
/// credentials, shown as `***`, whatever else is wrong with the text.
package enum URLText {
    package static func masked(_ text: String) -> String {
        guard let at = userinfoEnd(text), let scheme = text.range(of: "://") else { return text }
        return String(text[..<scheme.upperBound]) + "***" + String(text[at...])
    }

    /// `text` with its scheme in lower case (`HTTPS://host/x` as `https://host/x`): schemes are
    /// case-insensitive (RFC 3986 §3.1), and lower case is their canonical form, the one ivy's
    /// checks compare. Text without a scheme is returned as it is.
    package static func lowercasingScheme(_ text: String) -> String {
        guard let colon = text.firstIndex(of: ":"), colon != text.startIndex,
            text[..<colon].allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "+-.".contains($0)) })
        else { return text }
        return text[..<colon].lowercased() + text[colon...]
    }

    /// Whether `text` carries a user name or password before its host.
    package static func hasUserinfo(_ text: String) -> Bool {
        userinfoEnd(text) != nil
    }

    /// Where the `@` that ends the user name and password is, if the text has them.
    private static func userinfoEnd(_ text: String) -> String.Index? {
        guard let scheme = text.range(of: "://") else { return nil }
        let authority = text[scheme.upperBound...].prefix { !"/?#\\".contains($0) }
        return authority.lastIndex(of: "@")
    }
}
