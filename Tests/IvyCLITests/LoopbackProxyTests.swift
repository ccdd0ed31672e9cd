import Foundation
import GoogleEmulator
import IvyTestSupport
import Synchronization
import Testing

private final class Counter: Sendable {
    private let count = Mutex(0)
    func withLock<T>(_ body: (inout Int) -> T) -> T { count.withLock { body(&$0) } }
}

/// A proxy on loopback that takes each connection and hangs up at once, counting them:
/// whatever reaches it was sent through the proxy.
private final class HangingUpProxy: Sendable {
    private let listener: LoopbackListener
    private let connections: Counter

    init() throws {
        let connections = Counter()
        self.connections = connections
        listener = try LoopbackListener { connection in
            connections.withLock { $0 += 1 }
            close(connection)
        }
    }

    var port: Int { listener.port }
    var taken: Int { connections.withLock { $0 } }

    /// Ends the accepting thread, then frees the port (`LoopbackListener.stop`).
    func stop() { listener.stop() }
}

/// Issue 40 item 4: with `http_proxy` set, ivy's requests to 127.0.0.1 (an emulator's, with
/// their bearer token, and a health ping to a local monitor) went to the proxy.
// Plain http: the emulator is the health service too, which trusts the system's authorities alone.
@Suite("Loopback is never proxied")
struct LoopbackProxyCLITests {
    @Test("with every proxy variable set, a sync and its health pings still go straight to 127.0.0.1")
    func straightToLoopback() async throws {
        try await withEmulator(tls: false) { emulator in
            let proxy = try HangingUpProxy()
            defer { proxy.stop() }
            let device = try await SignInHarness.signedIn(emulator)
            let health = emulator.baseURL.absoluteString + "/health/check"
            #expect(try await device.ivy.run("config", "set", "health_url", health).status == 0)
            _ = try await device.ivy.id("book", "add", "--title", "Dune")
            let url = "http://127.0.0.1:\(proxy.port)"
            let proxies = ["http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"]
            let sync = try await device.ivy.runBinaryAsync(
                ["sync"], environment: Dictionary(uniqueKeysWithValues: proxies.map { ($0, url) }))
            #expect(sync.status == 0, "\(sync.stderr)")
            #expect(sync.stdout.hasPrefix("Synced: 1 uploaded"), "\(sync.stdout)")
            #expect(await emulator.state.healthPings.map(\.path) == ["/health/check/start", "/health/check"])
            #expect(proxy.taken == 0)
        }
    }

    @Test("a health URL anywhere in 127.0.0.0/8 is this machine too: its pings never go to the proxy")
    func wholeLoopbackRange() async throws {
        try await withEmulator(tls: false) { emulator in
            let proxy = try HangingUpProxy()
            defer { proxy.stop() }
            let device = try await SignInHarness.signedIn(emulator)
            // Nothing listens at 127.0.0.2: a ping that goes there directly is refused at once.
            let health = "http://127.0.0.2:\(proxy.port)/check"
            #expect(try await device.ivy.run("config", "set", "health_url", health).status == 0)
            _ = try await device.ivy.id("book", "add", "--title", "Dune")
            let url = "http://127.0.0.1:\(proxy.port)"
            let proxies = ["http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"]
            let sync = try await device.ivy.runBinaryAsync(
                ["sync"], environment: Dictionary(uniqueKeysWithValues: proxies.map { ($0, url) }))
            #expect(sync.status == 0, "\(sync.stderr)")
            #expect(proxy.taken == 0, "the pings went to the proxy")
        }
    }
}
