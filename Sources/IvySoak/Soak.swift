import Foundation
import GoogleEmulator
import IvyCore

/// What a run is asked to do.
struct SoakOptions: Sendable {
    var seed: UInt64
    var rounds: Int
    var ivy: URL
    var verbose: Bool
    var faults: [FaultKind]
    var keep: Bool
}

/// The soak: three ivy installs and the phone app edit one Drive for a number of rounds,
/// with faults and kills; then everyone syncs until nothing changes, and the checker looks.
final class Soak {
    static let email = "alice@example.com"
    static let maximumPasses = 10
    /// Five-second waits for files missing on Drive to come back or be restored (each
    /// device's grace is `replaceGrace`).
    static let graceWaits = 16
    /// Each device's `replace_grace`, in seconds.
    static let replaceGrace = 5

    let options: SoakOptions
    let root: String
    private let emulator: GoogleEmulator
    private let devices: [Device]
    private let app: PhoneApp
    private var ledger = Ledger()
    private(set) var faultsFired = 0
    private(set) var kills = 0
    private(set) var overlaps = 0
    private let started = ContinuousClock.now
    /// Moments at which the soak read every device's library: copies of the devices are
    /// restored to them now and then, and at the end (`RestoreCheck`).
    private var moments: [Moment] = []
    /// What the restore checks and the two oracles found so far.
    private var restoreFindings = RestoreFindings()
    private var oracles = Oracles()
    private var pastKept = PastKept(started: Device.realNow())
    /// The device whose first sync comes some rounds in (`joinRound`).
    private var lateJoiner: Device { devices[3] }
    let joinRound: Int
    /// The device whose clock runs `steppedAhead` ahead for the rounds `aheadRounds`, then
    /// steps back to the right time.
    private var steppedClock: Device { devices[2] }
    let aheadRounds: Range<Int>
    static let steppedAhead: Int64 = 2 * 86_400_000
    /// The device whose clock runs `farAhead` ahead from `farRound` to the end.
    private var fastClock: Device { devices[1] }
    let farRound: Int
    static let farAhead: Int64 = 20 * 3_600_000
    /// The device that makes one command with its clock `yearAhead` ahead, in `yearRound`.
    private var yearDevice: Device { devices[0] }
    let yearRound: Int
    static let yearAhead: Int64 = 400 * 86_400_000
    /// How far back a moment can be and still be restored exactly: history keeps every
    /// version of the last hour (counted back from the newest not in the future), then one an
    /// hour; the margin is for the time a round takes.
    static let exactSpan: Int64 = 50 * 60 * 1000
    /// How long a recording of every library lasts at least (ms): the moment is its middle, so
    /// nothing is written within half of it either side, more than a time ivy records can be
    /// off Google's (half the range an answer's whole-second `Date` leaves, narrowed by more).
    static let momentRoom: Int64 = 2_400

    private var state: EmulatorState { emulator.state }

    /// Starts the emulator and signs three devices in through `ivy login`.
    init(options: SoakOptions, root: String, emulator: GoogleEmulator) async throws {
        self.options = options
        self.root = root
        self.emulator = emulator
        await emulator.state.setDeviceCode(interval: 0)
        joinRound = max(2, options.rounds / 4 + 1)
        let aheadFrom = max(2, options.rounds / 3)
        aheadRounds = aheadFrom..<max(aheadFrom + 1, options.rounds * 2 / 3)
        farRound = max(2, options.rounds / 5)
        yearRound = max(3, options.rounds * 4 / 5)
        devices = try ["a", "b", "c", "d"].map {
            try Device(
                name: $0, root: root, binary: options.ivy, emulator: emulator.baseURL, caFile: emulator.caFile)
        }
        app = PhoneApp(state: emulator.state, email: Self.email)
        var setup = SplitMix64.stream(seed: options.seed, round: 0, .setup)
        // Small list pages in some runs: a listing then takes many requests, and a fault can
        // cut it short part way (an incomplete listing must never delete anything locally).
        let pageSize = setup.pick([7, 50, 1000]) ?? 1000
        await emulator.state.setPageSizeCap(pageSize)
        log("Drive list pages of at most \(pageSize) files")
        for device in devices {
            try await device.login(emulator.state, email: Self.email)
            // Different request concurrency per device: more interleavings of the same plan.
            let concurrency = setup.pick([1, 2, 4, 8]) ?? 8
            try await command(device, ["config", "set", "concurrency", String(concurrency)])
            // A short grace for files missing on Drive: the final passes wait it out (so a soak
            // ends in seconds, not minutes), and gaps of the app's replaces can outlast it, so
            // files of one name made in them are resolved by content as well.
            try await command(device, ["config", "set", "replace_grace", String(Self.replaceGrace)])
            log("\(device.name): signed in, concurrency \(concurrency)")
        }
    }

    /// The rounds, the final syncs and the checks.
    func run() async throws -> Findings {
        log(
            "\(lateJoiner.name) first syncs in round \(joinRound); \(steppedClock.name)'s clock runs 2 days ahead "
                + "in rounds \(aheadRounds.lowerBound)...\(aheadRounds.upperBound - 1), then steps back; "
                + "\(fastClock.name)'s runs 20 hours ahead from round \(farRound); \(yearDevice.name) makes one "
                + "command 400 days ahead in round \(yearRound); each forgets Google's time as the clock jumps")
        for round in 1...max(1, options.rounds) { try await play(round) }
        if steppedClock.clockOffset != 0 { stepBack() }
        let converged = try await converge()
        var findings = try await check()
        try await finalRestores()
        findings.restoreMismatches = restoreFindings.mismatches
        findings.restoreDeletedExisting = restoreFindings.deletedExisting
        findings.invented = oracles.invented
        findings.untouchedWritten = oracles.untouchedWritten
        findings.prunedPast = pastKept.pruned
        if !converged {
            findings.diverged.append("diverged: no pass of \(Self.maximumPasses) syncs on every device was quiet")
        }
        return findings
    }

    // MARK: one round

    /// The devices that have joined by `round`.
    private func joined(_ round: Int) -> [Device] {
        devices.filter { $0 !== lateJoiner || round >= joinRound }
    }

    /// The stepped clock goes back to the real time.
    private func stepBack() {
        steppedClock.setClock(ahead: 0)
        log("\(steppedClock.name): clock steps back 2 days to the right time")
    }

    /// A device's clock jumps `offset` ahead, as after a reboot with a wrong clock: it
    /// forgets Google's time, so what it records until its next answer from Google is dated
    /// by its own clock (unsure); it makes an edit so, and a copy of it is restored under that
    /// clock. With `once`, only the edit runs ahead (the library read before it), and the clock
    /// is right again after it, as when a person set it wrong and back.
    private func jump(_ device: Device, ahead offset: Int64, round: Int, once: Bool = false) async throws {
        var random = SplitMix64.stream(seed: options.seed, round: round, .clock)
        try await device.forgetGoogleTime()
        let library = try await device.state(queue: false)
        device.setClock(ahead: offset)
        let what = offset >= 86_400_000 ? "\(offset / 86_400_000) days" : "\(offset / 3_600_000) hours"
        let done = try await edit(device, round: round, random: &random, library: library)
        let span = once ? " for one command" : ""
        log("r\(round) \(device.name): forgets Google's time; clock \(what) ahead\(span): \(done)")
        if once { device.setClock(ahead: 0) }
        try await restore(device, random: &random, label: "r\(round) unsure")
    }

    private func play(_ round: Int) async throws {
        if round == aheadRounds.lowerBound { try await jump(steppedClock, ahead: Self.steppedAhead, round: round) }
        if round == aheadRounds.upperBound { stepBack() }
        if round == farRound { try await jump(fastClock, ahead: Self.farAhead, round: round) }
        if round == yearRound { try await jump(yearDevice, ahead: Self.yearAhead, round: round, once: true) }
        if round == joinRound {
            log("r\(round) \(lateJoiner.name): joins: \(describe(try await recordedSync(lateJoiner, kill: nil)))")
        }
        let devices = joined(round)
        var edits = SplitMix64.stream(seed: options.seed, round: round, .edits)
        var appRandom = SplitMix64.stream(seed: options.seed, round: round, .app)
        var faultRandom = SplitMix64.stream(seed: options.seed, round: round, .faults)
        var killRandom = SplitMix64.stream(seed: options.seed, round: round, .kill)
        let drawn = PlannedFault.draw(&faultRandom, kinds: options.faults)
        let kill = KillPlan.draw(&killRandom)
        // Who acts is drawn before any draw that depends on the library's state.
        let device = devices[edits.below(devices.count)]
        let editCount = edits.int(in: 1...3)
        let others = devices.filter { $0 !== device }
        let bystander = edits.chance(0.3) ? others[edits.below(others.count)] : nil
        var overlapRandom = SplitMix64.stream(seed: options.seed, round: round, .overlap)
        var overlap = Overlap.draw(&overlapRandom, round: round, others: others.count)
        // Not before ivy's folders are on Drive: two first syncs at once make twin folders,
        // which the checker counts as dupes; overlaps are here for the files in them.
        let drive = await DriveView(state: state, email: Self.email)
        if drive.booksFolders.isEmpty || drive.clipsFolders.isEmpty { overlap = nil }

        if overlap == nil {
            // The app writes first, so the device's sync meets its changes along with its own.
            for line in await app.act(round: round, random: &appRandom, ledger: &ledger) { log("r\(round) \(line)") }
        }
        for _ in 0..<editCount {
            log("r\(round) \(device.name): " + (try await edit(device, round: round, random: &edits)))
        }
        let partner = overlap?.partner.map { others[$0] }
        if let partner, let overlap {
            for _ in 0..<overlap.partnerEdits {
                log("r\(round) \(partner.name): " + (try await edit(partner, round: round, random: &overlapRandom)))
            }
        }

        // Under libfaketime a timed wait (a retry's back-off, Retry-After, an HTTP timeout of a
        // cut-off connection) can last as long as the clock is ahead, with no thread left
        // but dispatch's manager (seeds 61 and 7: 403 and 429 with Retry-After: 1 on b, 20 hours
        // ahead), where a real clock ahead waits a second. A sync on a faked clock gets only the
        // faults that need no wait: slow answers and a 400.
        let faked = device.clockOffset != 0 || (partner?.clockOffset ?? 0) != 0
        let faults = faked ? drawn.filter { $0.kind == .slow || $0.kind == .badRequest } : drawn
        for fault in faults { await state.addFault(fault.rule) }
        await state.clearRequests()
        let outcome: Outcome
        if let overlap {
            outcome = try await overlapping(
                device, partner: partner, kill: kill, overlap, round: round, app: &appRandom)
        } else {
            outcome = try await recordedSync(device, kill: kill)
        }
        let fired = await state.faultsFired
        await state.clearFaults()
        faultsFired += fired
        if outcome.killed { kills += 1 }
        var plan = faults.map(\.description)
        if let kill { plan.append(kill.description) }
        let planText = plan.isEmpty ? "" : " [\(plan.joined(separator: "; ")); \(fired) fired]"
        log("r\(round) \(device.name): sync\(planText): \(describe(outcome))")
        if outcome.killed, faults.contains(where: { $0.kind == .slow }) {
            // A request held back by a delay fault may still be answered after its client
            // died; let it land before anyone lists, as Drive would finish it too.
            try await Task.sleep(for: .milliseconds(1_600))
        }

        // Now and then another device syncs in between, without trouble.
        if let bystander {
            log("r\(round) \(bystander.name): sync: \(describe(try await recordedSync(bystander, kill: nil)))")
        }
        // Now and then, once nothing runs, every device's library is recorded (and looked at
        // by the oracles), and now and then a copy of a device is restored to a moment.
        var restoreRandom = SplitMix64.stream(seed: options.seed, round: round, .restore)
        if overlap == nil, restoreRandom.chance(0.3) { try await record(round) }
        if overlap == nil, restoreRandom.chance(0.15) {
            let candidates = joined(round)
            if let device = restoreRandom.pick(candidates) {
                try await restore(device, random: &restoreRandom, label: "r\(round)")
            }
        }
    }

    /// Reads every device's library now, runs the oracles over them, and keeps them as a
    /// moment (Google's time: the real time in the middle of the reading, `momentRoom`) for the
    /// devices whose history can name it exactly (`Moment`).
    private func record(_ round: Int) async throws {
        let started = Device.realNow()
        var moment = Moment(number: moments.count + 1, round: round)
        var states: [(name: String, state: DeviceState)] = []
        var looks: [(device: Device, held: DeviceState, versions: [JSON], uncertainty: Int64?)] = []
        for device in devices {
            let held = try await device.state(queue: false)
            states.append((device.name, held))
            var versions: [JSON] = []
            if round >= joinRound || device !== lateJoiner {
                versions = try await device.list(["history", "--json"])
                oracles.observe(device.name, versions: versions, ledger: ledger, label: "r\(round)")
                pastKept.observe(
                    device.name, versions: versions, holds: held, at: Device.realNow(), ledger: ledger,
                    label: "r\(round)")
            }
            looks.append((device, held, versions, try await device.googleTimeUncertainty()))
        }
        oracles.lookForInvented(states, ledger: ledger, label: "r\(round)")
        oracles.observeDrive(await DriveView(state: state, email: Self.email), ledger: ledger, label: "r\(round)")
        // Time passing is what is waited for: the moment needs room on both sides.
        let spent = Device.realNow() - started
        if spent < Self.momentRoom { try await Task.sleep(for: .milliseconds(Self.momentRoom - spent)) }
        let room = (Device.realNow() - started) / 2
        moment.at = started + room
        var skipped: [String] = []
        for look in looks {
            // A device that knows Google's time only roughly may date a version on the other
            // side of the moment.
            if let uncertainty = look.uncertainty, uncertainty + 200 >= room {
                skipped.append("\(look.device.name) (Google's time known to ±\(uncertainty) ms)")
                continue
            }
            // The newest version dated after the moment by the device's own clock (ahead and
            // unsure): the moment's place in its order of changes is before it, and before
            // whatever else came after the last version dated earlier.
            var newest: JSON?
            for version in look.versions where version["version"]?.number ?? -1 > newest?["version"]?.number ?? -1 {
                newest = version
            }
            if let newest, newest["clock"]?.string == "device", let time = newest["time"]?.string.flatMap(Self.time),
                time > moment.at
            {
                skipped.append("\(look.device.name) (its newest version is dated ahead: \(newest["time"]?.text ?? ""))")
                continue
            }
            moment.held[look.device.name] = (look.held, Self.tombstones(look.versions))
        }
        moments.append(moment)
        let note = skipped.isEmpty ? "" : "; not restorable exactly on " + skipped.joined(separator: ", ")
        log("r\(round) libraries recorded (moment \(moments.count)) for the restore checks and the oracles\(note)")
    }

    /// The entities whose newest version in `versions` (`ivy history --json`) is a deletion.
    private static func tombstones(_ versions: [JSON]) -> Set<String> {
        var newest: [String: (number: Double, deleted: Bool)] = [:]
        for version in versions {
            guard let id = version["entity_id"]?.string, let number = version["version"]?.number else { continue }
            if number > newest[id]?.number ?? -1 { newest[id] = (number, version["deleted"]?.bool == true) }
        }
        return Set(newest.filter(\.value.deleted).keys)
    }

    /// An RFC 3339 time as `ivy history --json` prints it, in ms.
    private static func time(_ text: String) -> Int64? {
        ISO8601DateFormatter().date(from: text).map { Int64(($0.timeIntervalSince1970 * 1000).rounded()) }
    }

    /// Restores a copy of `device` to a random moment it can be restored to exactly (see
    /// `Moment`), the whole library or, now and then, one or two of its books and clips, under
    /// the device's clock, and compares (`RestoreCheck`). The moment is Google's time; one
    /// less than a second ago is not taken, as a device's idea of Google's time may be behind.
    private func restore(_ device: Device, random: inout SplitMix64, label: String, earliest: Bool = false)
        async throws
    {
        let now = Device.realNow()
        let usable = moments.filter { moment in
            moment.held[device.name] != nil && moment.at >= now - Self.exactSpan && moment.at < now - 1_000
        }
        guard let moment = earliest ? usable.first : random.pick(usable), let held = moment.held[device.name] else {
            return
        }
        restoreFindings.checks += 1
        let copy = try device.copy(as: device.name + "-restored-\(restoreFindings.checks)")
        defer { try? FileManager.default.removeItem(atPath: copy.home) }
        let before = try await copy.state(queue: false)
        var named: [String]?
        if !earliest, random.chance(0.4) {
            let ids = ledger.ordered(
                Set(held.state.books.keys).union(held.state.clips.keys).union(before.books.keys)
                    .union(before.clips.keys))
            if let first = random.pick(ids) {
                named = [first]
                if random.chance(0.5), let second = random.pick(ids), second != first { named?.append(second) }
            }
        }
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let when = formatter.string(from: Date(timeIntervalSince1970: Double(moment.at) / 1000))
        let outcome = try await copy.run(["restore", "--at", when, "--yes"] + (named ?? []), limit: .seconds(120))
        let joinedThen = moment.round >= joinRound || device !== lateJoiner
        let what = named.map { $0.map(ledger.tag).joined(separator: " and ") } ?? "the whole library"
        log(
            "\(label) restore check: \(what) on a copy of \(device.name) to moment \(moment.number) "
                + "(r\(moment.round), \(when)\(joinedThen ? "" : ", before it joined")): \(outcome.brief)")
        if outcome.status != 0 {
            // Exit 5 is a clip skipped (its MP3 of then not kept): the rest is still compared.
            let text = (outcome.stdout + outcome.stderr).replacingOccurrences(of: "\n", with: " | ")
            restoreFindings.mismatches.append(
                "restore mismatch: ivy restore --at \(when) \((named ?? []).joined(separator: " ")) on a copy of "
                    + "\(device.name) (\(label)): \(outcome.brief): \(text.prefix(600))")
            guard outcome.status == 5 else { return }
        }
        let after = try await copy.state(queue: false)
        let check = RestoreCheck(
            device: device.name, label: label, when: moment.at, named: named, recorded: held.state,
            tombstoned: held.tombstoned, before: before, after: after, ledger: ledger)
        restoreFindings.mismatches += check.mismatches
        restoreFindings.deletedExisting += check.deletedExisting
    }

    /// At the end: a copy of each device to a random moment, and the late joiner to its
    /// earliest (before it joined, when the soak has one).
    private func finalRestores() async throws {
        var random = SplitMix64.stream(seed: options.seed, round: 0, .restore)
        for device in devices { try await restore(device, random: &random, label: "end") }
        try await restore(lateJoiner, random: &random, label: "end", earliest: true)
        log("restore checks: \(restoreFindings.checks)")
    }

    /// A round whose syncs overlap: the device's sync (faults and kill as planned) and, most
    /// of the time, another device's sync or a bounded `ivy sync --watch` start together,
    /// each after a short drawn delay, while the app writes with a gap in each replace. A sync
    /// that lists Drive in such a gap finds the file missing; whatever it does then must not
    /// cost anyone's edit.
    private func overlapping(
        _ device: Device, partner: Device?, kill: KillPlan?, _ overlap: Overlap, round: Int,
        app random: inout SplitMix64
    ) async throws -> Outcome {
        overlaps += 1
        let state = self.state
        let mark = ledger.syncStarting(device.name)
        let partnerMark = partner.map { ledger.syncStarting($0.name) }
        let watch = overlap.watch
        log("r\(round) overlap: \(overlap.description(device: device.name, partner: partner?.name))")
        await state.setLatency(milliseconds: overlap.latency)
        async let mine = Self.sync(device, state: state, kill: kill, after: overlap.delay)
        async let theirs = Self.partnerRun(partner, state: state, after: overlap.partnerDelay, watch: watch)
        for line in await app.act(round: round, random: &random, ledger: &ledger, eager: true, gap: overlap.gap) {
            log("r\(round) \(line)")
        }
        let outcome = try await mine
        let partnerOutcome = try await theirs
        await state.setLatency(milliseconds: 0)
        // Neither sync ran alone, so neither teaches the model anything; they can still
        // settle a creation (a clean one wrote its manifest), and a watch is never counted
        // clean: what its syncs did is not known here.
        ledger.syncEnded(mark, clean: outcome.clean, alone: false)
        if let partner, let partnerMark, let partnerOutcome {
            ledger.syncEnded(partnerMark, clean: watch == nil && partnerOutcome.clean, alone: false)
            let what = watch == nil ? "sync" : "watch"
            let text = watch == nil ? describe(partnerOutcome) : Self.describeWatch(partnerOutcome)
            log("r\(round) \(partner.name): \(what) (overlapping): \(text)")
        }
        return outcome
    }

    /// The partner's side of an overlap: a one-shot sync, or a watch stopped by SIGTERM.
    private static func partnerRun(
        _ partner: Device?, state: EmulatorState, after delay: Duration, watch: Duration?
    ) async throws -> Outcome? {
        guard let partner else { return nil }
        guard let watch else { return try await sync(partner, state: state, kill: nil, after: delay) }
        try await Task.sleep(for: delay)
        return try await partner.run(
            ["sync", "--watch", "--interval", "2", "--json"], limit: watch + .seconds(120), stopAfter: watch)
    }

    /// A watch's lines: how many syncs it made, and how it ended.
    private static func describeWatch(_ outcome: Outcome) -> String {
        let events = outcome.stdout.split(separator: "\n").compactMap { JSON.parse(Data($0.utf8))?["event"]?.string }
        let syncs = events.filter { $0 == "sync" }.count
        let failed = events.filter { $0 == "failed" }.count
        return "\(syncs) syncs, \(failed) failed, \(outcome.brief)"
    }

    /// One random change through the CLI on `device`; returns what it did.
    private func edit(
        _ device: Device, round: Int, random: inout SplitMix64, library read: DeviceState? = nil
    ) async throws -> String {
        let library: DeviceState
        if let read { library = read } else { library = try await device.state(queue: false) }
        let books = ledger.ordered(library.books.keys)
        let hidden = books.filter { library.books[$0]?["hidden"]?.bool == true }
        let clips = ledger.ordered(library.clips.keys)
        // Weights: add, update, archive, unarchive a book; add, update, delete a clip.
        var choice = books.isEmpty ? 0 : random.weighted([2, 4, 1, 1, 3, 4, 1]) ?? 0
        if choice == 3, hidden.isEmpty { choice = 1 }
        if choice >= 5, clips.isEmpty { choice = 4 }
        switch choice {
        case 1:
            guard let id = random.pick(books) else { break }
            var arguments = ["book", "update", id]
            if random.chance(0.4) { arguments += ["--title", "\(random.pick(words) ?? "Book") r\(round)"] }
            if random.chance(0.3) { arguments += ["--artist", random.chance(0.2) ? "" : random.pick(artists) ?? ""] }
            if random.chance(0.15) {
                arguments += ["--artwork", random.chance(0.3) ? "" : "https://covers.example/\(random.below(100)).jpg"]
            }
            if arguments.count == 3 || random.chance(0.5) { arguments += ["--position", seconds(&random)] }
            try await command(device, arguments)
            ledger.deviceWrote(device.name, id, .book, fields: Self.written(arguments.dropFirst(3)), round: round)
            return "book update \(ledger.tag(id)) \(arguments.dropFirst(3).joined(separator: " "))"
        case 2, 3:
            guard let id = random.pick(choice == 2 ? books : hidden) else { break }
            let verb = choice == 2 ? "archive" : "unarchive"
            try await command(device, ["book", verb, id])
            ledger.deviceWrote(device.name, id, .book, fields: ["hidden": .bool(choice == 2)], round: round)
            return "book \(verb) \(ledger.tag(id))"
        case 4:
            guard let book = random.pick(books) else { break }
            let audio = try incoming(&random)
            defer { try? FileManager.default.removeItem(atPath: audio) }
            var arguments = [
                "clip", "add", "--book", book, "--start", seconds(&random), "--duration",
                String(random.int(in: 1...120)), "--audio", audio,
            ]
            if random.chance(0.6) { arguments += ["--note", phrase(&random, round: round, by: device.name)] }
            if random.chance(0.2) { arguments += ["--transcription", phrase(&random, round: round, by: "heard")] }
            let started = Device.realNow()
            let id = try await command(device, arguments)
            try await made(id, .clip, on: device, round: round, from: started)
            if let data = FileManager.default.contents(atPath: audio) { ledger.wroteAudio(id, data) }
            let fields = Self.written(arguments.dropFirst(2)).merging(["note": .null, "transcription": .null]) {
                mine, _ in mine
            }
            ledger.deviceWrote(device.name, id, .clip, fields: fields, round: round, creation: true)
            return "clip add \(ledger.tag(id)) to book \(ledger.tag(book))"
        case 5:
            guard let id = random.pick(clips) else { break }
            var arguments = ["clip", "update", id]
            var audio: String?
            if random.chance(0.5) {
                arguments += ["--note", random.chance(0.1) ? "" : phrase(&random, round: round, by: device.name)]
            }
            if random.chance(0.3) { arguments += ["--start", seconds(&random)] }
            if random.chance(0.2) { arguments += ["--duration", String(random.int(in: 1...120))] }
            if random.chance(0.15) {
                arguments += ["--transcription", random.chance(0.2) ? "" : phrase(&random, round: round, by: "heard")]
            }
            if arguments.count == 3 || random.chance(0.2) {
                let file = try incoming(&random)
                audio = file
                arguments += ["--audio", file]
            }
            defer { if let audio { try? FileManager.default.removeItem(atPath: audio) } }
            try await command(device, arguments)
            if let audio, let data = FileManager.default.contents(atPath: audio) { ledger.wroteAudio(id, data) }
            ledger.deviceWrote(device.name, id, .clip, fields: Self.written(arguments.dropFirst(3)), round: round)
            let shown = arguments.dropFirst(3).map { $0.hasPrefix(root) ? "FILE" : $0 }.joined(separator: " ")
            return "clip update \(ledger.tag(id)) " + shown.replacingOccurrences(of: "\n", with: "\\n")
        case 6:
            guard let id = random.pick(clips) else { break }
            try await command(device, ["clip", "delete", id])
            ledger.deletedClip(id, by: device.name)
            return "clip delete \(ledger.tag(id))"
        default:
            break
        }
        var arguments = ["book", "add", "--title", "\(random.pick(words) ?? "Book") r\(round)"]
        if random.chance(0.5) { arguments += ["--artist", random.pick(artists) ?? ""] }
        if random.chance(0.5) { arguments += ["--position", seconds(&random)] }
        let started = Device.realNow()
        let id = try await command(device, arguments)
        try await made(id, .book, on: device, round: round, from: started)
        let defaults: [String: JSON] = [
            "artist": .null, "artwork": .null, "position": .number(0), "hidden": .bool(false),
        ]
        let fields = Self.written(arguments.dropFirst(2)).merging(defaults) { mine, _ in mine }
        ledger.deviceWrote(device.name, id, .book, fields: fields, round: round, creation: true)
        return "book add \(ledger.tag(id))"
    }

    /// Records in the ledger an entity a command on `device` that started at `started` made.
    private func made(_ id: String, _ kind: Ledger.Kind, on device: Device, round: Int, from started: Int64)
        async throws
    {
        let ended = Device.realNow()
        let stamps = device.stamps(from: started, to: ended, uncertainty: try await device.googleTimeUncertainty())
        ledger.created(id, kind, origin: "round \(round) on \(device.name)", stamps: stamps, real: started...ended)
    }

    /// The fields a command's options write, as `book list --json` and `clip list --json`
    /// show them (an empty artist, artwork, note or transcription clears it).
    private static func written(_ options: ArraySlice<String>) -> [String: JSON] {
        var fields: [String: JSON] = [:]
        var index = options.startIndex
        while index + 1 < options.endIndex {
            let (option, value) = (options[index], options[index + 1])
            let name = String(option.dropFirst(2))
            switch option {
            case "--title": fields[name] = .string(value)
            case "--book": fields["book_id"] = .string(value)
            case "--artist", "--artwork", "--note", "--transcription":
                fields[name] = value.isEmpty ? .null : .string(value)
            case "--position", "--start", "--duration": fields[name] = Double(value).map(JSON.number) ?? .string(value)
            default: break
            }
            index += 2
        }
        return fields
    }

    /// Seconds as the CLI takes them: whole, or with a half.
    private func seconds(_ random: inout SplitMix64) -> String {
        let whole = random.below(36_000)
        return random.chance(0.3) ? "\(whole).5" : String(whole)
    }

    /// A generated MP3 for `clip add` / `clip update --audio`.
    private func incoming(_ random: inout SplitMix64) throws -> String {
        let path = root + "/incoming-\(UUID().uuidString).mp3"
        try mp3(&random).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// Runs a CLI command that must succeed; returns its first output line (an id for `add`).
    @discardableResult
    private func command(_ device: Device, _ arguments: [String]) async throws -> String {
        let outcome = try await device.run(arguments, limit: .seconds(60))
        guard outcome.status == 0 else {
            throw SoakError("ivy \(arguments.prefix(3).joined(separator: " ")) on \(device.name): \(outcome.brief)")
        }
        return outcome.stdout.split(separator: "\n").first.map(String.init) ?? ""
    }

    /// `ivy sync --json` run alone, recorded in the ledger's model of who has seen what.
    private func recordedSync(_ device: Device, kill: KillPlan?) async throws -> Outcome {
        let mark = ledger.syncStarting(device.name)
        let outcome = try await Self.sync(device, state: state, kill: kill)
        ledger.syncEnded(mark, clean: outcome.clean, alone: true, leftAlone: outcome.leftAlone)
        return outcome
    }

    /// `ivy sync --json` after `delay`, SIGKILLed as planned.
    private static func sync(
        _ device: Device, state: EmulatorState, kill: KillPlan?, after delay: Duration = .zero
    ) async throws -> Outcome {
        if delay > .zero { try await Task.sleep(for: delay) }
        let started = ContinuousClock.now
        let killWhen: (@Sendable () async -> Bool)? = kill.map { plan in
            switch plan {
            case .afterRequests(let count): { await state.requests.count >= count }
            case .afterMilliseconds(let milliseconds): { ContinuousClock.now - started >= .milliseconds(milliseconds) }
            }
        }
        // Under libfaketime a sync now and then waits for ever with no thread left but
        // dispatch's manager (seen with clocks 20 hours and 2 days ahead; never on a real
        // clock): it is killed after two minutes, which no sync there needs without the
        // cut-off connections, and said on stderr.
        let limit: Duration = device.clockOffset != 0 ? .seconds(120) : .seconds(600)
        let outcome = try await device.run(["sync", "--json"], limit: limit, killWhen: killWhen)
        if outcome.hung {
            FileHandle.standardError.write(
                Data("ivy-soak: HUNG: ivy sync on \(device.name) (clock \(device.clockOffset) ms ahead)\n".utf8))
        }
        return outcome
    }

    private func describe(_ outcome: Outcome) -> String {
        guard !outcome.killed, !outcome.hung, let report = outcome.json, report["uploaded"] != nil else {
            return outcome.brief
        }
        var parts: [String] = []
        for key in ["uploaded", "downloaded", "merged", "deleted_remote", "deleted_local"] {
            let count = Self.total(report[key])
            if count > 0 { parts.append("\(key.replacingOccurrences(of: "_", with: " ")) \(count)") }
        }
        for problem in report["failures"]?.objects ?? [] {
            parts.append("FAILED \(problem["entity"]?.string ?? "?"): \(problem["reason"]?.string ?? "?")")
        }
        for problem in report["held"]?.objects ?? [] {
            parts.append("held \(problem["entity"]?.string ?? "?"): \(problem["reason"]?.string ?? "?")")
        }
        for problem in report["skipped"]?.objects ?? [] {
            parts.append("skipped \(problem["entity"]?.string ?? "?"): \(problem["reason"]?.string ?? "?")")
        }
        if let conflicts = report["conflicts"]?.objects, !conflicts.isEmpty {
            parts.append("\(conflicts.count) conflicts")
        }
        if let held = report["deletions_held"]?.string { parts.append("deletions held: \(held)") }
        let requests = report["requests"]?.text ?? "?"
        let what = parts.isEmpty ? "nothing to do" : parts.joined(separator: ", ")
        return "exit \(outcome.status), \(what), \(requests) requests"
    }

    private static func total(_ count: JSON?) -> Int {
        Int(count?["books"]?.number ?? 0) + Int(count?["clips"]?.number ?? 0)
    }

    // MARK: the end

    /// Round-robin syncs with no faults until a whole pass changes nothing.
    ///
    /// A sync leaves a file missing on Drive alone for a grace period (another device may be
    /// between its delete and its create); a pass in which one waits is not quiet, and the
    /// next starts a few seconds later, for at most `graceWaits` such waits.
    private func converge() async throws -> Bool {
        var pass = 0
        var waits = 0
        while pass < Self.maximumPasses {
            pass += 1
            var quiet = true
            var waiting = false
            for device in devices {
                let outcome = try await recordedSync(device, kill: nil)
                log("final pass \(pass) \(device.name): sync: \(describe(outcome))")
                guard let report = outcome.json, outcome.status == 0 || outcome.status == 5 else {
                    quiet = false
                    continue
                }
                let moved =
                    ["uploaded", "downloaded", "merged", "deleted_remote", "deleted_local"]
                    .map { Self.total(report[$0]) }.reduce(0, +) + Int(report["stale_duplicates_deleted"]?.number ?? 0)
                if moved > 0 { quiet = false }
                let skips = report["skipped"]?.objects ?? []
                if skips.contains(where: { ($0["reason"]?.string ?? "").contains("missing on Drive") }) {
                    waiting = true
                }
            }
            if quiet, waiting, waits < Self.graceWaits {
                // Waiting out the grace is not a pass that failed to settle.
                waits += 1
                pass -= 1
                try await Task.sleep(for: .seconds(5))
                continue
            }
            if quiet { return true }
        }
        return false
    }

    private func check() async throws -> Findings {
        var states: [(name: String, state: DeviceState)] = []
        for device in devices {
            let held = try await device.state()
            states.append((device.name, held))
            let versions = try await device.list(["history", "--json"])
            oracles.observe(device.name, versions: versions, ledger: ledger, label: "end")
            pastKept.observe(
                device.name, versions: versions, holds: held, at: Device.realNow(), ledger: ledger, label: "end")
        }
        let drive = await DriveView(state: state, email: Self.email)
        oracles.lookForInvented(states, ledger: ledger, label: "end")
        oracles.observeDrive(drive, ledger: ledger, label: "end")
        return Checker.check(devices: states, drive: drive, ledger: ledger)
    }

    /// Verbose lines carry the seconds since the start, so slow rounds stand out.
    private func log(_ line: String) {
        guard options.verbose else { return }
        let elapsed = ContinuousClock.now - started
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        print(String(format: "%7.2f ", seconds) + line)
        fflush(nil)
    }
}
