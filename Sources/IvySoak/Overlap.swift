import IvyCore

/// How a round's syncs overlap: drawn from the round's own stream, so it never shifts what
/// the edits, the app, the faults or the kill draw.
struct Overlap: Sendable {
    /// Which of the other devices runs beside the device (an index), if any.
    var partner: Int?
    /// Edits the partner makes first, so that it has something of its own to upload too.
    var partnerEdits: Int
    /// The partner runs `ivy sync --watch` for this long, then gets SIGTERM, instead of one sync.
    var watch: Duration?
    /// How long after the app starts writing each sync starts.
    var delay: Duration
    var partnerDelay: Duration
    /// How long each of the app's replaces leaves the name without a file. Half the time a
    /// short gap, which can end while a sync that listed it is still working: an upload of its
    /// own copy then lands after the app's new file, not before it.
    var gap: Duration
    /// How long Drive takes to answer each request meanwhile, as over a real network: a sync's
    /// own delete and create are then that far apart for another sync to list between, and a
    /// sync that listed the app's gap uploads its copy that much later.
    var latency: Int

    /// About one round in four overlaps; the third always does, so every run of three
    /// rounds or more (the test command's short soak too) has one, once ivy's folders are on
    /// Drive (the soak asks for none before).
    static func draw(_ random: inout SplitMix64, round: Int, others: Int) -> Overlap? {
        let drawn = random.chance(0.25)
        guard drawn || round == 3 else { return nil }
        let partner = random.chance(0.75) ? random.below(others) : nil
        let partnerEdits = random.chance(0.5) ? random.int(in: 1...2) : 0
        let watch = random.chance(0.25) ? Duration.milliseconds(random.int(in: 2_500...5_000)) : nil
        return Overlap(
            partner: partner, partnerEdits: partner == nil ? 0 : partnerEdits, watch: partner == nil ? nil : watch,
            delay: .milliseconds(random.int(in: 0...600)), partnerDelay: .milliseconds(random.int(in: 0...600)),
            gap: .milliseconds(random.chance(0.5) ? random.int(in: 50...500) : random.int(in: 500...3_000)),
            latency: random.pick([0, 10, 30, 60]) ?? 0)
    }

    /// For the log.
    func description(device: String, partner name: String?) -> String {
        var parts = ["\(device) syncs after \(Self.ms(delay))"]
        if let name {
            let what = watch.map { "watches for \(Self.ms($0)) (then SIGTERM)" } ?? "syncs"
            parts.append("\(name) \(what) after \(Self.ms(partnerDelay))")
        }
        parts.append("the app's replaces leave a gap of \(Self.ms(gap))")
        if latency > 0 { parts.append("Drive answers after \(latency) ms") }
        return parts.joined(separator: "; ")
    }

    private static func ms(_ duration: Duration) -> String {
        "\(duration.components.seconds * 1_000 + duration.components.attoseconds / 1_000_000_000_000_000) ms"
    }
}
