import Foundation

/// Where ivy keeps its files. With a home directory (IVY_HOME or --home) everything
/// lives in it; otherwise the XDG base directories decide.
package struct IvyPaths: Sendable, Equatable {
    package var configDirectory: String
    package var dataDirectory: String
    package var stateDirectory: String

    package var database: String { dataDirectory + "/library.db" }
    package var audioDirectory: String { dataDirectory + "/audio" }
    package var tokenFile: String { configDirectory + "/token.json" }
    package var lockFile: String { stateDirectory + "/ivy.lock" }
    package var logFile: String { stateDirectory + "/ivy.log" }

    package struct ResolveError: Error, Equatable, Sendable {
        package let message: String
    }

    /// - Parameters:
    ///   - home: the `--home` option, which wins over `IVY_HOME`.
    ///   - environment: the process environment.
    ///   - workingDirectory: relative paths are resolved against it.
    package static func resolve(
        home: String?, environment: [String: String], workingDirectory: String
    ) throws(ResolveError) -> IvyPaths {
        func absolute(_ path: String) -> String {
            path.hasPrefix("/") ? path : workingDirectory + "/" + path
        }
        if let chosen = home ?? environment["IVY_HOME"] {
            guard !chosen.isEmpty else {
                throw ResolveError(message: "the ivy home directory is empty; pass a directory to --home or IVY_HOME")
            }
            let directory = trimmingTrailingSlashes(absolute(chosen))
            return IvyPaths(configDirectory: directory, dataDirectory: directory, stateDirectory: directory)
        }
        // XDG says relative base directories are invalid and must be ignored.
        func base(_ variable: String, fallback: String) throws(ResolveError) -> String {
            if let value = environment[variable], value.hasPrefix("/") {
                return trimmingTrailingSlashes(value)
            }
            guard let user = environment["HOME"], user.hasPrefix("/") else {
                throw ResolveError(message: "HOME is not set; set IVY_HOME or pass --home DIR")
            }
            return trimmingTrailingSlashes(user) + "/" + fallback
        }
        return IvyPaths(
            configDirectory: try base("XDG_CONFIG_HOME", fallback: ".config") + "/ivy",
            dataDirectory: try base("XDG_DATA_HOME", fallback: ".local/share") + "/ivy",
            stateDirectory: try base("XDG_STATE_HOME", fallback: ".local/state") + "/ivy"
        )
    }

    private static func trimmingTrailingSlashes(_ path: String) -> String {
        var result = path
        while result.count > 1, result.hasSuffix("/") { result.removeLast() }
        return result
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
