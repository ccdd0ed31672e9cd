import ArgumentParser
import Foundation
import IvyCore
import IvyStore
import IvySync
import Logging

/// `ivy sync --watch`: the watch wired to this home, and what it shows. On a terminal one
/// status line, rewritten; with `--json` one JSON object per line; otherwise (a service's
/// journal) a line for each sync that changed something and for each problem.
struct SyncWatch {
    let home: Home
    let interval: Int
    let json: Bool
    let full: Bool
    /// `--quiet`: only problems. `--verbose`: a line for each operation too.
    var quiet = false
    var verbose = false

    func run() async throws {
        let library = try await home.library()
        let logger = try await home.logger(library)
        // Settings a watch cannot run without are errors now, not a retry every few minutes.
        _ = try home.endpoints()
        _ = try await home.credentials(library)
        let probe = try LocalChangeProbe(library)
        let stop = StopRequest()
        let display = WatchDisplay(
            output: home.output, terminal: home.terminal, json: json, interval: interval, clock: home.clock,
            zone: home.displayZone, quiet: quiet, verbose: verbose)
        home.context.interruptions { _ in
            if !stop.requested { display.stopping() }
            stop.request()
        }

        let steps: (@Sendable (SyncStep) -> Void)? = verbose ? { @Sendable step in display.step(step) } : nil
        let door = home.syncDoor(library, tokens: home.tokenStore(warn: { logger.warning("\($0)") }), logger: logger)
        let full = full
        let layers = Watch.layers()
        let maxInterval = try await library.number(.watchMaxInterval)
        let watch = Watch(
            interval: .seconds(interval), maxInterval: .seconds(maxInterval),
            timing: .system(), logger: logger,
            pending: { try await probe.pending(since: $0) },
            attempt: { memory, stop in
                try await door.sync(Watch.request(memory, full: full, steps: steps, stop: stop), through: layers)
            },
            events: { display.show($0) })
        display.started()
        let ended = await watch.run(until: stop)
        display.stopped()
        if let ended { throw WatchEnded(errorDescription: ended) }
    }

    /// Why a watch could not go on.
    struct WatchEnded: LocalizedError {
        let errorDescription: String?
    }
}

/// How a watch's events are shown.
struct WatchDisplay: Sendable {
    let output: Output
    let terminal: Terminal
    let json: Bool
    let interval: Int
    let clock: WallClock
    /// The zone of the times on a journal's lines (`TZ`'s; UTC when it cannot be read).
    let zone: LocalZone?
    var quiet = false
    var verbose = false

    /// A status line for a person at a terminal (on standard error, like a sync's progress);
    /// `--quiet` has none, only the problems.
    private var live: Bool { !json && !quiet && terminal.error }

    /// `--verbose`: one finished operation, with the time, above the status line.
    func step(_ step: SyncStep) {
        if live { output.errorText("\r\u{1B}[K") }
        output.step(step, prefix: "\(time()) ")
    }

    func started() {
        if quiet { return }
        let text = "watching: syncs here soon after a change, and checks Drive every \(interval) s; Ctrl-C stops"
        if live {
            status(text)
        } else if !json {
            output.line(text[text.startIndex].uppercased() + text.dropFirst())
        }
    }

    /// The first SIGINT or SIGTERM: what is in flight finishes; a second stops at once.
    func stopping() {
        let text = "stopping: the operations in flight finish first; interrupt again to stop at once"
        if quiet { return }
        if json {
            var object = WatchLine(time: Display.rfc3339(clock.now()))
            object.event = "stopping"
            encode(object)
        } else if live {
            status(text)
        } else {
            output.line(text[text.startIndex].uppercased() + text.dropFirst())
        }
    }

    func stopped() {
        if live { output.errorText("\r\u{1B}[K") }
        if !json && !quiet { output.line("Stopped watching.") }
    }

    func show(_ event: Watch.Event) {
        if json { return line(event) }
        switch event {
        case .synced(let report, _, let changed, _, _):
            let text = changed ? Display.safe(report.summary) : "up to date"
            if live { return status("\(timeOfDay()) \(text) · watching; Ctrl-C stops") }
            guard changed else { return }
            if !quiet { output.line("\(time()) \(text)") }
            if quiet { for problem in report.incompleteness { output.error("\(time()) \(problem)") } }
            // --verbose said each failure as it happened.
            if verbose { return }
            for failure in report.failures { output.error("\(time()) failed: \(failure.entity): \(failure.reason)") }
        case .failed(let message, _, let wait):
            let text = "sync failed: \(Display.safe(message)); trying again in \(wait.components.seconds) s"
            if live { return status("\(timeOfDay()) \(text)") }
            output.errorText("\(time()) \(text)\n")
        case .paused(let pause):
            if live { return status("\(timeOfDay()) \(Display.safe(pause.description))") }
            output.errorText("\(time()) \(Display.safe(pause.description))\n")
        case .resumed(let pause):
            if live { return status("\(timeOfDay()) \(pause.endDescription)") }
            if !quiet { output.line("\(time()) \(pause.endDescription)") }
        case .busy(let pid):
            if live { status("\(timeOfDay()) another sync is running\(pid.map { " (process \($0))" } ?? ""); waiting") }
        }
    }

    /// Rewrites the status line, cut to the terminal's width (in columns: a CJK title or an
    /// emoji takes two) so it never wraps.
    private func status(_ text: String) {
        let width = max(terminal.width - 1, 20)
        output.errorText("\r\u{1B}[K" + TerminalText.truncated(text, toWidth: width))
    }

    /// A journal line's time, whole (`Display.time`): it is read later, and may be copied into a
    /// `WHEN`.
    private func time() -> String { Display.time(clock.now(), zone: zone) }

    /// The status line's time of day: it is read as it is rewritten, and a terminal is narrow.
    private func timeOfDay() -> String { Display.clock(clock.now(), zone: zone) }

    /// One event as one line of JSON.
    private func line(_ event: Watch.Event) {
        var object = WatchLine(time: Display.rfc3339(clock.now()))
        switch event {
        case .synced(let report, let trigger, _, let retry, let nextPoll):
            object.event = "sync"
            object.trigger = trigger.rawValue
            object.report = report
            object.retryInS = retry?.components.seconds
            object.nextPollS = nextPoll.components.seconds
        case .failed(let message, let trigger, let wait):
            object.event = "failed"
            object.trigger = trigger.rawValue
            object.error = message
            object.retryInS = wait.components.seconds
        case .paused(let pause):
            object.event = "waiting"
            object.reason = pause.description
        case .resumed(let pause):
            object.event = "resumed"
            object.reason = pause.endDescription
        case .busy(let pid):
            object.event = "busy"
            object.reason = "another sync is running" + (pid.map { " (process \($0))" } ?? "")
        }
        encode(object)
    }

    private func encode(_ object: WatchLine) {
        guard let line = try? JSONOutput.text(object, oneLine: true) else { return }
        output.line(line)
    }
}

/// `ivy sync --watch --json`: one of these per line.
struct WatchLine: Encodable {
    var event = ""
    var time: String
    @Null var trigger: String?
    @Null var report: SyncReport?
    @Null var error: String?
    /// Seconds until the watch tries again (`retry_in_s`).
    @Null var retryInS: Int64?
    /// Seconds until the watch next looks at Drive (`next_poll_s`).
    @Null var nextPollS: Int64?
    @Null var reason: String?

    init(time: String) { self.time = time }
}
