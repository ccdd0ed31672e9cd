import Foundation

/// A directory ivy keeps private files in (the library, the sign-in, the lock, the log):
/// created with mode 0700; an existing one must belong to the user and be writable by no one
/// else, or another user could replace the files in it.
package enum PrivateDirectory {
    /// Creates `path` (and missing parents) with mode 0700 for the directory itself; an
    /// existing one must pass `check`.
    package static func ensure(_ path: String) throws {
        let manager = FileManager.default
        var isDirectory: ObjCBool = false
        if manager.fileExists(atPath: path, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else {
                throw PrivateDirectoryError(path: path, reason: "a file of that name exists")
            }
            return try check(path)
        }
        let parent = (path as NSString).deletingLastPathComponent
        if !parent.isEmpty, !manager.fileExists(atPath: parent) {
            do {
                try manager.createDirectory(atPath: parent, withIntermediateDirectories: true)
            } catch {
                if let storage = StorageError(path: parent, error: error) { throw storage }
                throw PrivateDirectoryError(path: path, reason: error.localizedDescription)
            }
        }
        if mkdir(path, 0o700) != 0, errno != EEXIST {
            let code = errno
            if let storage = StorageError(path: path, errno: code) { throw storage }
            throw PrivateDirectoryError(path: path, reason: String(cString: strerror(code)))
        }
        // mkdir applies the umask; the mode must be exactly 0700.
        _ = chmod(path, 0o700)
    }

    /// Refuses an existing directory that another user owns or others can write to.
    /// A missing one passes: it is created private when something is first written.
    package static func check(_ path: String) throws(UnsafeDirectoryError) {
        var info = stat()
        guard stat(path, &info) == 0 else { return }
        if let problem = UnsafeDirectoryError.check(
            path: path, mode: UInt32(info.st_mode), owner: UInt32(info.st_uid), user: UInt32(geteuid()))
        {
            throw problem
        }
    }
}

/// A private directory that could not be created; the store words it for its own users.
package struct PrivateDirectoryError: LocalizedError, Equatable, Sendable {
    package let path: String
    package let reason: String

    package var errorDescription: String? {
        "cannot create \(path): \(reason); check the permissions of its parent directory"
    }
}

/// Why ivy refuses a directory it keeps files in: the library (with the OAuth client secret
/// in its settings), the sign-in, the lock and the log must not be replaceable by anyone else.
package struct UnsafeDirectoryError: LocalizedError, Equatable, Sendable, CustomStringConvertible {
    package let path: String
    /// The directory's permission bits.
    package let mode: UInt32
    package let owner: UInt32
    /// The user ivy runs as.
    package let user: UInt32

    /// The refusal for a directory with this owner and mode, or nil when ivy may use it:
    /// it must belong to the user and be writable by no one else (0700 or 0755 are fine).
    package static func check(path: String, mode: UInt32, owner: UInt32, user: UInt32) -> UnsafeDirectoryError? {
        let error = UnsafeDirectoryError(path: path, mode: mode & 0o7777, owner: owner, user: user)
        return owner != user || mode & 0o022 != 0 ? error : nil
    }

    package var description: String {
        if owner != user {
            return "ivy will not use \(path): it belongs to another user (uid \(owner), you are uid \(user)); "
                + "use a directory of your own with --home or IVY_HOME, or make it yours "
                + "(`chown $(id -u) \(path)`) and run `chmod 700 \(path)`"
        }
        let who = mode & 0o002 != 0 ? "every user" : "its group"
        return "ivy will not use \(path): \(who) can write to it (mode \(String(mode, radix: 8))), so its files "
            + "could be replaced; run `chmod 700 \(path)`"
    }

    package var errorDescription: String? { description }
}
