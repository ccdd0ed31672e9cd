import Foundation

/// Where a sync stands, for the live progress line: operations finished of those planned,
/// and MP3 bytes moved of those expected. No clock: the rate is the meter's.
package struct SyncProgress: Sendable, Equatable {
    package var phase: String
    package var done: Int
    package var total: Int
    package var bytesDone: Int64
    package var bytesTotal: Int64
    /// Operations started and not finished, and the MP3 bytes they still expect to move: what
    /// a first Ctrl-C waits for.
    package var inFlight: Int
    package var inFlightBytesLeft: Int64

    package init(
        phase: String, done: Int = 0, total: Int = 0, bytesDone: Int64 = 0, bytesTotal: Int64 = 0,
        inFlight: Int = 0, inFlightBytesLeft: Int64 = 0
    ) {
        self.phase = phase
        self.done = done
        self.total = total
        self.bytesDone = bytesDone
        self.bytesTotal = bytesTotal
        self.inFlight = inFlight
        self.inFlightBytesLeft = inFlightBytesLeft
    }

    /// The last operation finished: the line that must be drawn, however soon after the one before.
    package var isLast: Bool { total > 0 && done >= total }

    /// What a first Ctrl-C waits for, said while it waits: `stopping: waiting for the 3
    /// operations in flight (12.3 MiB to move); interrupt again to stop at once`.
    package var stoppingText: String {
        let again = "; interrupt again to stop at once"
        guard inFlight > 0 else { return "stopping: the operations in flight finish first" + again }
        let bytes = inFlightBytesLeft > 0 ? " (\(ProgressReading.size(inFlightBytesLeft)) to move)" : ""
        let operations = inFlight == 1 ? "the operation" : "the \(inFlight) operations"
        return "stopping: waiting for \(operations) in flight\(bytes), none started after them" + again
    }
}

/// Decides when the progress line is redrawn and with what rate, from the times it is given:
/// at most ten redraws a second (a terminal is slow, and the eye no quicker), except a new
/// phase and the last operation, which are always drawn. The rate is the bytes moved over
/// the last five seconds or so, known once the readings span a second.
package struct ProgressMeter: Sendable {
    package static let redrawInterval: Milliseconds = 100
    package static let window: Milliseconds = 5000
    package static let shortestSpan: Milliseconds = 1000

    /// Bytes done at the times the line was drawn in this phase, oldest first: the newest one
    /// from before the window, then those inside it.
    private var readings: [(time: Milliseconds, bytes: Int64)] = []
    private var drawnAt: Milliseconds?
    private var phase: String?

    package init() {}

    /// The line to draw for `progress` at `now`, or nil when the last one drawn stands for now.
    package mutating func update(_ progress: SyncProgress, now: Milliseconds) -> ProgressReading? {
        let newPhase = progress.phase != phase
        // A clock that stepped back starts the readings again rather than dividing by a negative
        // span; so do bytes done that dropped (a tally told so), rather than a negative rate.
        let steppedBack = readings.last.map { now < $0.time || progress.bytesDone < $0.bytes } ?? false
        if newPhase || steppedBack { readings = [] }
        if !newPhase, !progress.isLast, let drawnAt, now >= drawnAt, now - drawnAt < Self.redrawInterval {
            return nil
        }
        phase = progress.phase
        drawnAt = now
        readings.append((now, progress.bytesDone))
        while readings.count > 2, readings[1].time <= now - Self.window { readings.removeFirst() }
        return ProgressReading(progress: progress, bytesPerSecond: rate())
    }

    private func rate() -> Double? {
        guard let first = readings.first, let last = readings.last, last.time - first.time >= Self.shortestSpan
        else { return nil }
        return Double(max(0, last.bytes - first.bytes)) * 1000 / Double(last.time - first.time)
    }
}

/// One drawing of the progress line: where the sync stands and how fast bytes move, if known.
package struct ProgressReading: Sendable, Equatable {
    package var progress: SyncProgress
    package var bytesPerSecond: Double?

    package init(progress: SyncProgress, bytesPerSecond: Double?) {
        self.progress = progress
        self.bytesPerSecond = bytesPerSecond
    }

    /// `syncing 12 / 40 items, 12.3 MiB / 40.0 MiB, 31%, 2.10 MiB/s, ETA 13s`, as rclone's
    /// `--progress` says it, on one line narrower than `width` (the cursor never reaches the
    /// last column, where some terminals wrap): the last parts are left off first.
    package func text(width: Int) -> String {
        let progress = progress
        guard progress.total > 0 || progress.done > 0 else { return Self.fitted([progress.phase], width: width) }
        var parts = ["\(progress.phase) \(progress.done) / \(progress.total) items"]
        if progress.bytesTotal > 0 {
            parts.append("\(Self.size(progress.bytesDone)) / \(Self.size(progress.bytesTotal))")
            parts.append("\(min(100, progress.bytesDone * 100 / progress.bytesTotal))%")
            if let rate = bytesPerSecond {
                parts.append(Self.size(Int64(rate.rounded())) + "/s")
                parts.append("ETA " + eta(rate))
            }
        }
        return Self.fitted(parts, width: width)
    }

    /// What is left at `rate`; "-" while nothing moves.
    private func eta(_ rate: Double) -> String {
        let left = max(0, progress.bytesTotal - progress.bytesDone)
        if left == 0 { return "0s" }
        guard rate >= 1 else { return "-" }
        return Self.duration(seconds: (Double(left) / rate).rounded(.up))
    }

    /// Binary units, as rclone's: `900 B`, `1.23 KiB`, `12.3 MiB`, `123 GiB`.
    package static func size(_ bytes: Int64) -> String {
        guard bytes >= 1024 else { return "\(max(0, bytes)) B" }
        var value = Double(bytes)
        var unit = 0
        let units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"]
        while value >= 1024, unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        let digits = value < 10 ? 2 : value < 100 ? 1 : 0
        return String(format: "%.\(digits)f", value) + " " + units[unit]
    }

    /// `13s`, `1m5s`, `2h3m`: seconds go once there are hours.
    package static func duration(seconds: Double) -> String {
        let total = Int(min(seconds, 1e9))
        let hours = total / 3600
        let minutes = total % 3600 / 60
        let rest = total % 60
        if hours > 0 { return "\(hours)h\(minutes)m" }
        if minutes > 0 { return "\(minutes)m\(rest)s" }
        return "\(rest)s"
    }

    /// The parts joined by commas, the last ones left off until the line is under `width`
    /// columns; a first part still too long is cut. ASCII only, so a character is a column.
    static func fitted(_ parts: [String], width: Int) -> String {
        let room = max(0, width - 1)
        var parts = parts
        while parts.count > 1, parts.joined(separator: ", ").count > room { parts.removeLast() }
        return String(parts.joined(separator: ", ").prefix(room))
    }
}
