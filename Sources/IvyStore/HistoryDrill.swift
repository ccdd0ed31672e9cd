import Foundation
import GRDB
import IvyCore
import IvySystem

/// What `ivy check --history` found: versions restored into a scratch copy of the library and
/// compared with what the history says, and every version and kept MP3 read.
package struct HistoryDrillReport: Sendable, Equatable {
    /// Versions restored and compared.
    package var restored = 0
    /// Versions read (every one), and the kept MP3s whose md5 was checked.
    package var versions = 0
    package var keptMP3s = 0
    /// What does not restore, or does not read, one line each.
    package var problems: [String] = []
}

extension LibraryDatabase {
    /// The hidden directory beside the library a drill's scratch copy lives in while it runs.
    static let drillPrefix = ".check-history-"

    /// A restore drill: every version's JSON is read and every kept MP3's md5 checked against
    /// its name; then `sample` versions picked at random, and every version of one entity, are
    /// restored one by one into a scratch copy of the library (its database backed up, its MP3s
    /// linked), and each entity compared with its version, field by field (the keys of other
    /// apps too, `updated_at` aside: a restore is a change made now) and by its MP3's md5.
    /// Nothing in the library changes; the scratch copy is removed at the end (one a kill left
    /// is removed by the next drill).
    ///
    /// `allKept` false (`ivy doctor`'s small drill) checks only the kept MP3s of the versions it
    /// restores, which the comparison does: the whole history's may be gigabytes.
    package func historyDrill(
        sample: Int, allKept: Bool = true, using random: inout some RandomNumberGenerator
    ) async throws -> HistoryDrillReport {
        var report = HistoryDrillReport()
        let versions = try await history()
        report.versions = versions.count
        var kept: Set<String> = []
        for version in versions {
            if let json = version.json, (try? Self.backupFields(json, key: version.key)) == nil {
                report.problems.append("version \(version.id) of \(version.key): its JSON does not read as a backup")
            }
            if let md5 = version.audioMD5 { kept.insert(md5) }
        }
        for md5 in kept.sorted() where allKept {
            report.keptMP3s += 1
            let path = historyAudioPath(md5: md5)
            guard FileManager.default.fileExists(atPath: path) else {
                report.problems.append("history/\(md5).mp3, which a version's restore needs, is missing")
                continue
            }
            let actual = try? await BlockingExecutor.blocking { try LocalFile.md5(of: URL(fileURLWithPath: path)) }
            if actual != md5 {
                report.problems.append("history/\(md5).mp3 has md5 \(actual ?? "unreadable"): not the MP3 it names")
            }
        }
        let chosen = Self.drillChoice(versions, sample: sample, using: &random)
        guard !chosen.isEmpty else { return report }
        let scratch = try await scratchCopy()
        defer { try? FileManager.default.removeItem(atPath: scratch.paths.dataDirectory) }
        for version in chosen {
            report.restored += 1
            do {
                try await scratch.restore(version: version.id)
            } catch {
                report.problems.append("version \(version.id) of \(version.key) does not restore: \(error)")
                continue
            }
            report.problems += try await scratch.differences(from: version, original: self)
        }
        return report
    }

    /// `sample` versions at random and every version of one entity, deletions aside (one with the most of them
    /// among a few picked at random), each once, oldest first.
    static func drillChoice(
        _ versions: [HistoryVersion], sample: Int, using random: inout some RandomNumberGenerator
    ) -> [HistoryVersion] {
        // A deletion is put back only by a whole-library restore (one entity named is left as it
        // is): the drill restores one entity at a time, so it restores the versions that hold one.
        let versions = versions.filter { !$0.deleted }
        guard !versions.isEmpty else { return [] }
        var chosen = Dictionary(
            uniqueKeysWithValues: versions.shuffled(using: &random).prefix(sample).map { ($0.id, $0) })
        let byEntity = Dictionary(grouping: versions, by: \.key)
        let candidates = byEntity.keys.sorted().shuffled(using: &random).prefix(5)
        if let key = candidates.max(by: { byEntity[$0, default: []].count < byEntity[$1, default: []].count }) {
            for version in byEntity[key, default: []] { chosen[version.id] = version }
        }
        return chosen.values.sorted { $0.id < $1.id }
    }

    /// A copy of this library to restore into, beside it: the database backed up, and the audio
    /// and the history's MP3s hard-linked (copied where a link cannot be made). ivy never writes
    /// into an MP3 in place, so the links cannot change the library's own.
    private func scratchCopy() async throws -> LibraryDatabase {
        let base = paths.dataDirectory
        Self.removeAbandonedDrills(in: base)
        let directory = base + "/" + Self.drillPrefix + UUID().uuidString
        var scratchPaths = paths
        scratchPaths.dataDirectory = directory
        scratchPaths.stateDirectory = directory
        scratchPaths.configDirectory = directory
        let source = paths
        try await BlockingExecutor.blocking { [pool] in
            try Directories.ensurePrivate(directory)
            for (from, to) in [
                (source.audioDirectory, scratchPaths.audioDirectory),
                (source.historyDirectory, scratchPaths.historyDirectory),
            ] {
                try Directories.ensurePrivate(to)
                for name in (try? FileManager.default.contentsOfDirectory(atPath: from)) ?? []
                where name.hasSuffix(".mp3") && !name.hasPrefix(".") {
                    if link(from + "/" + name, to + "/" + name) != 0 {
                        try FileManager.default.copyItem(atPath: from + "/" + name, toPath: to + "/" + name)
                    }
                }
            }
            let copy = try DatabaseQueue(path: scratchPaths.database)
            try pool.backup(to: copy)
            try copy.close()
            // Nothing of the library's own is written: a kill leaves the copy, which the next
            // drill removes once it is an hour old.
            CrashPoints.reach(.drillAfterCopy)
        }
        return try await LibraryDatabase(paths: scratchPaths, clock: clock)
    }

    /// Removes scratch copies a killed drill left (an hour old or more).
    private static func removeAbandonedDrills(in directory: String) {
        let hourAgo = Date(timeIntervalSinceNow: -3600)
        for name in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        where name.hasPrefix(drillPrefix) {
            let path = directory + "/" + name
            let changed = (try? FileManager.default.attributesOfItem(atPath: path))?[.modificationDate] as? Date
            if let changed, changed <= hourAgo { try? FileManager.default.removeItem(atPath: path) }
        }
    }

    /// What the entity of `version` here differs in from it, after restoring it: its fields
    /// (the keys of other apps too; `updated_at` aside) and its MP3's md5. `original` is the
    /// library the scratch copy was made from, whose current audio a version that never lost
    /// its MP3 names.
    private func differences(from version: HistoryVersion, original: LibraryDatabase) async throws -> [String] {
        let name = "version \(version.id) of \(version.key)"
        guard let json = version.json else {
            let present: Bool =
                switch version.key {
                case .book(let id): try await book(id: id)?.hidden == false
                case .clip(let id): try await clip(id: id) != nil
                }
            return present ? ["\(name), a deletion, restores as present"] : []
        }
        guard let expected = try? Self.backupFields(json, key: version.key) else { return [] }
        var actual: [String: JSONValue]
        switch version.key {
        case .book(let id):
            guard let book = try await book(id: id) else { return ["\(name) restores as missing"] }
            actual = try Self.backupFields(
                try BackupCodec.encode(BookBackup(book, extras: try await extras(version.key))), key: version.key)
        case .clip(let id):
            guard let clip = try await clip(id: id) else { return ["\(name) restores as missing"] }
            actual = try Self.backupFields(
                try BackupCodec.encode(ClipBackup(clip, extras: try await extras(version.key))), key: version.key)
        }
        actual["updated_at"] = nil
        var problems: [String] = []
        for field in Set(expected.keys).union(actual.keys).subtracting(["updated_at"]).sorted()
        where expected[field] != actual[field] {
            problems.append(
                "\(name): \(field) restores as \(Self.shown(actual[field])), "
                    + "the history has \(Self.shown(expected[field]))"
            )
        }
        if case .clip(let id) = version.key {
            let expectedMD5: String? =
                if let md5 = version.audioMD5 {
                    md5
                } else {
                    try? await BlockingExecutor.blocking {
                        try LocalFile.md5(of: URL(fileURLWithPath: original.audioPath(clipID: id)))
                    }
                }
            let path = audioPath(clipID: id)
            let actualMD5 = try? await BlockingExecutor.blocking { try LocalFile.md5(of: URL(fileURLWithPath: path)) }
            if let expectedMD5, actualMD5 != expectedMD5 {
                problems.append(
                    "\(name): its MP3 restores with md5 \(actualMD5 ?? "none"), the history has \(expectedMD5)")
            }
        }
        return problems
    }

    /// A backup JSON's fields, `id` checked against the entity's.
    private static func backupFields(_ json: Data, key: EntityKey) throws -> [String: JSONValue] {
        guard case .object(let object) = try JSONDecoder().decode(JSONValue.self, from: json),
            object["id"] == .string(key.id)
        else { throw UnreadableVersion() }
        return object
    }

    private struct UnreadableVersion: Error {}

    private static func shown(_ value: JSONValue?) -> String {
        guard let value else { return "absent" }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(value)).map { String(decoding: $0, as: UTF8.self) } ?? "?"
    }
}
