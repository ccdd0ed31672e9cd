import ArgumentParser
import Foundation
import IvyCore
import IvyStore
import IvySystem
import IvyZip

struct ExportCommand: ContextCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Write the library, MP3s included, as one zip: a copy that does not depend on Google.",
        discussion: """
            The archive holds each book's and clip's backup JSON exactly as a sync uploads it to Drive, each clip's \
            MP3, and ivy-export.json: the list of those files with their md5s and sizes, and the ivy that wrote it. \
            With --at, the library as it was then, from the history (each clip with the MP3 it had then). The \
            archive is read back and checked before the command ends; it is written beside FILE under another name \
            and renamed into place (mode 0600), so FILE is whole or not there. An existing FILE is replaced only \
            with --force. `ivy import FILE` loads it into an empty home; `ivy check --archive FILE` checks it. A \
            clip whose MP3 is not here is exported without it, said on standard error, and the exit status is 5.
            """)

    @OptionGroup var global: GlobalOptions
    @Option(
        parsing: .unconditional,
        help: ArgumentHelp("The library as it was then (a WHEN as `ivy restore --at` takes it).", valueName: "WHEN"))
    var at: String?
    @Flag(help: "Replace FILE if it exists.") var force = false
    @Argument(help: ArgumentHelp("The zip file to write.", valueName: "FILE")) var file: String

    func run(_ context: Context) async throws {
        let home = try global.home(context)
        var moment: Milliseconds?
        if let at {
            let value = try IvyCommands.moment(at, option: "--at", home: home, end: true)
            if value > home.clock.now() {
                throw ValidationError(
                    "--at '\(at)' is in the future (it is \(Display.time(home.clock.now(), zone: home.displayZone)) "
                        + "now): give a moment that has passed (`ivy history` shows when each change was made)")
            }
            moment = value
        }
        var directory: ObjCBool = false
        if FileManager.default.fileExists(atPath: file, isDirectory: &directory) {
            if directory.boolValue {
                throw ValidationError("\(file) is a directory; give the name of the zip to write")
            }
            if !force { throw ValidationError("\(file) exists; give another FILE, or --force to replace it") }
        }
        let library = try await home.library(readOnly: true)
        let contents = try await library.archiveContents(at: moment)
        guard contents.books + contents.clips > 0 else {
            let when = moment.map { " at \(Display.time($0, zone: home.displayZone))" } ?? ""
            home.output.error("Error: the library had no book or clip\(when): nothing to export, and no file written")
            throw ExitCode.failure
        }
        let version = context.build.versionLine(IvyVersion.current)
        let written: VerifiedArchive
        do {
            written = try await BlockingExecutor.blocking {
                try ArchiveWriter.write(
                    contents.files, books: contents.books, clips: contents.clips, newest: contents.newest,
                    ivyVersion: version, at: moment.map(Display.rfc3339), to: file, replacing: force)
            }
        } catch ZipFile.Failure.exists {
            throw ValidationError("\(file) exists; give another FILE, or --force to replace it")
        } catch ZipFile.Failure.cannotWrite(let path, let reason) {
            home.output.error(
                "Error: cannot write \(Display.safe(path)): \(reason); give a FILE in a directory that exists and that "
                    + "you can write to")
            throw ExitCode.failure
        }
        guard written.ok else {
            try? FileManager.default.removeItem(atPath: file)
            for problem in written.problems { home.output.error("  \(problem)") }
            home.output.error(
                "Error: the archive read back differs from the library (changed while it was written?); "
                    + "removed it; run the command again")
            throw ExitCode.failure
        }
        for (key, reason) in contents.unreadable {
            home.output.error("left out \(key): \(Display.safe(reason))")
        }
        for (clipID, reason) in contents.withoutAudio {
            home.output.error("exported clip \(clipID) without its MP3: \(reason)")
        }
        home.output.line(
            "Exported \(Self.count(contents.books, "book")), \(Self.count(contents.clips, "clip")) and "
                + "\(Self.count(written.mp3s, "MP3")) (\(Self.size(written.bytes))) to \(Display.safe(file))"
                + (moment.map { ", as the library was at \(Display.time($0, zone: home.displayZone))" } ?? "") + ".")
        if !contents.withoutAudio.isEmpty || !contents.unreadable.isEmpty {
            throw ExitCode(IvyExit.partialFailure)
        }
    }

    static func count(_ number: Int, _ noun: String) -> String {
        ArchiveManifest.count(number, noun)
    }

    /// Bytes as people read them: `812 KB`, `3.4 MB`.
    static func size(_ bytes: Int64) -> String {
        ByteCountFormatter.string(fromByteCount: bytes, countStyle: .file)
    }
}

struct ImportCommand: ContextCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Load an archive `ivy export` wrote into an empty home.",
        discussion: """
            The whole archive is checked first (every file it lists, with its md5 and size; every JSON as a sync \
            reads one from Drive; nothing it does not list): a damaged one is refused with what is wrong, and \
            nothing is written. Then every book and clip, and every MP3, is written in one transaction: a kill \
            leaves the home as empty as it was. Only a home with no book and no clip takes an import (give a new \
            one with --home or IVY_HOME). What is imported is a change made here: `ivy sync` sends it to Drive, \
            or finds Drive holds it already.
            """)

    @OptionGroup var global: GlobalOptions
    @Argument(help: ArgumentHelp("The zip file `ivy export` wrote.", valueName: "FILE")) var file: String

    func run(_ context: Context) async throws {
        let home = try global.home(context)
        try requireFile(file, home: home)
        // Read-only first: a refused import leaves no trace in the home, not even a library.db.
        guard try await home.library(readOnly: true).isEmptyLibrary() else { throw StoreError.notEmpty }
        let checked = try await BlockingExecutor.blocking { VerifiedArchive.read(path: file) }
        guard checked.ok else {
            for problem in checked.problems { home.output.error("  \(Display.safe(problem))") }
            home.output.error(
                "Error: \(Display.safe(file)) cannot be imported ("
                    + "\(ExportCommand.count(checked.problems.count, "problem")), above); nothing was written. "
                    + "`ivy check --archive FILE` says the same.")
            throw ExitCode.failure
        }
        // Read again, copying the MP3s out beside the audio as it goes: checked again too, so an
        // archive replaced in between is caught, and each MP3 is renamed into place, not copied.
        let library = try await home.library()
        let staging = try await BlockingExecutor.blocking { try library.importStaging() }
        defer { staging.remove() }
        var archive = try await BlockingExecutor.blocking { VerifiedArchive.read(path: file, staging: staging.path) }
        defer { archive.discardStaged() }
        // Out of space for the MP3s: said as that, for the audio, with the fix, not as an
        // archive that changed.
        if let storage = archive.storage {
            throw StorageError(path: library.paths.audioDirectory, problem: storage.problem)
        }
        guard archive.ok else {
            for problem in archive.problems { home.output.error("  \(Display.safe(problem))") }
            home.output.error("Error: \(Display.safe(file)) changed while it was read; nothing was written")
            throw ExitCode.failure
        }
        CrashPoints.reach(.importAfterCopy)
        // A sync (cron's) must not read the library half-way: wait for one that runs.
        let written = archive
        try await withSyncLock(home.waitForSyncLock()) {
            try await library.importArchive(books: written.books, clips: written.clips, audio: written.audio)
        }
        // The MP3s are in place now, under their clips' names.
        archive.audio = [:]
        home.output.line(
            "Imported \(ExportCommand.count(archive.books.count, "book")), "
                + "\(ExportCommand.count(archive.clips.count, "clip")) and \(ExportCommand.count(archive.mp3s, "MP3")) "
                + "from \(Display.safe(file)); `ivy sync` sends them to Drive.")
    }
}

/// An archive to read must be there: a mistyped name is an error (exit 1), as for an unknown id.
private func requireFile(_ file: String, home: Home) throws {
    var directory: ObjCBool = false
    guard FileManager.default.fileExists(atPath: file, isDirectory: &directory) else {
        home.output.error("Error: there is no file \(Display.safe(file)); give the archive `ivy export` wrote")
        throw ExitCode.failure
    }
    guard !directory.boolValue else {
        home.output.error("Error: \(Display.safe(file)) is a directory; give the archive `ivy export` wrote")
        throw ExitCode.failure
    }
}

/// `ivy check --archive FILE`: the archive, checked without a library or a network.
struct ArchiveCheckJSON: Encodable {
    var ok: Bool
    var file: String
    @Null var ivyVersion: String?
    @Null var at: String?
    var books: Int
    var clips: Int
    var audioFiles: Int
    var bytes: Int64
    var problems: [String]
}

extension CheckCommand {
    func checkArchive(_ file: String, home: Home) async throws {
        try requireFile(file, home: home)
        let archive = try await BlockingExecutor.blocking { VerifiedArchive.read(path: file) }
        if json {
            try home.output.json(
                ArchiveCheckJSON(
                    ok: archive.ok, file: file, ivyVersion: archive.manifest?.ivyVersion, at: archive.manifest?.at,
                    books: archive.books.count, clips: archive.clips.count, audioFiles: archive.mp3s,
                    bytes: archive.bytes,
                    problems: archive.problems))
        } else if archive.ok {
            let manifest = archive.manifest
            home.output.line(
                "Archive ok: \(ExportCommand.count(archive.books.count, "book")), "
                    + "\(ExportCommand.count(archive.clips.count, "clip")), "
                    + "\(ExportCommand.count(archive.mp3s, "MP3")), \(ExportCommand.size(archive.bytes)); "
                    + "written by \(Display.safe(manifest?.ivyVersion ?? "?"))"
                    + (manifest?.at.map { ", the library as it was at \($0)" } ?? "") + ".")
        } else {
            home.output.line(
                "Archive damaged: \(ExportCommand.count(archive.problems.count, "problem")); `ivy import` refuses it.")
            for problem in archive.problems { home.output.line("  \(Display.safe(problem))") }
        }
        if !archive.ok { throw ExitCode(IvyExit.checkDiffers) }
    }
}
