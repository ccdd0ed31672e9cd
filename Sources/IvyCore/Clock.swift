/// Milliseconds since the Unix epoch: the unit of every timestamp ivy stores.
package typealias Milliseconds = Int64

/// The wall clock, injected so that tests control time.
package struct WallClock: Sendable {
    private let read: @Sendable () -> Milliseconds

    package init(_ read: @escaping @Sendable () -> Milliseconds) {
        self.read = read
    }

    package func now() -> Milliseconds { read() }
}

package enum Timestamp {
    /// The `updated_at` for a write at `now` to a row last stamped `previous`.
    /// It always moves forward, so a clock that stepped back still registers a change.
    package static func next(now: Milliseconds, previous: Milliseconds?) -> Milliseconds {
        guard let previous else { return now }
        return max(now, previous + 1)
    }
}
