import AsyncHTTPClient
import Foundation
import IvySystem
import NIOCore
import NIOPosix
import NIOSSL
import Synchronization

/// How ivy's HTTP is set up, as a value: whom it trusts besides the system's certificate
/// authorities, how long a request may sit with no byte moving, and which proxy each request
/// goes through. Two transports with equal settings share one AsyncHTTPClient (`WireClients`).
package struct WireSettings: Sendable, Hashable {
    /// A request with no byte moving either way for this long fails (`TransportError.timedOut`),
    /// and a connection not made in this long fails too: the 60 s URLSession's
    /// `timeoutIntervalForRequest` had.
    package static let defaultIdleTimeout = Duration.seconds(60)

    /// A PEM file of extra certificate authorities to trust (an emulator's, or a proxy's that
    /// looks inside TLS), beside the system's: `IVY_CA_FILE` as the sign-in recorded it.
    package var caFile: String?
    package var idleTimeout: Duration
    package var proxies: ProxyRules

    package init(caFile: String? = nil, idleTimeout: Duration = defaultIdleTimeout, proxies: ProxyRules = ProxyRules())
    {
        self.caFile = caFile
        self.idleTimeout = idleTimeout
        self.proxies = proxies
    }

    /// The proxies `environment` names (`ProxyRules`), with `caFile` trusted.
    package init(environment: [String: String], caFile: String? = nil, idleTimeout: Duration = defaultIdleTimeout) {
        self.init(caFile: caFile, idleTimeout: idleTimeout, proxies: ProxyRules(environment: environment))
    }
}

/// ivy's AsyncHTTPClients: one for each distinct way of connecting (extra certificate
/// authorities, idle timeout, proxy), made when first needed and kept for the life of the
/// process, so a process makes one in the usual case and connections are reused across every
/// request and every transport value. `shutdown()` closes them at exit.
package final class WireClients: Sendable {
    package static let shared = WireClients()

    struct Key: Hashable, Sendable {
        var caFile: String?
        var idleTimeout: Duration
        var proxy: ProxyServer?
    }

    private let clients = Mutex<[Key: HTTPClient]>([:])
    /// Once shut down, a request finds no client rather than making one nobody will close.
    private let closed = Mutex(false)

    private init() {}

    /// The clients' own event loop, one thread: ivy's requests never wait behind another
    /// NIO user's in the same process (the tests' emulators serve on NIO's shared group), and
    /// one thread moves more than a home connection carries, TLS included. Never shut down:
    /// it lives as long as the process.
    static let eventLoops = MultiThreadedEventLoopGroup(numberOfThreads: 1)

    /// The client for `key`, made on first use; the extra certificate authorities' file is
    /// read then, on ivy's own threads.
    func client(_ key: Key) async throws -> HTTPClient {
        if let client = clients.withLock({ $0[key] }) { return client }
        let authorities = try await key.caFile.asyncMap { path in
            try await BlockingExecutor.blocking { try Self.certificates(path) }
        }
        return try clients.withLock { clients in
            if let client = clients[key] { return client }
            guard !closed.withLock({ $0 }) else {
                throw TransportError(.connectionLost, "ivy is stopping: no more requests are sent")
            }
            let client = HTTPClient(
                eventLoopGroup: Self.eventLoops,
                configuration: Self.configuration(key, authorities: authorities))
            clients[key] = client
            return client
        }
    }

    /// Shuts every client down: each open connection is closed (a TLS close_notify, an
    /// HTTP/2 GOAWAY) and any request still in flight fails. Waits without holding a thread.
    package func shutdown() async {
        let all = clients.withLock { clients in
            closed.withLock { $0 = true }
            defer { clients = [:] }
            return Array(clients.values)
        }
        for client in all { try? await client.shutdown() }
    }

    /// `shutdown()`, given at most `limit`: past it the process goes on (to its exit) and the
    /// shutdown is left to finish or not.
    package func shutdown(within limit: Duration) async {
        let answered = Mutex(false)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let answer: @Sendable () -> Void = {
                if answered.withLock({ seen in
                    defer { seen = true }
                    return !seen
                }) {
                    continuation.resume()
                }
            }
            Task {
                await self.shutdown()
                answer()
            }
            Task {
                try? await Task.sleep(for: limit)
                answer()
            }
        }
    }

    static func configuration(_ key: Key, authorities: [NIOSSLCertificate]?) -> HTTPClient.Configuration {
        var tls = TLSConfiguration.makeClientConfiguration()
        if let authorities { tls.additionalTrustRoots = [.certificates(authorities)] }
        let idle = TimeAmount.nanoseconds(Int64(key.idleTimeout / .nanoseconds(1)))
        var configuration = HTTPClient.Configuration()
        configuration.tlsConfiguration = tls
        // Never follow a redirect: Drive's API sends none, and following one would carry the
        // bearer token to wherever it points. The 3xx itself is the answer.
        configuration.redirectConfiguration = .disallow
        configuration.timeout = HTTPClient.Configuration.Timeout(connect: idle, read: idle, write: idle)
        configuration.proxy = key.proxy.map(proxy)
        configuration.decompression = .disabled
        configuration.httpVersion = .automatic
        // As many connections as Drive's concurrency setting may ask for at once.
        configuration.connectionPool = HTTPClient.Configuration.ConnectionPool(
            idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: 16)
        // A connection that cannot be made fails its request at once, as any network failure
        // does: ivy's own retry policy decides what comes next, and its deadline holds.
        configuration.connectionPool.retryConnectionEstablishment = false
        return configuration
    }

    static func proxy(_ server: ProxyServer) -> HTTPClient.Configuration.Proxy {
        switch server.kind {
        case .socks5:
            return .socksServer(host: server.host, port: server.port)
        case .http:
            let authorization = server.user.map {
                HTTPClient.Authorization.basic(username: $0, password: server.password ?? "")
            }
            return .server(host: server.host, port: server.port, authorization: authorization)
        }
    }

    /// The certificates in the PEM file at `path`: at least one, or an error naming the fix.
    static func certificates(_ path: String) throws -> [NIOSSLCertificate] {
        let fix =
            "give IVY_CA_FILE the PEM file of the certificate authority (`ivy-emulator` prints it in its export line) "
            + "and run `ivy login` again"
        let certificates: [NIOSSLCertificate]
        do {
            certificates = try NIOSSLCertificate.fromPEMFile(path)
        } catch {
            let reason =
                FileManager.default.isReadableFile(atPath: path)
                ? "it holds no PEM certificate" : "it cannot be read"
            throw TransportError(
                .certificateFile, "the certificate authority file \(path) (IVY_CA_FILE): \(reason); \(fix)")
        }
        guard !certificates.isEmpty else {
            throw TransportError(
                .certificateFile, "the certificate authority file \(path) (IVY_CA_FILE) holds no certificate; \(fix)")
        }
        return certificates
    }
}

extension Optional {
    fileprivate func asyncMap<T>(_ transform: (Wrapped) async throws -> T) async throws -> T? {
        guard let value = self else { return nil }
        return try await transform(value)
    }
}
