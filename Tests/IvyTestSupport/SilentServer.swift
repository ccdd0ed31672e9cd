import Foundation
import NIOCore
import NIOPosix
import Synchronization

/// A server on 127.0.0.1 that accepts every connection and never answers: it reads what it
/// is sent and drops it, and keeps the connection open until the client hangs up or the
/// server stops. For what a client does while it waits on a server that says nothing.
package final class SilentServer: Sendable {
    package let port: Int
    private let channel: any Channel
    private let heard: Heard

    package static func start() async throws -> SilentServer {
        let heard = Heard()
        let channel = try await ServerBootstrap(group: TestServers.eventLoops)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { child in
                child.eventLoop.makeCompletedFuture {
                    try child.pipeline.syncOperations.addHandler(Swallow(heard: heard))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return SilentServer(channel: channel, port: channel.localAddress?.port ?? 0, heard: heard)
    }

    private init(channel: any Channel, port: Int, heard: Heard) {
        self.channel = channel
        self.port = port
        self.heard = heard
    }

    package var url: String { "http://127.0.0.1:\(port)" }

    /// How many connections sent it something.
    package var requests: Int { heard.count }

    /// Returns once `count` connections have sent it something (a request it will never
    /// answer), or the waiting task is cancelled.
    package func waitForRequests(count: Int) async {
        await heard.wait(for: count)
    }

    package func stop() async {
        try? await channel.close()
    }
}

private final class Heard: Sendable {
    private struct State {
        var connections = 0
        var waiting: [(count: Int, id: UUID, continuation: CheckedContinuation<Void, Never>)] = []
    }

    private let state = Mutex(State())

    var count: Int { state.withLock { $0.connections } }

    func spoke() {
        let ready = state.withLock { state in
            state.connections += 1
            let count = state.connections
            let ready = state.waiting.filter { $0.count <= count }.map(\.continuation)
            state.waiting.removeAll { $0.count <= count }
            return ready
        }
        for continuation in ready { continuation.resume() }
    }

    func wait(for count: Int) async {
        let id = UUID()
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let now = state.withLock { state in
                    if state.connections >= count || Task.isCancelled { return true }
                    state.waiting.append((count, id, continuation))
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            let waiting = state.withLock { state in
                defer { state.waiting.removeAll { $0.id == id } }
                return state.waiting.first { $0.id == id }?.continuation
            }
            waiting?.resume()
        }
    }
}

/// Reads and drops every byte; counts a connection the first time it says anything.
private final class Swallow: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private let heard: Heard
    private var spoke = false

    init(heard: Heard) {
        self.heard = heard
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !spoke else { return }
        spoke = true
        heard.spoke()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}

/// Runs `body` with a `SilentServer`, stopped afterwards whether or not `body` throws.
package func withSilentServer<T>(_ body: (SilentServer) async throws -> T) async throws -> T {
    let server = try await SilentServer.start()
    do {
        let result = try await body(server)
        await server.stop()
        return result
    } catch {
        await server.stop()
        throw error
    }
}

/// The event loop of the tests' own small servers (`SilentServer`, `ConnectProxy`): one thread
/// of their own, so what they hear is heard at once, however busy NIO's shared group is with
/// the emulators' answers (an endless download's filler, say).
enum TestServers {
    static let eventLoops = MultiThreadedEventLoopGroup(numberOfThreads: 1)
}
