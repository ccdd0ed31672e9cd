import Foundation

/// Who wrote a version of a book or clip.
package enum HistorySource: String, Sendable, CaseIterable {
    /// A change made on this device: an ivy command or another program writing `library.db`.
    case here
    /// A sync applying Drive's copy, a merge with it, or a deletion made elsewhere.
    case drive
    /// `ivy restore --at` or `ivy trash restore`.
    case restore
}

/// Pure rules of the history: which fields a version changed, and which versions retention
/// keeps.
package enum History {
    /// The default of `history_days`.
    package static let defaultDays = 365

    /// The backup keys whose values differ from `previous` to `current` (every key of a first
    /// version), sorted; `updated_at` moves with every change, so it is never named. `audio`
    /// is named when the MP3 changed (`audioChanged`).
    package static func changedFields(
        from previous: [String: JSONValue]?, to current: [String: JSONValue]?, audioChanged: Bool = false
    ) -> [String] {
        guard let current else { return [] }
        var keys = Set(current.keys)
        if let previous { keys = keys.union(previous.keys).filter { previous[$0] != current[$0] } }
        keys.remove("updated_at")
        if audioChanged { keys.insert("audio") }
        return keys.sorted()
    }

    /// One version as retention sees it.
    package struct Version: Sendable, Equatable {
        package let id: Int64
        package let recordedAt: Milliseconds
        package let deleted: Bool

        package init(id: Int64, recordedAt: Milliseconds, deleted: Bool) {
            self.id = id
            self.recordedAt = recordedAt
            self.deleted = deleted
        }
    }

    private static let hour: Milliseconds = 3_600_000
    private static let day: Milliseconds = 86_400_000

    /// Staggered retention, as Syncthing's versioning: every version of the last hour, then
    /// the newest of each hour for a day, of each day for 30 days, of each week up to `days`;
    /// none older. Ages count back from `newest`, the time of the library's newest version not
    /// in the future, not from the clock (restic's rule: an idle machine, or one whose clock
    /// stepped, keeps its past). "Newest" among one entity's versions is the order they were
    /// written in (their ids), never their recorded times; the times given date each version as
    /// the store works it out (never older than a version written before it). The newest
    /// version of an entity that exists (its current state) is always kept; so is the newest
    /// version of a deleted one (its tombstone) and the state before it while the tombstone is
    /// younger than `days`. At 0 days history is off: everything goes. `versions` are one
    /// entity's; returns the ids to remove.
    package static func prunable(_ versions: [Version], newest reference: Milliseconds, days: Int) -> [Int64] {
        guard days > 0 else { return versions.map(\.id) }
        let newestFirst = versions.sorted { $0.id > $1.id }
        guard let newest = newestFirst.first else { return [] }
        let limit = Milliseconds(days) * day
        // A version's age is never less than that of a version written after it.
        var floorTime = Milliseconds.max
        var keep: Set<Int64> = [newest.id]
        if newest.deleted {
            if reference - newest.recordedAt < limit {
                if let last = newestFirst.dropFirst().first(where: { !$0.deleted }) { keep.insert(last.id) }
            } else {
                keep = []
            }
        }
        var buckets: Set<[Int64]> = []
        for version in newestFirst {
            floorTime = min(floorTime, version.recordedAt)
            let age = reference - floorTime
            if age < hour {
                keep.insert(version.id)
                continue
            }
            guard age < limit else { continue }
            let width =
                if age < day { hour } else if age < 30 * day { day } else { 7 * day }
            // The newest version in each hour, day or week (of UTC, counted from the epoch) stays:
            // spans fixed in time keep the same version from one pruning to the next.
            if buckets.insert([width, floorTime / width]).inserted { keep.insert(version.id) }
        }
        return newestFirst.filter { !keep.contains($0.id) }.map(\.id)
    }

    /// Parses a moment as `ivy history` and `ivy restore --at` take it: a time as ivy shows it
    /// (`YYYY-MM-DD HH:MM[:SS] +HH:MM`), an RFC 3339 time, a local `YYYY-MM-DD` (its midnight)
    /// or `YYYY-MM-DD HH:MM[:SS]` (also with a `T`), or a duration ago (`90s`, `90m`, `2h`,
    /// `3d`, `2w`, also written `-2h`). A local time is read in `zone`: one the clocks skipped, or passed twice,
    /// names no single moment and is refused. With `end`, a time given to the second stands for
    /// its last millisecond (or `now`, within it): ivy shows times to the second and records
    /// them to the millisecond, so a time copied from `ivy history` takes in the version it was
    /// copied from.
    package static func moment(_ text: String, now: Milliseconds, zone: LocalZone?, end: Bool = false)
        throws(MomentError) -> Milliseconds
    {
        let trimmed = text.trimmingSpaces()
        // `-2h` is read as people mean it: two hours ago, as `2h` is.
        let duration = trimmed.hasPrefix("-") ? trimmed.dropFirst() : Substring(trimmed)
        if let unit = duration.last, let count = Int64(duration.dropLast()), count >= 0, count < 1_000_000 {
            let seconds: Int64? =
                switch unit {
                case "s": 1
                case "m": 60
                case "h": 3600
                case "d": 86_400
                case "w": 604_800
                default: nil
                }
            if let seconds { return now - count * seconds * 1000 }
        }
        func whole(_ start: Milliseconds) -> Milliseconds { end ? min(start + 999, max(start, now)) : start }
        let rfc = ISO8601DateFormatter()
        rfc.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = rfc.date(from: trimmed) { return Milliseconds((date.timeIntervalSince1970 * 1000).rounded()) }
        rfc.formatOptions = [.withInternetDateTime]
        if let date = rfc.date(from: trimmed) {
            return whole(Milliseconds((date.timeIntervalSince1970 * 1000).rounded()))
        }
        // The form ivy shows: a local time and, after a space, its offset.
        if let space = trimmed.lastIndex(of: " "), let sign = trimmed[trimmed.index(after: space)...].first,
            sign == "+" || sign == "-"
        {
            guard let wall = LocalTime.wall(String(trimmed[..<space])),
                let offset = LocalTime.offset(trimmed[trimmed.index(after: space)...])
            else { throw .malformed }
            return whole((wall - Int64(offset)) * 1000)
        }
        guard let wall = LocalTime.wall(trimmed) else { throw .malformed }
        guard let zone else { throw .noZone }
        let instants = zone.instants(wall: wall).map { LocalInstant(utcSeconds: $0.utcSeconds, offset: $0.offset) }
        switch instants.count {
        case 0: throw .skipped(wall: wall)
        case 1: return whole(instants[0].utcSeconds * 1000)
        default: throw .ambiguous(wall: wall, first: instants[0], second: instants[instants.count - 1])
        }
    }

    /// What `moment` accepts, for messages.
    package static let momentForms =
        "a time as ivy shows it (2026-03-01 09:30[:00] +01:00), an RFC 3339 time (2026-03-01T08:30:00Z), "
        + "a local date (2026-03-01) or date and time (2026-03-01 09:30[:00]), or a duration ago (90s, 90m, 2h, "
        + "3d, 1w)"
}
