import Foundation
import GoogleEmulator
import IvyTestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("The control API answers only requests that carry the emulator's secret")
struct ControlSecretTests {
    /// A control request over HTTP carrying `secret` (nothing when nil) as its secret header.
    static func control(
        _ google: EmulatorClient, _ method: String, _ path: String, secret: String?, _ body: [String: Any]? = nil
    ) async throws -> Reply {
        var request = URLRequest(url: try #require(URL(string: google.base + path)))
        request.httpMethod = method
        if let body {
            request.httpBody = try JSONSerialization.data(withJSONObject: body)
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        if let secret { request.setValue(secret, forHTTPHeaderField: EmulatorState.controlSecretHeader) }
        let (data, response) = try await google.session.data(for: request)
        return Reply(status: try #require(response as? HTTPURLResponse).statusCode, headers: [:], body: data)
    }

    @Test(
        """
        without the secret a control request answers 401, with a wrong one 403, each saying what to send, and \
        neither approves a sign-in, reads a file, sets a fault or tells which routes exist
        """)
    func refused() async throws {
        try await withEmulatorClient { google in
            let secret = google.state.controlSecret
            let code = try #require(try await google.deviceCode().json["user_code"] as? String)
            let access = try await google.signIn(as: "bob@example.com").access
            _ = try await google.createFolder("Ivy", token: access)

            let missing = try await Self.control(google, "POST", "/_emulator/approve", secret: nil, ["user_code": code])
            #expect(missing.status == 401)
            let missingError = try #require(missing.json["error"] as? String)
            #expect(missingError.contains("X-Ivy-Emulator-Secret"), "\(missingError)")
            #expect(missingError.contains("IVY_EMULATOR_SECRET"), "\(missingError)")
            #expect(!missingError.contains(secret))

            let last = secret.last == "0" ? "1" : "0"
            let wrong = [String(secret.dropLast()) + last, String(secret.dropLast()), secret + "0", "", "x"]
            for guess in wrong {
                let refused = try await Self.control(
                    google, "POST", "/_emulator/approve", secret: guess, ["user_code": code])
                #expect(refused.status == 403, "\(guess)")
                let error = try #require(refused.json["error"] as? String)
                #expect(error.contains("not the secret this emulator printed"), "\(error)")
                #expect(!error.contains(secret))
            }
            #expect(await google.state.pendingUserCodes() == [code])

            let files = try await Self.control(google, "GET", "/_emulator/files?email=bob@example.com", secret: nil)
            #expect(files.status == 401)
            #expect(files.json["files"] == nil)
            let fault = try await Self.control(
                google, "POST", "/_emulator/faults", secret: "x", ["pathContains": "about", "status": 500])
            #expect(fault.status == 403)
            #expect(await google.state.faults.isEmpty)
            #expect(try await Self.control(google, "GET", "/_emulator/no-such-route", secret: nil).status == 401)

            // Drive asks for the bearer token only, as Google does.
            #expect(try await google.request("GET", "/drive/v3/about?fields=user", token: access).status == 200)
            let approved = try await Self.control(
                google, "POST", "/_emulator/approve", secret: secret, ["user_code": code])
            #expect(approved.status == 200)
            #expect(await google.state.pendingUserCodes() == [])
        }
    }

    @Test("each emulator makes a secret of its own from the system's randomness, whatever its seed, and saves none")
    func perRun() async throws {
        let first = EmulatorState(accounts: GoogleEmulator.defaultAccounts, clients: [], seed: 7)
        let second = EmulatorState(accounts: GoogleEmulator.defaultAccounts, clients: [], seed: 7)
        #expect(first.controlSecret != second.controlSecret)
        #expect(first.controlSecret.wholeMatch(of: /[0-9a-f]{64}/) != nil, "\(first.controlSecret)")
        let saved = String(decoding: try await first.snapshot(), as: UTF8.self)
        #expect(!saved.contains(first.controlSecret))
        let restored = EmulatorState(accounts: [], clients: [])
        try await restored.restore(from: try await first.snapshot())
        #expect(restored.controlSecret != first.controlSecret)
    }
}
