import Foundation

/// A directory ivy keeps private files in (the library, the sign-in, the lock, the log):
/// created with mode 0700; an existing one must belong to the user and be writable by no one
/// else, or another user could replace the files in it.
package enum PrivateDirectory {
    /// Creates `path` (and missing parents) with mode 0700 for the directory itself. Whether
    /// it exists or not, it must pass `problem(of:)` first: a refusal creates nothing, not
    /// even the parents.
    package static func ensure(_ path: String) throws {
        let manager = FileManager.default
        var isDirectory: ObjCBool = false
        if manager.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue {
            throw PrivateDirectoryError(path: path, reason: "a file of that name exists")
        }
        try check(path)
        if isDirectory.boolValue { return }
        try createParents(of: path)
        if mkdir(path, 0o700) != 0, errno != EEXIST {
            let code = errno
            if let storage = StorageError(path: path, errno: code) { throw storage }
            throw PrivateDirectoryError(path: path, reason: String(cString: strerror(code)))
        }
        // mkdir applies the umask; the mode must be exactly 0700.
        _ = chmod(path, 0o700)
    }

    /// Refuses what `problem(of:)` finds.
    package static func check(_ path: String) throws(UnsafeDirectoryError) {
        if let problem = problem(of: path) { throw problem }
    }

    /// The one rule for a directory ivy keeps files in, whether it exists yet or not: why ivy
    /// refuses it, or nil. An existing one must belong to the user and be writable by no one
    /// else; and no directory above it may let another user swap it for one of theirs
    /// (`ancestorProblem`). A missing one is judged by the directories above it, so a command
    /// is refused before it creates anything or asks anything of the network.
    package static func problem(of path: String) -> UnsafeDirectoryError? {
        var info = stat()
        if stat(path, &info) == 0,
            let problem = UnsafeDirectoryError.check(
                path: path, mode: UInt32(info.st_mode), owner: UInt32(info.st_uid), user: UInt32(geteuid()))
        {
            return problem
        }
        return ancestorProblem(of: path)
    }

    /// `problem(of:)` for each of `directories` (each once), one refusal per directory at
    /// fault: a `~/.local` others can write to refuses the data and the state directory, and is
    /// named once, for the first. What every command, `ivy doctor` and `ivy status` go by.
    package static func refusals(of directories: [String]) -> [UnsafeDirectoryError] {
        var seen: Set<String> = []
        var found: [UnsafeDirectoryError] = []
        for directory in directories where seen.insert(directory).inserted {
            guard let problem = problem(of: directory), !found.contains(where: { $0.path == problem.path }) else {
                continue
            }
            found.append(problem)
        }
        return found
    }

    /// The first directory above `path` through which another user could swap `path` for a
    /// symlink of theirs: one they own, or one they may write to (other users, or a group that
    /// is not the user's own) without the sticky bit that keeps them from renaming another's
    /// entries (as /tmp has). Nil when every one is safe.
    package static func ancestorProblem(of path: String) -> UnsafeDirectoryError? {
        var ancestor = (path as NSString).deletingLastPathComponent
        while !ancestor.isEmpty {
            var info = stat()
            if stat(ancestor, &info) == 0 {
                if let problem = UnsafeDirectoryError.ancestor(
                    path: ancestor, of: path, mode: UInt32(info.st_mode), owner: UInt32(info.st_uid),
                    group: UInt32(info.st_gid), user: UInt32(geteuid()), userGroup: UInt32(getegid()))
                {
                    return problem
                }
                // A directory that does not let the user in: everything below it is out of
                // reach, which is the true reason (not "cannot create" what may well exist).
                if access(ancestor, X_OK) != 0 {
                    return UnsafeDirectoryError(
                        path: ancestor, mode: UInt32(info.st_mode) & 0o7777, owner: UInt32(info.st_uid),
                        user: UInt32(geteuid()), reaches: path, closed: true)
                }
            }
            if ancestor == "/" { break }
            ancestor = (ancestor as NSString).deletingLastPathComponent
        }
        return nil
    }

    /// Creates the missing directories above `path` with mode 0755, whatever the umask (which
    /// can only take bits away): under `umask 000` they were made 0777, and anyone could then
    /// rename ivy's directory in them.
    private static func createParents(of path: String) throws {
        var missing: [String] = []
        var parent = (path as NSString).deletingLastPathComponent
        while !parent.isEmpty, parent != "/", !FileManager.default.fileExists(atPath: parent) {
            missing.append(parent)
            parent = (parent as NSString).deletingLastPathComponent
        }
        for directory in missing.reversed() where mkdir(directory, 0o755) != 0 && errno != EEXIST {
            let code = errno
            if let storage = StorageError(path: directory, errno: code) { throw storage }
            throw PrivateDirectoryError(path: path, reason: String(cString: strerror(code)))
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
    /// The directory ivy keeps files in, when `path` is a directory above it that makes it unsafe.
    package var reaches: String?
    /// True when `path`, a directory above `reaches`, does not let the user in at all.
    package var closed = false

    /// The refusal for `path`, a directory above `directory`, when another user could rename
    /// `directory` out of it: nil when it is the user's or root's, and no one else may write to
    /// it (others, or a group other than the user's own) or its sticky bit forbids renaming
    /// another's entries.
    package static func ancestor(
        path: String, of directory: String, mode: UInt32, owner: UInt32, group: UInt32, user: UInt32,
        userGroup: UInt32
    ) -> UnsafeDirectoryError? {
        let sticky = mode & 0o1000 != 0
        let othersWrite = mode & 0o002 != 0 || (mode & 0o020 != 0 && group != userGroup)
        guard (owner != user && owner != 0) || (othersWrite && !sticky) else { return nil }
        return UnsafeDirectoryError(path: path, mode: mode & 0o7777, owner: owner, user: user, reaches: directory)
    }

    /// The refusal for a directory with this owner and mode, or nil when ivy may use it:
    /// it must belong to the user and be writable by no one else (0700 or 0755 are fine).
    package static func check(path: String, mode: UInt32, owner: UInt32, user: UInt32) -> UnsafeDirectoryError? {
        let error = UnsafeDirectoryError(path: path, mode: mode & 0o7777, owner: owner, user: user)
        return owner != user || mode & 0o022 != 0 ? error : nil
    }

    package var description: String {
        if let reaches, closed {
            return "ivy cannot reach \(reaches): it is inside \(path), which does not let you in (mode "
                + "\(String(mode, radix: 8)), owner uid \(owner), you are uid \(user)); use a home of your own with "
                + "--home or IVY_HOME"
        }
        if let reaches {
            let foreign = owner != user && owner != 0
            let who = foreign ? "it belongs to another user (uid \(owner))" : "others can write to it"
            return "ivy will not use \(reaches): it is inside \(path), and \(who) (mode "
                + "\(String(mode, radix: 8))), so another user could put their own directory in its place; "
                + (foreign ? "use a home of your own with --home or IVY_HOME" : "run `chmod go-w \(path)`")
        }
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
