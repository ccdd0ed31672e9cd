package import Foundation

/// Files only the user may read: every one is opened with mode 0600, never through a
/// symbolic link (one planted at the path would make ivy write whatever file it points to),
/// and closed on exec.
package enum PrivateFile {
    /// How an open treats what is already at the path.
    package enum Opening: Sendable {
        /// Read and write, creating the file when missing; its content is kept.
        case readWrite
        /// Append, creating the file when missing.
        case append
        /// Write from the start, creating the file or emptying an existing one.
        case truncate
        /// Create a new file; an existing one (or a link) is refused with `EEXIST`.
        case createNew

        var flags: Int32 {
            switch self {
            case .readWrite: O_RDWR | O_CREAT
            case .append: O_WRONLY | O_CREAT | O_APPEND
            case .truncate: O_WRONLY | O_CREAT | O_TRUNC
            case .createNew: O_WRONLY | O_CREAT | O_EXCL
            }
        }
    }

    /// Opens `path` as `opening` says and returns the descriptor. An existing file keeps its
    /// old mode through `O_CREAT`, so it is set to 0600 again.
    package static func open(_ path: String, _ opening: Opening) throws(PrivateFileError) -> Int32 {
        let descriptor = Glibc.open(path, opening.flags | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw PrivateFileError(path: path, errno: errno) }
        fchmod(descriptor, 0o600)
        return descriptor
    }

    /// Replaces `path` atomically: a new file named `temporaryPrefix` + a UUID beside it,
    /// created 0600, written, synced, then renamed over. A crash leaves the old file or the
    /// new one, never a part; the temporary file is removed when anything fails. `crash` names
    /// the points reached once the temporary file is flushed and once it is renamed.
    package static func write(
        _ data: Data, atomicallyTo path: String, temporaryPrefix: String,
        crash: (written: CrashPoint, renamed: CrashPoint)? = nil
    ) throws(PrivateFileError) {
        let directory = (path as NSString).deletingLastPathComponent
        let temporary = directory + "/\(temporaryPrefix)\(UUID().uuidString).tmp"
        let descriptor: Int32
        do {
            descriptor = try open(temporary, .createNew)
        } catch {
            // Said of the file being replaced: the temporary name means nothing to a reader.
            throw PrivateFileError(path: path, errno: error.code)
        }
        let failure = writeAll(data, to: descriptor) ?? (fsync(descriptor) == 0 ? nil : errno)
        close(descriptor)
        if let failure {
            unlink(temporary)
            throw PrivateFileError(path: path, errno: failure)
        }
        if let crash { CrashPoints.reach(crash.written) }
        guard rename(temporary, path) == 0 else {
            let error = PrivateFileError(path: path, errno: errno)
            unlink(temporary)
            throw error
        }
        if let crash { CrashPoints.reach(crash.renamed) }
    }

    /// Writes all of `data`, through short writes; the errno that stopped it, or nil.
    package static func writeAll(_ data: Data, to descriptor: Int32) -> Int32? {
        data.withUnsafeBytes { buffer -> Int32? in
            var offset = 0
            while offset < buffer.count {
                let written = Glibc.write(descriptor, buffer.baseAddress?.advanced(by: offset), buffer.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    return errno
                }
                offset += written
            }
            return nil
        }
    }
}

/// A private file (the lock, the log, a temporary file) ivy cannot use, with the fix.
package struct PrivateFileError: LocalizedError, Equatable, Sendable {
    package let path: String
    /// The `errno` of the failed call; 0 when the failure was not a system call's.
    package let code: Int32
    package let reason: String

    package init(path: String, reason: String) {
        self.path = path
        self.code = 0
        self.reason = reason
    }

    package init(path: String, errno code: Int32) {
        self.path = path
        self.code = code
        reason =
            code == ELOOP
            ? "it is a symbolic link, which ivy does not follow; remove it (`rm \(path)`) and run ivy again"
            : String(cString: strerror(code))
    }

    /// A full or read-only file system is said as that (`StorageError`).
    package var errorDescription: String? {
        StorageError(path: path, errno: code)?.errorDescription ?? "cannot use \(path): \(reason)"
    }
}
