import Foundation
import GoogleEmulator
import IvyCore
import IvySystem

/// One operation of a crash-check story. Each acts on an entity of its own, so a story's end
/// state is one, whatever the order, and a difference from the uncrashed run is a finding.
enum StoryOperation: String, CaseIterable, Sendable {
    /// Device a retitles book 1.
    case editHere = "edit-here"
    /// Device b changes clip 1's note.
    case editThere = "edit-there"
    /// The phone app replaces clip 2's JSON on Drive (delete, then create) with a new note.
    case phoneReplace = "phone-replace"
    /// Device a deletes clip 3.
    case delete
    /// Device a gives clip 5 new audio.
    case newAudio = "new-audio"
    /// Device a restores book 2 to its first version (`ivy restore --version`).
    case restore
    /// Device b puts back clip 4, which a sync of the fixture deleted there (`ivy trash restore`).
    case trashRestore = "trash-restore"
    /// Device c, signed in but empty (a new laptop), loads the archive a exported at the
    /// fixture (`ivy import`) and syncs: what it brings is no newer than Drive's, and must
    /// neither undo another operation's write nor bring back what was deleted.
    case importArchive = "import"

    /// `edit-here,delete` as a story.
    static func story(_ text: String) throws -> [StoryOperation] {
        try text.split(separator: ",").map { name in
            guard let operation = StoryOperation(rawValue: String(name.trimmingCharacters(in: .whitespaces))) else {
                throw SoakError(
                    "--story: no operation \(name); the operations are "
                        + allCases.map(\.rawValue).joined(separator: ", "))
            }
            return operation
        }
    }
}

/// A crash to try: the `count`th reach of `point`, counted over the whole story.
struct PlannedCrash: Hashable, Sendable, CustomStringConvertible {
    var point: CrashPoint
    var count: Int

    var description: String { "\(point.rawValue):\(count)" }
}

/// What the crash checker found in one run: one line each.
struct CrashRun {
    var violations: [String] = []
    /// The crash landed (the command said so on stderr before its SIGKILL).
    var crashed = false
}

/// The crash checker (`ivy-soak --crash-check`, issue 50): short stories of operations over two
/// ivy devices and the phone app, each run once uncrashed with `IVY_CRASH_TRACE` to learn the
/// crash points its commands pass, then again from the same start once for each of them with
/// `IVY_CRASH_AT` on the command that passes it. The crashed command is run again (as a person
/// or cron would), the rest of the story goes on, every device syncs until a pass is quiet, and
/// the end is compared with the uncrashed run's and with what each operation wrote.
final class CrashCheck {
    struct Options: Sendable {
        var seed: UInt64
        var ivy: URL
        var verbose: Bool
        var keep: Bool
        var shrink: Bool
        /// The planted defect the devices run with (`IVY_TEST_DEFECT`), for the checker's own test.
        var defect: String?
    }

    /// What the story starts from, made once: two signed-in homes and Drive as the emulator
    /// held it. Every run starts from copies of them, so ids and versions are the same in each.
    struct Fixture {
        var books: [String] = []
        var clips: [String] = []
        /// Book 2's version titled "first" on device a.
        var firstVersion = ""
        /// Clip 4's entry in device b's trash.
        var trashEntry = ""
        /// Each device's newest history version at the start.
        var newestVersion: [String: Double] = [:]
        /// The archive a exported at the fixture's end, for `import`.
        var archive = ""
        var drive = Data()
        var template: [Device] = []
    }

    static let email = "alice@example.com"
    static let editedTitle = "Edited here"
    static let editedNote = "edited there"
    static let phoneNote = "by the phone"
    static let maximumPasses = 6

    let options: Options
    let root: String
    private let emulator: GoogleEmulator
    private var fixture = Fixture()
    private var runs = 0
    /// The commands `must` has run, each given ids of its own.
    private var fixtureCommands = 0
    private let newAudio: Data
    private let started = ContinuousClock.now
    private(set) var crashes = 0
    private(set) var pointsHit: Set<CrashPoint> = []

    private var state: EmulatorState { emulator.state }

    init(options: Options, root: String, emulator: GoogleEmulator) {
        self.options = options
        self.root = root
        self.emulator = emulator
        var random = SplitMix64.stream(seed: options.seed, round: 1, .edits)
        newAudio = Data(Array("ID3\u{4}\0".utf8) + random.bytes(3_000))
    }

    // MARK: the fixture

    /// Two devices signed in; book 1 with clips 1 to 5, each with audio; book 2 titled "first",
    /// then "second"; clip 4 deleted on a and the deletion synced to b (into its trash); a's
    /// export of that; a third device, c, signed in and never synced, which only the stories
    /// that import use.
    func prepare() async throws {
        await state.setDeviceCode(interval: 0)
        let template = root + "/template"
        try FileManager.default.createDirectory(atPath: template, withIntermediateDirectories: true)
        let devices = try ["a", "b", "c"].map {
            try Device(
                name: $0, root: template, binary: options.ivy, emulator: emulator.baseURL, caFile: emulator.caFile)
        }
        let (a, b) = (devices[0], devices[1])
        let syncing = [a, b]
        for device in devices {
            try await device.login(state, email: Self.email)
            // One request at a time: the Nth reach of a point is the same request in every run.
            try await must(device, ["config", "set", "concurrency", "1"])
            try await must(device, ["config", "set", "replace_grace", "5"])
        }
        var random = SplitMix64.stream(seed: options.seed, round: 0, .setup)
        fixture.books.append(try await must(a, ["book", "add", "--title", "Dune", "--artist", "Frank Herbert"]))
        fixture.books.append(try await must(a, ["book", "add", "--title", "first"]))
        for number in 1...5 {
            let audio = root + "/fixture-\(number).mp3"
            try Data(Array("ID3\u{4}\0".utf8) + random.bytes(1_000 + number * 100)).write(
                to: URL(fileURLWithPath: audio))
            fixture.clips.append(
                try await must(
                    a,
                    [
                        "clip", "add", "--book", fixture.books[0], "--start", String(number * 60), "--duration", "30",
                        "--audio", audio, "--note", "clip \(number)",
                    ]))
        }
        try await must(a, ["sync", "--json"])
        try await must(b, ["sync", "--json"])
        try await must(a, ["book", "update", fixture.books[1], "--title", "second"])
        let versions = try await a.list(["history", fixture.books[1], "--json"])
        guard
            let first = versions.first(where: { $0["entity"]?["title"]?.string == "first" })?["version"]?.number
        else { throw SoakError("crash check: book 2 has no version titled first on a") }
        fixture.firstVersion = String(Int64(first))
        try await must(a, ["clip", "delete", fixture.clips[3]])
        try await must(a, ["sync", "--json"])
        try await must(b, ["sync", "--json"])
        let trash = try await b.list(["trash", "list", "--json"])
        guard let entry = trash.first(where: { $0["entity_id"]?.string == fixture.clips[3] })?["id"]?.number else {
            throw SoakError("crash check: clip 4's deletion left no entry in b's trash")
        }
        fixture.trashEntry = String(Int64(entry))
        guard try await converge(syncing) else { throw SoakError("crash check: the fixture's syncs never settle") }
        fixture.archive = root + "/fixture.zip"
        try await must(a, ["export", fixture.archive])
        for device in devices {
            let versions = try await device.list(["history", "--json"])
            fixture.newestVersion[device.name] = versions.compactMap { $0["version"]?.number }.max() ?? 0
        }
        fixture.drive = try await state.snapshot()
        fixture.template = devices
        log(
            "fixture: books \(fixture.books), clips \(fixture.clips), trash entry \(fixture.trashEntry), archive, "
                + "newest versions \(fixture.newestVersion)")
    }

    // MARK: stories

    /// Every story of one to three different operations.
    static func allStories() -> [[StoryOperation]] {
        let operations = StoryOperation.allCases
        var stories = operations.map { [$0] }
        for first in operations {
            for second in operations where second != first {
                stories.append([first, second])
                for third in operations where third != first && third != second {
                    stories.append([first, second, third])
                }
            }
        }
        return stories.sorted { $0.count < $1.count }
    }

    /// Runs `story` uncrashed (its trace and its end, the reference), then crashed at each of
    /// `crashes` (nil: every crash the trace lists; `firstOnly`: each point not yet hit, once).
    /// Returns the violations, one line each with the command that replays it.
    func check(_ story: [StoryOperation], crashes wanted: [PlannedCrash]?, firstOnly: Bool = false) async throws
        -> [String]
    {
        let (traced, reference, referenceRun) = try await run(story, crash: nil)
        var violations = referenceRun.violations.map { "\($0)\n  replay: \(replay(story, nil))" }
        let planned: [PlannedCrash]
        if let wanted {
            planned = wanted
        } else if firstOnly {
            var seen = pointsHit
            planned = traced.filter { seen.insert($0.point).inserted }
        } else {
            planned = traced
        }
        log("story \(name(story)): \(traced.count) crashes to try, \(planned.count) planned")
        for crash in planned {
            let (_, _, outcome) = try await run(story, crash: crash, reference: reference)
            crashes += 1
            pointsHit.insert(crash.point)
            guard !outcome.violations.isEmpty else { continue }
            var line = outcome.violations.joined(separator: "\n") + "\n  replay: \(replay(story, crash))"
            if options.shrink, story.count > 1, let shorter = try await shrink(story, crash) {
                line += "\n  shortest: \(replay(shorter.story, shorter.crash))"
            }
            violations.append(line)
        }
        return violations
    }

    /// Removes operations while the crash (same point, any count) still finds a violation.
    private func shrink(_ story: [StoryOperation], _ crash: PlannedCrash) async throws
        -> (story: [StoryOperation], crash: PlannedCrash)?
    {
        var best: (story: [StoryOperation], crash: PlannedCrash)?
        var current = story
        var shrinking = true
        while shrinking, current.count > 1 {
            shrinking = false
            for index in current.indices {
                var shorter = current
                shorter.remove(at: index)
                let (traced, reference, _) = try await run(shorter, crash: nil)
                for candidate in traced where candidate.point == crash.point {
                    let (_, _, outcome) = try await run(shorter, crash: candidate, reference: reference)
                    if !outcome.violations.isEmpty {
                        best = (shorter, candidate)
                        current = shorter
                        shrinking = true
                        break
                    }
                }
                if shrinking { break }
            }
        }
        return best
    }

    private func name(_ story: [StoryOperation]) -> String { story.map(\.rawValue).joined(separator: ",") }

    /// The command that runs this story (crashed there) alone.
    func replay(_ story: [StoryOperation], _ crash: PlannedCrash?) -> String {
        var command = "ivy-soak --crash-check"
        if options.seed != 1 { command += " --seed \(options.seed)" }
        command += " --story '\(name(story))'"
        if let crash { command += " --crash-at \(crash)" }
        return command
    }

    // MARK: one run

    /// One step of a story: an `ivy` command on device 0 (a) or 1 (b), or the app's replace.
    private enum Step {
        case ivy(Int, [String])
        case phone
    }

    private func steps(_ operation: StoryOperation, audio: String) -> [Step] {
        let command: Step
        switch operation {
        case .editHere: command = .ivy(0, ["book", "update", fixture.books[0], "--title", Self.editedTitle])
        case .editThere: command = .ivy(1, ["clip", "update", fixture.clips[0], "--note", Self.editedNote])
        case .phoneReplace: command = .phone
        case .delete: command = .ivy(0, ["clip", "delete", fixture.clips[2]])
        case .newAudio: command = .ivy(0, ["clip", "update", fixture.clips[4], "--audio", audio])
        case .restore: command = .ivy(0, ["restore", "--version", fixture.firstVersion, "--yes"])
        case .trashRestore: command = .ivy(1, ["trash", "restore", fixture.trashEntry])
        case .importArchive: command = .ivy(2, ["import", fixture.archive])
        }
        // The device that acted syncs, then another: both sides of each change are passed.
        let actor = if case .ivy(let device, _) = command { device } else { 0 }
        return [command, .ivy(actor, ["sync", "--json"]), .ivy(actor == 0 ? 1 : 0, ["sync", "--json"])]
    }

    /// The story from the fixture, crashed as planned: returns the crashes its commands
    /// passed (from `IVY_CRASH_TRACE`, uncrashed runs only), its end state (Drive's books and
    /// clips as compared), and what the checks found (against `reference`, when given).
    private func run(_ story: [StoryOperation], crash: PlannedCrash?, reference: [String: String]? = nil)
        async throws -> (traced: [PlannedCrash], end: [String: String], run: CrashRun)
    {
        runs += 1
        try await state.restore(from: fixture.drive)
        var environment: [String: String] = [:]
        if let defect = options.defect { environment["IVY_TEST_DEFECT"] = defect }
        // c takes part only in a story that imports: the others run as two devices.
        let templates = story.contains(.importArchive) ? fixture.template : Array(fixture.template.prefix(2))
        let devices = try templates.map { try $0.copy(as: "\($0.name)-run\(runs)").with(environment) }
        defer {
            if !options.keep { for device in devices { try? FileManager.default.removeItem(atPath: device.home) } }
        }
        let audio = root + "/new-audio.mp3"
        try newAudio.write(to: URL(fileURLWithPath: audio))
        var result = CrashRun()
        var reached: [CrashPoint: Int] = [:]
        var traced: [PlannedCrash] = []
        let trace = root + "/trace-\(runs)"
        let label = crash.map { " crashed at \($0)" } ?? ""
        for step in story.flatMap({ steps($0, audio: audio) }) {
            guard case .ivy(let index, let arguments) = step else {
                try await phoneReplace()
                continue
            }
            var device = devices[index]
            var armed: Int?
            if let crash, !result.crashed, let before = reached[crash.point] {
                armed = crash.count - before
            } else if let crash, !result.crashed {
                armed = crash.count
            }
            if let crash, let count = armed {
                device = device.with(["IVY_CRASH_AT": "\(crash.point.rawValue):\(count)", "IVY_CRASH_TRACE": trace])
            } else if crash == nil {
                device = device.with(["IVY_CRASH_TRACE": trace])
            }
            try? FileManager.default.removeItem(atPath: trace)
            let outcome = try await device.run(arguments, limit: .seconds(120))
            let lines = (try? String(contentsOfFile: trace, encoding: .utf8))?.split(separator: "\n") ?? []
            for line in lines {
                guard let point = CrashPoint(rawValue: String(line)) else { continue }
                reached[point, default: 0] += 1
                if crash == nil { traced.append(PlannedCrash(point: point, count: reached[point] ?? 1)) }
            }
            let killed = outcome.stderr.contains("crash point") && outcome.stderr.contains("(IVY_CRASH_AT)")
            log(
                "  \(devices[index].name): ivy \(arguments.prefix(3).joined(separator: " "))\(label): "
                    + (killed ? "killed" : outcome.brief))
            if killed {
                result.crashed = true
                // The restart: the same command again, as a person or cron would run it.
                let again = try await devices[index].run(arguments, limit: .seconds(120))
                log("  \(devices[index].name): again: \(again.brief)")
            } else if crash == nil, outcome.status != 0, arguments.first != "sync" {
                throw SoakError(
                    "crash check: ivy \(arguments.joined(separator: " ")) on \(device.name) failed uncrashed: "
                        + outcome.brief)
            }
        }
        try? FileManager.default.removeItem(atPath: trace)
        if let crash, !result.crashed {
            result.violations.append("not reached: \(crash) in story \(name(story)) (the story no longer passes it)")
        }
        if !(try await converge(devices)) {
            result.violations.append("diverged: no pass of \(Self.maximumPasses) syncs on every device was quiet")
        }
        let end = try await look(story, devices: devices, into: &result)
        if let reference {
            for key in Set(reference.keys).union(end.keys).sorted() where reference[key] != end[key] {
                result.violations.append(
                    "differs from the uncrashed story: \(key): \(end[key] ?? "missing"), "
                        + "uncrashed \(reference[key] ?? "missing")")
            }
        }
        for line in result.violations { log("  VIOLATION\(label): \(line)") }
        return (traced, end, result)
    }

    /// The phone app's replace of clip 2's JSON: its note changed, its time the app's clock.
    private func phoneReplace() async throws {
        let drive = await DriveView(state: state, email: Self.email)
        let name = "clip_\(fixture.clips[1]).json"
        guard let folder = drive.clipsFolders.first, case .object(var fields)? = drive.json(name) else {
            throw SoakError("crash check: the phone finds no \(name) on Drive")
        }
        fields["note"] = .string(Self.phoneNote)
        fields["updated_at"] = .number(Double(Device.realNow()))
        for file in drive.byName[name] ?? [] { try? await state.trash(id: file.id) }
        await state.putFile(
            email: Self.email, name: name, parents: [folder.id], content: JSON.object(fields).data,
            mimeType: "application/json")
        log("  app: replaced \(name)")
    }

    /// Syncs each device in turn (a, b, and c when it takes part) until a whole pass moves nothing.
    private func converge(_ devices: [Device]) async throws -> Bool {
        for _ in 0..<Self.maximumPasses {
            var quiet = true
            for device in devices {
                let outcome = try await device.run(["sync", "--json"], limit: .seconds(120))
                guard outcome.status == 0, let report = outcome.json else {
                    quiet = false
                    continue
                }
                let moved = ["uploaded", "downloaded", "merged", "deleted_remote", "deleted_local"].map { key in
                    Int(report[key]?["books"]?.number ?? 0) + Int(report[key]?["clips"]?.number ?? 0)
                }
                if moved.reduce(0, +) + Int(report["stale_duplicates_deleted"]?.number ?? 0) > 0 { quiet = false }
            }
            if quiet { return true }
        }
        return false
    }

    // MARK: the invariants

    /// Checks the end: devices and Drive agree, one file a name, no orphans, each operation's
    /// write held everywhere and in the history, nothing deleted back, nothing invented.
    /// Returns Drive's books and clips as compared with the uncrashed run.
    private func look(_ story: [StoryOperation], devices: [Device], into result: inout CrashRun) async throws
        -> [String: String]
    {
        var states: [(name: String, state: DeviceState)] = []
        for device in devices { states.append((device.name, try await device.state())) }
        let drive = await DriveView(state: state, email: Self.email)
        let findings = Checker.check(devices: states, drive: drive, ledger: Ledger())
        result.violations += findings.dupes + findings.diverged + findings.lost

        let known = Set(fixture.books + fixture.clips)
        var holders: [(name: String, books: [String: JSON], clips: [String: JSON], audio: [String: Data])] = []
        var driveBooks: [String: JSON] = [:]
        var driveClips: [String: JSON] = [:]
        var driveAudio: [String: Data] = [:]
        for id in drive.ids(.book) { driveBooks[id] = drive.json("book_\(id).json") }
        for id in drive.ids(.clip) {
            driveClips[id] = drive.json("clip_\(id).json")
            driveAudio[id] = drive.newest("clip_\(id).mp3")?.content
        }
        holders.append(("Drive", driveBooks, driveClips, driveAudio))
        for (name, held) in states { holders.append((name, held.books, held.clips, held.audio)) }

        for holder in holders {
            for id in Set(holder.books.keys).union(holder.clips.keys).subtracting(known).sorted() {
                result.violations.append("invented: \(id) on \(holder.name), made by no one")
            }
            func expect(_ what: String, _ holds: Bool) {
                if !holds { result.violations.append("\(what) on \(holder.name)") }
            }
            let (b1, c1, c2, c3, c4, c5) = (
                fixture.books[0], fixture.clips[0], fixture.clips[1], fixture.clips[2], fixture.clips[3],
                fixture.clips[4]
            )
            if story.contains(.editHere) {
                expect(
                    "lost edit: book 1's title \(Self.editedTitle)",
                    holder.books[b1]?["title"]?.string == Self.editedTitle)
            }
            // A note edited since the export and imported from it meets its older self in a
            // merge with no base (the new device never synced): both are kept, with a conflict
            // line between (`Merge.note`). The edit is there; a story without an import keeps
            // it alone.
            func noted(_ id: String, _ note: String) -> Bool {
                guard let held = holder.clips[id]?["note"]?.string else { return false }
                return story.contains(.importArchive) ? held.contains(note) : held == note
            }
            if story.contains(.editThere) {
                expect("lost edit: clip 1's note \(Self.editedNote)", noted(c1, Self.editedNote))
            }
            if story.contains(.phoneReplace) {
                expect("lost edit: the phone's note on clip 2", noted(c2, Self.phoneNote))
            }
            if story.contains(.newAudio) {
                expect("lost edit: clip 5's new audio", holder.audio[c5] == newAudio)
            }
            if story.contains(.restore) {
                expect("lost restore: book 2 titled first", holder.books[fixture.books[1]]?["title"]?.string == "first")
            }
            if story.contains(.delete) { expect("came back: clip 3, deleted,", holder.clips[c3] == nil) }
            if story.contains(.trashRestore) {
                expect("lost trash restore: clip 4", holder.clips[c4] != nil)
            } else {
                expect("came back: clip 4, deleted before the story,", holder.clips[c4] == nil)
            }
        }
        try await checkHistory(story, devices: devices, into: &result)
        orphansOnDrive(drive, into: &result)
        for (device, held) in zip(devices, states) { orphansAtHome(device, held: held.state, into: &result) }

        var end: [String: String] = [:]
        for (id, object) in driveBooks {
            for field in ["title", "artist", "artwork", "position", "hidden", "created_at"] {
                end["book \(id) \(field)"] = (object[field] ?? (field == "hidden" ? .bool(false) : .null)).text
            }
        }
        for (id, object) in driveClips {
            for field in ["book_id", "start", "duration", "note", "transcription", "created_at"] {
                end["clip \(id) \(field)"] = (object[field] ?? .null).text
            }
            end["clip \(id) audio"] = driveAudio[id].map { "\($0.count) B, md5 \($0.md5Hex)" } ?? "none"
        }
        return end
    }

    /// Every state the story passed through is a version in some device's history, newer than
    /// the fixture's.
    private func checkHistory(_ story: [StoryOperation], devices: [Device], into result: inout CrashRun) async throws {
        var versions: [JSON] = []
        for device in devices {
            let newest = fixture.newestVersion[device.name] ?? 0
            versions += try await device.list(["history", "--json"]).filter { ($0["version"]?.number ?? 0) > newest }
        }
        func held(_ what: String, _ id: String, _ matches: (JSON) -> Bool) {
            let mine = versions.filter { $0["entity_id"]?.string == id }
            guard !mine.contains(where: matches) else { return }
            let seen = mine.map { version in
                let number = version["version"]?.text ?? "?"
                let deleted = version["deleted"]?.bool == true ? " deleted" : ""
                let md5 = version["audio_md5"]?.string.map { " audio \($0.prefix(8))" } ?? ""
                return "\(number)\(deleted)\(md5) \(version["changed"]?.text ?? "")"
            }
            result.violations.append(
                "history: no version of \(what) on any device (its versions since the fixture: "
                    + (seen.isEmpty ? "none" : seen.joined(separator: "; ")) + ")")
        }
        for operation in story {
            switch operation {
            case .editHere:
                held("book 1 titled \(Self.editedTitle)", fixture.books[0]) {
                    $0["entity"]?["title"]?.string == Self.editedTitle
                }
            case .editThere:
                held("clip 1 noted \(Self.editedNote)", fixture.clips[0]) {
                    $0["entity"]?["note"]?.string == Self.editedNote
                }
            case .phoneReplace:
                held("clip 2 noted \(Self.phoneNote)", fixture.clips[1]) {
                    $0["entity"]?["note"]?.string == Self.phoneNote
                }
            case .delete: held("clip 3 deleted", fixture.clips[2]) { $0["deleted"]?.bool == true }
            case .newAudio:
                // The current version's MP3 is the clip's own (`audio_md5` null) until it is replaced.
                held("clip 5 with its new audio (md5 \(newAudio.md5Hex.prefix(8)))", fixture.clips[4]) {
                    ($0["changed"]?.objects.contains(.string("audio")) ?? false)
                        && ($0["audio_md5"] == nil || $0["audio_md5"] == .null
                            || $0["audio_md5"]?.string == newAudio.md5Hex)
                }
            case .restore:
                held("book 2 titled first again", fixture.books[1]) { $0["entity"]?["title"]?.string == "first" }
            case .trashRestore: held("clip 4 put back", fixture.clips[3]) { $0["deleted"]?.bool == false }
            case .importArchive:
                // The import is the fixture's state again, kept in c's history as it loads it.
                held("book 1 as the archive holds it", fixture.books[0]) {
                    $0["entity"]?["title"]?.string == "Dune"
                }
            }
        }
    }

    /// Every file of the account is a folder of ivy's, or a book's or clip's file in its
    /// folder, of an entity Drive holds.
    private func orphansOnDrive(_ drive: DriveView, into result: inout CrashRun) {
        let books = Set(drive.ids(.book))
        let clips = Set(drive.ids(.clip))
        for (name, files) in drive.byName {
            let kept =
                (name.hasPrefix("book_") && name.hasSuffix(".json"))
                || (name.hasPrefix("clip_") && name.hasSuffix(".json"))
                || (name.hasPrefix("clip_") && name.hasSuffix(".mp3")
                    && clips.contains(String(name.dropFirst(5).dropLast(4))))
            if !kept { result.violations.append("orphan on Drive: \(files.count) file(s) named \(name)") }
        }
        _ = books
    }

    /// The audio directory holds one MP3 per clip the device holds, and no leftovers but
    /// `.incoming-` files, which an opening removes once an hour old (a live command may be
    /// writing one).
    private func orphansAtHome(_ device: Device, held: DeviceState, into result: inout CrashRun) {
        let directory = device.home + "/audio"
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        for name in names.sorted() where !name.hasPrefix(".incoming-") {
            let id = name.hasSuffix(".mp3") ? String(name.dropLast(4)) : ""
            if held.clips[id] == nil {
                result.violations.append("orphan at home: \(device.name)'s audio/\(name) is no clip's")
            }
        }
    }

    @discardableResult
    private func must(_ device: Device, _ arguments: [String]) async throws -> String {
        // The fixture's ids from the seed, a stream a command (`IVY_TEST_IDS`): a replay meets
        // the same ids, so a failure that hangs on one (an id that starts with 1) replays too.
        fixtureCommands += 1
        let seeded = device.with(["IVY_TEST_IDS": "crash-check-\(options.seed)-\(fixtureCommands)"])
        let outcome = try await seeded.run(arguments, limit: .seconds(120))
        guard outcome.status == 0 else {
            throw SoakError(
                "crash check: ivy \(arguments.prefix(3).joined(separator: " ")) on \(device.name): "
                    + "\(outcome.brief)")
        }
        return outcome.stdout.split(separator: "\n").first.map(String.init) ?? ""
    }

    func log(_ line: String) {
        guard options.verbose else { return }
        let elapsed = ContinuousClock.now - started
        print(String(format: "%7.1f ", Double(elapsed.components.seconds)) + line)
        fflush(nil)
    }
}

extension Data {
    /// The MD5 as lowercase hex, as `ivy history --json` prints `audio_md5`.
    var md5Hex: String {
        var md5 = MD5()
        md5.update(self)
        return md5.finalize()
    }
}
