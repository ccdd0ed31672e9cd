import Foundation

/// A file of ivy's copied out to a path a person named (`ivy clip audio ID FILE`): written
/// under a hidden name beside it, flushed, then put in place whole, so the path holds the whole
/// copy or what it held before. The copy is 0600 like every file ivy writes.
package enum CopyOut {
    /// The hidden name a copy has until it is in place.
    package static let temporaryPrefix = ".ivy-copy-"

    /// Why a copy out failed; the caller words it.
    package enum Failure: Error, Equatable {
        /// `path` exists and replacing was not asked for.
        case exists(path: String)
        /// `path` could not be read or written: `reason` is the system's words.
        case cannotRead(path: String, reason: String)
        case cannotWrite(path: String, reason: String)
    }

    /// Copies `source` to `path`, replacing a file there only when `replacing`. A copy a kill
    /// left beside `path` more than a minute ago is removed first: nothing else ever would.
    package static func copy(_ source: String, to path: String, replacing: Bool) throws -> Int64 {
        let parent =
            (path as NSString).deletingLastPathComponent.isEmpty
            ? "." : (path as NSString).deletingLastPathComponent
        removeAbandoned(in: parent)
        guard let input = FileHandle(forReadingAtPath: source) else {
            throw Failure.cannotRead(path: source, reason: String(cString: strerror(errno)))
        }
        defer { try? input.close() }
        let temporary = parent + "/" + temporaryPrefix + UUID().uuidString + ".tmp"
        let descriptor: Int32
        do {
            descriptor = try PrivateFile.open(temporary, .createNew)
        } catch {
            throw StorageError(path: parent, errno: error.code)
                ?? Failure.cannotWrite(path: path, reason: error.reason)
        }
        var written: Int64 = 0
        var failure: Int32?
        do {
            while failure == nil, let chunk = try input.read(upToCount: 1 << 20), !chunk.isEmpty {
                failure = PrivateFile.writeAll(chunk, to: descriptor)
                written += Int64(chunk.count)
            }
        } catch {
            close(descriptor)
            unlink(temporary)
            throw Failure.cannotRead(path: source, reason: error.localizedDescription)
        }
        if failure == nil, fsync(descriptor) != 0 { failure = errno }
        close(descriptor)
        if let failure {
            unlink(temporary)
            throw StorageError(path: parent, errno: failure)
                ?? Failure.cannotWrite(path: path, reason: String(cString: strerror(failure)))
        }
        CrashPoints.reach(.copyOutAfterTemp)
        // A link never replaces: a file that appeared meanwhile is kept, and refused.
        let placed = replacing ? rename(temporary, path) : link(temporary, path)
        let code = errno
        if !replacing || placed != 0 { unlink(temporary) }
        guard placed == 0 else {
            if code == EEXIST { throw Failure.exists(path: path) }
            throw StorageError(path: parent, errno: code)
                ?? Failure.cannotWrite(path: path, reason: String(cString: strerror(code)))
        }
        let directory = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directory >= 0 {
            fsync(directory)
            close(directory)
        }
        CrashPoints.reach(.copyOutAfterPlace)
        return written
    }

    /// Removes the hidden copies in `parent` older than a minute: ones a kill left. A younger
    /// one may be another copy's, still being written.
    private static func removeAbandoned(in parent: String) {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: parent)) ?? []
        let minuteAgo = Date(timeIntervalSinceNow: -60)
        for name in names where name.hasPrefix(temporaryPrefix) && name.hasSuffix(".tmp") {
            let path = parent + "/" + name
            let changed = (try? FileManager.default.attributesOfItem(atPath: path))?[.modificationDate] as? Date
            guard let changed, changed <= minuteAgo else { continue }
            unlink(path)
        }
    }
}
