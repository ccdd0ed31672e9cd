package import Foundation

/// The CPU time a process has used, from `/proc/PID/stat` (proc(5): `utime` and `stime`,
/// fields 14 and 15, in clock ticks, for all of its threads).
package enum ProcessCPU {
    /// User and system time of process `pid` so far, in seconds; nil once it is gone.
    package static func seconds(_ pid: pid_t) -> Double? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = text.lastIndex(of: ")")
        else { return nil }
        // After the command's name (in parentheses, which may hold spaces): field 3 on.
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// The share of one core process `pid` used over `window` of real time.
    package static func share(of pid: pid_t, over window: Duration) async throws -> Double? {
        let start = ContinuousClock.now
        guard let before = seconds(pid) else { return nil }
        try await Task.sleep(for: window)
        guard let after = seconds(pid) else { return nil }
        let elapsed = ContinuousClock.now - start
        return (after - before) / (elapsed / .seconds(1))
    }
}
