import ArgumentParser
import Foundation
import IvyCore
import IvyStore
import IvySystem

/// Parses a `WHEN` (`History.moment`) with a local time in `TZ`'s zone, or says what is
/// accepted. A local time the clocks skipped or passed twice there is refused, the second
/// with both moments it can be.
func moment(_ text: String, option: String, home: Home, end: Bool = false) throws -> Milliseconds {
    let tz = home.environment["TZ"]
    let zone = Result { try home.localZone(tz) }
    let now = home.clock.now()
    let parsed = Result { () throws(MomentError) -> Milliseconds in
        try History.moment(text, now: now, zone: try? zone.get(), end: end)
    }
    let problem: MomentError
    switch parsed {
    case .success(let value): return value
    case .failure(let error): problem = error
    }
    let name = (try? zone.get())?.name ?? tz ?? "this time zone"
    switch problem {
    case .malformed:
        throw ValidationError("invalid \(option) '\(text)': give \(History.momentForms)")
    case .noZone:
        let why = zone.failure.map { ($0 as? any LocalizedError)?.errorDescription ?? $0.localizedDescription }
        throw ValidationError("\(option) '\(text)' is a local time, and " + (why ?? "no time zone reads it"))
    case .skipped(let wall):
        throw ValidationError(
            "\(option) '\(text)': \(LocalTime.text(wall: wall)) never happened in \(name) (the clocks were put "
                + "forward over it); give a time outside that gap, or one with its offset (2026-03-29 03:30 +02:00)")
    case .ambiguous(let wall, let first, let second):
        throw ValidationError(
            "\(option) '\(text)': \(LocalTime.text(wall: wall)) happened twice in \(name) (the clocks were put "
                + "back over it): give \(first.shown) for the first (\(first.utc)) or \(second.shown) for the "
                + "second (\(second.utc))")
    }
}

/// How a local WHEN is read, for `--help`.
private let localWhen = """
    A local WHEN is read in the time zone TZ names, in any form the C library takes (Europe/Berlin, \
    :Europe/Berlin, a zone file, a POSIX rule such as CET-1CEST,M3.5.0,M10.5.0/3); a TZ that names no zone is \
    refused, as is a local time the clocks skipped or passed twice (the autumn hour: both moments are shown).
    """

extension Result {
    /// The error, when it failed.
    fileprivate var failure: Failure? {
        if case .failure(let error) = self { error } else { nil }
    }
}

/// What an id, or its first 4 or more characters, names: a book or a clip of this library or
/// its history (`IDPrefix.entity`); `book:` or `clip:` before it names the kind too.
func entityKey(_ text: String, in library: LibraryDatabase) async throws -> EntityKey {
    let (kind, id) = IDPrefix.kindPrefixed(text)
    guard EntityID.isValid(id) else {
        throw ValidationError(
            "'\(text)' is not a book or clip id: ids are lowercase UUIDs such as 3f2a9c1e-…, or their first "
                + "\(IDPrefix.shortest) or more characters, with book: or clip: before it to say which kind; "
                + "`ivy history` shows them")
    }
    return try await IDPrefix.entity(id, kind: kind, in: library)
}

struct HistoryCommand: ContextCommand {
    static let configuration = CommandConfiguration(
        commandName: "history",
        abstract: "Show the versions of a book or clip, or the library's changes in a period.",
        discussion: """
            Every change to a book or clip is kept as a version, whoever made it: ivy's commands (source here), \
            a sync applying Drive's changes or a merge (drive), a restore (restore), or another program writing \
            library.db (here). A new MP3 is a version too, even with no field changed (a sync downloading one \
            that another program replaced alone on Drive included); an MP3 replaced or deleted is kept by its md5 \
            in history/, and one whose content is not that md5 is never restored. Newest first is the order the \
            changes were written, whatever the clock said. Times are Google's, carried by this machine's boot \
            clock from Google's last answer; a version dated by this machine's own clock (ivy had not reached \
            Google since it started) is marked * (--json: "clock": "device"). A WHEN is a point in the order of \
            changes: the last version recorded at or before it. Versions are kept staggered, counted back from the \
            newest version not in the future: all of the last hour, one an hour for a day, one a day for 30 days, \
            one a week up to history_days (default 365; 0 turns history off); nothing is pruned on a clock not \
            checked against Google's. WHEN is \(History.momentForms). \(localWhen)

            --conflicts lists, newest first, each field that a sync's merge settled by a rule because both sides \
            had changed it: the value kept, whose it was (here, drive, or both for joined notes), the value not \
            kept, and the rule (later_write, tie_break, furthest_position, hidden_wins, notes_joined, \
            note_holds_other, non_empty_note, transcription_present, drive_time). A clip's audio is shown by the \
            md5s of both takes: the one kept, and the one not kept with LOST VERSION, the version that keeps it \
            (`ivy restore --version N` puts back that take with the fields its device had then, and with \
            --audio-only the take alone); that includes two takes found on Drive at once (rule later_write by the \
            clip's updated_at, or drive_time when its JSON does not tell), whose lost take is kept as the version \
            its device had: the JSON it made with that MP3, exactly as Drive held it. Several JSON files of one \
            name on Drive are merged the same way, and each rule that merge applies is listed too (won by drive, \
            or both for joined notes). The newest 1,000 are kept. `ivy status` counts those recorded since \
            --conflicts last ran.
            """)

    @OptionGroup var global: GlobalOptions
    @Argument(
        help: ArgumentHelp(
            "A book or clip id, or its first 4 or more characters (book:ID or clip:ID when a book and a clip share "
                + "it): its versions, newest first. Without one: every change, newest first."))
    var id: String?
    // Unconditional: `--since -2h` is a value, not an unknown option.
    @Option(parsing: .unconditional, help: ArgumentHelp("Only versions recorded at or after WHEN.", valueName: "WHEN"))
    var since: String?
    @Option(parsing: .unconditional, help: ArgumentHelp("Only versions recorded at or before WHEN.", valueName: "WHEN"))
    var until: String?
    @Flag(help: "List the conflicts merges settled (the value kept and the one not), not the versions.")
    var conflicts = false
    @Flag(help: "Print one JSON array.") var json = false

    /// One version as `ivy history --json` prints it (`JSONOutput`).
    struct Item: Encodable {
        let version: Int64
        let time: String
        let entityType: String
        let entityID: String
        let source: String
        /// `google` when `time` is Google's, `device` when this device's own clock gave it.
        let clock: String
        let deleted: Bool
        let changed: [String]
        @Null var entity: JSONValue?
        @Null var audioMD5: String?

        init(_ version: HistoryVersion) {
            self.version = version.id
            time = Display.rfc3339(version.recordedAt)
            entityType = version.key.kind.rawValue
            entityID = version.key.id
            source = version.source.rawValue
            clock = version.sureClock ? "google" : "device"
            deleted = version.deleted
            changed = version.changed
            entity = version.object.map(JSONValue.object)
            audioMD5 = version.audioMD5
        }
    }

    /// One conflict as `ivy history --conflicts --json` prints it (`JSONOutput`).
    struct ConflictItem: Encodable {
        let id: Int64
        let time: String
        let entityType: String
        let entityID: String
        let field: String
        let kept: JSONValue
        let lost: JSONValue
        let winner: String
        let rule: String
        @Null var version: Int64?
        @Null var lostVersion: Int64?

        init(_ conflict: ConflictRecord) {
            id = conflict.id
            time = Display.rfc3339(conflict.recordedAt)
            entityType = conflict.key.kind.rawValue
            entityID = conflict.key.id
            field = conflict.field
            kept = conflict.kept
            lost = conflict.lost ?? .null
            winner = conflict.winner
            rule = conflict.rule
            version = conflict.version
            lostVersion = conflict.lostVersion
        }
    }

    func run(_ context: Context) async throws {
        let home = try global.home(context)
        let since = try since.map { try moment($0, option: "--since", home: home) }
        let until = try until.map { try moment($0, option: "--until", home: home, end: true) }
        if let start = since, let end = until, start > end {
            throw ValidationError(
                "--since '\(self.since ?? "")' is after --until '\(self.until ?? "")': no change can be in that "
                    + "period; give --since the earlier moment")
        }
        if conflicts { return try await showConflicts(home: home, since: since, until: until) }
        let library = try await home.library(readOnly: true)
        var key: EntityKey?
        if let id { key = try await entityKey(id, in: library) }
        let versions = try await library.history(of: key, since: since, until: until)
        if json { return try home.output.json(versions.map(Item.init)) }
        guard !versions.isEmpty else {
            return home.output.line(key.map { "No versions of \($0) kept." } ?? "No changes in that period.")
        }
        let zone = home.displayZone
        if key != nil {
            home.output.table(
                ["TIME", "VERSION", "SOURCE", "CHANGE"],
                versions.map {
                    [Display.time($0.recordedAt, zone: zone), String($0.id), Self.source($0), Self.change($0)]
                })
        } else {
            home.output.table(
                ["TIME", "VERSION", "SOURCE", "KIND", "ID", "CHANGE"],
                versions.map {
                    [
                        Display.time($0.recordedAt, zone: zone), String($0.id), Self.source($0),
                        $0.key.kind.rawValue, $0.key.id, Self.change($0),
                    ]
                })
        }
        if versions.contains(where: { !$0.sureClock }) { home.output.line(Self.unsureNote) }
    }

    /// Who wrote a version, marked when its time is this device's own clock's.
    static func source(_ version: HistoryVersion) -> String {
        version.source.rawValue + (version.sureClock ? "" : "*")
    }

    /// Under a table with a version `source` marked: why its time may be wrong.
    static let unsureNote = "* dated by this machine's own clock, not checked against Google's"

    /// The conflicts, newest first; looking at them marks them seen for `ivy status`, where the
    /// library can be written (a read-only one is listed all the same, and stays counted).
    private func showConflicts(home: Home, since: Milliseconds?, until: Milliseconds?) async throws {
        let library = try await home.library(readOnly: true)
        var key: EntityKey?
        if let id { key = try await entityKey(id, in: library) }
        let found = try await library.conflicts(of: key, since: since, until: until)
        try list(found, of: key, home: home)
        // Marked seen once shown, not before: marking first, a run killed before the table left
        // conflicts nobody saw counted as seen by `ivy status`.
        try? await home.library().markConflictsSeen(found.map(\.id))
    }

    private func list(_ found: [ConflictRecord], of key: EntityKey?, home: Home) throws {
        if json { return try home.output.json(found.map(ConflictItem.init)) }
        guard !found.isEmpty else {
            return home.output.line(key.map { "No conflicts of \($0) recorded." } ?? "No conflicts recorded.")
        }
        let shown = IDPrefix.shown(found.map(\.key.id), full: false)
        let zone = home.displayZone
        home.output.table(
            ["TIME", "KIND", "ID", "FIELD", "KEPT", "WON", "LOST", "LOST VERSION", "RULE"],
            found.map {
                // A take's md5 is shown whole: it is what names the MP3 kept.
                let limit = $0.field == "audio" ? 34 : 30
                return [
                    Display.time($0.recordedAt, zone: zone), $0.key.kind.rawValue, shown($0.key.id), $0.field,
                    Display.cell(Self.value($0.kept), limit: limit), $0.winner,
                    Display.cell($0.lost.map(Self.value), limit: limit), $0.lostVersion.map { String($0) } ?? "-",
                    $0.rule,
                ]
            })
    }

    /// `deleted`, or the fields changed with their new values (`position=120 title="Dune"`),
    /// after `created` for a first version. A book's `hidden` is said as everywhere else a
    /// person reads it: `archived=yes`.
    static func change(_ version: HistoryVersion) -> String {
        guard let object = version.object else { return version.deleted ? "deleted" : "unreadable" }
        let shown = version.changed.filter { $0 != "created_at" && $0 != "id" }.map { field in
            switch field {
            case "audio": "new audio"
            case "hidden" where version.key.kind == .book: "archived=\(object[field] == .bool(true) ? "yes" : "no")"
            default: "\(field)=\(value(object[field] ?? .null))"
            }
        }
        let created = version.changed.contains("id") ? ["created"] : []
        let text = (created + shown).joined(separator: " ")
        return text.isEmpty ? "no field changed" : Display.cell(text, limit: 100)
    }

    private static func value(_ value: JSONValue) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(value)).map { String(decoding: $0, as: UTF8.self) } ?? "?"
    }
}

struct RestoreCommand: ContextCommand {
    static let configuration = CommandConfiguration(
        commandName: "restore",
        abstract: "Put the library, or some books and clips, back to how they were at a moment.",
        discussion: """
            Fields, existence and clip audio go back to the version each book or clip had at WHEN \
            (\(History.momentForms)), as a change made now: it is queued, with an updated_at later than what it \
            replaces, so the next sync carries it to every device. WHEN is a point in the order of changes: \
            everything written up to the last version recorded at or before it existed then, even when a clock \
            that ran ahead dated it later (the restore warns when a version is dated after now). A whole-library \
            restore also deletes the books (archived, as book delete does, their uri kept) and clips made after \
            WHEN, on evidence only: made here after that point, or brought from Drive with a created_at after \
            WHEN that Google's clock bounds. What this device knew nothing of at WHEN (it joined later, or was \
            offline), and what only an unchecked clock dates after it, is left as it is, and --dry-run says \
            why. It asks first on a terminal and \
            needs --yes elsewhere. A clip whose MP3 of then is no longer kept, or is missing here, is left as it is \
            and said, the rest is restored, and the exit status is 5. It is one transaction and is itself kept in \
            the history: restoring to a moment before it undoes it. It waits for a running sync. \(localWhen)

            --version N puts one book or clip back to the version numbered N in `ivy history ID` (or its --json, \
            or `ivy history --conflicts`), even when another version was recorded in the same second: the take of \
            a clip's audio that lost a conflict is kept as the version just before the one that won it, and \
            --conflicts names it (LOST VERSION). Such a version is what the device that made the take had, its \
            note included: restoring it replaces the note a merge joined. --audio-only puts back only its MP3 and \
            leaves the clip's note and other fields as they are; the last line says which was done.
            """)

    @OptionGroup var global: GlobalOptions
    // Unconditional: `--at -2h` is a value, not an unknown option.
    @Option(parsing: .unconditional, help: ArgumentHelp("The moment to go back to.", valueName: "WHEN")) var at: String?
    @Option(
        help: ArgumentHelp(
            "The version to put its book or clip back to (a number `ivy history ID` shows), instead of --at.",
            valueName: "N"))
    var version: Int64?
    @Argument(
        help: ArgumentHelp(
            "Books and clips to restore, by id or its first 4 or more characters (book:ID or clip:ID when a book and "
                + "a clip share it); without any, the whole library."))
    var ids: [String] = []
    @Flag(
        help: ArgumentHelp(
            "With --version N of a clip: put back only its MP3 of then, and leave its note and other fields as "
                + "they are now."))
    var audioOnly = false
    @Flag(help: "Print what would change, and change nothing.") var dryRun = false
    @Flag(help: "Do not ask for confirmation of a whole-library restore.") var yes = false

    func validate() throws {
        if audioOnly, version == nil {
            throw ValidationError("--audio-only goes with --version N: the version whose MP3 to put back")
        }
        switch (at, version) {
        case (nil, nil): throw ValidationError("give --at WHEN, or --version N (a version `ivy history ID` shows)")
        case (_?, _?): throw ValidationError("give --at or --version, not both")
        case (nil, let version?):
            if !ids.isEmpty {
                throw ValidationError("--version names its book or clip already; give no ids with it")
            }
            if version < 1 { throw ValidationError("--version takes a version number as `ivy history ID` shows") }
        default: break
        }
    }

    func run(_ context: Context) async throws {
        let home = try global.home(context)
        if let version { return try await restore(version: version, home: home) }
        let moment = try moment(at ?? "", option: "--at", home: home, end: true)
        let now = home.clock.now()
        if moment > now {
            let shown = Display.time(now, zone: home.displayZone)
            throw ValidationError(
                "--at '\(at ?? "")' is in the future (it is \(shown) now): a restore goes back to a moment that "
                    + "has passed; give an earlier one (`ivy history` shows when each change was made)")
        }
        if ids.isEmpty, !dryRun, !yes, !home.terminal.input {
            throw ValidationError(
                "restoring the whole library needs confirmation; run it on a terminal or pass --yes (or name the "
                    + "books and clips to restore)")
        }
        let library = try await home.library(readOnly: dryRun)
        try await warnOfFutureVersions(library, now: now, home: home)
        var keys: [EntityKey]?
        if !ids.isEmpty {
            var found: [EntityKey] = []
            for id in ids { found.append(try await entityKey(id, in: library)) }
            keys = Self.unique(found)
        }
        if dryRun {
            let planned = try await library.restore(at: moment, keys: keys, dryRun: true)
            report(planned, home: home, dryRun: true)
            if !planned.failed.isEmpty { throw ExitCode(IvyExit.partialFailure) }
            return
        }
        if ids.isEmpty, !yes {
            let planned = try await library.restore(at: moment, keys: nil, dryRun: true)
            guard !planned.changes.isEmpty else { return report(planned, home: home, dryRun: false) }
            let count = planned.changes.count
            let question =
                "Put the whole library back to how it was at \(Display.time(moment, zone: home.displayZone))? "
                + "That changes \(count) " + (count == 1 ? "book or clip" : "books and clips")
                + " (`--dry-run` lists them)."
            guard home.agrees(question) else { return home.output.line("Nothing changed.") }
        }
        // A running sync writes the rows a restore reads and replaces: wait for it.
        try await withSyncLock(home.waitForSyncLock()) {
            let result = try await library.restore(at: moment, keys: keys)
            report(result, home: home, dryRun: false)
            // Something that should have changed could not (an MP3 no longer kept): the rest is
            // restored, and the exit status says it is incomplete.
            if !result.failed.isEmpty { throw ExitCode(IvyExit.partialFailure) }
        }
    }

    /// `--version N`: one book or clip back to that version; no question, as for named ids.
    private func restore(version: Int64, home: Home) async throws {
        let library = try await home.library(readOnly: dryRun)
        try await warnOfFutureVersions(library, now: home.clock.now(), home: home)
        let result: RestoreResult
        if dryRun {
            result = try await library.restore(version: version, audioOnly: audioOnly, dryRun: true)
        } else {
            result = try await withSyncLock(home.waitForSyncLock()) {
                try await library.restore(version: version, audioOnly: audioOnly)
            }
        }
        report(result, home: home, dryRun: dryRun, version: version)
        if !result.failed.isEmpty { throw ExitCode(IvyExit.partialFailure) }
    }

    /// A version dated after now was recorded while a clock ran ahead (this one, before ivy
    /// learned Google's, or another program's): the restore still finds WHEN's place in the
    /// order of changes, but a person choosing WHEN from `ivy history` should know.
    private func warnOfFutureVersions(_ library: LibraryDatabase, now: Milliseconds, home: Home) async throws {
        guard let latest = try await library.latestVersionTime(), latest > now + 60_000 else { return }
        let zone = home.displayZone
        home.output.error(
            "warning: a version is dated \(Display.time(latest, zone: zone)), "
                + "after now (\(Display.time(now, zone: zone))): a clock ran ahead when it was recorded. "
                + "WHEN is placed in the order of changes, so everything "
                + "written before the last version dated at or before WHEN counts as existing then, whatever its date.")
    }

    private static func unique(_ keys: [EntityKey]) -> [EntityKey] {
        var seen: Set<EntityKey> = []
        return keys.filter { seen.insert($0).inserted }
    }

    private func report(_ result: RestoreResult, home: Home, dryRun: Bool, version: Int64? = nil) {
        let at = Display.time(result.at, zone: home.displayZone)
        let when = version.map { "version \($0) (\(at))" } ?? at
        // A line is never cut but for its title or note, and only for a person at a terminal,
        // where the terminal wraps the rest: into a pipe or a file every word is kept.
        let terminal = home.terminal.output
        for change in result.changes {
            let what = "\(change.key.kind.rawValue) \(change.key.id)"
            let label =
                change.label.map { " (" + (terminal ? Display.cell($0) : Display.safe($0)) + ")" } ?? ""
            let line: String
            switch change.action {
            case .create: line = (dryRun ? "would make again " : "made again ") + what + label
            case .delete: line = (dryRun ? "would delete " : "deleted ") + what + label + ": made after \(when)"
            case .update:
                line =
                    (dryRun ? "would restore " : "restored ") + what + label + ": "
                    + change.fields.joined(separator: ", ")
            }
            home.output.line(line)
        }
        let unknown = result.skipped.filter { $0.reason == RestoreResult.unknownThen }
        for (key, reason) in result.skipped {
            let failed = result.failed.contains(key)
            // Named ids, and what could not be restored, are always said; what this library
            // did not know then is listed by a dry run and counted otherwise.
            guard !ids.isEmpty || version != nil || failed || dryRun else { continue }
            var text = reason.replacingOccurrences(of: "WHEN", with: when)
            if let made = result.madeAt[key] {
                text = text.replacingOccurrences(of: "MADE", with: Display.time(made, zone: home.displayZone))
            }
            home.output.line((failed ? "could not restore " : "left ") + "\(key): " + Display.safe(text))
        }
        if ids.isEmpty, version == nil, !dryRun, !unknown.isEmpty {
            let things = unknown.count == 1 ? "1 book or clip" : "\(unknown.count) books and clips"
            home.output.line(
                "Left \(things) as they are: this library has no version of them at \(when), and they were made "
                    + "before it (`--dry-run` lists them).")
        }
        let doubted = result.madeAt.count
        if ids.isEmpty, version == nil, !dryRun, doubted > 0 {
            let things = doubted == 1 ? "1 book or clip" : "\(doubted) books and clips"
            home.output.line(
                "Left \(things) as they are: dated after \(when) by clocks ivy cannot check against Google's, "
                    + "they may have existed then (`--dry-run` says why).")
        }
        let count = result.changes.count
        let things = count == 1 ? "1 book or clip" : "\(count) books and clips"
        let was = count == 1 ? "how it was" : "how they were"
        let failures = result.failed.count
        let incomplete =
            failures == 0
            ? "" : " \(failures == 1 ? "1 book or clip" : "\(failures) books and clips") could not be restored (above)."
        // What a --version of a clip gives back: all it had then, or (--audio-only) its MP3 alone.
        let whole = result.changes.contains { $0.fields.contains("audio") && $0.fields.contains { $0 != "audio" } }
        let scope =
            version == nil
            ? ""
            : audioOnly
                ? " (its MP3 alone: its note and other fields stay as they are)"
                : whole ? " (its fields as well as its MP3; --audio-only puts back the MP3 alone)" : ""
        if count == 0 {
            // Only what was named and left (it did not exist then, or is unknown here then): said
            // above, and not "as it was", which it was not.
            // (`--version` names one entity: a deletion's, left as it is, is such a one.)
            let left =
                version != nil ? !result.skipped.isEmpty : !ids.isEmpty && result.skipped.count == ids.count
            home.output.line(
                failures > 0
                    ? "Nothing restored." + incomplete
                    : left
                        ? "Nothing restored: what was named is left as it is (said above)."
                        : "Nothing to restore: it is as it was at \(when)\(audioOnly ? ", its MP3 the same" : "").")
        } else if dryRun {
            home.output.line("Would restore \(things) to \(was) at \(when)\(scope); nothing changed." + incomplete)
        } else {
            let sent = result.changes.filter(\.sends).count
            let next: String
            switch sent {
            case count: next = "the next `ivy sync` sends \(count == 1 ? "it" : "them") to Drive."
            case 0:
                next =
                    (count == 1 ? "it is" : "they are")
                    + " as this device and Drive last agreed, so the next `ivy sync` "
                    + "sends nothing for \(count == 1 ? "it" : "them") "
                    + "(and takes Drive's copy where Drive changed since)."
            default:
                next =
                    "the next `ivy sync` sends \(sent) of them to Drive; the other \(count - sent) are as this device "
                    + "and Drive last agreed, so it sends nothing for those (and takes Drive's copy where Drive "
                    + "changed since)."
            }
            home.output.line("Restored \(things) to \(was) at \(when)\(scope); " + next + incomplete)
        }
    }
}
