import Foundation

/// Where ivy keeps its files. With a home directory (IVY_HOME or --home) everything
/// lives in it; otherwise the XDG base directories decide.
package struct IvyPaths: Sendable, Equatable {
    package var configDirectory: String
    package var dataDirectory: String
    package var stateDirectory: String

    package var database: String { dataDirectory + "/library.db" }
    package var audioDirectory: String { dataDirectory + "/audio" }
    /// What a sync removed or overwrote here, kept for `trash_days` (the MP3s; the rest is
    /// in the library's `trash` table).
    package var trashDirectory: String { dataDirectory + "/trash" }
    /// The MP3s the history keeps, one per content: `<md5>.mp3` (the rest is in the library's
    /// `history` table).
    package var historyDirectory: String { dataDirectory + "/history" }
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
