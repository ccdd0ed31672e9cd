import Crypto
package import Foundation

/// A Google account of the emulator, with a Drive of its own.
package struct EmulatedAccount: Sendable, Codable, Equatable {
    package var email: String
    package var permissionID: String
    package var displayName: String

    package init(email: String, permissionID: String? = nil, displayName: String? = nil) {
        self.email = email
        self.permissionID = permissionID ?? String(stableHash(email) % 1_000_000_000_000)
        self.displayName = displayName ?? String(email.prefix { $0 != "@" }).capitalized
    }
}

/// An OAuth client the emulator accepts, and the Google Cloud project it belongs to. The
/// project is what Google keys grants and `drive.file` visibility on: every client of one
/// project shares the user's grant (revoking it signs all of them out) and sees the files
/// any of them created; a client of another project sees none of them.
package struct EmulatedClient: Sendable, Codable, Equatable {
    /// The project of ivy's own client and of the Ivy phone app.
    package static let ivyProject = "ivy-project"

    package var id: String
    package var secret: String
    package var project: String

    package init(id: String, secret: String, project: String = EmulatedClient.ivyProject) {
        self.id = id
        self.secret = secret
        self.project = project
    }

    private enum CodingKeys: String, CodingKey { case id, secret, project }

    /// A state file written before clients had projects: every client was ivy's.
    package init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        secret = try container.decode(String.self, forKey: .secret)
        project = try container.decodeIfPresent(String.self, forKey: .project) ?? Self.ivyProject
    }
}

/// A file (or folder) in an account's Drive.
package struct DriveFile: Sendable, Codable, Equatable {
    package static let folderType = "application/vnd.google-apps.folder"

    package var id: String
    package var name: String
    package var mimeType: String
    package var parents: [String]
    package var owner: String
    package var createdTime: Date
    package var modifiedTime: Date
    package var content: Data {
        // Drive computes the checksum once, when the content arrives; so does the emulator,
        // not on every listing (hashing every file's bytes for each page). New content is a
        // new head revision (files.update with media: "Manage versions", "Upload new version").
        didSet {
            md5 = Self.md5(of: content)
            contentRevision += 1
        }
    }
    /// Drive's `version`: "A monotonically increasing version number for the file. This
    /// reflects every change made to the file on the server" (File resource). Every update
    /// and every content change adds one.
    package var version = 1
    /// How many times the content was set since the file was made: the head revision's number,
    /// which `headRevisionId` names ("The ID of the file's head revision", only for files
    /// with binary content).
    package private(set) var contentRevision = 1
    package var headRevisionID: String { "0B\(id.prefix(12))r\(contentRevision)" }
    package var explicitlyTrashed: Bool
    /// When the name was last set (nil: at creation). Drive's name index catches up with it
    /// only after `EmulatorState.nameIndexDelay`.
    package var nameTime: Date?
    /// How the emulator lies about this file, to test a client against a hostile server.
    package var misreport: Misreport?
    /// The Cloud project of the app that created the file; nil for one a person made in
    /// Drive's web page. Under `drive.file` only clients of this project see it.
    package var project: String? = EmulatedClient.ivyProject
    /// Writable metadata Drive keeps as given (files.create and files.update): a short
    /// description, the app's private key-value pairs, and the user's star.
    package var description: String?
    package var appProperties: [String: String] = [:]
    package var starred = false

    /// Drive's `md5Checksum`, from swift-crypto directly and never through ivy's code, so a
    /// bug in how ivy hashes a file (reading, chunking, hex) cannot pass its own integrity checks.
    package private(set) var md5: String

    package var isFolder: Bool { mimeType == Self.folderType }
    package var size: Int { content.count }

    package init(
        id: String, name: String, mimeType: String, parents: [String], owner: String, createdTime: Date,
        modifiedTime: Date, content: Data, explicitlyTrashed: Bool, nameTime: Date? = nil, misreport: Misreport? = nil,
        project: String? = EmulatedClient.ivyProject
    ) {
        self.id = id
        self.name = name
        self.mimeType = mimeType
        self.parents = parents
        self.owner = owner
        self.createdTime = createdTime
        self.modifiedTime = modifiedTime
        self.content = content
        self.explicitlyTrashed = explicitlyTrashed
        self.nameTime = nameTime
        self.misreport = misreport
        self.project = project
        md5 = Self.md5(of: content)
    }

    /// What a state file keeps: everything but the checksum, which is made again from the content.
    private enum CodingKeys: String, CodingKey {
        case id, name, mimeType, parents, owner, createdTime, modifiedTime, content, explicitlyTrashed, nameTime
        case misreport, project, description, appProperties, starred, version, contentRevision
    }

    package init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            id: try container.decode(String.self, forKey: .id), name: try container.decode(String.self, forKey: .name),
            mimeType: try container.decode(String.self, forKey: .mimeType),
            parents: try container.decode([String].self, forKey: .parents),
            owner: try container.decode(String.self, forKey: .owner),
            createdTime: try container.decode(Date.self, forKey: .createdTime),
            modifiedTime: try container.decode(Date.self, forKey: .modifiedTime),
            content: try container.decode(Data.self, forKey: .content),
            explicitlyTrashed: try container.decode(Bool.self, forKey: .explicitlyTrashed),
            nameTime: try container.decodeIfPresent(Date.self, forKey: .nameTime),
            misreport: try container.decodeIfPresent(Misreport.self, forKey: .misreport),
            project: try container.decodeIfPresent(String.self, forKey: .project))
        // A state file written before these were kept has none.
        description = try container.decodeIfPresent(String.self, forKey: .description)
        appProperties = try container.decodeIfPresent([String: String].self, forKey: .appProperties) ?? [:]
        starred = try container.decodeIfPresent(Bool.self, forKey: .starred) ?? false
        version = try container.decodeIfPresent(Int.self, forKey: .version) ?? 1
        contentRevision = try container.decodeIfPresent(Int.self, forKey: .contentRevision) ?? 1
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    static func md5(of content: Data) -> String {
        var text: [UInt8] = []
        text.reserveCapacity(32)
        for byte in Insecure.MD5.hash(data: content) {
            text.append(hexDigits[Int(byte >> 4)])
            text.append(hexDigits[Int(byte & 0x0f)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}

/// A file's metadata or media that does not tell the truth: what a hostile or broken
/// server could send.
package struct Misreport: Sendable, Codable, Equatable {
    /// The `size` metadata says this (any text: "-1", "99999999999999999999", "500").
    package var size: String?
    /// A download sends this many bytes more than the file holds.
    package var extraBytes: Int
    /// A download never ends: the content, then filler until the client hangs up.
    package var endless: Bool

    package init(size: String? = nil, extraBytes: Int = 0, endless: Bool = false) {
        self.size = size
        self.extraBytes = extraBytes
        self.endless = endless
    }
}

/// Everything the emulator answered, for tests and benchmarks to count.
package struct LoggedRequest: Sendable, Codable, Equatable {
    package var method: String
    package var path: String
    package var query: String
    package var status: Int
    package var account: String?
    package var start: Date
    package var end: Date
    /// Bytes of request body that arrived.
    package var bytes: Int = 0
    /// The connection it came on, numbered from 1 in the order the emulator accepted them
    /// (`WireCounts.connections`); nil in-process, where there is none.
    package var connection: Int?
    /// The HTTP version it came by: "2" or "1.1"; nil in-process.
    package var http: String?
}

/// A rule that makes matching requests fail the way Google's servers sometimes do.
package struct FaultRule: Sendable, Codable, Equatable {
    /// HTTP method to match, or nil for any.
    package var method: String?
    /// Substring of the path (with the query) to match, or nil for any.
    package var pathContains: String?
    /// Fail only the nth matching request (1-based), or nil for every one (subject to `probability`).
    package var nth: Int?
    /// Chance of failing a matching request when `nth` is nil (1 = always).
    package var probability: Double?
    /// How many times the rule may fire in all; nil for no limit.
    package var times: Int?
    /// Status to answer with (Google's error body for it); nil when only delaying or dropping.
    package var status: Int?
    /// Drive error reason (`userRateLimitExceeded`, `backendError`, `storageQuotaExceeded`, ...).
    package var reason: String?
    /// `Retry-After` on the fault's error answer, in seconds (any Int, 9223372036854775807 too);
    /// `headers` gives it as any text instead (`1e30`, `-5`, an HTTP-date).
    package var retryAfterSeconds: Int?
    /// Extra delay before answering, in milliseconds.
    package var delayMilliseconds: Int?
    /// Drop the connection after this many bytes (of the request body for uploads, else of the response).
    package var dropAfterBytes: Int?
    /// Headers added to the answer, replacing any of the same name. With a `status` below 400
    /// (say 308 with a `Range` Google would never send) the answer is just that status and these.
    package var headers: [String: String]?
    /// Top-level fields of a JSON answer replaced by raw JSON text, so a test can send values
    /// no Double holds, negative ones, or the wrong type (`{"expires_in": "1e999"}`).
    package var jsonFields: [String: String]?
    /// Park the matching request, before its body is read, until a test calls `releaseHeld`:
    /// a moment in the middle of a transfer a test can inspect without sleeping.
    package var hold: Bool?
    /// With a `status`: the request takes effect first, then the fault's answer replaces the
    /// real one. Google warns that a create answered with an error may still have happened
    /// (the duplicate hazard pre-generated ids exist for).
    package var afterHandling: Bool?
    /// After the answer's body, filler until the client hangs up (counted in
    /// `EmulatorState.endlessBytesSent`): a hostile server streaming without end.
    package var endless: Bool?
    /// Send the status, the headers and the body's first byte, then park the rest until a test
    /// calls `releaseHeld`: a server that starts its answer and stalls (HTTP only).
    package var holdBody: Bool?
    /// The connection is told to go away after this request, which is still answered: over
    /// HTTP/2 a GOAWAY (NO_ERROR), over HTTP/1.1 `Connection: close` (socket only).
    package var goAway: Bool?
    /// With `dropAfterBytes`: the whole connection is reset (a TCP RST) at that point, not just
    /// the request (which over HTTP/2 gets an RST_STREAM alone). In-process, a drop.
    package var resetConnection: Bool?
    /// A resumable upload's session answered as a hostile or broken server would: its
    /// `Location` names this scheme, host and port (`http://127.0.0.1:PORT`,
    /// `http://drive.example.com`, `ftp://127.0.0.1:PORT`) with the real session's path and query.
    package var sessionLocation: String?

    package init(
        method: String? = nil, pathContains: String? = nil, nth: Int? = nil, probability: Double? = nil,
        times: Int? = nil, status: Int? = nil, reason: String? = nil, retryAfterSeconds: Int? = nil,
        delayMilliseconds: Int? = nil, dropAfterBytes: Int? = nil, headers: [String: String]? = nil,
        jsonFields: [String: String]? = nil, hold: Bool? = nil, afterHandling: Bool? = nil, endless: Bool? = nil,
        holdBody: Bool? = nil, sessionLocation: String? = nil, goAway: Bool? = nil, resetConnection: Bool? = nil
    ) {
        self.sessionLocation = sessionLocation
        self.method = method
        self.pathContains = pathContains
        self.nth = nth
        self.probability = probability
        self.times = times
        self.status = status
        self.reason = reason
        self.retryAfterSeconds = retryAfterSeconds
        self.delayMilliseconds = delayMilliseconds
        self.dropAfterBytes = dropAfterBytes
        self.headers = headers
        self.jsonFields = jsonFields
        self.hold = hold
        self.afterHandling = afterHandling
        self.endless = endless
        self.holdBody = holdBody
        self.goAway = goAway
        self.resetConnection = resetConnection
    }
}

/// A files.list that misbehaves past what Google documents (short or empty pages with a
/// `nextPageToken` are documented, and fine).
package struct ListFault: Sendable, Codable, Equatable {
    package enum Kind: String, Sendable, Codable {
        /// Every page asked for with a token answers with that same token again.
        case repeatToken = "repeat_token"
        /// After the last file, empty pages with fresh tokens: `count` of them, or for ever.
        case emptyPages = "empty_pages"
        /// A query that ORs `in parents` terms naming two or more folders leaves out the
        /// children of the last of them, with `incompleteSearch` still false: searches for
        /// "(A in parents) or (B in parents)" sometimes miss results (rclone's
        /// `--drive-fast-list-bug-fix`, rclone issues #3114 and #4289, Google's issue tracker
        /// 149522397).
        case dropOrParent = "drop_or_parent"
    }

    package var kind: Kind
    /// Only listings whose `q` contains this; nil for every listing.
    package var queryContains: String?
    /// How many empty pages `emptyPages` adds; nil for no end.
    package var count: Int?

    package init(_ kind: Kind, queryContains: String? = nil, count: Int? = nil) {
        self.kind = kind
        self.queryContains = queryContains
        self.count = count
    }
}

/// One of Drive's rate limits, as a token bucket: the sustained write limit, or the limit
/// on reads (`files.list`, `files.get`, downloads, every GET). Google's handle-errors guide:
/// over quota, Drive answers 403 `userRateLimitExceeded` or `rateLimitExceeded` (the reason
/// only in the JSON body) or 429. The bucket refills from the emulator's clock alone.
package struct RateLimit: Sendable, Codable, Equatable {
    /// Requests a second the bucket refills by.
    package var perSecond: Double
    /// Requests the full bucket holds: how many go through at once.
    package var burst: Double
    /// 403 (`userRateLimitExceeded`) or 429 (`rateLimitExceeded`).
    package var status: Int
    /// Which quota the answer names in Google's newer error shape, or nil for Drive's
    /// classic `errors[0].reason` body.
    package var quota: Quota?

    /// The quota of a limit answered in Google's newer shape (AIP-193): the reason only in
    /// a `google.rpc.ErrorInfo` detail, `RATE_LIMIT_EXCEEDED`, whose `metadata.quota_limit`
    /// names one user's share of the project or the whole project's.
    package enum Quota: String, Sendable, Codable, Equatable {
        case user, project

        /// ErrorInfo's `quota_limit`.
        package var limitName: String { self == .user ? "defaultPerMinutePerUser" : "defaultPerMinutePerProject" }
        /// The limit as Google's message words it.
        package var limitText: String { self == .user ? "Queries per minute per user" : "Queries per minute" }
        /// Drive's per-minute quota in units (the Usage limits page: 325,000 per user per
        /// project, 1,000,000 per project).
        package var units: Int { self == .user ? 325_000 : 1_000_000 }
    }

    package init(perSecond: Double, burst: Double, status: Int = 403, quota: Quota? = nil) {
        self.perSecond = perSecond
        self.burst = burst
        self.status = status
        self.quota = quota
    }

    /// What a limit's bucket holds, and when it was last filled up.
    package struct Bucket: Sendable, Equatable {
        package var tokens: Double
        package var updated: Date
    }

    /// A full bucket at `time`.
    package func fullBucket(at time: Date) -> Bucket { Bucket(tokens: burst, updated: time) }

    /// Takes one request's token from `bucket`, refilled for the time since it was last
    /// touched; false (and nothing taken) when less than one token is there. A time before
    /// the last one counts as no time at all.
    package func take(from bucket: inout Bucket, at time: Date) -> Bool {
        let time = max(time, bucket.updated)
        let refilled = min(burst, bucket.tokens + time.timeIntervalSince(bucket.updated) * perSecond)
        guard refilled >= 1 else {
            bucket = Bucket(tokens: refilled, updated: time)
            return false
        }
        bucket = Bucket(tokens: refilled - 1, updated: time)
        return true
    }
}

/// RFC 3339 with milliseconds, as Drive writes times.
package enum RFC3339 {
    /// Reads a time as Drive takes one: RFC 3339, fractional seconds optional; with no zone
    /// it is UTC (the search guide: "modifiedTime > '2012-06-04T12:00:00' // default time
    /// zone is UTC").
    package static func date(_ text: String) -> Date? {
        let withZone = text.hasSuffix("Z") || text.dropFirst(19).contains { $0 == "+" || $0 == "-" } ? text : text + "Z"
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = formatter.date(from: withZone) { return date }
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.date(from: withZone)
    }

    /// `date` as Drive writes times, `2026-11-24T06:07:38.541Z`: UTC, to the millisecond
    /// (rounded, as ISO8601DateFormatter does). By arithmetic: a formatter made for each of the
    /// two times of every file listed was most of a listing's cost.
    package static func string(_ date: Date) -> String {
        let milliseconds = Int64((date.timeIntervalSince1970 * 1000).rounded())
        var (day, time) = milliseconds.quotientAndRemainder(dividingBy: 86_400_000)
        if time < 0 { (day, time) = (day - 1, time + 86_400_000) }
        // The civil date of a day number (days since 1970-01-01), from Howard Hinnant's
        // "chrono-Compatible Low-Level Date Algorithms" (civil_from_days).
        let shifted = day + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let dayOfMonth = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        func padded(_ value: Int64, _ width: Int) -> String {
            let digits = String(value)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        let clock = "\(padded(time / 3_600_000, 2)):\(padded(time / 60000 % 60, 2)):\(padded(time / 1000 % 60, 2))"
        return "\(padded(year, 4))-\(padded(month, 2))-\(padded(dayOfMonth, 2))T\(clock).\(padded(time % 1000, 3))Z"
    }
}
