import Foundation
package import IvyCore
import IvySystem

/// What `token.json` holds. Never printed: only whether a refresh token exists and when
/// the access token expires are shown.
package struct StoredToken: Codable, Sendable, Equatable {
    package var accessToken: String?
    package var refreshToken: String?
    /// Absolute expiry of the access token, ms since the epoch.
    package var expiresAt: Milliseconds?
    package var scope: String?
    package var clientID: String
    package var email: String
    package var permissionID: String
    /// Set when Google refused the refresh token: the user must sign in again.
    package var signedOutReason: String?
    /// When that happened, ms since the epoch.
    package var signedOutAt: Milliseconds?
    /// The OAuth server and the Drive API the sign-in was made against, the only ones its
    /// tokens are sent to (see `GoogleEndpoints.from(environment:signIn:)`). Nil in a file
    /// saved before ivy recorded them.
    package var oauthURL: String?
    package var driveURL: String?
    /// The extra certificate authorities (`IVY_CA_FILE`) the sign-in was made trusting, the
    /// only ones its requests trust besides the system's; nil for none.
    package var caFile: String?

    package init(
        accessToken: String?, refreshToken: String?, expiresAt: Milliseconds?, scope: String?, clientID: String,
        email: String, permissionID: String, signedOutReason: String? = nil, endpoints: GoogleEndpoints? = nil
    ) {
        self.accessToken = accessToken
        self.refreshToken = refreshToken
        self.expiresAt = expiresAt
        self.scope = scope
        self.clientID = clientID
        self.email = email
        self.permissionID = permissionID
        self.signedOutReason = signedOutReason
        oauthURL = endpoints?.oauth.absoluteString
        driveURL = endpoints?.drive.absoluteString
        caFile = endpoints?.caFile
    }

    enum CodingKeys: String, CodingKey {
        case accessToken = "access_token"
        case refreshToken = "refresh_token"
        case expiresAt = "expires_at"
        case scope
        case clientID = "client_id"
        case email
        case permissionID = "permission_id"
        case signedOutReason = "signed_out_reason"
        case signedOutAt = "signed_out_at"
        case oauthURL = "oauth_url"
        case driveURL = "drive_url"
        case caFile = "ca_file"
    }

    package var isSignedIn: Bool { refreshToken != nil && signedOutReason == nil }
}

/// The token file: written atomically, mode 0600 from the moment it exists, in a 0700 directory.
package struct TokenStore: Sendable {
    package let path: String
    /// Where warnings go (a loose mode tightened, a corrupt file ignored).
    private let warn: @Sendable (String) -> Void

    package init(path: String, warn: @escaping @Sendable (String) -> Void) {
        self.path = path
        self.warn = warn
    }

    /// What is at `path`, read once: the one reader the three views below share.
    private enum Reading {
        case missing
        /// There, but its bytes cannot be read (`damaged`: read, but not a token).
        case unreadable(changed: Milliseconds, mode: mode_t)
        case damaged(changed: Milliseconds, mode: mode_t)
        case token(StoredToken, changed: Milliseconds, mode: mode_t)

        var mode: mode_t? {
            switch self {
            case .missing: nil
            case .unreadable(_, let mode), .damaged(_, let mode), .token(_, _, let mode): mode
            }
        }
    }

    private func read() -> Reading {
        var info = stat()
        guard stat(path, &info) == 0 else { return .missing }
        let changed = Milliseconds(info.st_mtim.tv_sec) * 1000 + Milliseconds(info.st_mtim.tv_nsec / 1_000_000)
        let mode = info.st_mode
        guard let data = FileManager.default.contents(atPath: path) else {
            return .unreadable(changed: changed, mode: mode)
        }
        guard let token = try? JSONDecoder().decode(StoredToken.self, from: data) else {
            return .damaged(changed: changed, mode: mode)
        }
        return .token(token, changed: changed, mode: mode)
    }

    /// The stored token, or nil when there is none or it cannot be read (with a warning). A
    /// file others could read is tightened to 0600 first, with a warning.
    package func load() -> StoredToken? {
        let reading = read()
        if let mode = reading.mode, mode & 0o077 != 0 {
            warn("\(path) was readable by others (mode \(String(mode & 0o777, radix: 8))); tightened to 0600")
            chmod(path, 0o600)
        }
        switch reading {
        case .missing: return nil
        case .unreadable:
            warn("cannot read \(path); treating this as signed out")
            return nil
        case .damaged:
            warn("\(path) is damaged; treating this as signed out (run `ivy login`)")
            return nil
        case .token(let token, _, _): return token
        }
    }

    /// Where this home's sign-in stands, read without a warning: for `status`, for
    /// interactive `sync`, and for `sync --auto`, which says nothing about sign-in.
    package enum SignIn: Sendable, Equatable {
        case never
        case signedIn(StoredToken)
        /// A sign-in that stopped working: revoked or expired at Google, or a damaged file.
        case stopped(reason: String, since: Milliseconds?)
    }

    /// The stored token without a warning, or nil.
    package func quietLoad() -> StoredToken? {
        guard case .token(let token, _, _) = read() else { return nil }
        return token
    }

    package func signIn() -> SignIn {
        switch read() {
        case .missing: return .never
        case .unreadable(let changed, _), .damaged(let changed, _):
            return .stopped(
                reason: "\(path) is damaged or unreadable, so the saved sign-in cannot be used", since: changed)
        case .token(let token, let changed, _):
            if let reason = token.signedOutReason {
                return .stopped(reason: reason, since: token.signedOutAt)
            }
            guard token.refreshToken != nil else {
                return .stopped(reason: "the saved sign-in has no refresh token", since: changed)
            }
            return .signedIn(token)
        }
    }

    /// Replaces the file atomically: a temporary file created 0600, synced, renamed over.
    package func save(_ token: StoredToken) throws {
        let directory = (path as NSString).deletingLastPathComponent
        try PrivateDirectory.ensure(directory)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let data = try encoder.encode(token)
        do {
            removeLeftovers()
            try PrivateFile.write(
                data, atomicallyTo: path, temporaryPrefix: Self.temporaryPrefix,
                crash: (written: .tokenWriteAfterTemp, renamed: .tokenWriteAfterRename))
        } catch {
            if let storage = StorageError(path: error.path, errno: error.code) { throw storage }
            throw TokenFileError(path: error.path, errno: error.code)
        }
    }

    package func delete() {
        unlink(path)
        removeLeftovers()
    }

    /// What the token's temporary files start with, beside it.
    static let temporaryPrefix = ".token-"

    /// Removes what a save killed before its rename left beside the token: a whole token
    /// (refresh token included) under a temporary name, which nothing would ever read or
    /// remove, not even `ivy logout`. Saves and deletions hold the sync lock, as the door does
    /// when it calls this, so no other save is writing one meanwhile.
    package func removeLeftovers() {
        let directory = (path as NSString).deletingLastPathComponent
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        for name in names where name.hasPrefix(Self.temporaryPrefix) && name.hasSuffix(".tmp") {
            unlink(directory + "/" + name)
        }
    }
}

package struct TokenFileError: LocalizedError {
    let path: String
    let errno: Int32
    package var errorDescription: String? {
        "cannot write \(path): \(String(cString: strerror(errno))); check the permissions of its directory"
    }
}
