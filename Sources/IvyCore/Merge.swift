/// Field-by-field merges of an entity changed on two sides. Deterministic (both
/// devices reach the same result), idempotent, and stamped with the injected `now`.
///
/// Three-way: with the *base* (the content both sides last agreed on) a field changed on
/// one side only takes that side's value, so a rewind or an unarchive made on one device
/// survives an edit of another field elsewhere. Only a field changed on both sides (or
/// every differing field, without a base) is resolved by the rules.
package enum Merge {
    /// A merged entity and the fields that both sides changed to different values.
    package struct Merged<Value: Sendable & Equatable>: Sendable, Equatable {
        package var value: Value
        /// The fields resolved by a rule rather than taken from one side, in field order.
        package var conflicts: [Conflict]
    }

    /// A field both sides changed to different values, and how the merge settled it: the value
    /// it kept, the one it did not, which side won and by which rule.
    package struct Conflict: Sendable, Equatable {
        /// The side whose value was kept: this device's, Drive's, or both (notes joined).
        package enum Winner: String, Sendable, CaseIterable {
            case here, drive, both
        }

        /// Why the kept value won. The raw values are what `ivy history --conflicts` shows.
        package enum Rule: String, Sendable, CaseIterable {
            /// Position: the furthest.
            case furthestPosition = "furthest_position"
            /// Hidden: hidden wins.
            case hiddenWins = "hidden_wins"
            /// The later write by `updated_at`.
            case laterWrite = "later_write"
            /// Equal `updated_at`: the side with the larger field values, the same on every device.
            case tieBreak = "tie_break"
            /// Both notes, under a dated conflict line.
            case notesJoined = "notes_joined"
            /// One note already holds the other (an earlier merge): the longer.
            case noteHoldsOther = "note_holds_other"
            /// One note emptied, the other edited: the one with text.
            case nonEmptyNote = "non_empty_note"
            /// A transcription wins over none.
            case transcriptionPresent = "transcription_present"
            /// Two takes of a clip's audio on Drive whose JSON says nothing of which is newer:
            /// the later Drive `modifiedTime`.
            case driveTime = "drive_time"
        }

        /// The backup JSON key (`title`, `book_id`, …), or `audio` for a clip's MP3 (its md5).
        package var field: String
        package var kept: JSONValue
        /// The value not kept; nil when both were kept (`notesJoined`).
        package var lost: JSONValue?
        package var winner: Winner
        package var rule: Rule

        package init(field: String, kept: JSONValue, lost: JSONValue?, winner: Winner, rule: Rule) {
            self.field = field
            self.kept = kept
            self.lost = lost
            self.winner = winner
            self.rule = rule
        }
    }

    /// Position: the furthest. Hidden: hidden wins. Title, artist, artwork: the later
    /// write, ties broken by comparing the values so both devices pick the same one.
    package static func book(
        local: BookBackup, remote: BookBackup, base: BookBackup? = nil, now: Milliseconds
    ) -> BookBackup {
        bookMerge(local: local, remote: remote, base: base, now: now).value
    }

    package static func bookMerge(
        local: BookBackup, remote: BookBackup, base: BookBackup?, now: Milliseconds
    ) -> Merged<BookBackup> {
        var fields = ThreeWay(local: local, remote: remote, base: base, extras: \.extras) {
            [$0.title, $0.artist ?? "", $0.artwork ?? ""]
        }
        let merged = BookBackup(
            id: local.id,
            title: fields.pick("title", \.title),
            artist: fields.pick("artist", \.artist),
            artwork: fields.pick("artwork", \.artwork),
            position: fields.pick("position", \.position) { (max($0, $1), .furthestPosition) },
            hidden: fields.pick("hidden", \.hidden) { ($0 || $1, .hiddenWins) },
            createdAt: min(local.createdAt, remote.createdAt), updatedAt: now,
            extras: fields.extras)
        return Merged(value: merged, conflicts: fields.conflicts)
    }

    /// Note: both kept, with a dated conflict marker, unless one already holds the other.
    /// Book, start, duration: the later write. Transcription: a present one wins over none.
    package static func clip(
        local: ClipBackup, remote: ClipBackup, base: ClipBackup? = nil, now: Milliseconds
    ) -> ClipBackup {
        clipMerge(local: local, remote: remote, base: base, now: now).value
    }

    package static func clipMerge(
        local: ClipBackup, remote: ClipBackup, base: ClipBackup?, now: Milliseconds
    ) -> Merged<ClipBackup> {
        var fields = ThreeWay(local: local, remote: remote, base: base, extras: \.extras) {
            [$0.bookID.rawValue, "\($0.start)", "\($0.duration)", $0.transcription ?? ""]
        }
        let (localWins, laterRule) = (fields.localWins, fields.laterRule)
        let merged = ClipBackup(
            id: local.id,
            bookID: fields.pick("book_id", \.bookID),
            start: fields.pick("start", \.start),
            duration: fields.pick("duration", \.duration),
            note: fields.pick("note", \.note) { mine, theirs in
                let joined = note(local: mine, remote: theirs, now: now)
                let rule: Conflict.Rule =
                    if joined != mine && joined != theirs {
                        .notesJoined
                    } else if (joined == mine ? theirs : mine)?.isEmpty ?? true {
                        .nonEmptyNote
                    } else {
                        .noteHoldsOther
                    }
                return (joined, rule)
            },
            transcription: fields.pick("transcription", \.transcription) { mine, theirs in
                switch (mine, theirs) {
                case (nil, let other), (let other, nil): (other, .transcriptionPresent)
                case (let mine?, let theirs?): (localWins ? mine : theirs, laterRule)
                }
            },
            createdAt: min(local.createdAt, remote.createdAt), updatedAt: now,
            extras: fields.extras)
        return Merged(value: merged, conflicts: fields.conflicts)
    }

    /// Equal, or one side empty: the non-empty one. One side already containing the
    /// other (an earlier merge): the longer. Otherwise local, a marker line, remote.
    package static func note(local: String?, remote: String?, now: Milliseconds) -> String? {
        let mine = local ?? ""
        let theirs = remote ?? ""
        if theirs.isEmpty || mine == theirs || mine.contains(theirs) { return mine.isEmpty ? nil : mine }
        if mine.isEmpty || theirs.contains(mine) { return theirs }
        return mine + "\n\n" + conflictMarker(now) + "\n" + theirs
    }

    /// `--- Conflict (Nov 22, 2026) ---`, in UTC so every device writes the same line.
    package static func conflictMarker(_ now: Milliseconds) -> String {
        "--- Conflict (\(CivilDate(milliseconds: now).shortText)) ---"
    }

    // MARK: audio

    /// Which clip audio a merge keeps.
    package enum AudioChoice: Sendable, Equatable {
        /// Both sides hold the same bytes, or only this device changed them: keep (and upload) the local file.
        case local
        /// Take Drive's file.
        case remote
    }

    /// What is known of a clip's audio on each side when a merge runs.
    package struct AudioState: Sendable, Equatable {
        /// md5 of the local file; nil when there is none.
        package var localMD5: String?
        package var localUpdatedAt: Milliseconds
        /// Drive's md5 and file id of the current MP3.
        package var remoteMD5: String?
        package var remoteFileID: DriveFileID
        package var remoteUpdatedAt: Milliseconds
        /// md5 and Drive file id of the audio both sides last agreed on; nil when unknown.
        package var baseMD5: String?
        package var baseFileID: DriveFileID?

        package init(
            localMD5: String?, localUpdatedAt: Milliseconds, remoteMD5: String?, remoteFileID: DriveFileID,
            remoteUpdatedAt: Milliseconds, baseMD5: String?, baseFileID: DriveFileID?
        ) {
            self.localMD5 = localMD5
            self.localUpdatedAt = localUpdatedAt
            self.remoteMD5 = remoteMD5
            self.remoteFileID = remoteFileID
            self.remoteUpdatedAt = remoteUpdatedAt
            self.baseMD5 = baseMD5
            self.baseFileID = baseFileID
        }
    }

    /// Audio is a field too. Changed on one side only: that side's file. Changed on both
    /// (or unknowable, without a base): the newer `updated_at` wins and it is a conflict, so a
    /// newer recording made here is never replaced silently.
    package static func audio(_ state: AudioState) -> (choice: AudioChoice, conflict: Bool) {
        let merged = audioMerge(state)
        return (merged.choice, merged.conflict != nil)
    }

    /// `audio(_:)`, with the conflict it resolved (field `audio`, the md5s as values).
    package static func audioMerge(_ state: AudioState) -> (choice: AudioChoice, conflict: Conflict?) {
        guard let localMD5 = state.localMD5 else { return (.remote, nil) }
        if let remoteMD5 = state.remoteMD5, remoteMD5 == localMD5 { return (.local, nil) }
        let remoteChanged: Bool = {
            if let base = state.baseMD5, let remote = state.remoteMD5 { return base != remote }
            return state.baseFileID != state.remoteFileID
        }()
        // Without a recorded md5, the local file is known unchanged only when Drive's is too.
        let localChanged = state.baseMD5.map { $0 != localMD5 } ?? true
        switch (localChanged, remoteChanged) {
        case (true, true):
            let localWins = laterWrite(state.localUpdatedAt, state.remoteUpdatedAt) {
                localMD5 > (state.remoteMD5 ?? "")
            }
            let (mine, theirs) = (JSONValue.string(localMD5), state.remoteMD5.map(JSONValue.string) ?? .null)
            let conflict = Conflict(
                field: "audio", kept: localWins ? mine : theirs, lost: localWins ? theirs : mine,
                winner: localWins ? .here : .drive,
                rule: state.localUpdatedAt == state.remoteUpdatedAt ? .tieBreak : .laterWrite)
            return (localWins ? .local : .remote, conflict)
        case (false, true): return (.remote, nil)
        case (true, false), (false, false): return (.local, nil)
        }
    }

    /// One take of a clip's audio among several MP3s of its name on Drive (`AudioTwins`).
    package struct Take: Sendable, Equatable {
        package var md5: String?
        /// The `updated_at` of the JSON its writer made with it; nil when none was read.
        package var updatedAt: Milliseconds?
        /// Drive's `modifiedTime` of the MP3.
        package var modifiedTime: Milliseconds
        /// Whether it is the audio this device holds (its own upload).
        package var here: Bool

        package init(md5: String?, updatedAt: Milliseconds?, modifiedTime: Milliseconds, here: Bool) {
            self.md5 = md5
            self.updatedAt = updatedAt
            self.modifiedTime = modifiedTime
            self.here = here
        }
    }

    /// The conflict of two takes on Drive that both changed the agreed audio, `kept` having
    /// won (newer by its JSON's `updated_at`, else by Drive's `modifiedTime`, else by the file
    /// id): field `audio`, both md5s, and the rule that decided.
    package static func takeConflict(kept: Take, lost: Take) -> Conflict {
        let rule: Conflict.Rule =
            kept.updatedAt != lost.updatedAt
            ? .laterWrite : kept.modifiedTime != lost.modifiedTime ? .driveTime : .tieBreak
        return Conflict(
            field: "audio", kept: kept.md5.map(JSONValue.string) ?? .null,
            lost: lost.md5.map(JSONValue.string) ?? .null, winner: kept.here && !lost.here ? .here : .drive, rule: rule)
    }

    // MARK: helpers

    /// One merge of two sides and their base, field by field: what every entity's merge
    /// shares (which side is the later write, the three-way pick, the unknown keys), so each
    /// entity's merge states only its own rules.
    private struct ThreeWay<Backup: StampedBackup> {
        let local: Backup
        let remote: Backup
        let base: Backup?
        /// Whether the local side is the later write (on a tie: the larger field values).
        let localWins: Bool
        /// The rule that `localWins` follows: the later write, or on a tie the tie break.
        var laterRule: Conflict.Rule { local.updatedAt == remote.updatedAt ? .tieBreak : .laterWrite }
        /// The fields resolved by a rule rather than taken from one side.
        private(set) var conflicts: [Conflict] = []
        private let extrasPath: KeyPath<Backup, [String: JSONValue]>

        /// `order` lists the entity's fields as text, for the tie break between equal
        /// `updated_at`s; the unknown keys are compared after them.
        init(
            local: Backup, remote: Backup, base: Backup?, extras: KeyPath<Backup, [String: JSONValue]>,
            order: (Backup) -> [String]
        ) {
            self.local = local
            self.remote = remote
            self.base = base
            extrasPath = extras
            localWins = laterWrite(local.updatedAt, remote.updatedAt) {
                compare(
                    order(local) + [canonical(.object(local[keyPath: extras]))],
                    order(remote) + [canonical(.object(remote[keyPath: extras]))])
            }
        }

        /// Equal sides, or one side unchanged since the base: no rule needed. Otherwise the
        /// field is a conflict: `rule` decides, and says by which rule; the conflict records
        /// the value kept, the one lost and whose it was.
        mutating func pick<T: FieldValue>(
            _ name: String, _ field: KeyPath<Backup, T>, rule: (T, T) -> (T, Conflict.Rule)
        ) -> T {
            let mine = local[keyPath: field]
            let theirs = remote[keyPath: field]
            if mine == theirs { return mine }
            if let base {
                if mine == base[keyPath: field] { return theirs }
                if theirs == base[keyPath: field] { return mine }
            }
            let (value, reason) = rule(mine, theirs)
            let (lost, winner): (T?, Conflict.Winner) =
                value == mine ? (theirs, .here) : value == theirs ? (mine, .drive) : (nil, .both)
            conflicts.append(
                Conflict(field: name, kept: value.jsonValue, lost: lost?.jsonValue, winner: winner, rule: reason))
            return value
        }

        /// `pick` whose rule is the later write's value.
        mutating func pick<T: FieldValue>(_ name: String, _ field: KeyPath<Backup, T>) -> T {
            let (localWins, rule) = (localWins, laterRule)
            return pick(name, field) { (localWins ? $0 : $1, rule) }
        }

        /// Unknown keys, three-way per key; a key changed on both sides takes the later
        /// write's value (or, without a base, whichever side has it).
        var extras: [String: JSONValue] {
            let ours = local[keyPath: extrasPath]
            let their = remote[keyPath: extrasPath]
            let agreed = base?[keyPath: extrasPath]
            var result: [String: JSONValue] = [:]
            for key in Set(ours.keys).union(their.keys).sorted() {
                let mine = ours[key]
                let theirs = their[key]
                let value: JSONValue?
                if mine == theirs {
                    value = mine
                } else if let agreed, mine == agreed[key] {
                    value = theirs
                } else if let agreed, theirs == agreed[key] {
                    value = mine
                } else {
                    value = localWins ? (mine ?? theirs) : (theirs ?? mine)
                }
                if let value { result[key] = value }
            }
            return result
        }
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
        case .object(let fields):
            "{" + fields.keys.sorted().map { "\($0):" + canonical(fields[$0] ?? .null) }.joined(separator: ",") + "}"
        }
    }
}

/// A field's value as a conflict records it: as its backup JSON says it.
private protocol FieldValue: Equatable {
    var jsonValue: JSONValue { get }
}

extension String: FieldValue {
    fileprivate var jsonValue: JSONValue { .string(self) }
}

extension Double: FieldValue {
    fileprivate var jsonValue: JSONValue { .number(self) }
}

extension Bool: FieldValue {
    fileprivate var jsonValue: JSONValue { .bool(self) }
}

extension BookID: FieldValue {
    fileprivate var jsonValue: JSONValue { .string(rawValue) }
}

extension Optional: FieldValue where Wrapped: FieldValue {
    fileprivate var jsonValue: JSONValue { map(\.jsonValue) ?? .null }
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

    private static let monthNames = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ]

    /// `MMM d, yyyy`.
    package var shortText: String { "\(Self.monthNames[month - 1]) \(day), \(year)" }
}
