import Foundation
import GoogleEmulator

/// What one device holds, read through `ivy` itself (and the audio files beside its database).
struct DeviceState {
    var books: [String: JSON] = [:]
    var clips: [String: JSON] = [:]
    var audio: [String: Data] = [:]
    var queue: [JSON] = []
}

extension Device {
    /// Its books, clips and audio, and (for the checks) its queue.
    func state(queue: Bool = true) async throws -> DeviceState {
        var state = DeviceState()
        for object in try await list(["book", "list", "--all", "--json"]) {
            if let id = object["id"]?.string { state.books[id] = Self.stored(object) }
        }
        for object in try await list(["clip", "list", "--json"]) {
            guard let id = object["id"]?.string else { continue }
            state.clips[id] = Self.stored(object)
            state.audio[id] = FileManager.default.contents(atPath: audioPath(id))
        }
        if queue { state.queue = try await list(["queue", "--json"]) }
        return state
    }

    /// A book or clip as `--json` shows it, its times as the files hold them (the stored
    /// milliseconds, which `--json` gives under `_ms` beside RFC 3339): what Drive's are compared with.
    static func stored(_ object: JSON) -> JSON {
        guard case .object(var fields) = object else { return object }
        for key in ["created_at", "updated_at"] {
            if let milliseconds = fields.removeValue(forKey: key + "_ms") { fields[key] = milliseconds }
        }
        return .object(fields)
    }

    func list(_ arguments: [String]) async throws -> [JSON] {
        let outcome = try await run(arguments, limit: .seconds(60))
        guard outcome.status == 0, let json = outcome.json else {
            throw SoakError("ivy \(arguments.joined(separator: " ")) on \(name): \(outcome.brief)")
        }
        return json.objects
    }
}

/// The problems the checker found, by the summary's four counts.
struct Findings {
    var lost: [String] = []
    var dupes: [String] = []
    var diverged: [String] = []
    /// Extra files on Drive (a name held by three files counts two).
    var dupeCount = 0
    /// Fields whose last write nothing overwrote but that some device or Drive does not hold.
    var lostEdits: [String] = []
    /// Books and clips that `ivy restore --at` did not put back as a device held them then
    /// (`RestoreCheck`).
    var restoreMismatches: [String] = []
    /// Books and clips that existed at a restore's moment and that the restore deleted.
    var restoreDeletedExisting: [String] = []
    /// The two oracles' findings (`Oracles`).
    var invented: [String] = []
    var untouchedWritten: [String] = []
    /// Versions retention had to keep and did not (`PastKept`).
    var prunedPast: [String] = []

    var all: [String] {
        lost + dupes + diverged + lostEdits + restoreMismatches + restoreDeletedExisting + invented + untouchedWritten
            + prunedPast
    }

    var clean: Bool {
        lost.isEmpty && dupeCount == 0 && diverged.isEmpty && lostEdits.isEmpty && restoreMismatches.isEmpty
            && restoreDeletedExisting.isEmpty && invented.isEmpty && untouchedWritten.isEmpty && prunedPast.isEmpty
    }
}

/// The end-of-soak checks: every device equal to Drive field by field (so equal to each
/// other), nothing created and never deleted missing anywhere, one file per name, every clip
/// whole, every queue empty, the app's unknown keys still there, and no edit lost.
enum Checker {
    static let bookFields = ["title", "artist", "artwork", "position", "hidden", "created_at", "updated_at"]
    static let clipFields = ["book_id", "start", "duration", "note", "transcription", "created_at", "updated_at"]

    static func check(devices: [(name: String, state: DeviceState)], drive: DriveView, ledger: Ledger) -> Findings {
        var findings = Findings()
        for twin in drive.folderTwins {
            findings.dupes.append("dupe: \(twin)")
            findings.dupeCount += 1
        }
        for (name, files) in drive.byName.sorted(by: { $0.key < $1.key }) where files.count > 1 {
            let times = files.map { "\($0.id) created \(millis($0.createdTime))" }.joined(separator: ", ")
            findings.dupes.append("dupe: \(files.count) files named \(name) on Drive: \(times)")
            findings.dupeCount += files.count - 1
        }
        let jsonClips = Set(drive.ids(.clip))
        let mp3Clips = Set(drive.mp3IDs)
        for id in ledger.ordered(jsonClips.subtracting(mp3Clips)) {
            findings.diverged.append("diverged: clip_\(id).json on Drive without its MP3\(origin(id, ledger))")
        }
        for id in ledger.ordered(mp3Clips.subtracting(jsonClips)) {
            findings.diverged.append("diverged: clip_\(id).mp3 on Drive without its JSON\(origin(id, ledger))")
        }
        compare(.book, fields: bookFields, devices: devices, drive: drive, ledger: ledger, into: &findings)
        compare(.clip, fields: clipFields, devices: devices, drive: drive, ledger: ledger, into: &findings)
        for (id, value) in ledger.appKeys.sorted(by: { $0.key < $1.key }) {
            let kind = ledger.entries[id]?.kind ?? .book
            guard let object = drive.json("\(kind.rawValue)_\(id).json") else { continue }
            if object["app_color"] != .string(value) {
                findings.lost.append(
                    "lost: the app's app_color=\(value) on \(kind.rawValue) \(id) is gone from Drive "
                        + "(now \(object["app_color"]?.text ?? "missing"))")
            }
        }
        for (name, state) in devices {
            for item in state.queue {
                let failed = item["failed"]?.bool == true ? "failed" : "pending"
                findings.diverged.append(
                    "diverged: \(name) still queues \(item["entity_type"]?.string ?? "?") "
                        + "\(item["entity_id"]?.string ?? "?") \(item["operation"]?.string ?? "?") (\(failed), "
                        + "attempts \(item["attempts"]?.text ?? "?"), last error: \(item["last_error"]?.text ?? "-"))")
            }
        }
        findings.lostEdits = lostEdits(devices: devices, drive: drive, ledger: ledger)
        return findings
    }

    /// Every field's last write must be what every device and Drive hold at the end, unless
    /// a merge rule may rightly have chosen another value. A merge applies a rule to a field
    /// only when both sides changed it, so the last write W of a field is exact unless some
    /// earlier write of that field was concurrent with it: one W's writer had not seen when
    /// it wrote (by the ledger's model, which errs towards concurrent), or one of its own that
    /// a failed or killed sync may have left on Drive unrecorded. Then the later write by
    /// `updated_at` wins (the app's clock is skewed, and any later write of another field moves
    /// `updated_at`), the furthest position, hidden, a present transcription; W is not
    /// checked, except a note, which a merge keeps whole beside the other side's: the final note
    /// must contain W's (or a rival's, when the app only carried W's note along: `Ledger.demand`).
    /// Not checked either: deleted clips, audio (the checker compares it), and writes of an
    /// entity made before a clean sync of the device that created it, when a
    /// failed or killed sync before that may have left it on Drive without a base to merge by.
    static func lostEdits(devices: [(name: String, state: DeviceState)], drive: DriveView, ledger: Ledger) -> [String] {
        var lines: [String] = []
        let groups = Dictionary(grouping: ledger.writes) { "\($0.entity) \($0.field)" }
        let ordered = groups.values.compactMap { $0.max { $0.sequence < $1.sequence } }
            .sorted { ($0.sequence, $0.field) < ($1.sequence, $1.field) }
        for last in ordered where !ledger.deleted.contains(last.entity) {
            guard let demand = ledger.demand(last, among: groups["\(last.entity) \(last.field)"] ?? []) else {
                continue
            }
            var holders: [(String, JSON?)] = [
                ("Drive", drive.json("\(last.kind.rawValue)_\(last.entity).json").map { field($0, last.field) })
            ]
            for (name, state) in devices {
                let object = last.kind == .book ? state.books[last.entity] : state.clips[last.entity]
                holders.append((name, object.map { field($0, last.field) }))
            }
            // A missing entity is the existence check's finding, not a lost edit.
            let wrong = holders.contains { _, value in value.map { !demand.accepts($0) } ?? false }
            guard wrong else { continue }
            let expected = demand.description
            let how = last.creation ? "created with it" : last.carried ? "wrote it back" : "wrote it"
            let held = holders.map { "\($0.0)=\($0.1?.text ?? "missing")" }.joined(separator: " ")
            let line =
                "lost edit: \(last.kind.rawValue) \(ledger.tag(last.entity)) \(last.field) \(expected): "
                + "\(last.writer) \(how) in round \(last.round); now \(held)"
            lines.append(line.replacingOccurrences(of: "\n", with: "\\n"))
        }
        return lines
    }

    /// One field as the checker compares it: a missing `hidden` is false, a missing optional null.
    private static func field(_ object: JSON, _ name: String) -> JSON {
        object[name] ?? (name == "hidden" ? .bool(false) : .null)
    }

    private static func compare(
        _ kind: Ledger.Kind, fields: [String], devices: [(name: String, state: DeviceState)], drive: DriveView,
        ledger: Ledger, into findings: inout Findings
    ) {
        var ids = Set(drive.ids(kind))
        for (_, state) in devices { ids.formUnion(kind == .book ? state.books.keys : state.clips.keys) }
        let mustExist = Set(ledger.mustExist)
        for id in ledger.ordered(ids.union(mustExist.filter { ledger.entries[$0]?.kind == kind })) {
            let fileName = "\(kind.rawValue)_\(id).json"
            var holders: [(String, [String: String])] = []
            var missing: [String] = []
            let received = drive.newest(fileName).map { millis($0.modifiedTime) }
            if let object = drive.json(fileName) {
                holders.append(("Drive", canonical(bounded(object, received: received), fields: fields)))
            } else {
                missing.append(drive.byName[fileName] == nil ? "Drive" : "Drive (unreadable JSON)")
            }
            for (name, state) in devices {
                if let object = kind == .book ? state.books[id] : state.clips[id] {
                    holders.append((name, canonical(bounded(object, received: received), fields: fields)))
                } else {
                    missing.append(name)
                }
            }
            let label = "\(kind.rawValue) \(id)\(origin(id, ledger))"
            if !missing.isEmpty, mustExist.contains(id) {
                findings.lost.append("lost: \(label) is missing on \(missing.joined(separator: ", "))")
                continue
            }
            if !missing.isEmpty {
                let present = holders.map(\.0).joined(separator: ", ")
                findings.diverged.append(
                    "diverged: \(label) (deleted) is gone from \(missing.joined(separator: ", ")) but on \(present)")
                continue
            }
            let differing = fields.filter { field in Set(holders.map { $0.1[field] ?? "" }).count > 1 }
            var problems = differing.map { field in
                "\(field): " + holders.map { "\($0.0)=\($0.1[field] ?? "")" }.joined(separator: " ")
            }
            if kind == .clip { problems += audioProblems(id, devices: devices, drive: drive) }
            if !problems.isEmpty {
                findings.diverged.append("diverged: \(label): " + problems.joined(separator: "; "))
            }
        }
    }

    /// `object` with its times as every device reads them from Drive (ivy's
    /// `StampedBackup.bounded`): one more than a minute after Google received the file
    /// (`received`, its `modifiedTime`) was written by a clock ahead, and is taken as that time.
    /// The writer keeps its own time, and Drive the file's; every other device holds the bound,
    /// so they are compared by it.
    static func bounded(_ object: JSON, received: Int64?) -> JSON {
        guard let received, case .object(var fields) = object else { return object }
        let limit = received + 60_000
        let updated = fields["updated_at"]?.number.map { Int64($0) } ?? 0
        let created = fields["created_at"]?.number.map { Int64($0) } ?? 0
        guard updated > limit || created > limit else { return object }
        let newUpdated = updated > limit ? received : updated
        fields["updated_at"] = .number(Double(newUpdated))
        if created > limit { fields["created_at"] = .number(Double(min(received, newUpdated))) }
        return .object(fields)
    }

    /// Every device's audio bytes must equal the MP3 on Drive.
    private static func audioProblems(
        _ id: String, devices: [(name: String, state: DeviceState)], drive: DriveView
    ) -> [String] {
        let remote = drive.newest("clip_\(id).mp3")?.content
        var sizes: [String] = ["Drive=\(remote.map { "\($0.count) B" } ?? "none")"]
        var same = true
        for (name, state) in devices {
            let local = state.audio[id]
            sizes.append("\(name)=\(local.map { "\($0.count) B" } ?? "none")")
            if local == nil || local != remote { same = false }
        }
        return same ? [] : ["audio differs: " + sizes.joined(separator: " ")]
    }

    /// The fields compared, as text; a missing `hidden` is false, a missing optional is null.
    static func canonical(_ object: JSON, fields: [String]) -> [String: String] {
        var result: [String: String] = [:]
        for field in fields {
            let value = object[field] ?? (field == "hidden" ? .bool(false) : .null)
            result[field] = value.text
        }
        return result
    }

    private static func origin(_ id: String, _ ledger: Ledger) -> String {
        ledger.entries[id].map { " (#\($0.sequence), created \($0.origin))" } ?? ""
    }

    private static func millis(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1000).rounded()) }
}
