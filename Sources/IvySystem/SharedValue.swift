import Synchronization

/// A value a `@Sendable` closure sets and its caller reads afterwards: what a transaction did
/// before it failed to commit, say, which the closure's return value cannot carry.
package final class SharedValue<Value: Sendable>: Sendable {
    private let value: Mutex<Value>

    package init(_ value: Value) {
        self.value = Mutex(value)
    }

    package var current: Value { value.withLock { $0 } }

    package func set(_ newValue: Value) {
        value.withLock { $0 = newValue }
    }
}
