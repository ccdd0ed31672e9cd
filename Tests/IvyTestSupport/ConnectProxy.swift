import Foundation
import NIOCore
import NIOPosix
import Synchronization

/// An HTTP proxy on 127.0.0.1 that tunnels CONNECT requests, as a company's proxy does for
/// HTTPS: it reads `CONNECT host:port`, opens a connection to where `route` sends that target
/// (a test maps a made-up name to its emulator), answers 200 and then copies bytes both ways
/// without looking at them. A target `route` has no place for is answered 502. Every CONNECT
/// is counted with its target and its `Proxy-Authorization`, so a test can tell what went
/// through the proxy and with which credentials. Stopped by `stop()`.
package final class ConnectProxy: Sendable {
    /// One CONNECT the proxy was asked for.
    package struct Tunnel: Sendable, Equatable {
        package var target: String
        package var authorization: String?
    }

    package let port: Int
    private let channel: any Channel

    /// A route to nowhere: every CONNECT is answered 502 (and counted).
    package static let nowhere: @Sendable (String, Int) -> (host: String, port: Int)? = { _, _ in nil }

    /// Starts a proxy; `route` maps a CONNECT's `host:port` to where it really goes.
    package static func start(
        route: @escaping @Sendable (_ host: String, _ port: Int) -> (host: String, port: Int)? = { ($0, $1) }
    ) async throws -> ConnectProxy {
        let log = TunnelLog()
        let channel = try await ServerBootstrap(group: TestServers.eventLoops)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { child in
                child.eventLoop.makeCompletedFuture {
                    try child.pipeline.syncOperations.addHandler(ConnectHandler(route: route, record: log.add))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return ConnectProxy(channel: channel, port: channel.localAddress?.port ?? 0, log: log)
    }

    private let log: TunnelLog

    private init(channel: any Channel, port: Int, log: TunnelLog) {
        self.channel = channel
        self.port = port
        self.log = log
    }

    /// Every CONNECT asked for so far, in order.
    package var tunnels: [Tunnel] { log.all }

    /// The proxy as a proxy variable names it.
    package var url: String { "http://127.0.0.1:\(port)" }

    package func stop() async {
        try? await channel.close()
    }
}

private final class TunnelLog: Sendable {
    private let tunnels = Mutex<[ConnectProxy.Tunnel]>([])
    var all: [ConnectProxy.Tunnel] { tunnels.withLock { $0 } }
    @Sendable func add(_ tunnel: ConnectProxy.Tunnel) { tunnels.withLock { $0.append(tunnel) } }
}

/// Reads one CONNECT request, then glues the connection to the target's.
private final class ConnectHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let route: @Sendable (String, Int) -> (host: String, port: Int)?
    private let record: @Sendable (ConnectProxy.Tunnel) -> Void
    private var head = ByteBuffer()
    private var connecting = false

    init(
        route: @escaping @Sendable (String, Int) -> (host: String, port: Int)?,
        record: @escaping @Sendable (ConnectProxy.Tunnel) -> Void
    ) {
        self.route = route
        self.record = record
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = unwrapInboundIn(data)
        head.writeBuffer(&bytes)
        guard !connecting, let end = head.readableBytesView.firstRange(of: Array("\r\n\r\n".utf8)) else { return }
        connecting = true
        let headLength = end.upperBound - head.readableBytesView.startIndex
        let text = head.getString(at: head.readerIndex, length: headLength - 4) ?? ""
        let lines = text.components(separatedBy: "\r\n")
        let request = lines[0].split(separator: " ")
        let authorization = lines.dropFirst().first { $0.lowercased().hasPrefix("proxy-authorization:") }
            .map { String($0.drop { $0 != ":" }.dropFirst()).trimmingCharacters(in: .whitespaces) }
        guard request.count == 3, request[0] == "CONNECT", let colon = request[1].lastIndex(of: ":"),
            let port = Int(request[1][request[1].index(after: colon)...])
        else { return refuse(context, "400 Bad Request") }
        var host = String(request[1][..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        record(ConnectProxy.Tunnel(target: String(request[1]), authorization: authorization))
        guard let target = route(host, port) else { return refuse(context, "502 Bad Gateway") }
        // Whatever came after the head (a TLS hello sent without waiting) goes on to the target.
        head.moveReaderIndex(forwardBy: headLength)
        let early = head
        context.channel.setOption(ChannelOptions.autoRead, value: false).whenComplete { _ in }
        let client = context.channel
        ClientBootstrap(group: context.eventLoop).connect(host: target.host, port: target.port).assumeIsolated()
            .whenComplete { result in
                switch result {
                case .failure:
                    self.refuse(context, "502 Bad Gateway")
                case .success(let server):
                    let answer = ByteBuffer(string: "HTTP/1.1 200 Connection established\r\n\r\n")
                    context.writeAndFlush(self.wrapOutboundOut(answer), promise: nil)
                    let (ours, theirs) = GlueHandler.pair()
                    do {
                        try client.pipeline.syncOperations.addHandler(ours)
                        try server.pipeline.syncOperations.addHandler(theirs)
                    } catch {
                        client.close(promise: nil)
                        server.close(promise: nil)
                        return
                    }
                    if early.readableBytes > 0 { server.writeAndFlush(early, promise: nil) }
                    context.pipeline.syncOperations.removeHandler(self, promise: nil)
                    client.setOption(ChannelOptions.autoRead, value: true).whenComplete { _ in }
                }
            }
    }

    private func refuse(_ context: ChannelHandlerContext, _ status: String) {
        let answer = ByteBuffer(string: "HTTP/1.1 \(status)\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        context.writeAndFlush(wrapOutboundOut(answer)).assumeIsolated().whenComplete { _ in context.close(promise: nil)
        }
    }
}

/// Two handlers, one on each connection, that pass what one side reads to the other side,
/// reading no faster than the other side takes it, and close both when either closes (the
/// glue of swift-nio's connect-proxy example).
private final class GlueHandler: ChannelDuplexHandler {
    typealias InboundIn = NIOAny
    typealias OutboundIn = NIOAny
    typealias OutboundOut = NIOAny

    private var partner: GlueHandler?
    private var context: ChannelHandlerContext?
    private var pendingRead = false

    static func pair() -> (GlueHandler, GlueHandler) {
        let first = GlueHandler()
        let second = GlueHandler()
        first.partner = second
        second.partner = first
        return (first, second)
    }

    private var partnerWritable: Bool { partner?.context?.channel.isWritable ?? false }

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        partner = nil
    }

    private func partnerWrite(_ data: NIOAny) { partner?.context?.write(data, promise: nil) }
    private func partnerFlush() { partner?.context?.flush() }
    private func partnerClose() { partner?.context?.close(promise: nil) }

    private func partnerBecameWritable() {
        if pendingRead {
            pendingRead = false
            context?.read()
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) { partnerWrite(data) }
    func channelReadComplete(context: ChannelHandlerContext) { partnerFlush() }
    func channelInactive(context: ChannelHandlerContext) { partnerClose() }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
        partnerClose()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { partner?.partnerBecameWritable() }
    }

    func read(context: ChannelHandlerContext) {
        if partnerWritable {
            context.read()
        } else {
            pendingRead = true
        }
    }
}

/// Runs `body` with a `ConnectProxy` (see `ConnectProxy.start`), stopped afterwards whether
/// or not `body` throws.
package func withConnectProxy<T>(
    route: @escaping @Sendable (_ host: String, _ port: Int) -> (host: String, port: Int)? = { ($0, $1) },
    _ body: (ConnectProxy) async throws -> T
) async throws -> T {
    let proxy = try await ConnectProxy.start(route: route)
    do {
        let result = try await body(proxy)
        await proxy.stop()
        return result
    } catch {
        await proxy.stop()
        throw error
    }
}
