package import Foundation
package import IvyCore
import IvySystem
import ZIPFoundation

/// Zip archives through ZIPFoundation: one written whole or not at all, and one read with
/// every size it claims checked against the bytes that come out of it. Synchronous: callers
/// run it on the blocking pool.
package enum ZipFile {
    /// One entry as the archive's central directory describes it: what it claims.
    package struct Listed: Sendable, Equatable {
        package let name: String
        package let size: Int64
    }

    package enum Failure: Error, Equatable, Sendable {
        /// The file is not a zip archive, or its directory is damaged.
        case unreadable(String)
        /// An entry's content is damaged (its checksum or compressed data does not hold).
        case damaged(name: String, reason: String)
        /// An entry gives more bytes than `limit` (a size that lied, or a bomb).
        case tooLarge(name: String, limit: Int64)
        case exists(String)
        /// `path` cannot be written: `reason` is the system's word for why.
        case cannotWrite(path: String, reason: String)
    }

    /// The failure behind `errno` for `path`: a full or read-only disk said as ivy says it
    /// everywhere, anything else with the system's word.
    private static func failure(_ path: String, _ code: Int32 = errno) -> any Error {
        StorageError(path: path, errno: code)
            ?? Failure.cannotWrite(path: path, reason: String(cString: strerror(code)))
    }

    /// The directory part of `path` ("." for a bare name), without Foundation's path functions,
    /// which trap on some names on Linux.
    private static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        let directory = String(path[..<slash])
        return directory.isEmpty ? "/" : directory
    }

    private static func name(of path: String) -> String {
        path.lastIndex(of: "/").map { String(path[path.index(after: $0)...]) } ?? path
    }

    /// Writes `entries`, in that order, as the zip at `path`, every entry dated `date`. The
    /// archive is made in a private directory beside `path` and only then linked in under its
    /// name (0600): a kill leaves no partial archive there, and an existing file is not
    /// replaced unless `replacing` (then `rename` swaps it whole).
    package static func write(
        _ entries: [(name: String, source: ArchiveSource)], to path: String, date: Date, replacing: Bool
    ) throws {
        BlockingCalls.check("writing the zip \(name(of: path))")
        let parent = directory(of: path)
        removeAbandonedStaging(in: parent)
        var template = Array((parent + "/" + stagingPrefix + "XXXXXX").utf8CString)
        let made = template.withUnsafeMutableBufferPointer { buffer -> String? in
            guard let base = buffer.baseAddress, mkdtemp(base) != nil else { return nil }
            return String(cString: base)
        }
        guard let staging = made else { throw failure(parent) }
        // Held while this export runs, so another export in the same directory leaves it be
        // (`removeAbandonedStaging`); a kill lets go of it.
        let lock = open(staging, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if lock >= 0 { _ = flock(lock, LOCK_EX) }
        defer {
            try? FileManager.default.removeItem(atPath: staging)
            if lock >= 0 { close(lock) }
        }
        do {
            try write(entries, into: staging + "/archive.zip", date: date)
        } catch let error as Failure {
            throw error
        } catch {
            // ZIPFoundation's errors say nothing a person can act on (`unwritableArchive`): a
            // full or read-only disk is said as that, for the file asked for; anything else
            // with its own words.
            if let storage = StorageError(path: path, error: error) ?? StorageError.probe(path) { throw storage }
            throw Failure.cannotWrite(path: path, reason: "\(error)")
        }
        let file = staging + "/archive.zip"
        CrashPoints.reach(.exportAfterTemp)
        if replacing {
            guard rename(file, path) == 0 else { throw failure(path) }
        } else if link(file, path) != 0 {
            if errno == EEXIST { throw Failure.exists(path) }
            throw failure(path)
        }
        try flush(parent)
        CrashPoints.reach(.exportAfterPlace)
    }

    /// The hidden directory beside the archive that it is made in.
    static let stagingPrefix = ".ivy-archive-"

    /// Removes the directories of exports into `parent` that are no longer running (their
    /// lock is free): a killed export left its whole archive there, a copy of every MP3 in a
    /// directory the person chose, that nothing else would ever remove. One changed in the last
    /// minute is left alone: its export may not have taken its lock yet.
    private static func removeAbandonedStaging(in parent: String) {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: parent)) ?? []
        let minuteAgo = Date(timeIntervalSinceNow: -60)
        for name in names where name.hasPrefix(stagingPrefix) {
            let path = parent + "/" + name
            // FileManager, not lstat's st_mtim: a release build (whole-module) cannot see that
            // field through Foundation (MemberImportVisibility).
            let changed = (try? FileManager.default.attributesOfItem(atPath: path))?[.modificationDate] as? Date
            guard let changed, changed <= minuteAgo else { continue }
            let descriptor = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            guard descriptor >= 0 else { continue }
            if flock(descriptor, LOCK_EX | LOCK_NB) == 0 { try? FileManager.default.removeItem(atPath: path) }
            close(descriptor)
        }
    }

    /// Writes the zip at `file` and flushes it to disk.
    private static func write(
        _ entries: [(name: String, source: ArchiveSource)], into file: String, date: Date
    ) throws {
        let parent = directory(of: file)
        let archive = try Archive(url: URL(fileURLWithPath: file), accessMode: .create)
        for (name, source) in entries {
            switch source {
            case .data(let data):
                let provider: Provider = { (position: Int64, size: Int) throws -> Data in
                    data.subdata(in: Int(position)..<Int(position) + size)
                }
                try archive.addEntry(
                    with: name, type: Entry.EntryType.file, uncompressedSize: Int64(data.count),
                    modificationDate: date, permissions: 0o600, compressionMethod: CompressionMethod.deflate,
                    provider: provider)
            case .file(let source):
                let handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: source))
                defer { try? handle.close() }
                let size = try LocalFile.size(of: URL(fileURLWithPath: source))
                let provider: Provider = { (position: Int64, size: Int) throws -> Data in
                    try handle.seek(toOffset: UInt64(position))
                    let chunk = try handle.read(upToCount: size) ?? Data()
                    guard chunk.count == size else {
                        throw Failure.damaged(name: name, reason: "it changed as it was read")
                    }
                    return chunk
                }
                // An MP3 is compressed already: stored, it is copied, not squeezed for nothing.
                try archive.addEntry(
                    with: name, type: Entry.EntryType.file, uncompressedSize: size, modificationDate: date,
                    permissions: 0o600, compressionMethod: CompressionMethod.none, provider: provider)
            }
        }
        guard chmod(file, 0o600) == 0 else { throw failure(parent) }
        try flush(file)
    }

    private static func flush(_ path: String) throws {
        let descriptor = open(path, O_RDONLY)
        guard descriptor >= 0 else { throw failure(path) }
        defer { close(descriptor) }
        _ = fsync(descriptor)
    }

    /// An archive open for reading.
    package final class Reader {
        private let archive: Archive
        package let entries: [Listed]
        /// Each entry by name (the first of a name, as extraction would find it), so reading
        /// every file of a large archive does not walk its directory once per file.
        private let byName: [String: Entry]

        package init(path: String) throws(Failure) {
            BlockingCalls.check("reading the zip \(ZipFile.name(of: path))")
            do {
                archive = try Archive(url: URL(fileURLWithPath: path), accessMode: .read)
            } catch {
                throw .unreadable("not a zip archive, or one cut short")
            }
            let all = Array(archive)
            entries = all.map {
                Listed(name: $0.path, size: Int64($0.uncompressedSize))
            }
            byName = Dictionary(all.map { ($0.path, $0) }, uniquingKeysWith: { first, _ in first })
        }

        /// Every byte of the entry named `name`, handed to `consumer` in chunks; at most
        /// `limit` of them, whatever the archive claims.
        package func read(_ name: String, limit: Int64, consumer: (Data) throws -> Void) throws {
            guard let entry = byName[name] else {
                throw Failure.damaged(name: name, reason: "it is not in the archive")
            }
            var total: Int64 = 0
            do {
                let checksum = try archive.extract(entry, bufferSize: 1 << 16) { chunk in
                    total += Int64(chunk.count)
                    if total > limit { throw Failure.tooLarge(name: name, limit: limit) }
                    try consumer(chunk)
                }
                guard checksum == entry.checksum else {
                    throw Failure.damaged(name: name, reason: "its content is damaged (its CRC-32 does not match)")
                }
            } catch let failure as Failure {
                throw failure
            } catch let storage as StorageError {
                // The consumer's disk is full, or read-only: nothing is wrong with the archive.
                throw storage
            } catch {
                throw Failure.damaged(name: name, reason: "its content is damaged (\(error))")
            }
        }

        /// The entry's bytes, at most `limit`.
        package func data(_ name: String, limit: Int64) throws -> Data {
            var data = Data()
            try read(name, limit: limit) { data.append($0) }
            return data
        }
    }
}
