import Foundation
import NIOCore
import Synchronization

/// How a refused TLS handshake looks to the client.
package enum HandshakeRefusal: String, Sendable, Codable {
    /// The ClientHello is answered with a fatal `handshake_failure` alert and the connection
    /// closed: a server that will not talk TLS with this client.
    case alert
    /// The server presents a certificate the emulator's authority did not sign: a client
    /// that checks certificates fails the handshake (as behind an intercepting proxy).
    case untrusted
}

/// What the emulator's front end does to connections rather than to one request: Google's
/// front end ends a connection with a GOAWAY at its maximum age, normally an hour (a Google
/// engineer in curl/curl#5389), and other front ends after a number of requests (nginx's
/// `keepalive_requests`).
/// Set through `/_emulator/wire`; CONTRIBUTING.md lists the fields.
package struct WireSettings: Sendable, Codable, Equatable {
    /// Each connection is told to go away once it has carried this many requests: over HTTP/2
    /// a GOAWAY (NO_ERROR) as that request arrives, which it still answers; over HTTP/1.1 that
    /// answer says `Connection: close` and the connection closes after it.
    package var goAwayAfterRequests: Int?
    /// Each connection opened from now on is told to go away this many seconds after it
    /// opened: over HTTP/2 a GOAWAY (NO_ERROR), its streams in flight answered first;
    /// over HTTP/1.1 it closes once its answer in progress (if any) is sent.
    package var maxConnectionAgeSeconds: Double?
    /// This many of the next TLS handshakes fail, as `refusal` says (plain HTTP: no effect).
    package var refuseHandshakes: Int?
    /// How a refused handshake fails; `alert` when not given.
    package var refusal: HandshakeRefusal?

    package init(
        goAwayAfterRequests: Int? = nil, maxConnectionAgeSeconds: Double? = nil, refuseHandshakes: Int? = nil,
        refusal: HandshakeRefusal? = nil
    ) {
        self.goAwayAfterRequests = goAwayAfterRequests
        self.maxConnectionAgeSeconds = maxConnectionAgeSeconds
        self.refuseHandshakes = refuseHandshakes
        self.refusal = refusal
    }

    enum CodingKeys: String, CodingKey {
        case goAwayAfterRequests = "goaway_after_requests"
        case maxConnectionAgeSeconds = "max_connection_age_seconds"
        case refuseHandshakes = "refuse_handshakes"
        case refusal
    }
}

/// What the front end has done since the emulator started: how a test sees connections come
/// and go without looking at the socket.
package struct WireCounts: Sendable, Codable, Equatable {
    /// Connections accepted (refused handshakes included).
    package var connections = 0
    /// Connections told to go away (by `goAwayAfterRequests`, `maxConnectionAgeSeconds` or a
    /// fault rule's `goAway`).
    package var goAways = 0
    /// TLS handshakes refused.
    package var refusedHandshakes = 0
    /// Connections reset by a fault rule's `resetConnection`.
    package var resets = 0
    /// Connections closed, by either side.
    package var closed = 0

    enum CodingKeys: String, CodingKey {
        case closed
        case connections
        case goAways = "goaways"
        case refusedHandshakes = "refused_handshakes"
        case resets
    }
}

/// The connection a request came on, as the server sees it.
struct ConnectionInfo: Sendable {
    /// The TCP connection's channel (for HTTP/2, the parent of the request's stream).
    let channel: any Channel
    /// 1 for the first connection the emulator accepted, and so on.
    let number: Int
    /// "2" or "1.1".
    let http: String
    /// This request is the connection's `goAwayAfterRequests`th.
    let isLast: Bool
}

/// The front end's settings and bookkeeping, read and written from the event loops (a
/// connection opening, a request arriving) as well as the control API: behind a lock, not on
/// the state's actor.
package final class WireFaults: Sendable {
    private struct Open {
        let number: Int
        let channel: any Channel
        let opened: NIODeadline
        var requests = 0
        /// Told to go away already: it is told once.
        var goneAway = false
    }

    private struct Waiter {
        let condition: @Sendable (WireCounts) -> Bool
        let continuation: CheckedContinuation<Void, Never>
    }

    private struct Book {
        var settings = WireSettings()
        var counts = WireCounts()
        var open: [ObjectIdentifier: Open] = [:]
        var waiters: [Waiter] = []

        /// The waiters whose condition now holds, taken off the list, to be resumed outside the lock.
        mutating func ready() -> [CheckedContinuation<Void, Never>] {
            let counts = counts
            let ready = waiters.filter { $0.condition(counts) }
            waiters.removeAll { $0.condition(counts) }
            return ready.map(\.continuation)
        }
    }

    private let book = Mutex(Book())

    package init() {}

    package var settings: WireSettings { book.withLock { $0.settings } }
    package var counts: WireCounts { book.withLock { $0.counts } }

    /// Replaces the settings. A new maximum age applies to the connections already open too,
    /// counted from when each opened.
    package func set(_ settings: WireSettings) {
        let aging = book.withLock { book -> [Open] in
            let changed = book.settings.maxConnectionAgeSeconds != settings.maxConnectionAgeSeconds
            book.settings = settings
            return changed && settings.maxConnectionAgeSeconds != nil ? Array(book.open.values) : []
        }
        if let age = settings.maxConnectionAgeSeconds {
            for connection in aging { scheduleAge(connection.channel, opened: connection.opened, age: age) }
        }
    }

    /// Returns once the counts satisfy `condition`: how a test waits for a connection's age
    /// to run out without sleeping.
    package func waitFor(_ condition: @escaping @Sendable (WireCounts) -> Bool) async {
        await withCheckedContinuation { continuation in
            let now = book.withLock { book in
                if condition(book.counts) { return true }
                book.waiters.append(Waiter(condition: condition, continuation: continuation))
                return false
            }
            if now { continuation.resume() }
        }
    }

    private func count(_ change: (inout WireCounts) -> Void) {
        for continuation in book.withLock({ book in
            change(&book.counts)
            return book.ready()
        }) {
            continuation.resume()
        }
    }

    /// A connection was accepted: its number, and whether (and how) its handshake is refused.
    /// Its maximum age, if one is set, starts now.
    func opened(_ channel: any Channel, secure: Bool) -> (number: Int, refusal: HandshakeRefusal?) {
        let now = NIODeadline.now()
        let (opened, age, ready) = book.withLock { book in
            book.counts.connections += 1
            let number = book.counts.connections
            book.open[ObjectIdentifier(channel)] = Open(number: number, channel: channel, opened: now)
            var refusal: HandshakeRefusal?
            if secure, let left = book.settings.refuseHandshakes, left > 0 {
                book.settings.refuseHandshakes = left - 1
                book.counts.refusedHandshakes += 1
                refusal = book.settings.refusal ?? .alert
            }
            return ((number, refusal), book.settings.maxConnectionAgeSeconds, book.ready())
        }
        for continuation in ready { continuation.resume() }
        channel.closeFuture.whenComplete { [self] _ in
            let ready = book.withLock { book in
                book.open.removeValue(forKey: ObjectIdentifier(channel))
                book.counts.closed += 1
                return book.ready()
            }
            for continuation in ready { continuation.resume() }
        }
        if let age { scheduleAge(channel, opened: now, age: age) }
        return opened
    }

    /// Tells the connection to go away at `age` seconds old, unless by then the age has been
    /// changed or it has gone away already.
    private func scheduleAge(_ channel: any Channel, opened: NIODeadline, age: Double) {
        let deadline = opened + .nanoseconds(Int64(min(max(0, age), 1e9) * 1e9))
        let timer = channel.eventLoop.scheduleTask(deadline: deadline) { [self] in
            let due = book.withLock { book -> Bool in
                guard book.settings.maxConnectionAgeSeconds == age, var open = book.open[ObjectIdentifier(channel)],
                    !open.goneAway
                else { return false }
                open.goneAway = true
                book.open[ObjectIdentifier(channel)] = open
                return true
            }
            if due { FrontEnd.goAway(channel, wire: self) }
        }
        channel.closeFuture.whenComplete { _ in timer.cancel() }
    }

    /// Counts a request on the connection it came on: `channel` is the request's (the
    /// connection itself for HTTP/1.1, its stream for HTTP/2). A control request is not
    /// counted towards `goAwayAfterRequests`: it is the test talking, not the client.
    func request(on channel: any Channel, counted: Bool = true) -> ConnectionInfo? {
        book.withLock { book in
            var connection = channel
            var http = "1.1"
            if book.open[ObjectIdentifier(channel)] == nil, let parent = channel.parent {
                connection = parent
                http = "2"
            }
            guard var open = book.open[ObjectIdentifier(connection)] else { return nil }
            var last = false
            if counted {
                open.requests += 1
                last = !open.goneAway && book.settings.goAwayAfterRequests.map { open.requests >= $0 } ?? false
                if last { open.goneAway = true }
            }
            book.open[ObjectIdentifier(connection)] = open
            return ConnectionInfo(channel: connection, number: open.number, http: http, isLast: last)
        }
    }

    /// Marks the connection as told to go away (by a fault rule's `goAway`); false when it was already.
    func markGoneAway(_ channel: any Channel) -> Bool {
        book.withLock { book in
            guard var open = book.open[ObjectIdentifier(channel)], !open.goneAway else { return false }
            open.goneAway = true
            book.open[ObjectIdentifier(channel)] = open
            return true
        }
    }

    func countGoAway() { count { $0.goAways += 1 } }
    func countReset() { count { $0.resets += 1 } }
}
