package import IvyCore

/// The effects the Google clients use, injected so tests control time.
package struct GoogleEffects: Sendable {
    package var transport: any HTTPTransport
    package var clock: WallClock
    package var sleep: @Sendable (Duration) async throws -> Void
    /// Time on a clock that only goes forward, which paces requests after a rate limit: the
    /// process's own, or in tests one that moves with `sleep`, so that pacing does not depend
    /// on how busy the machine is.
    package var elapsed: @Sendable () -> Duration

    package init(
        transport: any HTTPTransport, clock: WallClock, sleep: @escaping @Sendable (Duration) async throws -> Void,
        elapsed: @escaping @Sendable () -> Duration = Pacer.monotonic()
    ) {
        self.transport = transport
        self.clock = clock
        self.sleep = sleep
        self.elapsed = elapsed
    }
}
