/// What the soak knows to have happened, independent of ivy: every entity created, by whom
/// and when, the clips deleted, and the unknown keys the phone app put on Drive.
struct Ledger {
    enum Kind: String, Sendable { case book, clip }

    struct Entry: Sendable {
        var kind: Kind
        /// Creation order: entities are chosen in this order, never in id order, because ivy
        /// makes random ids and the same seed must choose the same entities.
        var sequence: Int
        var origin: String
    }

    private(set) var entries: [String: Entry] = [:]
    private(set) var deleted: Set<String> = []
    /// Entities on which the app wrote `app_color`; it must stay on Drive for good.
    private(set) var appKeys: [String: String] = [:]

    mutating func created(_ id: String, _ kind: Kind, origin: String) {
        guard entries[id] == nil else { return }
        entries[id] = Entry(kind: kind, sequence: entries.count, origin: origin)
    }

    mutating func deletedClip(_ id: String) { deleted.insert(id) }

    mutating func appKey(_ id: String, value: String) { appKeys[id] = value }

    /// The ids in creation order (any the soak never saw created last, by id).
    func ordered(_ ids: some Sequence<String>) -> [String] {
        ids.sorted { left, right in
            let l = entries[left]?.sequence ?? Int.max
            let r = entries[right]?.sequence ?? Int.max
            return l == r ? left < right : l < r
        }
    }

    /// Entities created and never deleted: they must be everywhere at the end.
    var mustExist: [String] {
        ordered(entries.keys.filter { !deleted.contains($0) })
    }
}

extension Ledger {
    /// An entity in logs: its creation number (the same in every run of a seed) and the
    /// start of its id (random in every run, since ivy makes ids).
    func tag(_ id: String) -> String {
        "#\(entries[id].map { String($0.sequence) } ?? "?"):\(id.prefix(8))"
    }
}
