import Foundation
import GoogleEmulator
import IvyTestSupport
import Testing

@Suite("The control API's routes decode their bodies and say what is wrong with one")
struct ControlRouteTests {
    @Test("a body with a field missing or of the wrong type answers 400 naming the field, and changes nothing")
    func badBodies() async throws {
        try await withEmulatorClient { google in
            let missing = try await google.json("POST", "/_emulator/write-limit", ["burst": 1])
            #expect(missing.status == 400)
            #expect(missing.oauthError == "writes_per_second is missing; give writes_per_second and burst")
            let wrong = try await google.json(
                "POST", "/_emulator/read-limit", ["reads_per_second": "fast", "burst": 1])
            #expect(wrong.status == 400)
            #expect(wrong.oauthError?.hasPrefix("reads_per_second must be a number") == true, "\(wrong.json)")
            let fault = try await google.json("POST", "/_emulator/faults", ["status": "500"])
            #expect(fault.status == 400)
            #expect(fault.oauthError?.hasPrefix("status must be a whole number; a fault rule is JSON with") == true)
            let kind = try await google.json("POST", "/_emulator/list-fault", ["kind": "sometimes"])
            #expect(kind.status == 400)
            #expect(kind.oauthError?.hasPrefix("kind is not valid") == true, "\(kind.json)")
            #expect(await google.state.faults.isEmpty)
            #expect(await google.state.listFault == nil)
        }
    }

    @Test("an unknown route, or a known path with another method, answers 404")
    func unknownRoutes() async throws {
        try await withEmulatorClient { google in
            let unknown = try await google.request("GET", "/_emulator/no-such-route")
            #expect(unknown.status == 404)
            #expect(unknown.oauthError == "no control endpoint GET /_emulator/no-such-route")
            #expect(try await google.request("PUT", "/_emulator/seed").status == 404)
            #expect(try await google.request("POST", "/_emulator/files/x/y/corrupt").status == 404)
        }
    }

    @Test("config tells a field left out, which changes nothing, from a null, which lifts the setting")
    func absentAndNull() async throws {
        try await withEmulatorClient { google in
            let capped = try await google.json("POST", "/_emulator/config", ["changes_page_size": 5])
            #expect(capped.status == 200)
            #expect(try await google.json("POST", "/_emulator/config", ["poll_interval": 1]).status == 200)
            #expect(await google.state.changesPageSizeCap == 5)
            #expect(try await google.json("POST", "/_emulator/config", ["changes_page_size": NSNull()]).status == 200)
            #expect(await google.state.changesPageSizeCap == nil)
        }
    }
}
