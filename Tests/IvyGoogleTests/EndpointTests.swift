import Foundation
import GoogleEmulator
import IvyTestSupport
import Testing

@testable import IvyGoogle

@Suite("Endpoints: plain http only to loopback")
struct EndpointTests {
    @Test(
        "loopback literals and localhost may use http://; names that only look local, and other spellings, may not",
        arguments: [
            ("http://127.0.0.1:9", true), ("http://127.255.3.4", true), ("http://localhost:8080", true),
            ("http://LOCALHOST:8080", true),
            ("http://[::1]:8080", true), ("http://[0:0:0:0:0:0:0:1]", true),
            ("http://127.0.0.1.example.com", false), ("http://127.1.example.com", false),
            ("http://localhost.example.com", false),
            ("http://0x7f000001", false), ("http://2130706433", false), ("http://127.1", false),
            ("http://0177.0.0.1", false),
            ("http://127.0.0.1%00.example.com", false), ("http://[::ffff:127.0.0.1]", false), ("http://[::2]", false),
            ("http://128.0.0.1", false), ("http://10.0.0.5", false), ("http://localhost.", false),
            ("http://user:pw@127.0.0.1", false),
            ("https://oauth2.googleapis.com", true), ("http://oauth2.googleapis.com", false), ("ftp://x", false),
            ("not a url", false),
        ])
    func hosts(url: String, accepted: Bool) {
        let result = Result { () throws(GoogleError) in try GoogleEndpoints.from(environment: ["IVY_DRIVE_URL": url]) }
        #expect(((try? result.get()) != nil) == accepted, "\(url)")
    }

    @Test("the refusal names the variable, the host and the fix")
    func message() {
        let result = Result { () throws(GoogleError) in
            try GoogleEndpoints.from(environment: ["IVY_OAUTH_URL": "http://127.0.0.1.example.com:8080"])
        }
        guard case .failure(let error) = result else {
            Issue.record("accepted")
            return
        }
        let text = error.localizedDescription
        #expect(
            text.contains("IVY_OAUTH_URL") && text.contains("127.0.0.1.example.com") && text.contains("https://"),
            "\(text)")
    }

    /// ivy reaches `[::1]` as written. (Under URLSession, which refused IPv6 literal URLs, ivy
    /// went to `localhost` instead, which libcurl tried on 127.0.0.1 and ::1 both: another
    /// test's emulator on 127.0.0.1 with the same port number answered in its place.) The test
    /// keeps that port taken, unlistened, so only the IPv6 emulator can answer.
    @Test("a sign-in over http://[::1]:PORT reaches an emulator listening only on the IPv6 loopback")
    func ipv6Loopback() async throws {
        try await withEmulator(host: "::1", tls: false) { emulator in
            let port = try #require(emulator.baseURL.port)
            let blocker = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            try #require(blocker >= 0)
            defer { close(blocker) }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(blocker, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            // Taken in the moment since the emulator started: nothing to prove this time.
            guard bound == 0 else { return }
            let endpoints = try GoogleEndpoints.from(environment: [
                "IVY_OAUTH_URL": emulator.baseURL.absoluteString,
                "IVY_DRIVE_URL": emulator.baseURL.absoluteString + "/",
            ])
            let transport = HTTPClientTransport()
            let effects = GoogleEffects(transport: transport, clock: TestClock().clock, sleep: { _ in })
            let credentials = ClientCredentials(
                id: GoogleEmulator.defaultClient.id, secret: GoogleEmulator.defaultClient.secret)
            let authorization = try await DeviceFlow(endpoints: endpoints, credentials: credentials, effects: effects)
                .start()
            #expect(authorization.userCode.count == 9)
            // A loaded machine may send the request twice (a retry after a slow answer); what
            // matters is that it got there and nothing else did.
            let paths = await emulator.state.requests.map(\.path)
            #expect(!paths.isEmpty && paths.allSatisfy { $0 == "/device/code" }, "\(paths)")
        }
    }

    static func token(oauth: String?, drive: String?) -> StoredToken {
        var token = StoredToken(
            accessToken: "a", refreshToken: "r", expiresAt: nil, scope: nil, clientID: "c", email: "e",
            permissionID: "p")
        token.oauthURL = oauth
        token.driveURL = drive
        return token
    }

    static func resolve(_ environment: [String: String], _ token: StoredToken?) -> Result<GoogleEndpoints, GoogleError>
    {
        Result { () throws(GoogleError) in try GoogleEndpoints.from(environment: environment, signIn: token) }
    }

    @Test("a sign-in's servers are used when the environment names none, and may be named again, not changed")
    func signInsServers() throws {
        let local = "http://127.0.0.1:4000"
        let saved = Self.token(oauth: local, drive: local)
        let alone = try Self.resolve([:], saved).get()
        #expect(alone.oauth.absoluteString == local && alone.drive.absoluteString == local && !alone.isGoogle)
        let again = try Self.resolve(["IVY_OAUTH_URL": local + "/", "IVY_DRIVE_URL": local], saved).get()
        #expect(again == alone)
        let other = Self.resolve(["IVY_DRIVE_URL": "http://127.0.0.1:4001"], saved)
        #expect(
            other.failure
                == .endpointMismatch(variable: "IVY_DRIVE_URL", named: "http://127.0.0.1:4001", signedAt: local))
        // Saved at Google: an emulator named later gets nothing.
        let google = Self.token(oauth: GoogleEndpoints.oauthDefault, drive: GoogleEndpoints.driveDefault)
        #expect(try Self.resolve([:], google).get().isGoogle)
        #expect(Self.resolve(["IVY_OAUTH_URL": local], google).failure != nil)
        // Saved before ivy recorded them: made at Google, so its tokens go to Google only; a
        // variable naming another server is refused before anything is sent (issue 28 item 2).
        let old = Self.token(oauth: nil, drive: nil)
        #expect(
            Self.resolve(["IVY_OAUTH_URL": local], old).failure
                == .endpointMismatch(
                    variable: "IVY_OAUTH_URL", named: local, signedAt: GoogleEndpoints.oauthDefault))
        #expect(try Self.resolve([:], old).get().isGoogle)
        // A saved server ivy would never have signed in at (edited by hand) is refused.
        let edited = Self.token(oauth: "http://oauth.example.com", drive: nil)
        #expect(Self.resolve([:], edited).failure != nil)
    }
}

extension Result {
    fileprivate var failure: Failure? {
        if case .failure(let error) = self { error } else { nil }
    }
}
