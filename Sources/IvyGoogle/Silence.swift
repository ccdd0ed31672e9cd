package import Foundation
import Synchronization

/// How long the server has kept ivy waiting without a word: the time during which at least
/// one request was in flight and nothing came back (no answer, no byte of a body either way),
/// since it last did. Waits between tries (a backoff, a pacer's gap) and local work do not
/// count, so a network that refuses connections at once never adds up to silence; a server
/// that takes requests and never answers adds up by the second. The sync's silence budget
/// (`SyncEngine`) is measured on it.
package final class Silence: Sendable {
    private struct State {
        var inFlight = 0
        /// Silence counted before the current stretch of requests in flight began.
        var counted = Duration.zero
        /// When the current stretch of requests in flight began, or when the server last
        /// answered during it; nil while none is in flight.
        var since: ContinuousClock.Instant?
    }

    private let state = Mutex(State())

    package init() {}

    /// How long the server has been silent, as of `now`.
    package func quiet(at now: ContinuousClock.Instant = .now) -> Duration {
        state.withLock { state in state.counted + (state.since.map { now - $0 } ?? .zero) }
    }

    /// A request went out.
    func began(at now: ContinuousClock.Instant = .now) {
        state.withLock { state in
            if state.inFlight == 0 { state.since = now }
            state.inFlight += 1
        }
    }

    /// The server said something: an answer, or bytes of a body moving either way.
    func heard(at now: ContinuousClock.Instant = .now) {
        state.withLock { state in
            state.counted = .zero
            state.since = state.inFlight > 0 ? now : nil
        }
    }

    /// A request ended: answered, or not (a dropped connection, a timeout, a cancellation).
    func ended(answered: Bool, at now: ContinuousClock.Instant = .now) {
        state.withLock { state in
            state.inFlight = max(0, state.inFlight - 1)
            if answered {
                state.counted = .zero
                state.since = state.inFlight > 0 ? now : nil
            } else if state.inFlight == 0, let since = state.since {
                state.counted += now - since
                state.since = nil
            }
        }
    }
}

/// A transport that tells `silence` about every request it sends: when it goes out, every
/// chunk of its body that moves (through the request's `progress`, which it passes on), and
/// whether it was answered. A sync's Drive requests and token refreshes all go through one.
package struct SilenceTracking: HTTPTransport {
    let base: any HTTPTransport
    package let silence: Silence

    package init(_ base: any HTTPTransport, silence: Silence) {
        self.base = base
        self.silence = silence
    }

    package func send(_ request: HTTPRequest) async throws -> HTTPResponse {
        try await watched(request) { try await base.send($0) }
    }

    package func download(_ request: HTTPRequest, to file: URL, from offset: Int64) async throws -> HTTPResponse {
        try await watched(request) { try await base.download($0, to: file, from: offset) }
    }

    private func watched(_ request: HTTPRequest, _ send: (HTTPRequest) async throws -> HTTPResponse) async throws
        -> HTTPResponse
    {
        var told = request
        let silence = silence
        let progress = request.progress
        told.progress = { bytes in
            silence.heard()
            progress?(bytes)
        }
        silence.began()
        do {
            let response = try await send(told)
            silence.ended(answered: true)
            return response
        } catch {
            silence.ended(answered: false)
            throw error
        }
    }
}
