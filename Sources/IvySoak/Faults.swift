import ArgumentParser
import GoogleEmulator
import IvyCore

/// The kinds of trouble the soak makes Drive cause during a round's sync.
enum FaultKind: String, CaseIterable, ExpressibleByArgument, Sendable {
    /// 500, 502 or 503.
    case serverError = "5xx"
    /// 429 `rateLimitExceeded`, with Retry-After.
    case tooManyRequests = "429"
    /// 403 `userRateLimitExceeded`, with Retry-After.
    case userRateLimit = "403"
    /// An upload's request body cut off part way: the connection drops.
    case dropRequest = "drop-request"
    /// The answer cut off after Drive did the work (a create or delete happened, its
    /// answer was lost), or a listing or download cut short.
    case dropResponse = "drop-response"
    /// Answers held back for up to 1.5 s.
    case slow
    /// 400 on an upload: one attempt for that sync, tried again by the next.
    case badRequest = "400"
    /// The connection told to go away after a request (HTTP/2's GOAWAY, as Google's front end
    /// sends at a connection's maximum age; HTTP/1.1's `Connection: close`).
    case goAway = "goaway"
    /// The whole connection reset (a TCP RST) part way through an upload's body or an answer:
    /// every request in flight on it fails at once, not only the one cut.
    case resetConnection = "reset"
}

/// One fault rule plus words for the log.
struct PlannedFault: Sendable {
    var kind: FaultKind
    var rule: FaultRule

    var description: String {
        var parts = [kind.rawValue]
        if let method = rule.method { parts.append(method) }
        if let path = rule.pathContains { parts.append("~\(path)") }
        if let nth = rule.nth { parts.append("#\(nth)") }
        if let times = rule.times { parts.append("x\(times)") }
        if let delay = rule.delayMilliseconds { parts.append("\(delay)ms") }
        if let bytes = rule.dropAfterBytes { parts.append("drop@\(bytes)") }
        if rule.goAway == true { parts.append("goaway") }
        if rule.resetConnection == true { parts.append("rst") }
        return parts.joined(separator: " ")
    }

    /// 0 to 2 bounded rules for one round: each fires on one chosen request (`nth`) or on the
    /// first few that match (`times`), so faults always end and ivy's retries can outlast them.
    static func draw(_ random: inout SplitMix64, kinds: [FaultKind]) -> [PlannedFault] {
        guard !kinds.isEmpty, random.chance(0.45) else { return [] }
        return (0..<random.int(in: 1...2)).compactMap { _ in
            random.pick(kinds).map { draw($0, &random) }
        }
    }

    private static func draw(_ kind: FaultKind, _ random: inout SplitMix64) -> PlannedFault {
        // Where on Drive: everything, uploads, listings, downloads, deletes, id reservations.
        let targets: [(method: String?, path: String?)] = [
            (nil, nil), (nil, "/upload/drive/v3/files"), ("GET", "q="), ("GET", "alt=media"), ("DELETE", nil),
            ("GET", "generateIds"),
        ]
        var rule = FaultRule()
        let target = random.pick(targets) ?? (nil, nil)
        rule.method = target.method
        rule.pathContains = target.path
        if random.chance(0.6) {
            rule.nth = random.int(in: 1...8)
            rule.times = 1
        } else {
            rule.times = random.int(in: 1...2)
        }
        switch kind {
        case .serverError:
            rule.status = random.pick([500, 502, 503])
        case .tooManyRequests:
            rule.status = 429
            rule.reason = "rateLimitExceeded"
            rule.retryAfterSeconds = 1
        case .userRateLimit:
            rule.status = 403
            rule.reason = "userRateLimitExceeded"
            rule.retryAfterSeconds = 1
        case .dropRequest:
            // A multipart JSON create (POST) or a resumable MP3 chunk (PUT), cut inside its body.
            rule.method = random.chance(0.5) ? "POST" : "PUT"
            rule.pathContains = "/upload/drive/v3/files"
            // Early in the body, or (for an MP3 of a few hundred KB) far into it.
            rule.dropAfterBytes = random.chance(0.5) ? random.int(in: 1...400) : random.int(in: 1_000...300_000)
        case .dropResponse:
            if random.chance(0.5) {
                // Longer than any body the soak uploads: Drive completes the create or delete
                // (or finishes the MP3), then the connection drops before the answer arrives.
                rule.method = random.pick(["POST", "PUT", "DELETE"])
                rule.pathContains = rule.method == "DELETE" ? nil : "/upload/drive/v3/files"
                rule.dropAfterBytes = 10_000_000
            } else {
                rule.method = "GET"
                rule.pathContains = random.pick(["q=", "alt=media"])
                rule.dropAfterBytes = random.int(in: 0...200)
            }
        case .slow:
            rule.delayMilliseconds = random.int(in: 100...1500)
            rule.times = random.int(in: 1...3)
            rule.nth = nil
        case .badRequest:
            rule.method = "POST"
            rule.pathContains = "/upload/drive/v3/files"
            rule.status = 400
            rule.reason = "badRequest"
        case .goAway:
            rule.goAway = true
            rule.times = random.int(in: 1...3)
        case .resetConnection:
            rule.resetConnection = true
            if random.chance(0.5) {
                rule.method = random.chance(0.5) ? "POST" : "PUT"
                rule.pathContains = "/upload/drive/v3/files"
                rule.dropAfterBytes = random.chance(0.5) ? random.int(in: 1...400) : random.int(in: 1_000...300_000)
            } else {
                rule.method = "GET"
                rule.pathContains = random.pick(["q=", "alt=media"])
                rule.dropAfterBytes = random.int(in: 0...200)
            }
        }
        return PlannedFault(kind: kind, rule: rule)
    }
}

/// When to SIGKILL a round's sync: after some requests reached Drive, or after a delay.
/// The moment a process dies relative to its own work is inherently racy, so a kill can land
/// a little earlier or later (or after the sync ended) from one run of a seed to the next.
enum KillPlan: Sendable, CustomStringConvertible {
    case afterRequests(Int)
    case afterMilliseconds(Int)

    static func draw(_ random: inout SplitMix64) -> KillPlan? {
        guard random.chance(0.2) else { return nil }
        return random.chance(0.6)
            ? .afterRequests(random.int(in: 1...16)) : .afterMilliseconds(random.int(in: 20...700))
    }

    var description: String {
        switch self {
        case .afterRequests(let count): "kill after \(count) requests"
        case .afterMilliseconds(let milliseconds): "kill after \(milliseconds) ms"
        }
    }
}
