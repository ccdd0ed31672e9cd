import ArgumentParser
import Foundation
import IvyCore
import IvyGoogle
import IvyStore
import IvySync
import IvySystem
import Logging

extension IvyExit {
    /// `ivy check`: the backup on Drive differs from this library, or changes are held back.
    static let checkDiffers: Int32 = 6
}

struct CheckCommand: ContextCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Check that Drive holds this library's backup, changing nothing on Drive.",
        discussion: """
            Lists Drive in full (not the mirror of Drive kept here) and checks that every book and clip here has its \
            files on Drive with the content this library last synced or would upload, that every clip's MP3 has the \
            md5 of the audio here, that no two files share a name, and what is on Drive only. Changes still in the \
            queue are listed as pending: like changes held back after failing, they are not on Drive yet. Without \
            --read-data the JSON files are compared by Drive's md5; with it each is downloaded and compared field by \
            field. It also checks that every MP3 kept in the history has the md5 its name says, and removes one \
            that does not (no restore may use it): the one thing it changes. With --history it is a restore drill \
            instead, offline: every version's JSON is read and every MP3 the history keeps checked against its md5, \
            then N versions picked at random (--versions, 10 by default) and every version of one book or clip are \
            restored into a scratch copy of the library beside it and compared with what the history says, field by \
            field and by their MP3's md5; the library itself is not changed. A second file of a JSON's \
            name that a sync read and could not use is listed as unreadable_json: syncs leave it alone (not read \
            again while unchanged, never deleted); delete it in Drive to be rid of it. Exit 0 when everything \
            matches, 6 when something differs or is not on Drive yet.
            """)

    @OptionGroup var global: GlobalOptions
    @Flag(help: "Download every backup JSON and compare it field by field (slower: one request per file).")
    var readData = false
    @Flag(help: "Print the result as one JSON object.") var json = false
    @Option(
        help: ArgumentHelp(
            """
            Check an archive `ivy export` wrote instead (every file it lists, by md5 and size, and every JSON), \
            offline: no sign-in, no library.
            """, valueName: "FILE"))
    var archive: String?
    @Flag(help: "A restore drill: restore recorded versions into a scratch copy and compare them (offline).")
    var history = false
    @Option(help: ArgumentHelp("With --history: how many versions to restore at random (10).", valueName: "N"))
    var versions: Int?

    func validate() throws {
        if archive != nil, readData {
            throw ValidationError("--read-data checks Drive; an --archive is read whole anyway: give one of them")
        }
        if history, archive != nil || readData {
            throw ValidationError(
                "--history checks this library's history, offline: give it without --archive or --read-data")
        }
        if let versions {
            guard history else { throw ValidationError("--versions is for --history: give both") }
            guard (0...10_000).contains(versions) else {
                throw ValidationError("--versions \(versions) is out of range: give 0 to 10000")
            }
        }
    }

    func run(_ context: Context) async throws {
        let home = try global.home(context)
        if let archive { return try await checkArchive(archive, home: home) }
        if history { return try await drill(home) }
        let library = try await home.library(readOnly: true)
        // A sync running meanwhile would make the check read a moving target, and a token
        // refresh rewrites token.json, which only the holder of the sync lock may do: the
        // check opens the way a sync does. A read-only home takes no lock (no sync can run
        // there, and the check writes nothing).
        let tokens = home.tokenStore
        let quiet = Logger(label: "ivy.check", factory: { _ in SwiftLogNoOpLogHandler() })
        let door = home.syncDoor(library, tokens: tokens, logger: quiet)
        let session: DoorSession<BackupCheck>
        do {
            session = try await door.open(readOnly: true) { drive, _ in
                try await BackupChecker(library: library, drive: drive).run(readData: readData)
            }
        } catch let error as GoogleError {
            switch error {
            case .signedOut, .notSignedIn:
                home.output.error("Error: \(error.localizedDescription)")
                throw ExitCode(IvyExit.notSignedIn)
            default: throw error
            }
        }
        switch session {
        case .ran(let check):
            try show(check, output: home.output)
            if !check.ok { throw ExitCode(IvyExit.checkDiffers) }
        case .busy(let pid):
            home.output.error(
                "Error: another sync is running\(pid.map { " (process \($0))" } ?? ""); wait for it to finish")
            throw ExitCode(IvyExit.busy)
        case .notSignedIn(let signIn):
            home.output.error(
                "Error: \(SignInText.problem(signIn, zone: home.displayZone) ?? "not signed in"); run `ivy login`")
            throw ExitCode(IvyExit.notSignedIn)
        }
    }

    /// `ivy check --history`: the restore drill, under the sync lock (a sync meanwhile would
    /// prune or add versions while they are restored).
    private func drill(_ home: Home) async throws {
        let library = try await home.library()
        var random = SystemRandomNumberGenerator()
        let report = try await withSyncLock(home.waitForSyncLock()) {
            try await library.historyDrill(sample: versions ?? 10, using: &random)
        }
        let ok = report.problems.isEmpty
        if json {
            try home.output.json(
                HistoryDrillJSON(
                    ok: ok, restored: report.restored, versions: report.versions, keptAudio: report.keptMP3s,
                    problems: report.problems))
        } else {
            home.output.line(
                "History drill: \(report.restored) version\(report.restored == 1 ? "" : "s") restored "
                    + "into a scratch copy "
                    + "and compared; \(report.versions) version\(report.versions == 1 ? "" : "s") and "
                    + "\(report.keptMP3s) kept MP3\(report.keptMP3s == 1 ? "" : "s") read: "
                    + (ok
                        ? "all as the history says"
                        : "\(report.problems.count) problem\(report.problems.count == 1 ? "" : "s")"))
            for problem in report.problems { home.output.line(Display.safe("problem: " + problem)) }
        }
        if !ok { throw ExitCode(IvyExit.checkDiffers) }
    }

    /// `ivy check --history --json` (`JSONOutput`).
    struct HistoryDrillJSON: Encodable {
        let ok: Bool
        let restored: Int
        let versions: Int
        /// The MP3s the history keeps, each checked against its md5.
        let keptAudio: Int
        let problems: [String]
    }

    private func show(_ check: BackupCheck, output: Output) throws {
        if json { return try output.json(check.jsonForm) }
        output.line(Display.safe(check.summary))
        for problem in check.problems {
            let line = "\(problem.kind.rawValue): \(problem.entity): \(problem.detail) — \(problem.fix)"
            output.line(Display.safe(line))
        }
        for item in check.failed {
            output.line(
                Display.safe(
                    "held back: \(item.entity) (\(item.operation), \(item.attempts) attempts): "
                        + "\(item.lastError ?? "no error was recorded") — fix the cause, then `ivy retry-failed`"))
        }
        for item in check.pending {
            let action = item.operation == "delete" ? "deletes it on Drive" : "uploads it"
            output.line(Display.safe("pending: \(item.entity) (\(item.operation)) — the next `ivy sync` \(action)"))
        }
    }
}
