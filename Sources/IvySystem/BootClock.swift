import Foundation

/// The machine's boot clock, which Google's time is carried by between answers: it counts
/// from boot (suspend included) and never steps, whatever NTP or a person does to the wall
/// clock (`GoogleTime`).
package enum BootClock {
    /// Milliseconds since boot (`CLOCK_BOOTTIME`).
    package static func milliseconds() -> Int64 {
        var time = timespec()
        clock_gettime(CLOCK_BOOTTIME, &time)
        return Int64(time.tv_sec) * 1000 + Int64(time.tv_nsec) / 1_000_000
    }

    /// This boot's id (Linux's `/proc/sys/kernel/random/boot_id`): a boot clock reading means
    /// nothing in another boot. Empty when it cannot be read, and then no two runs share one.
    package static func bootID() -> String {
        guard let text = try? String(contentsOfFile: "/proc/sys/kernel/random/boot_id", encoding: .utf8) else {
            return ""
        }
        return text.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
