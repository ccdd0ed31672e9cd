extension Sequence {
    /// `map` for a transform that awaits (a library call), one element at a time, in order.
    package func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var results: [T] = []
        for element in self { results.append(try await transform(element)) }
        return results
    }
}
