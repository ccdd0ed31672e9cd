import Foundation
import GoogleEmulator
import IvyTestSupport
import Testing

@testable import IvyGoogle

/// Whole exchanges through a CONNECT proxy the test starts, which sends a made-up name to the
/// emulator: what `ProxyRules` routes to a proxy really goes through it, with its credentials,
/// and comes back. (Plain http to a name is what the transport allows; ivy's endpoint rules
/// allow it to loopback only, which is never proxied, so this is the transport's test alone.)
@Suite("Requests through a CONNECT proxy")
struct ProxiedTransportTests {
    @Test("a request through http_proxy is tunnelled to its server and answered; its credentials go to the proxy")
    func tunnelled() async throws {
        try await withEmulator(tls: false) { emulator in
            let port = try #require(emulator.baseURL.port)
            let route: @Sendable (String, Int) -> (host: String, port: Int)? = { host, _ in
                host == "drive.ivy-test" ? ("127.0.0.1", port) : nil
            }
            try await withConnectProxy(route: route) { proxy in
                let settings = WireSettings(environment: [
                    "http_proxy": proxy.url.replacingOccurrences(of: "http://", with: "http://me:pa%24%24@")
                ])
                let transport = HTTPClientTransport(settings)
                let url = try #require(URL(string: "http://drive.ivy-test:\(port)/drive/v3/about"))
                let response = try await transport.send(HTTPRequest(method: "GET", url: url))
                #expect(response.status == 401, "the emulator's answer to a request without a token")
                #expect(await emulator.state.requests.map(\.path) == ["/drive/v3/about"])
                let tunnels = proxy.tunnels
                #expect(tunnels.map(\.target) == ["drive.ivy-test:\(port)"])
                #expect(tunnels.first?.authorization == "Basic " + Data("me:pa$$".utf8).base64EncodedString())
            }
        }
    }

    @Test("a target in no_proxy goes straight: nothing reaches the proxy")
    func exempt() async throws {
        try await withEmulator(tls: false) { emulator in
            try await withConnectProxy { proxy in
                let settings = WireSettings(environment: ["http_proxy": proxy.url, "no_proxy": "127.0.0.2,example.org"])
                let port = try #require(emulator.baseURL.port)
                // 127.0.0.2 is loopback, so never proxied whatever no_proxy says; 127.0.0.1 too.
                for host in ["127.0.0.1", "127.0.0.2", "localhost"] {
                    let url = try #require(URL(string: "http://\(host):\(port)/drive/v3/about"))
                    _ = try? await HTTPClientTransport(settings).send(HTTPRequest(method: "GET", url: url))
                }
                #expect(proxy.tunnels.isEmpty, "\(proxy.tunnels)")
            }
        }
    }

    @Test("a proxy that refuses the tunnel, or is not there, fails the request naming it, never its password")
    func refused() async throws {
        let proxy = try await ConnectProxy.start { _, _ in nil }
        let url = try #require(URL(string: "https://www.googleapis.com/drive/v3/about"))
        let refusing = WireSettings(environment: ["https_proxy": "http://me:hunter2@127.0.0.1:\(proxy.port)"])
        await #expect {
            _ = try await HTTPClientTransport(refusing).send(HTTPRequest(method: "GET", url: url))
        } throws: { error in
            (error as? TransportError)?.kind == .proxy
                && error.localizedDescription
                    == "the proxy http://***@127.0.0.1:\(proxy.port) (from https_proxy) refused the tunnel to "
                    + "www.googleapis.com:443"
        }
        await proxy.stop()
        // Nothing listens there now.
        await #expect {
            _ = try await HTTPClientTransport(refusing).send(HTTPRequest(method: "GET", url: url))
        } throws: { error in
            (error as? TransportError)?.kind == .cannotConnect
                && error.localizedDescription.contains("no connection to the proxy http://***@127.0.0.1:\(proxy.port)")
                && !error.localizedDescription.contains("hunter2")
        }
        #expect(proxy.tunnels.count == 1)
    }
}
