import Foundation
import HummingbirdCore
import HummingbirdHTTP2
import Logging
import NIOCore
import NIOHTTP2
import NIOPosix
import NIOSSL

/// Each connection the emulator accepts, as Google's front end would take it: plain HTTP/1.1,
/// or TLS with HTTP/2 or HTTP/1.1 as ALPN settles; counted and numbered for the request log;
/// given a GOAWAY at its maximum age, or its handshake refused, as `WireFaults` says.
///
/// Hummingbird's `HTTP2UpgradeChannel` does the TLS and ALPN part alone, but it cannot refuse
/// a handshake or say which connection a request came on; its two halves, `HTTP1Channel` and
/// `HTTP2Channel`, are used as they are.
struct EmulatorChannel: ServerChildChannel {
    enum Value: ServerChildChannelValue {
        case plain(HTTP1Channel.Value)
        case secure(any Channel, EventLoopFuture<NIONegotiatedHTTPVersion<HTTP1Channel.Value, HTTP2Channel.Value>>)
        /// A handshake refused: nothing to serve, the connection closes by itself.
        case refused(any Channel)

        var channel: any Channel {
            switch self {
            case .plain(let value): value.channel
            case .secure(let channel, _), .refused(let channel): channel
            }
        }
    }

    /// The TLS contexts: the one presenting the emulator's certificate, and one presenting a
    /// stranger's (`HandshakeRefusal.untrusted`).
    struct Contexts: Sendable {
        let trusted: NIOSSLContext
        let stranger: NIOSSLContext
    }

    let http1: HTTP1Channel
    let http2: HTTP2Channel
    let tls: Contexts?
    let wire: WireFaults

    init(responder: @escaping HTTPChannelHandler.Responder, tls: Contexts?, wire: WireFaults) {
        http1 = HTTP1Channel(responder: responder)
        http2 = HTTP2Channel(responder: responder)
        self.tls = tls
        self.wire = wire
    }

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        let opened = wire.opened(channel, secure: tls != nil)
        guard let tls else { return http1.setup(channel: channel, logger: logger).map { .plain($0) } }
        switch opened.refusal {
        case .alert:
            return channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.addHandler(HandshakeRefuser())
                return .refused(channel)
            }
        case .untrusted:
            return channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: tls.stranger))
                return .refused(channel)
            }
        case nil:
            break
        }
        let http1 = http1
        let http2 = http2
        return channel.eventLoop.makeCompletedFuture {
            try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: tls.trusted))
        }
        .flatMap {
            channel.configureHTTP2AsyncSecureUpgrade { channel in
                http1.setup(channel: channel, logger: logger)
            } http2ConnectionInitializer: { channel in
                http2.setup(channel: channel, logger: logger).flatMapThrowing { connection in
                    let operations = channel.pipeline.syncOperations
                    try operations.addHandler(
                        FlushBeforeClose(), position: .after(try operations.handler(type: NIOHTTP2Handler.self)))
                    return connection
                }
            }
        }
        .map { .secure(channel, $0) }
    }

    func handle(value: Value, logger: Logger) async {
        switch value {
        case .plain(let connection):
            await http1.handle(value: connection, logger: logger)
        case .secure(let channel, let negotiated):
            await withTaskCancellationHandler {
                switch try? await negotiated.get() {
                case .http1_1(let connection): await http1.handle(value: connection, logger: logger)
                case .http2(let connection): await http2.handle(value: connection, logger: logger)
                case nil: break
                }
                // Hummingbird's HTTP/2 handler is done once it takes no more streams (after a
                // GOAWAY), while the connection may still be sending its last answers: it
                // closes itself once they are sent.
                try? await channel.closeFuture.get()
            } onCancel: {
                // The emulator is stopping. Hummingbird closes a connection's input then,
                // which TLS does not do, nor does it close an HTTP/2 connection; and a TLS
                // close waits up to 5 s for the client's close_notify. A stopped emulator
                // leaves at once, as a killed server would.
                FrontEnd.abort(channel)
            }
        case .refused(let channel):
            // The refusal closes it; a stopped emulator closes it too.
            await withTaskCancellationHandler {
                try? await channel.closeFuture.get()
            } onCancel: {
                FrontEnd.abort(channel)
            }
        }
    }
}

/// Answers whatever the client sends first (its ClientHello) with a TLS record holding a
/// fatal `handshake_failure` alert (RFC 8446 section 6), then closes: a server refusing the
/// handshake. A client sees the alert as its handshake failing.
private final class HandshakeRefuser: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// Content type alert (21), legacy version TLS 1.2 (3, 3), length 2, level fatal (2),
    /// description handshake_failure (40).
    static let alert: [UInt8] = [21, 3, 3, 0, 2, 2, 40]

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(bytes: Self.alert)), promise: nil)
        context.close(promise: nil)
    }
}

/// What the front end does to a connection on a fault's say.
enum FrontEnd {
    /// Tells the connection to go away, gracefully. Over HTTP/2 Hummingbird's connection
    /// manager does it as gRPC's A9 describes a maximum connection age: a GOAWAY naming no
    /// last stream yet and a PING; once the PING comes back, a GOAWAY naming the last stream
    /// taken; the connection closes once those streams are answered. Its quiesce event is
    /// fired from the HTTP/2 handler's place in the pipeline, so it reaches the manager and
    /// not the streams, which would close themselves on it (a stream not yet answered would
    /// be reset). Over HTTP/1.1 the connection closes once its answer in progress is sent.
    static func goAway(_ channel: any Channel, wire: WireFaults) {
        channel.eventLoop.execute {
            guard channel.isActive else { return }
            wire.countGoAway()
            if let http2 = try? channel.pipeline.syncOperations.context(handlerType: NIOHTTP2Handler.self) {
                http2.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
            } else {
                channel.pipeline.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
            }
        }
    }

    /// Resets the connection: closed with SO_LINGER 0, so the peer gets a TCP RST, and from
    /// beneath TLS, which would otherwise send close_notify and wait for the peer's.
    static func reset(_ channel: any Channel, wire: WireFaults) async {
        wire.countReset()
        if let socket = channel as? any SocketOptionProvider {
            try? await socket.setSoLinger(linger(l_onoff: 1, l_linger: 0)).get()
        }
        abort(channel)
        try? await channel.closeFuture.get()
    }

    /// Closes the connection now, beneath TLS: no close_notify, no wait for the peer's.
    static func abort(_ channel: any Channel) {
        channel.eventLoop.execute {
            if let tls = try? channel.pipeline.syncOperations.context(handlerType: NIOSSLServerHandler.self) {
                tls.close(promise: nil)
            } else {
                channel.close(promise: nil)
            }
        }
    }
}

/// Lets the connection's last answer out before it closes. Hummingbird's connection manager
/// closes a connection that has gone away as its last stream ends, which NIOHTTP2 reports
/// while the stream's last frame is being written, before the stream flushes it; a TLS close
/// (`NIOSSLHandler`) then drops what was not flushed, and the client found the answer it was
/// promised cut off (`remoteConnectionClosed`). The close waits for the write in progress to
/// finish, then flushes.
private final class FlushBeforeClose: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = Any

    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
        context.eventLoop.execute {
            bound.value.flush()
            bound.value.close(mode: mode, promise: promise)
        }
    }
}
