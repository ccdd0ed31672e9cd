import Foundation
import GoogleEmulator
import IvyCore
import IvyTestSupport
import Synchronization
import Testing

@testable import IvyGoogle

@Suite("Device sign-in against the emulator")
struct DeviceFlowTests {
    @Test("approve: pending polls continue until the person approves; the account comes from about")
    func approve() async throws {
        try await withGoogle { google in
            await google.state.setDeviceCode(interval: 0)
            let sleeper = Sleeper { [state = google.state] index, _ in
                if index == 3 { try? await state.approve(userCode: nil, email: "bob@example.com") }
            }
            let flow = google.flow(sleeper)
            let authorization = try await flow.start()
            #expect(authorization.userCode.count == 9)
            #expect(authorization.verificationURL.hasSuffix("/device"))
            let tokens = try await flow.waitForApproval(authorization)
            #expect(sleeper.durations == [0, 0, 0])
            #expect(tokens.refreshToken != nil)
            #expect(tokens.expiresAt == google.clock.now + 3_599_000)
            let account = try await DriveAccount.fetch(
                drive: google.endpoints.drive, accessToken: tokens.accessToken, transport: google.transport)
            #expect(account == DriveAccount(email: "bob@example.com", permissionID: "09998765432109876543"))
        }
    }

    @Test("deny ends the sign-in with access denied")
    func deny() async throws {
        try await withGoogle { google in
            await google.state.setDeviceCode(interval: 0)
            let flow = google.flow(Sleeper { [state = google.state] _, _ in try? await state.deny(userCode: nil) })
            let authorization = try await flow.start()
            await #expect(throws: GoogleError.accessDenied) { try await flow.waitForApproval(authorization) }
        }
    }

    @Test("a code nobody approves expires, by the client's own deadline")
    func expiry() async throws {
        try await withGoogle { google in
            await google.state.setDeviceCode(lifetime: 60, interval: 5)
            let flow = google.flow(
                Sleeper { [clock = google.clock, state = google.state] _, duration in
                    clock.advance(seconds: duration.components.seconds)
                    await state.advanceClock(by: Double(duration.components.seconds))
                })
            let authorization = try await flow.start()
            await #expect(throws: GoogleError.codeExpired) { try await flow.waitForApproval(authorization) }
        }
    }

    @Test("slow_down adds 5 seconds to the interval for this and later polls")
    func slowDown() async throws {
        try await withGoogle { google in
            await google.state.setDeviceCode(interval: 30)
            // The wait after the first poll Google answered is cut short (5 s pass on the
            // emulator's clock), so the next poll is too early. Counted by the answers Google
            // gave, not by the client's sleeps: a poll lost to a busy machine shifts nothing.
            let sleeper = Sleeper { [state = google.state] _, duration in
                let answered = await state.requests.filter { $0.path.hasSuffix("/token") && $0.status == 428 }.count
                let slowedDown = await state.requests.contains { $0.path.hasSuffix("/token") && $0.status == 403 }
                await state.advanceClock(by: answered == 1 && !slowedDown ? 5 : Double(duration.components.seconds))
                if slowedDown && answered >= 2 { try? await state.approve(userCode: nil, email: "alice@example.com") }
            }
            let flow = google.flow(sleeper)
            _ = try await flow.waitForApproval(try await flow.start())
            let polls = await google.state.requests.filter { $0.path.hasSuffix("/token") }.map(\.status)
            #expect(polls.filter { $0 == 403 }.count == 1, "one slow_down: \(polls)")
            // 30 s until slow_down, 35 s from then on.
            let durations = sleeper.durations
            #expect(durations.first == 30 && durations.drop { $0 == 30 } == [35, 35], "\(durations)")
        }
    }

    @Test("network errors back off and keep polling")
    func networkTrouble() async throws {
        try await withGoogle { google in
            await google.state.setDeviceCode(interval: 0)
            await google.state.addFault(FaultRule(pathContains: "/token", times: 2, dropAfterBytes: 0))
            let sleeper = Sleeper { [state = google.state] index, _ in
                if index == 1 { try? await state.approve(userCode: nil, email: "alice@example.com") }
            }
            let flow = google.flow(sleeper)
            _ = try await flow.waitForApproval(try await flow.start())
            #expect(sleeper.durations == [0, 1, 0, 2, 0])
        }
    }

    @Test("an unknown client is refused at the first request")
    func invalidClient() async throws {
        try await withGoogle { google in
            let flow = DeviceFlow(
                endpoints: google.endpoints, credentials: ClientCredentials(id: "nobody", secret: "x"),
                effects: google.effects())
            await #expect(throws: GoogleError.invalidClient) { try await flow.start() }
        }
    }

    @Test(
        "plain http is refused except to loopback hosts",
        arguments: [
            ("http://127.0.0.1:9", true), ("http://localhost:8080", true), ("https://oauth2.googleapis.com", true),
            ("http://oauth2.googleapis.com", false), ("http://10.0.0.5", false), ("ftp://x", false),
            ("not a url", false),
        ])
    func endpoints(url: String, accepted: Bool) {
        let result = Result { () throws(GoogleError) in try GoogleEndpoints.from(environment: ["IVY_OAUTH_URL": url]) }
        #expect(((try? result.get()) != nil) == accepted)
    }
}

@Suite("Tokens: refresh, retry, revocation and the token file")
struct TokenTests {
    @Test("20 concurrent requests past the refresh margin share exactly one refresh")
    func singleFlight() async throws {
        try await withGoogle { google in
            let provider = try await google.signedIn()
            let before = await google.tokenRequests()
            google.clock.advance(seconds: 3599 - 30)
            let tokens = try await withThrowingTaskGroup(of: String.self) { group in
                for _ in 0..<20 { group.addTask { try await provider.accessToken() } }
                return try await group.reduce(into: Set<String>()) { $0.insert($1) }
            }
            #expect(tokens.count == 1)
            #expect(await google.tokenRequests() - before == 1)
            #expect(await provider.refreshCount == 1)
            #expect(google.store.load()?.accessToken == tokens.first, "the refreshed token is saved")
        }
    }

    @Test("a 401 from Drive refreshes once and retries once")
    func unauthorizedRetry() async throws {
        try await withGoogle { google in
            let provider = try await google.signedIn()
            await google.state.advanceClock(by: 4000)  // Drive considers the token expired; the client does not.
            let client = AuthorizedTransport(tokens: provider, transport: google.transport)
            let url = try #require(URL(string: google.emulator.baseURL.absoluteString + "/drive/v3/about?fields=user"))
            let response = try await client.send(HTTPRequest(method: "GET", url: url))
            #expect(response.status == 200)
            #expect(await provider.refreshCount == 1)
            let statuses = await google.state.requests.filter { $0.path == "/drive/v3/about" }.map(\.status)
            #expect(statuses.suffix(2) == [401, 200])
        }
    }

    @Test("a revoked refresh token means signed out, recorded in the token file, with no further requests")
    func revoked() async throws {
        try await withGoogle { google in
            let provider = try await google.signedIn()
            await google.state.revoke(email: "alice@example.com")
            google.clock.advance(seconds: 7200)
            await #expect { try await provider.accessToken() } throws: { error in
                guard case .signedOut(let reason) = error as? GoogleError else { return false }
                return reason.contains("7-day")
            }
            let stored = try #require(google.store.load())
            #expect(!stored.isSignedIn && stored.signedOutReason != nil && stored.accessToken == nil)
            let before = await google.tokenRequests()
            await #expect(throws: GoogleError.self) { try await provider.accessToken() }
            #expect(await google.tokenRequests() == before)
            #expect(GoogleError.signedOut(reason: "x").errorDescription?.contains("ivy login") == true)
        }
    }

    @Test("the token file is 0600 in a 0700 directory, replaced atomically")
    func fileModes() async throws {
        try await withGoogle { google in
            _ = try await google.signedIn()
            let attributes = try FileManager.default.attributesOfItem(atPath: google.store.path)
            #expect(attributes[.posixPermissions] as? Int == 0o600)
            let directory = try FileManager.default.attributesOfItem(atPath: google.directory + "/config")
            #expect(directory[.posixPermissions] as? Int == 0o700)
            let leftovers = try FileManager.default.contentsOfDirectory(atPath: google.directory + "/config")
            #expect(leftovers == ["token.json"])
        }
    }

    @Test("a token file readable by others is tightened with a warning; a damaged one means signed out")
    func looseAndCorrupt() async throws {
        try await withGoogle { google in
            _ = try await google.signedIn()
            chmod(google.store.path, 0o644)
            #expect(google.store.load() != nil)
            #expect(
                try FileManager.default.attributesOfItem(atPath: google.store.path)[.posixPermissions] as? Int == 0o600)
            try Data("{ not json".utf8).write(to: URL(fileURLWithPath: google.store.path))
            #expect(google.store.load() == nil)
            let warnings = google.warnings.withLock { $0 }
            #expect(warnings.count == 2)
            #expect(warnings[0].contains("tightened to 0600") && warnings[1].contains("damaged"))
        }
    }

    @Test("errors and warnings never contain a token or the client secret")
    func noSecrets() async throws {
        try await withGoogle { google in
            let provider = try await google.signedIn()
            let stored = try #require(google.store.load())
            await google.state.revoke(email: "alice@example.com")
            google.clock.advance(seconds: 7200)
            var messages = google.warnings.withLock { $0 }
            do { _ = try await provider.accessToken() } catch { messages.append(error.localizedDescription) }
            let bad = DeviceFlow(
                endpoints: google.endpoints, credentials: ClientCredentials(id: "x", secret: google.credentials.secret),
                effects: google.effects())
            do { _ = try await bad.start() } catch { messages.append(error.localizedDescription) }
            #expect(messages.count == 2)
            for secret in [stored.refreshToken, "\(stored.expiresAt ?? 0)", google.credentials.secret].compactMap({ $0 }
            ) {
                #expect(!messages.joined().contains(secret))
            }
        }
    }
}
