import Foundation
import GoogleEmulator
import IvyTestSupport
import Testing

@testable import IvyGoogle

/// `IVY_CA_FILE`: the one way to trust a certificate authority beyond the system's, given at
/// sign-in and recorded with it, as its servers are.
@Suite("Extra certificate authorities, recorded with the sign-in")
struct TrustedAuthorityTests {
    private func resolve(_ environment: [String: String], _ token: StoredToken?) -> Result<GoogleEndpoints, GoogleError>
    {
        Result { () throws(GoogleError) in try GoogleEndpoints.from(environment: environment, signIn: token) }
    }

    private func token(caFile: String?) -> StoredToken {
        StoredToken(
            accessToken: "a", refreshToken: "r", expiresAt: nil, scope: nil, clientID: "c", email: "e",
            permissionID: "p",
            endpoints: GoogleEndpoints(
                oauth: URL(fileURLWithPath: "/"), drive: URL(fileURLWithPath: "/"), caFile: caFile))
    }

    @Test("IVY_CA_FILE for a new sign-in: an absolute path, or nothing when unset or empty")
    func newSignIn() throws {
        #expect(try GoogleEndpoints.from(environment: ["IVY_CA_FILE": "/etc/ivy/ca.pem"]).caFile == "/etc/ivy/ca.pem")
        #expect(try GoogleEndpoints.from(environment: ["IVY_CA_FILE": ""]).caFile == nil)
        #expect(try GoogleEndpoints.from(environment: [:]).caFile == nil)
        #expect(throws: GoogleError.self) { try GoogleEndpoints.from(environment: ["IVY_CA_FILE": "ca.pem"]) }
        let relative = resolve(["IVY_CA_FILE": "ca.pem"], nil)
        #expect(relative.failure?.localizedDescription.contains("IVY_CA_FILE=ca.pem is not an absolute path") == true)
    }

    @Test("a sign-in trusts what it was made with; the environment may name it again, never another or a new one")
    func recorded() throws {
        var signedIn = token(caFile: "/run/emulator/ca.pem")
        signedIn.oauthURL = "http://127.0.0.1:4000"
        signedIn.driveURL = "http://127.0.0.1:4000"
        #expect(try resolve([:], signedIn).get().caFile == "/run/emulator/ca.pem")
        #expect(try resolve(["IVY_CA_FILE": "/run/emulator/ca.pem"], signedIn).get().caFile == "/run/emulator/ca.pem")
        let other = resolve(["IVY_CA_FILE": "/tmp/other.pem"], signedIn)
        #expect(
            other.failure
                == .endpointMismatch(variable: "IVY_CA_FILE", named: "/tmp/other.pem", signedAt: "/run/emulator/ca.pem")
        )
        #expect(
            other.failure?.localizedDescription
                == "IVY_CA_FILE=/tmp/other.pem, but this sign-in was made trusting /run/emulator/ca.pem, and it "
                + "trusts only that; unset IVY_CA_FILE to use it, or run `ivy login` to sign in trusting /tmp/other.pem"
        )
        // A sign-in made trusting the system's authorities alone gains no other.
        var plain = signedIn
        plain.caFile = nil
        #expect(try resolve([:], plain).get().caFile == nil)
        #expect(
            resolve(["IVY_CA_FILE": "/tmp/other.pem"], plain).failure?.localizedDescription.contains(
                "made trusting no extra certificate authority") == true)
    }

    @Test("token.json keeps it as ca_file; a file without one reads as none")
    func tokenFile() throws {
        let data = try JSONEncoder().encode(token(caFile: "/run/emulator/ca.pem"))
        let fields = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(fields["ca_file"] as? String == "/run/emulator/ca.pem")
        let older = try JSONDecoder().decode(
            StoredToken.self,
            from: Data(#"{"client_id":"c","email":"e","permission_id":"p","refresh_token":"r"}"#.utf8))
        #expect(older.caFile == nil)
    }

    @Test("a CA file that cannot be read, or holds no certificate, fails each request naming the file and the fix")
    func unreadable() async throws {
        let home = try TemporaryHome(prefix: "ivy-ca")
        let garbage = home.path + "/garbage.pem"
        try Data("not a certificate".utf8).write(to: URL(fileURLWithPath: garbage))
        let url = try #require(URL(string: "https://www.googleapis.com/drive/v3/about"))
        for (file, reason) in [
            (home.path + "/missing.pem", "it cannot be read"), (garbage, "it holds no PEM certificate"),
        ] {
            await #expect {
                _ = try await HTTPClientTransport(WireSettings(caFile: file)).send(HTTPRequest(method: "GET", url: url))
            } throws: { error in
                (error as? TransportError)?.kind == .certificateFile
                    && error.localizedDescription.contains(
                        "the certificate authority file \(file) (IVY_CA_FILE): \(reason)")
                    && error.localizedDescription.contains("run `ivy login` again")
            }
        }
    }

    @Test("a good CA file is trusted besides the system's: plain requests to the emulator still go")
    func trusted() async throws {
        // Plain http: the file's authority is not the emulator's, and the point is that plain
        // requests are unaffected by it.
        try await withEmulator(tls: false) { emulator in
            let home = try TemporaryHome(prefix: "ivy-ca")
            let file = try TestAuthority.write(in: home.path)
            let transport = HTTPClientTransport(WireSettings(caFile: file))
            let response = try await transport.send(
                HTTPRequest(method: "GET", url: emulator.baseURL.appendingPathComponent("drive/v3/about")))
            #expect(response.status == 401)
        }
    }
}

extension Result {
    fileprivate var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
