import Foundation

/// Where Google lives: the OAuth server and the Drive API. Tests and `ivy-emulator` point
/// both at a loopback URL; anything else must be HTTPS.
package struct GoogleEndpoints: Sendable, Equatable {
    package static let oauthDefault = "https://oauth2.googleapis.com"
    package static let driveDefault = "https://www.googleapis.com"

    package var oauth: URL
    package var drive: URL

    package init(oauth: URL, drive: URL) {
        self.oauth = oauth
        self.drive = drive
    }

    /// From `IVY_OAUTH_URL` and `IVY_DRIVE_URL`, refusing plain HTTP to anything but loopback.
    package static func from(environment: [String: String]) throws(GoogleError) -> GoogleEndpoints {
        GoogleEndpoints(
            oauth: try checked(environment["IVY_OAUTH_URL"] ?? oauthDefault, variable: "IVY_OAUTH_URL"),
            drive: try checked(environment["IVY_DRIVE_URL"] ?? driveDefault, variable: "IVY_DRIVE_URL"))
    }

    static func checked(_ text: String, variable: String) throws(GoogleError) -> URL {
        var trimmed = text
        while trimmed.hasSuffix("/") { trimmed.removeLast() }
        guard let url = URL(string: trimmed), let scheme = url.scheme?.lowercased(), let host = url.host?.lowercased() else {
            throw .badEndpoint("\(variable)=\(text) is not a URL; unset it to use Google")
        }
        switch scheme {
        case "https": return url
        case "http" where isLoopback(host): return url
        case "http": throw .badEndpoint("\(variable) uses plain http:// to \(host); only loopback hosts may, use https://")
        default: throw .badEndpoint("\(variable)=\(text) must be an https:// URL")
        }
    }

    static func isLoopback(_ host: String) -> Bool {
        host == "localhost" || host == "::1" || host == "[::1]" || host.hasPrefix("127.")
    }
}

/// The OAuth client ivy signs in with: a "TVs and Limited Input devices" client.
package struct ClientCredentials: Sendable, Equatable {
    package var id: String
    package var secret: String

    package init(id: String, secret: String) {
        self.id = id
        self.secret = secret
    }
}
