import ArgumentParser
import Foundation
import IvyCore
import IvyStore

@main
struct IvyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ivy",
        abstract: "Keep an audiobook library of books and clips, backed up to Google Drive.",
        discussion: """
            The library lives in a local SQLite database (library.db) with clip audio beside it. \
            Set IVY_HOME or pass --home DIR to keep everything in one directory; otherwise ivy \
            follows the XDG base directories.
            """,
        version: IvyVersion.current,
        subcommands: [BookCommand.self, ClipCommand.self, ConfigCommand.self, StatusCommand.self]
    )

    @OptionGroup var global: GlobalOptions
}

enum IvyVersion {
    static let current = "0.1.0"
}

/// Options every command accepts, before or after the command name.
struct GlobalOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("Keep every ivy file in DIR (overrides IVY_HOME).", valueName: "DIR"))
    var home: String?

    /// The effects of one run: built here, from the real process, and nowhere else.
    func context() throws -> Context {
        let environment = ProcessInfo.processInfo.environment
        let paths: IvyPaths
        do {
            paths = try IvyPaths.resolve(
                home: home, environment: environment,
                workingDirectory: FileManager.default.currentDirectoryPath)
        } catch {
            throw ValidationError(error.message)
        }
        return Context(
            paths: paths,
            clock: WallClock { Milliseconds((Date().timeIntervalSince1970 * 1000).rounded()) },
            ids: .uuid,
            output: Output(environment: environment))
    }
}

struct Context {
    let paths: IvyPaths
    let clock: WallClock
    let ids: IDGenerator
    let output: Output

    func library() throws -> LibraryDatabase {
        try LibraryDatabase(paths: paths, clock: clock)
    }
}
