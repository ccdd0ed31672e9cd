import Foundation
import IvyCommands
import IvyCore
import Synchronization

/// `TZ` as the C library reads it, which is what `TZ` means to every program on the machine:
/// a leading colon, a zone name (under `TZDIR`, else /usr/share/zoneinfo), a zone file's path,
/// or a POSIX rule (`EST5EDT,M3.2.0,M11.1.0`); unset, the system's zone; empty, UTC. glibc
/// reads anything else as UTC without a word, so ivy refuses it instead.
enum ProcessTimeZone {
    /// glibc keeps one zone for the process, set by `tzset`: one reader at a time.
    private static let lock = Mutex(())

    /// The zone `tz` names. The binary's context environment is its process's, so `tz` is
    /// the `TZ` glibc reads; were it not, Foundation reads the name.
    @Sendable static func zone(_ tz: String?) throws -> LocalZone {
        let own = getenv("TZ").map { String(cString: $0) }
        guard own == tz else { return try LocalZone.named(tz) }
        var value = tz ?? ""
        if value.hasPrefix(":") { value.removeFirst() }
        if let tz, !value.isEmpty, !isZoneFile(value), !POSIXTimeZoneRule.matches(value) {
            throw UnknownTimeZone(tz)
        }
        let name = tz == nil ? "the system's time zone" : value.isEmpty ? "UTC" : value
        return LocalZone(name: name) { seconds in
            lock.withLock { _ in
                tzset()
                var time = time_t(seconds)
                var parts = tm()
                guard localtime_r(&time, &parts) != nil else { return 0 }
                return Int(parts.tm_gmtoff)
            }
        }
    }

    /// Whether glibc finds a zone file (it starts `TZif`) for `value`.
    private static func isZoneFile(_ value: String) -> Bool {
        let directory = getenv("TZDIR").map { String(cString: $0) } ?? "/usr/share/zoneinfo"
        let path = value.hasPrefix("/") ? value : directory + "/" + value
        guard let handle = FileHandle(forReadingAtPath: path) else { return false }
        defer { try? handle.close() }
        return (try? handle.read(upToCount: 4)) == Data("TZif".utf8)
    }
}
