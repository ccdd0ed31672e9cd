import Foundation
import GoogleEmulator

/// Two oracles from the file-synchroniser literature, checked at every recorded moment and
/// at the end (`invented=` and `untouched_written=` on the summary line).
///
/// - Nothing invented: every value of a synced field any device holds was written to that
///   entity by someone (the CLI on a device, or the app), as the ledger records it; a note
///   may also be notes written to it joined by ivy's merge (`--- Conflict (…) ---` between
///   them); every clip's audio is an MP3 someone gave that clip; every entity is one someone
///   made. `updated_at` and `created_at` are the writers' clocks' business and not checked.
/// - Untouched is never written: once Drive and a device are known (by the ledger's model,
///   which only learns from clean syncs that ran alone) to hold every change anyone made to
///   an entity, and until someone changes it again, that device records no new history
///   version of it (a download, a merge, a restore all record one), and its files on Drive
///   keep their ids, `modifiedTime`s and sizes (no upload, no replace). A merge that
///   writes a fresh `updated_at` is a write of an entity someone changed, so not counted.
struct Oracles {
    var invented: [String] = []
    var untouchedWritten: [String] = []
    private var reported: Set<String> = []
    /// Per device: the newest version number of each entity at the last look, which
    /// entities were settled there then, and the ledger's order of events then.
    private var versions: [String: [String: Int]] = [:]
    private var settled: [String: Set<String>] = [:]
    private var lookedAt: [String: Int] = [:]
    /// Drive at the last look: per file name, its files as `id@modifiedTime#size`.
    private var driveFiles: [String: String]?
    private var driveSettled: Set<String> = []
    private var driveLookedAt = 0

    /// Looks at `device`'s history (`ivy history --json`): a new version of an entity that
    /// was settled there at the last look and that nobody changed since is a violation.
    mutating func observe(_ device: String, versions list: [JSON], ledger: Ledger, label: String) {
        var newest: [String: (number: Int, version: JSON)] = [:]
        for version in list {
            guard let id = version["entity_id"]?.string, let number = version["version"]?.number.map(Int.init) else {
                continue
            }
            if number > newest[id]?.number ?? -1 { newest[id] = (number, version) }
        }
        if let previous = versions[device] {
            let since = lookedAt[device] ?? 0
            for id in ledger.ordered(newest.keys) {
                guard let entry = newest[id], entry.number > previous[id] ?? -1,
                    settled[device]?.contains(id) == true, ledger.lastChange(id) ?? 0 <= since
                else { continue }
                let (number, version) = entry
                let changed = version["changed"]?.objects.compactMap(\.string).joined(separator: ",") ?? "?"
                let kind = version["entity_type"]?.string ?? "?"
                let source = version["source"]?.string ?? "?"
                if fresh("\(device) \(id) \(number)") {
                    untouchedWritten.append(
                        "untouched written: \(device) recorded version \(number) of \(kind) \(ledger.tag(id)) "
                            + "(source \(source), changed \(changed)) by \(label), "
                            + "though it and Drive held every change of it and nobody changed it since")
                }
            }
        }
        versions[device] = newest.mapValues(\.number)
        settled[device] = Set(ledger.entries.keys.filter { ledger.settled($0, on: device) })
        lookedAt[device] = ledger.now
    }

    /// Looks at the entities' files on Drive: a file of an entity Drive held every change of
    /// at the last look, that nobody changed since, must be the same file.
    mutating func observeDrive(_ drive: DriveView, ledger: Ledger, label: String) {
        var files: [String: String] = [:]
        for (name, list) in drive.byName where name.hasPrefix("book_") || name.hasPrefix("clip_") {
            files[name] = list.map { "\($0.id)@\($0.modifiedTime.timeIntervalSince1970)#\($0.content.count)" }
                .sorted().joined(separator: ",")
        }
        if let previous = driveFiles {
            for (name, now) in files.sorted(by: { $0.key < $1.key }) {
                guard let then = previous[name], then != now else { continue }
                let id = String(name.dropFirst(5).split(separator: ".").first ?? "")
                guard driveSettled.contains(id), ledger.lastChange(id) ?? 0 <= driveLookedAt else { continue }
                if fresh("Drive \(name) \(now)") {
                    untouchedWritten.append(
                        "untouched written: \(name) on Drive changed by \(label) (\(then) -> \(now)), "
                            + "though Drive held every change of \(ledger.tag(id)) and nobody changed it since")
                }
            }
        }
        driveFiles = files
        driveSettled = Set(ledger.entries.keys.filter { ledger.settled($0, on: nil) })
        driveLookedAt = ledger.now
    }

    /// Every value the devices hold was written by someone.
    mutating func lookForInvented(_ states: [(name: String, state: DeviceState)], ledger: Ledger, label: String) {
        for (device, state) in states {
            for (kind, objects) in [(Ledger.Kind.book, state.books), (.clip, state.clips)] {
                for id in ledger.ordered(objects.keys) {
                    guard let object = objects[id] else { continue }
                    guard ledger.entries[id] != nil else {
                        if fresh("\(id)") {
                            invented.append("invented: \(device) holds \(kind.rawValue) \(id), which no one made")
                        }
                        continue
                    }
                    for field in Ledger.fields(kind) {
                        let value = object[field] ?? (field == "hidden" ? .bool(false) : .null)
                        let written = ledger.writtenValues(id, field)
                        guard !written.contains(value.text), !Self.merged(value, of: written) else { continue }
                        if fresh("\(id) \(field) \(value.text)") {
                            let line =
                                "invented: \(device) holds \(kind.rawValue) \(ledger.tag(id)) \(field)=\(value.text) "
                                + "(\(label)), which no one wrote to it"
                            invented.append(line.replacingOccurrences(of: "\n", with: "\\n"))
                        }
                    }
                    if kind == .clip, let audio = state.audio[id], ledger.audioWritten[id]?.contains(audio) != true {
                        if fresh("\(id) audio \(audio.count)") {
                            invented.append(
                                "invented: \(device) holds audio of clip \(ledger.tag(id)) "
                                    + "(\(audio.count) B, \(label)) that no one gave it")
                        }
                    }
                }
            }
        }
    }

    /// A note made by ivy's merge of written notes: `mine`, a blank line, the conflict
    /// marker line, `theirs` (repeatedly).
    static func merged(_ value: JSON, of written: Set<String>) -> Bool {
        guard case .string(let note) = value else { return false }
        let pieces = note.components(separatedBy: "\n\n--- Conflict (")
        guard pieces.count > 1 else { return false }
        var parts = [pieces[0]]
        for piece in pieces.dropFirst() {
            guard let end = piece.range(of: ") ---\n") else { return false }
            parts.append(String(piece[end.upperBound...]))
        }
        return parts.allSatisfy { written.contains(JSON.string($0).text) }
    }

    /// Each problem once, however many looks find it.
    private mutating func fresh(_ key: String) -> Bool { reported.insert(key).inserted }
}
