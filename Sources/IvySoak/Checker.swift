import Foundation

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
            if let id = object["id"]?.string { state.books[id] = object }
        }
        for object in try await list(["clip", "list", "--json"]) {
            guard let id = object["id"]?.string else { continue }
            state.clips[id] = object
            state.audio[id] = FileManager.default.contents(atPath: audioPath(id))
        }
        if queue { state.queue = try await list(["queue", "--json"]) }
        return state
    }

    func list(_ arguments: [String]) async throws -> [JSON] {
        let outcome = try await run(arguments, limit: .seconds(60))
        guard outcome.status == 0, let json = outcome.json else {
            throw SoakError("ivy \(arguments.joined(separator: " ")) on \(name): \(outcome.brief)")
        }
        return json.objects
    }
}

/// The problems the checker found, by the summary's three counts.
struct Findings {
    var lost: [String] = []
    var dupes: [String] = []
    var diverged: [String] = []
    /// Extra files on Drive (a name held by three files counts two).
    var dupeCount = 0

    var clean: Bool { lost.isEmpty && dupeCount == 0 && diverged.isEmpty }
}

/// The end-of-soak checks: every device equal to Drive field by field (so equal to each
/// other), nothing created and never deleted missing anywhere, one file per name, every clip
/// whole, every queue empty, the app's unknown keys still there.
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
        return findings
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
            if let object = drive.json(fileName) {
                holders.append(("Drive", canonical(object, fields: fields)))
            } else {
                missing.append(drive.byName[fileName] == nil ? "Drive" : "Drive (unreadable JSON)")
            }
            for (name, state) in devices {
                if let object = kind == .book ? state.books[id] : state.clips[id] {
                    holders.append((name, canonical(object, fields: fields)))
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
