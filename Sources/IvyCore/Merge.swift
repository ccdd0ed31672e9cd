/// Field-by-field merges of an entity changed on two sides. Deterministic (both
/// devices reach the same result), idempotent, and stamped with the injected `now`.
package enum Merge {
    /// Position: the furthest. Hidden: hidden wins. Title, artist, artwork: the later
    /// write, ties broken by comparing the values so both devices pick the same one.
    package static func book(local: BookBackup, remote: BookBackup, now: Milliseconds) -> BookBackup {
        let localWins = laterWrite(local.updatedAt, remote.updatedAt) {
            compare(
                [local.title, local.artist ?? "", local.artwork ?? "", canonical(.object(local.extras))],
                [remote.title, remote.artist ?? "", remote.artwork ?? "", canonical(.object(remote.extras))])
        }
        let winner = localWins ? local : remote
        return BookBackup(
            id: local.id, title: winner.title, artist: winner.artist, artwork: winner.artwork,
            position: max(local.position, remote.position), hidden: local.hidden || remote.hidden,
            createdAt: min(local.createdAt, remote.createdAt), updatedAt: now,
            extras: extras(local.extras, remote.extras, localWins: localWins))
    }

    /// Note: both kept, with a dated conflict marker, unless one already holds the other.
    /// Start, duration: the later write. Transcription: a present one wins over none.
    package static func clip(local: ClipBackup, remote: ClipBackup, now: Milliseconds) -> ClipBackup {
        let localWins = laterWrite(local.updatedAt, remote.updatedAt) {
            compare(
                [local.bookID, "\(local.start)", "\(local.duration)", local.transcription ?? "", canonical(.object(local.extras))],
                [remote.bookID, "\(remote.start)", "\(remote.duration)", remote.transcription ?? "", canonical(.object(remote.extras))])
        }
        let winner = localWins ? local : remote
        let transcription: String? =
            switch (local.transcription, remote.transcription) {
            case (nil, let other), (let other, nil): other
            case (let mine?, let theirs?): mine == theirs ? mine : winner.transcription
            }
        return ClipBackup(
            id: local.id, bookID: winner.bookID, start: winner.start, duration: winner.duration,
            note: note(local: local.note, remote: remote.note, now: now), transcription: transcription,
            createdAt: min(local.createdAt, remote.createdAt), updatedAt: now,
            extras: extras(local.extras, remote.extras, localWins: localWins))
    }

    /// Equal, or one side empty: the non-empty one. One side already containing the
    /// other (an earlier merge): the longer. Otherwise local, a marker line, remote.
    package static func note(local: String?, remote: String?, now: Milliseconds) -> String? {
        let mine = local ?? "", theirs = remote ?? ""
        if theirs.isEmpty || mine == theirs || mine.contains(theirs) { return mine.isEmpty ? nil : mine }
        if mine.isEmpty || theirs.contains(mine) { return theirs }
        return mine + "\n\n" + conflictMarker(now) + "\n" + theirs
    }

    /// `--- Conflict (Nov 22, 2026) ---`, in UTC so every device writes the same line.
    package static func conflictMarker(_ now: Milliseconds) -> String {
        "--- Conflict (\(CivilDate(milliseconds: now).shortText)) ---"
    }

    /// True when the local side is the later write; on a tie `tieBreak` decides.
    private static func laterWrite(_ local: Milliseconds, _ remote: Milliseconds, tieBreak: () -> Bool) -> Bool {
        local == remote ? tieBreak() : local > remote
    }

    /// A total order on field values, so that a tie resolves the same way on every device.
    private static func compare(_ local: [String], _ remote: [String]) -> Bool {
        local.lexicographicallyPrecedes(remote) == false
    }

    /// One text per JSON value, keys sorted, so comparisons agree on every device.
    private static func canonical(_ value: JSONValue) -> String {
        switch value {
        case .null: "null"
        case .bool(let flag): flag ? "true" : "false"
        case .number(let number): "\(number)"
        case .string(let text): "\"" + text + "\""
        case .array(let items): "[" + items.map(canonical).joined(separator: ",") + "]"
        case .object(let fields): "{" + fields.keys.sorted().map { "\($0):" + canonical(fields[$0] ?? .null) }.joined(separator: ",") + "}"
        }
    }

    /// Unknown keys of both sides; where both have a key, the later write's value.
    private static func extras(_ local: [String: JSONValue], _ remote: [String: JSONValue], localWins: Bool) -> [String: JSONValue] {
        local.merging(remote) { mine, theirs in localWins ? mine : theirs }
    }
}

/// A calendar date in UTC, computed without Foundation so the core stays pure.
package struct CivilDate: Sendable, Equatable {
    package var year: Int
    package var month: Int
    package var day: Int

    /// Howard Hinnant's days-from-civil inverse.
    package init(milliseconds: Milliseconds) {
        let days = Int((milliseconds >= 0 ? milliseconds : milliseconds - 86_399_999) / 86_400_000)
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
    }

    private static let monthNames = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// `MMM d, yyyy`.
    package var shortText: String { "\(Self.monthNames[month - 1]) \(day), \(year)" }
}
