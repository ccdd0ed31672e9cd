package import Foundation
import IvyCore

#if canImport(Glibc)
    import Glibc
#endif

/// Where Google lives: the OAuth server and the Drive API, and whom ivy trusts to be them.
/// Tests and `ivy-emulator` point both at a loopback URL; anything else must be HTTPS.
package struct GoogleEndpoints: Sendable, Equatable {
    package static let oauthDefault = "https://oauth2.googleapis.com"
    package static let driveDefault = "https://www.googleapis.com"
    /// The variable naming a PEM file of extra certificate authorities to trust.
    package static let caFileVariable = "IVY_CA_FILE"

    package var oauth: URL
    package var drive: URL
    /// A PEM file of certificate authorities trusted besides the system's (an emulator's own,
    /// or a proxy's that looks inside TLS): `IVY_CA_FILE`, given at sign-in and recorded with
    /// it, as the servers are. Nil: the system's alone.
    package var caFile: String?

    package init(oauth: URL, drive: URL, caFile: String? = nil) {
        self.oauth = oauth
        self.drive = drive
        self.caFile = caFile
    }

    /// From `IVY_OAUTH_URL` and `IVY_DRIVE_URL`, refusing plain HTTP to anything but loopback,
    /// and `IVY_CA_FILE`, which must be an absolute path (the sign-in records it, and a later
    /// run from another directory must name the same file).
    package static func from(environment: [String: String]) throws(GoogleError) -> GoogleEndpoints {
        GoogleEndpoints(
            oauth: try checked(environment["IVY_OAUTH_URL"] ?? oauthDefault, variable: "IVY_OAUTH_URL"),
            drive: try checked(environment["IVY_DRIVE_URL"] ?? driveDefault, variable: "IVY_DRIVE_URL"),
            caFile: try checkedCAFile(environment[caFileVariable]))
    }

    /// `IVY_CA_FILE` as given: nil when unset or empty, else an absolute path.
    static func checkedCAFile(_ text: String?) throws(GoogleError) -> String? {
        guard let text, !text.isEmpty else { return nil }
        guard text.hasPrefix("/") else {
            throw .badEndpoint(
                "\(caFileVariable)=\(text) is not an absolute path; give the whole path of the PEM file "
                    + "(`ivy-emulator` prints it in its export line)")
        }
        return text
    }

    /// Where a sign-in's tokens may go: the endpoints it was made against (`token.json`
    /// records them), which the environment may name again but never change. A token sent
    /// elsewhere would hand a real refresh token to whatever `IVY_OAUTH_URL` says, or send an
    /// emulator's token to Google. A sign-in saved before ivy recorded them was made at
    /// Google (ivy knew no other server then): its tokens go to Google only.
    package static func from(environment: [String: String], signIn token: StoredToken?) throws(GoogleError)
        -> GoogleEndpoints
    {
        let fromEnvironment = try from(environment: environment)
        guard let token else { return fromEnvironment }
        var endpoints = fromEnvironment
        for (saved, variable, keyPath) in [
            (token.oauthURL ?? oauthDefault, "IVY_OAUTH_URL", \GoogleEndpoints.oauth),
            (token.driveURL ?? driveDefault, "IVY_DRIVE_URL", \.drive),
        ] {
            let signedAt: URL
            do {
                signedAt = try checked(saved, variable: variable)
            } catch {
                throw .badEndpoint(
                    "the saved sign-in names \(saved), which ivy will not send a token to; run `ivy login` again")
            }
            if let named = environment[variable], !named.isEmpty, endpoints[keyPath: keyPath] != signedAt {
                throw .endpointMismatch(variable: variable, named: named, signedAt: signedAt.absoluteString)
            }
            endpoints[keyPath: keyPath] = signedAt
        }
        // Whom the sign-in trusts: the file it was made with, or the system's authorities
        // alone; the environment may name the same file again, never another.
        if let named = endpoints.caFile, named != token.caFile {
            throw .endpointMismatch(
                variable: caFileVariable, named: named,
                signedAt: token.caFile ?? "no extra certificate authority")
        }
        endpoints.caFile = token.caFile
        return endpoints
    }

    /// Whether these are Google's own servers (not an emulator or a proxy). An extra
    /// certificate authority does not change where requests go.
    package var isGoogle: Bool {
        oauth.absoluteString == Self.oauthDefault && drive.absoluteString == Self.driveDefault
    }

    /// A URL ivy sends something to that is not Google's (setting `health_url`): https, or
    /// plain http to loopback only, by the same rule as Google's endpoints.
    package static func checkedURL(_ text: String, named name: String) throws(GoogleError) -> URL {
        try checked(text, variable: name, fix: "give an https:// URL")
    }

    static func checked(_ text: String, variable: String, fix: String = "unset it to use Google") throws(GoogleError)
        -> URL
    {
        // What the check takes is what the requests use: `HTTPS://` is https, written the
        // canonical way (RFC 3986: schemes are case-insensitive, lower case canonical).
        var trimmed = URLText.lowercasingScheme(text)
        while trimmed.hasSuffix("/") { trimmed.removeLast() }
        // A user name and password in the URL are credentials: never echoed.
        let shown = URLText.masked(text)
        guard let url = URL(string: trimmed), let scheme = url.scheme?.lowercased(), let host = url.host?.lowercased(),
            !host.isEmpty
        else {
            throw .badEndpoint("\(variable)=\(shown) is not a URL; \(fix)")
        }
        switch scheme {
        case "https": return url
        case "http" where URLText.hasUserinfo(trimmed) || url.user != nil || url.password != nil:
            throw .badEndpoint(
                "\(variable) puts a user name or password in a plain http:// URL, which would send them unencrypted; "
                    + "use https://, or leave the user:password@ part out")
        case "http" where isLoopback(host): return url
        case "http":
            throw .badEndpoint(
                "\(variable) uses plain http:// to \(host); only loopback may (127.x.x.x, [::1] or localhost, "
                    + "written as such), anything else needs https://")
        default: throw .badEndpoint("\(variable)=\(shown) must be an https:// URL")
        }
    }

    /// Loopback written plainly: an IPv4 dotted quad in 127.0.0.0/8, the IPv6 address ::1, or
    /// exactly `localhost`. Parsed with `inet_pton`, which takes only the dotted-quad and
    /// standard IPv6 forms, so `127.0.0.1.example.com`, `127.1`, `0x7f000001` and
    /// `2130706433` are all refused: a resolver or libcurl might read the short and numeric
    /// forms as loopback, but nothing needs them and a name that only looks local is not.
    static func isLoopback(_ host: String) -> Bool {
        if host == "localhost" { return true }
        // Only characters an address literal has: a NUL or a percent escape must not cut the
        // C string inet_pton reads short of what libcurl will connect to.
        let allowed = CharacterSet(charactersIn: "0123456789abcdef.:[]")
        guard host.unicodeScalars.allSatisfy({ allowed.contains($0) }) else { return false }
        var literal = host
        if literal.hasPrefix("["), literal.hasSuffix("]") { literal = String(literal.dropFirst().dropLast()) }
        var v4 = in_addr()
        if inet_pton(AF_INET, literal, &v4) == 1 {
            // s_addr is in network byte order: its first byte in memory is the first octet.
            return withUnsafeBytes(of: &v4) { $0.first } == 127
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, literal, &v6) == 1 {
            return withUnsafeBytes(of: &v6) { Array($0) } == Array(repeating: 0, count: 15) + [1]
        }
        return false
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
