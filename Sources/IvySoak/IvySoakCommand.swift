import ArgumentParser
import Foundation
import GoogleEmulator
import IvyProcesses
import IvySystem

@main
struct IvySoakCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ivy-soak",
        abstract: "Convergence soak: four ivy installs and the phone app edit one Drive under faults and kills.",
        discussion: """
            Starts ivy-emulator in-process on 127.0.0.1, signs four homes in through `ivy login`, and for each \
            round makes random edits through the CLI on one device (and, sometimes, as the phone app, on Drive), \
            then syncs that device under random bounded faults or a SIGKILL. Device d joins late (its first sync \
            is a quarter of the rounds in). Clocks (libfaketime, the wall clock only): b's runs 20 hours ahead \
            from a fifth of the rounds in, c's 2 days ahead for the middle third and then steps back, and a makes \
            one command 400 days ahead four fifths in; as each jumps, the device forgets Google's time as a reboot \
            does, so it dates what it records by that clock until its next answer from Google. In overlapping \
            rounds another device syncs (or runs `ivy sync --watch`) at the same time while the app writes, \
            leaving a gap between each delete and create. Now and then it records every device's library at \
            Google's time (the emulator's clock), and restores a copy of a device (under its clock) to a random \
            recorded moment (`ivy restore --at`), the whole library or one or two books and clips by id, comparing \
            it field by field and MP3 by MP3 with what that device held then (what it did not know then and was \
            made before stays as it is; what was made after is deleted, unless a clock ahead leaves that open). At \
            each recorded moment three oracles look: nothing invented (every value a device holds was written by \
            someone), nothing untouched written (no new version, upload or replace of an entity every side \
            already held), and the past kept (pruned_past: every version written less than 50 minutes before, \
            and the current version of everything a device holds, is still in its history). Then every device \
            syncs until a whole pass changes nothing, and the checker compares devices, Drive, what was created \
            and what was last written to each field. Exits 0 only when every count on the summary line is 0. The \
            same seed makes the same edits, faults, kills and overlaps; exactly when a kill lands \
            is racy.
            """)

    @Option(help: "The seed of the run's random choices.") var seed: UInt64 = 1
    @Option(help: "How many rounds of edits and syncs.") var rounds: Int = 20
    @Option(
        help: ArgumentHelp("The ivy binary (default: $IVY_BINARY, or `ivy` beside this executable).", valueName: "PATH")
    )
    var ivy: String?
    @Option(
        parsing: .upToNextOption,
        help: ArgumentHelp(
            "Fault kinds to inject (default: all): \(FaultKind.allCases.map(\.rawValue).joined(separator: ", ")).",
            valueName: "KIND"))
    var faults: [FaultKind] = FaultKind.allCases
    @Flag(help: "Serve plain HTTP/1.1 instead of HTTPS with HTTP/2 (Google's wire, the default).")
    var plainHTTP = false
    @Flag(help: "Print every edit, fault, kill and sync as it happens.") var verbose = false
    @Flag(help: "Keep the devices' homes (databases, ivy.log) for a look afterwards.") var keep = false
    @Flag(help: "Print every crash point IVY_CRASH_AT can name, with what it marks, and exit.")
    var listCrashPoints = false
    @Flag(
        help: """
            Crash check: run short stories over two devices and the app, crash each at the crash points it \
            passes, and check the end (by default each story of one operation, each point crashed once).
            """)
    var crashCheck = false
    @Flag(help: "With --crash-check: every story of up to three operations, crashed at every point it passes.")
    var all = false
    @Option(
        help: ArgumentHelp(
            "With --crash-check: one story, operations joined by commas: "
                + StoryOperation.allCases.map(\.rawValue).joined(separator: ", ") + ".", valueName: "OPS"))
    var story: String?
    @Option(
        help: ArgumentHelp(
            "With --crash-check --story: only the crash at the Nth reach of POINT, counted over the story.",
            valueName: "POINT:N"))
    var crashAt: String?
    @Flag(help: "With --crash-check: do not shrink a failing story.") var noShrink = false

    @Option(
        help: ArgumentHelp(
            "With --crash-check --all: start at the Nth story (as `story N/S` counts them), to go on with a long "
                + "run or share it out.", valueName: "N"))
    var from: Int?

    func validate() throws {
        if (all || story != nil || crashAt != nil || noShrink) && !crashCheck {
            throw ValidationError("--all, --story, --crash-at and --no-shrink go with --crash-check")
        }
        if crashAt != nil && story == nil { throw ValidationError("--crash-at needs --story") }
        if let from {
            guard all else { throw ValidationError("--from goes with --crash-check --all") }
            let count = CrashCheck.allStories().count
            guard (1...count).contains(from) else { throw ValidationError("--from takes 1 to \(count)") }
        }
        if let story {
            do { _ = try StoryOperation.story(story) } catch { throw ValidationError("\(error)") }
        }
        if let crashAt, CrashPoints.parse(crashAt) == nil {
            throw ValidationError(
                "--crash-at \(crashAt) names no crash point; `ivy-soak --list-crash-points` lists them (NAME:N)")
        }
        guard rounds >= 1 else { throw ValidationError("--rounds must be at least 1") }
        if let ivy, !FileManager.default.isExecutableFile(atPath: ivy) {
            throw ValidationError("\(ivy) is not an executable; give --ivy the path of a built ivy")
        }
    }

    func run() async throws {
        if listCrashPoints {
            for line in CrashPoints.listing { print(line) }
            return
        }
        let binary = URL(fileURLWithPath: ivy ?? BuiltProgram.ivy.path)
        guard FileManager.default.isExecutableFile(atPath: binary.path) else {
            throw SoakError("no ivy at \(binary.path); build it (`swift build -c release`) or pass --ivy PATH")
        }
        if crashCheck {
            try await runCrashCheck(binary)
            return
        }
        let options = SoakOptions(seed: seed, rounds: rounds, ivy: binary, verbose: verbose, faults: faults, keep: keep)
        let (root, soak, findings) = try await withRun(named: "ivy-soak") { root, emulator in
            let soak = try await Soak(options: options, root: root, emulator: emulator)
            return (root, soak, try await soak.run())
        }
        for line in findings.all { print(line) }
        if keep { print("homes kept in \(root)") }
        print(
            "soak: \(rounds) rounds, \(soak.faultsFired) faults, \(soak.kills) kills, \(soak.overlaps) overlaps, "
                + "lost=\(findings.lost.count), dupes=\(findings.dupeCount), diverged=\(findings.diverged.count), "
                + "lost_edits=\(findings.lostEdits.count), restore_mismatches=\(findings.restoreMismatches.count), "
                + "restore_deleted_existing=\(findings.restoreDeletedExisting.count), "
                + "invented=\(findings.invented.count), untouched_written=\(findings.untouchedWritten.count), "
                + "pruned_past=\(findings.prunedPast.count)")
        if !findings.clean { throw ExitCode.failure }
    }
}

extension IvySoakCommand {
    /// Runs `body` with a scratch directory of its own (NAME-SEED-UUID in the temporary
    /// directory) and an emulator of the run's seed, then stops the emulator and removes the
    /// directory (unless --keep), whether `body` threw or not; SIGINT or SIGTERM stop it in
    /// order, and exit 130.
    func withRun<T>(named name: String, _ body: (_ root: String, _ emulator: GoogleEmulator) async throws -> T)
        async throws -> T
    {
        let root = FileManager.default.temporaryDirectory
            .appendingPathComponent("\(name)-\(seed)-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        let cleanup = Cleanup(root: keep ? nil : root)
        let signals = cleanup.onSignals()
        defer { withExtendedLifetime(signals) {} }
        let emulator: GoogleEmulator
        do {
            // The run's seed makes the emulator's ids, tokens and fault draws too.
            emulator = try await GoogleEmulator.start(seed: seed, tls: !plainHTTP)
        } catch {
            cleanup.removeFiles()
            throw error
        }
        let outcome: Result<T, any Error>
        do {
            outcome = .success(try await body(root, emulator))
        } catch {
            outcome = .failure(error)
        }
        await emulator.stop()
        cleanup.removeFiles()
        if case .failure = outcome, ChildRegistry.isStopping { throw ExitCode(130) }
        return try outcome.get()
    }
}

/// Removes the run's temporary homes (unless kept), and turns Ctrl-C or SIGTERM into an
/// orderly stop, so nothing the soak started outlives it.
final class Cleanup: Sendable {
    let root: String?

    init(root: String?) { self.root = root }

    func removeFiles() {
        if let root { try? FileManager.default.removeItem(atPath: root) }
    }

    /// Signal sources for SIGINT and SIGTERM; keep them alive as long as the run. The first
    /// signal kills the running `ivy` processes and lets the run unwind (no new process starts), so
    /// the emulator is stopped and the homes removed on the usual path; a second one exits
    /// at once.
    func onSignals() -> [any DispatchSourceSignal] {
        [SIGINT, SIGTERM].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { [self] in
                let again = ChildRegistry.isStopping
                ChildRegistry.stopAll()
                FileHandle.standardError.write(Data("ivy-soak: stopping (signal \(number))\n".utf8))
                if again {
                    removeFiles()
                    exit(128 + number)
                }
            }
            source.resume()
            return source
        }
    }
}

extension IvySoakCommand {
    /// `--crash-check`: the stories asked for, each crashed as asked; the summary line, each
    /// violation with the command that replays it, and exit 1 when there is any.
    func runCrashCheck(_ binary: URL) async throws {
        let options = CrashCheck.Options(
            seed: seed, ivy: binary, verbose: verbose, keep: keep, shrink: !noShrink,
            defect: ProcessInfo.processInfo.environment["IVY_TEST_DEFECT"])
        let started = ContinuousClock.now
        let (root, checker, stories, violations) = try await withRun(named: "ivy-crashcheck") { root, emulator in
            let checker = CrashCheck(options: options, root: root, emulator: emulator)
            var violations: [String] = []
            var stories = 0
            // Stories before --from's, counted in `story N/S` but not run.
            var skipped = 0
            try await checker.prepare()
            if let story {
                let operations = try StoryOperation.story(story)
                let crash = crashAt.flatMap(CrashPoints.parse).map { PlannedCrash(point: $0.point, count: $0.count) }
                stories = 1
                violations = try await checker.check(operations, crashes: crash.map { [$0] })
                for line in violations { print("violation: " + line) }
            } else {
                let chosen = all ? CrashCheck.allStories() : StoryOperation.allCases.map { [$0] }
                skipped = (from ?? 1) - 1
                stories = skipped
                for operations in chosen.dropFirst(skipped) {
                    stories += 1
                    let before = checker.crashes
                    let found = try await checker.check(operations, crashes: nil, firstOnly: !all)
                    // A long run says how far it got, and each violation as soon as it is found.
                    for line in found { print("violation: " + line) }
                    let story = operations.map(\.rawValue).joined(separator: ",")
                    print(
                        "crashcheck: story \(stories)/\(chosen.count) '\(story)': "
                            + "\(checker.crashes - before) crashes, \(found.count) violations, "
                            + "\((ContinuousClock.now - started).components.seconds) s so far")
                    fflush(nil)
                    violations += found
                }
            }
            return (root, checker, stories - skipped, violations)
        }
        if keep { print("homes kept in \(root)") }
        // Which points were crashed, for a test to hold against the list (`CrashCoverageTests`).
        print("crashcheck: crashed at: " + checker.pointsHit.map(\.rawValue).sorted().joined(separator: " "))
        print("crashcheck: \((ContinuousClock.now - started).components.seconds) s")
        print(
            "crashcheck: \(checker.pointsHit.count) points, \(stories) stories, \(checker.crashes) crashes, "
                + "violations=\(violations.count)")
        if !violations.isEmpty { throw ExitCode.failure }
    }
}
