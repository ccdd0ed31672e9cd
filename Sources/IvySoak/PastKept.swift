import Foundation

/// `pruned_past=` on the summary line: no version that retention must keep was lost.
///
/// Retention keeps every version of the last hour, its ages counted back from the newest
/// version not dated in the future (ARCHITECTURE.md, "History"), and always each entity's
/// current version. At every look (each recorded moment and the end) the soak reads each
/// device's `ivy history --json`; a version first seen at a look was written after the look
/// before it (by Google's time, the soak's real time). Such a version that is missing at a
/// later look less than `span` after that earlier look was pruned though younger than an hour,
/// and so is the newest version of a book or clip the device holds, when it has none. The soak
/// runs in real time, so nearly every version is inside that span: a prune that took a clock
/// running days ahead for the time (the +400-day command) would show here. The ten minutes to
/// spare are for versions an unsure clock dated in the future, which retention ages as the
/// version not in the future written before them.
struct PastKept {
    static let span: Int64 = 50 * 60 * 1000
    var pruned: [String] = []
    /// Per device: each version number seen, with its entity and the real time it was
    /// written after.
    private var seen: [String: [Int: (entity: String, after: Int64)]] = [:]
    private var lastLook: [String: Int64] = [:]
    private var reported: Set<String> = []
    let started: Int64

    init(started: Int64) { self.started = started }

    /// One look at `device`'s history (`versions`) and what it holds (`holds`), at real
    /// time `now`.
    mutating func observe(
        _ device: String, versions: [JSON], holds: DeviceState, at now: Int64, ledger: Ledger, label: String
    ) {
        var present: [Int: String] = [:]
        var newest: [String: (number: Int, deleted: Bool)] = [:]
        for version in versions {
            guard let id = version["entity_id"]?.string, let number = version["version"]?.number.map(Int.init) else {
                continue
            }
            present[number] = id
            if number > newest[id]?.number ?? -1 { newest[id] = (number, version["deleted"]?.bool == true) }
        }
        var known = seen[device] ?? [:]
        for (number, version) in known.sorted(by: { $0.key < $1.key }) where present[number] == nil {
            known[number] = nil
            guard now - version.after < Self.span else { continue }
            let minutes = Double(now - version.after) / 60_000
            pruned.append(
                "pruned past: \(device) no longer keeps version \(number) of \(ledger.tag(version.entity)) "
                    + "(\(label)), written less than " + String(format: "%.1f", minutes) + " minutes before")
        }
        let after = lastLook[device] ?? started
        for (number, id) in present where known[number] == nil { known[number] = (id, after) }
        seen[device] = known
        lastLook[device] = now
        let held = ledger.ordered(Set(holds.books.keys).union(holds.clips.keys))
        for id in held where newest[id] == nil || newest[id]?.deleted == true {
            guard reported.insert("\(device) \(id)").inserted else { continue }
            pruned.append(
                "pruned past: \(device) holds \(ledger.tag(id)) but keeps "
                    + (newest[id] == nil ? "no version of it" : "a deletion as its newest version") + " (\(label))")
        }
    }
}
