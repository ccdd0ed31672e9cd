import Foundation

/// The temporary files transfers leave beside ivy's audio: `.download-*` (a download being
/// checked before it is renamed into place), `.upload-*` (the tail of a resumed upload) and
/// `.incoming-*` (an MP3 a command copies in, `clip add --audio` or a restore, before it is
/// renamed into place). The Drive client and the store write them, the store removes what a
/// killed run left behind.
package enum TransferFiles {
    package static let downloadPrefix = ".download-"
    package static let uploadPrefix = ".upload-"
    package static let incomingPrefix = ".incoming-"
    /// The directory beside the audio that holds the imports' directories (`ImportStaging`).
    package static let importsName = ".importing"

    /// A fresh hidden name in `directory` for an MP3 on its way in (a copy, or one read out of
    /// an archive), swept by `removeLeftovers` if it is never renamed into place.
    package static func incomingPath(in directory: String) -> String {
        directory + "/" + incomingPrefix + "\(UUID().uuidString.lowercased()).mp3"
    }

    /// Removes what a killed run left in `directory`. Called under the sync lock, so no other
    /// transfer is using a `.download-` or `.upload-` file; an `.incoming-` one belongs to a
    /// command that takes no sync lock (`clip add`), so it goes only once its inode changed
    /// (it was made, or linked, there) at or before `incomingBefore` (seconds since the
    /// epoch): a command copying one in now keeps it. Returns how many were removed.
    @discardableResult
    package static func removeLeftovers(in directory: String, incomingBefore: Int64 = .min) -> Int {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        var removed = 0
        for name in names {
            let path = directory + "/" + name
            if name.hasPrefix(incomingPrefix) {
                var info = stat()
                guard lstat(path, &info) == 0, Int64(info.st_ctim.tv_sec) <= incomingBefore else { continue }
            } else if !name.hasPrefix(downloadPrefix) && !name.hasPrefix(uploadPrefix) {
                continue
            }
            if unlink(path) == 0 { removed += 1 }
        }
        return removed
    }
}

/// A private directory an `ivy import` copies an archive's MP3s into, inside
/// `TransferFiles.importsName` beside the audio (so each is renamed into place, not copied
/// again), held with `flock` while the import runs. A killed import's lock goes with it, so
/// whoever opens the library next removes the directory (`removeAbandoned`) rather than
/// leaving up to 50 MB per MP3 for a sync an hour later; a running import's is left alone.
package final class ImportStaging: Sendable {
    package let path: String
    /// The imports directory it is in.
    private let parent: String
    private let descriptor: Int32

    private init(path: String, parent: String, descriptor: Int32) {
        self.path = path
        self.parent = parent
        self.descriptor = descriptor
    }

    /// A new held directory in `audioDirectory`'s imports directory (both made private).
    package static func make(in audioDirectory: String) throws -> ImportStaging {
        let parent = audioDirectory + "/" + TransferFiles.importsName
        // A sweep that took the lock of a directory between its making and its locking has
        // removed it (a removed directory has no links), and one that found the imports
        // directory empty may have removed that: both are made again.
        for _ in 0..<3 {
            try PrivateDirectory.ensure(parent)
            var template = Array((parent + "/XXXXXX").utf8CString)
            let made = template.withUnsafeMutableBufferPointer { buffer -> String? in
                guard let base = buffer.baseAddress, mkdtemp(base) != nil else { return nil }
                return String(cString: base)
            }
            guard let path = made else {
                if errno == ENOENT { continue }
                throw Self.failure(parent)
            }
            let descriptor = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            guard descriptor >= 0 else {
                if errno == ENOENT { continue }
                throw Self.failure(path)
            }
            var info = stat()
            if flock(descriptor, LOCK_EX | LOCK_NB) == 0, fstat(descriptor, &info) == 0, info.st_nlink > 0 {
                return ImportStaging(path: path, parent: parent, descriptor: descriptor)
            }
            close(descriptor)
        }
        throw PrivateDirectoryError(
            path: parent, reason: "another ivy removed the import's directory as it was made; run the command again")
    }

    private static func failure(_ path: String) -> any Error {
        let code = errno
        return StorageError(path: path, errno: code) ?? POSIXError(POSIXErrorCode(rawValue: code) ?? .EIO)
    }

    /// Removes the directory and what is left in it, and lets go of it; the imports directory
    /// too when no other import is using it.
    package func remove() {
        try? FileManager.default.removeItem(atPath: path)
        close(descriptor)
        rmdir(parent)
    }

    /// Removes the directories of imports that are no longer running (their lock is free), and
    /// the imports directory when that empties it. Quick when there is none: one failed open.
    package static func removeAbandoned(in audioDirectory: String) {
        let parent = audioDirectory + "/" + TransferFiles.importsName
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: parent) else { return }
        for name in names {
            let path = parent + "/" + name
            let descriptor = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            guard descriptor >= 0 else {
                // Not a directory: nothing an import made, but nothing to keep either.
                unlink(path)
                continue
            }
            if flock(descriptor, LOCK_EX | LOCK_NB) == 0 { try? FileManager.default.removeItem(atPath: path) }
            close(descriptor)
        }
        rmdir(parent)
    }
}
