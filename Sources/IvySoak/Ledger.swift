import Foundation

/// What the soak knows to have happened, independent of ivy: every entity created, by whom
/// and when, the clips deleted, the unknown keys the phone app put on Drive, and every field
/// written, with what its writer had seen (below, `deviceWrote` and on).
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
    /// When each entity was made (ms): the times its maker's clock can have written as its
    /// `created_at` (Google's give or take, or a clock of its own, ahead), and the real time of
    /// the making (a command runs for a while). A restore may go by either (`RestoreCheck`).
    private(set) var madeAt: [String: (stamps: ClosedRange<Int64>, real: ClosedRange<Int64>)] = [:]
    /// Every MP3 each clip was given, by the CLI or the app.
    private(set) var audioWritten: [String: Set<Data>] = [:]
    /// Entities on which the app wrote `app_color`; it must stay on Drive for good.
    private(set) var appKeys: [String: String] = [:]
    /// Every field written, in the order written.
    private(set) var writes: [FieldEdit] = []
    /// Per "entity field", every value written to it, as text.
    fileprivate var written: [String: Set<String>] = [:]
    fileprivate var clock = 0
    fileprivate var deviceKnows: [String: Knowledge] = [:]
    fileprivate var driveKnows: Knowledge = [:]
    /// Per entity, per writer, its last write.
    fileprivate var latest: Knowledge = [:]
    /// Creations on a device that no clean sync of it has settled yet; `risky` once one of
    /// its syncs failed or was killed.
    fileprivate var unsettled: [String: (device: String, sequence: Int, risky: Bool)] = [:]
    /// Risky creations and the sequence of the sync that settled them.
    fileprivate var settled: [String: Int] = [:]
    /// Per device, where its latest clean sync, and its latest failed or killed one, started.
    fileprivate var lastClean: [String: Int] = [:]
    fileprivate var lastUnclean: [String: Int] = [:]

    mutating func created(
        _ id: String, _ kind: Kind, origin: String, at stamp: Int64, real: Int64 = Device.realNow()
    ) {
        created(id, kind, origin: origin, stamps: stamp...stamp, real: real...real)
    }

    mutating func created(
        _ id: String, _ kind: Kind, origin: String, stamps: ClosedRange<Int64>, real: ClosedRange<Int64>
    ) {
        guard entries[id] == nil else { return }
        entries[id] = Entry(kind: kind, sequence: entries.count, origin: origin)
        madeAt[id] = (stamps, real)
    }

    mutating func wroteAudio(_ id: String, _ audio: Data) { audioWritten[id, default: []].insert(audio) }

    /// A clip deleted through the CLI on `device`: a change of it, as far as who has seen
    /// what goes (every other device and Drive have yet to hear of it).
    mutating func deletedClip(_ id: String, by device: String) {
        deleted.insert(id)
        let sequence = tick()
        deviceKnows[device, default: [:]][id, default: [:]][device] = sequence
        latest[id, default: [:]][device] = sequence
    }

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

/// One write of one field, for the lost-edit check: its value, who wrote it and what that
/// writer had seen of the entity's other writes when it did.
struct FieldEdit: Sendable {
    var entity: String
    var kind: Ledger.Kind
    var field: String
    var value: JSON
    /// A device's name, or `app`.
    var writer: String
    var round: Int
    /// The soak's order of events (writes and sync ends), one counter for the whole run.
    var sequence: Int
    /// Per writer, the last of its writes of this entity that this writer had seen.
    var known: [String: Int]
    /// A value the entity was created with. Whoever writes the entity later holds it, so
    /// has seen these; they never compete with a later write.
    var creation = false
    /// A field the app wrote back as it read it, not one it meant to change (see `appWrote`).
    var carried = false
    /// The writer's own earlier writes in this range may have reached Drive unrecorded (see
    /// `deviceWrote`): to the next merge they look like another device's.
    var ownInDoubt: Range<Int>?
}

/// What the end state must hold for one field: its last write's value, or a note containing
/// one of these texts.
enum FieldDemand: Equatable, Sendable {
    case value(JSON)
    case containing([String])

    func accepts(_ value: JSON) -> Bool {
        switch self {
        case .value(let expected): value.text == expected.text
        case .containing(let texts): texts.contains { (value.string ?? "").contains($0) }
        }
    }

    /// As the checker's line shows it: `= "x"`, `containing "x"` or `containing "x" or "y"`.
    var description: String {
        switch self {
        case .value(let expected): "= \(expected.text)"
        case .containing(let texts): "containing " + texts.map { JSON.string($0).text }.joined(separator: " or ")
        }
    }
}

/// What each writer has seen: per entity, per writer, the last write of theirs it holds.
typealias Knowledge = [String: [String: Int]]

/// A sync under way: what its device and Drive were known to hold when it started.
struct SyncMark: Sendable {
    var device: String
    var sequence: Int
    var drive: Knowledge
    var local: Knowledge
}

extension Knowledge {
    /// Everything either side has seen.
    func union(_ other: Knowledge) -> Knowledge {
        merging(other) { mine, theirs in mine.merging(theirs, uniquingKeysWith: Swift.max) }
    }
}

/// The writes side of the ledger: every field written, and a model of who has seen what,
/// so that the checker can tell an edit that must survive from one a merge rule may set aside.
///
/// The model only ever learns what is certain, so it can only err towards seeing two writes
/// as concurrent (and checking less), never towards expecting a value a merge legitimately
/// replaced. A device holds its own writes at once. A sync teaches its device what Drive was
/// known to hold when it started, and Drive what the device held then, only when it exited
/// 0 without a kill and ran alone: an overlapped sync may have met a file in the middle of
/// another writer's delete-then-create, and a failed or killed one did an unknown part of its
/// work. The app knows what Drive is known to hold when it reads it; Drive knows the app's
/// write once its new file is there.
extension Ledger {
    /// Tracked fields (timestamps are the writers' business, audio is compared by the checker).
    static func fields(_ kind: Kind) -> [String] {
        kind == .book
            ? ["title", "artist", "artwork", "position", "hidden"]
            : ["book_id", "start", "duration", "note", "transcription"]
    }

    /// A write through the CLI on a device: in its library at once. Its own earlier writes
    /// are behind it, unless a sync that failed or was killed may have uploaded them without
    /// recording it (and no clean sync came after): the next merge then finds them on Drive
    /// as a change it did not make, a conflict with this write (two notes both kept, the
    /// furthest position, hidden winning).
    mutating func deviceWrote(
        _ device: String, _ id: String, _ kind: Kind, fields: [String: JSON], round: Int, creation: Bool = false
    ) {
        let sequence = tick()
        let known = deviceKnows[device]?[id] ?? [:]
        let clean = lastClean[device] ?? 0
        let unclean = lastUnclean[device] ?? 0
        let doubt = unclean > clean ? clean..<unclean : nil
        for (field, value) in fields.sorted(by: { $0.key < $1.key }) {
            record(
                FieldEdit(
                    entity: id, kind: kind, field: field, value: value, writer: device, round: round,
                    sequence: sequence, known: known, creation: creation, ownInDoubt: doubt))
        }
        deviceKnows[device, default: [:]][id, default: [:]][device] = sequence
        latest[id, default: [:]][device] = sequence
        if creation { unsettled[id] = (device, sequence, false) }
    }

    /// A write by the app, once its new file is on Drive: `object` is the whole JSON it wrote,
    /// `changed` the fields it meant to change. When Drive might not have shown it the
    /// entity's latest state (a write of it not known to be on Drive yet, or two files of the
    /// name), the fields it merely carried along are writes too: they may put back an older
    /// value, and a later merge may rightly take them.
    mutating func appWrote(
        _ id: String, _ kind: Kind, object: [String: JSON], changed: [String], round: Int, creation: Bool = false,
        twins: Bool = false
    ) {
        let sequence = tick()
        let known = driveKnows[id] ?? [:]
        let complete = !twins && (latest[id] ?? [:]).allSatisfy { known[$0.key] ?? -1 >= $0.value }
        for field in Self.fields(kind) {
            let meant = creation || changed.contains(field)
            guard meant || !complete else { continue }
            let value = object[field] ?? (field == "hidden" ? .bool(false) : .null)
            record(
                FieldEdit(
                    entity: id, kind: kind, field: field, value: value, writer: "app", round: round,
                    sequence: sequence, known: known, creation: creation, carried: !meant))
        }
        driveKnows[id, default: [:]]["app"] = sequence
        latest[id, default: [:]]["app"] = sequence
    }

    /// A sync of `device` starts. What it can learn from Drive leaves out the entities another
    /// device's failed or killed sync may have left half replaced (deleted, not yet created
    /// again): a sync that finds one missing may rightly leave it alone for now.
    mutating func syncStarting(_ device: String) -> SyncMark {
        var drive = driveKnows
        for (other, unclean) in lastUnclean where other != device && unclean > lastClean[other] ?? 0 {
            let clean = lastClean[other] ?? 0
            for write in writes where write.writer == other && write.sequence > clean && write.sequence < unclean {
                drive[write.entity] = nil
            }
        }
        return SyncMark(device: device, sequence: tick(), drive: drive, local: deviceKnows[device] ?? [:])
    }

    /// A sync ended: `clean` when it exited 0 and was not killed, `alone` when nothing else
    /// wrote to Drive while it ran. `leftAlone` are the entities its report says it skipped or
    /// held: even a clean sync carried nothing of those either way (a book whose file another
    /// device's killed replace left missing waits out the grace, its change here unsent).
    mutating func syncEnded(_ mark: SyncMark, clean: Bool, alone: Bool, leftAlone: Set<String> = []) {
        let sequence = tick()
        if clean {
            lastClean[mark.device] = max(lastClean[mark.device] ?? 0, mark.sequence)
        } else {
            lastUnclean[mark.device] = max(lastUnclean[mark.device] ?? 0, mark.sequence)
        }
        if clean, alone {
            deviceKnows[mark.device] = (deviceKnows[mark.device] ?? [:])
                .union(mark.drive.filter { !leftAlone.contains($0.key) })
            driveKnows = driveKnows.union(mark.local.filter { !leftAlone.contains($0.key) })
        }
        // A creation is settled by the first clean sync of its device: from then on every
        // merge of it has a base. A sync before that which failed or was killed may have put
        // it on Drive without recording it, and the next sync then merges it without a base,
        // by the rules alone (the later write, the furthest position): writes of the entity
        // made until it settles are not checked exactly.
        for (id, creation) in unsettled where creation.device == mark.device && creation.sequence < mark.sequence {
            if clean {
                if creation.risky { settled[id] = sequence }
                unsettled[id] = nil
            } else {
                unsettled[id]?.risky = true
            }
        }
    }

    /// What the end state must hold for the field `last` wrote, `group` being every write of
    /// that field of that entity; nil when a merge rule may rightly have chosen another value
    /// (see `Checker.lostEdits`). Rivals are the earlier writes `last`'s writer had not seen
    /// (or its own, when a failed or killed sync may have left them on Drive unrecorded).
    ///
    /// A note whose last write has rivals is kept whole beside theirs, so the final note must
    /// contain it; but a note the app merely carried along is no change of the note: a merge
    /// against a base that holds it rightly takes the rival's alone (seed 135: c's new note
    /// over the app's r9 one that the app wrote back with its audio). Then the final note must
    /// contain one of them.
    func demand(_ last: FieldEdit, among group: [FieldEdit]) -> FieldDemand? {
        if let until = unsettledUntil(last.entity), last.sequence < until { return nil }
        let rivals = group.filter { write in
            guard !write.creation, write.sequence < last.sequence else { return false }
            if write.writer == last.writer { return last.ownInDoubt?.contains(write.sequence) ?? false }
            return (last.known[write.writer] ?? -1) < write.sequence
        }
        if rivals.isEmpty { return .value(last.value) }
        guard last.field == "note", case .string(let text) = last.value else { return nil }
        guard last.carried else { return .containing([text]) }
        var texts = [text]
        for rival in rivals {
            // A rival that cleared the note may rightly leave none.
            guard case .string(let other) = rival.value else { return nil }
            texts.append(other)
        }
        return .containing(texts)
    }

    /// The sequence before which writes of `id` may have met a merge without a base.
    func unsettledUntil(_ id: String) -> Int? {
        if let sequence = settled[id] { return sequence }
        if unsettled[id]?.risky == true { return Int.max }
        return nil
    }

    /// Keeps one write, and its value among the entity's field's values.
    private mutating func record(_ write: FieldEdit) {
        writes.append(write)
        written["\(write.entity) \(write.field)", default: []].insert(write.value.text)
    }

    /// The order of the latest event so far (writes and sync ends).
    var now: Int { clock }

    /// The sequence of the latest change of `id` by anyone (a write or a deletion), if any.
    func lastChange(_ id: String) -> Int? { latest[id]?.values.max() }

    /// Whether Drive and `device` are known to hold every change anyone made to `id`: then
    /// nothing about it is left to carry either way, and until someone changes it again no
    /// sync may upload, download or record a version of it (the untouched-written oracle).
    /// With no device: whether Drive is known to hold every change.
    func settled(_ id: String, on device: String?) -> Bool {
        guard let changes = latest[id] else { return false }
        let drive = driveKnows[id] ?? [:]
        let local = device.map { deviceKnows[$0]?[id] ?? [:] } ?? drive
        return changes.allSatisfy { writer, sequence in
            (drive[writer] ?? -1) >= sequence && (local[writer] ?? -1) >= sequence
        }
    }

    /// Every value written to `field` of `id`, by anyone (the nothing-invented oracle).
    func writtenValues(_ id: String, _ field: String) -> Set<String> {
        written["\(id) \(field)"] ?? []
    }

    private mutating func tick() -> Int {
        clock += 1
        return clock
    }
}
