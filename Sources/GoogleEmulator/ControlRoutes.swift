import Foundation

/// The control API's routes, under `/_emulator/`: what tests, benchmarks and
/// `ivy-emulator approve` use to play the user and the weather. CONTRIBUTING.md lists them.
extension EmulatorState {
    static let controlRoutes: [ControlRoute] = signInRoutes + weatherRoutes + fileRoutes + settingRoutes

    private static let signInRoutes: [ControlRoute] = [
        ControlRoute("GET", "pending") { state, _ in
            let signIns = state.pendingSignIns()
            state.countPendingListing()
            return PendingAnswer(
                userCodes: signIns.map(\.userCode).sorted(), events: state.signInEvents,
                signIns: signIns.map(PendingAnswer.SignIn.init))
        },
        ControlRoute("POST", "approve", ApproveBody.self) { state, call in
            let approved = try state.approveNaming(
                userCode: call.body.userCode, email: call.body.email, scope: call.body.scope)
            return ApprovedAnswer(userCode: approved.userCode, email: approved.email)
        },
        ControlRoute("POST", "deny", DenyBody.self) { state, call in
            try state.deny(userCode: call.body.userCode)
            return Done()
        },
        ControlRoute("POST", "revoke", RevokeBody.self) { state, call in
            state.revoke(refreshToken: call.body.refreshToken, email: call.body.email)
            return Done()
        },
        ControlRoute("GET", "health") { state, _ in
            HealthAnswer(pings: state.healthPings.map { HealthAnswer.Ping(path: $0.path, body: $0.body) })
        },
    ]

    private static let weatherRoutes: [ControlRoute] = [
        ControlRoute("POST", "latency", LatencyBody.self) { state, call in
            state.setLatency(milliseconds: call.body.milliseconds ?? 0)
            return Done()
        },
        ControlRoute("POST", "write-limit", WriteLimitBody.self, usage: "give writes_per_second and burst") {
            state, call in
            state.setWriteLimit(call.body.limit)
            return Done()
        },
        ControlRoute("DELETE", "write-limit") { state, _ in
            state.setWriteLimit(nil)
            return Done()
        },
        ControlRoute("POST", "read-limit", ReadLimitBody.self, usage: "give reads_per_second and burst") {
            state, call in
            state.setReadLimit(call.body.limit)
            return Done()
        },
        ControlRoute("DELETE", "read-limit") { state, _ in
            state.setReadLimit(nil)
            return Done()
        },
        ControlRoute("POST", "storage-limit", StorageLimitBody.self) { state, call in
            state.setStorageLimit(call.body.bytes)
            return Done()
        },
        ControlRoute("POST", "faults", FaultRule.self, usage: faultUsage) { state, call in
            state.addFault(call.body)
            return Done()
        },
        ControlRoute("DELETE", "faults") { state, _ in
            state.clearFaults()
            return Done()
        },
        ControlRoute("POST", "release") { state, _ in
            state.releaseHeld()
            return Done()
        },
        ControlRoute(
            "POST", "list-fault", ListFaultBody.self,
            usage: "give kind: repeat_token, empty_pages or drop_or_parent (and query_contains, count)"
        ) { state, call in
            state.setListFault(
                ListFault(call.body.kind, queryContains: call.body.queryContains, count: call.body.count))
            return Done()
        },
        ControlRoute("DELETE", "list-fault") { state, _ in
            state.setListFault(nil)
            return Done()
        },
        ControlRoute("POST", "wire", WireSettings.self, usage: wireUsage) { state, call in
            try call.body.check()
            state.wire.set(call.body)
            return Done()
        },
        ControlRoute("DELETE", "wire") { state, _ in
            state.wire.set(WireSettings())
            return Done()
        },
        ControlRoute("GET", "wire") { state, _ in
            WireAnswer(settings: state.wire.settings, counts: state.wire.counts)
        },
        ControlRoute("GET", "requests") { state, _ in state.requests },
        ControlRoute("DELETE", "requests") { state, _ in
            state.clearRequests()
            return Done()
        },
    ]

    private static let faultUsage =
        "a fault rule is JSON with method, pathContains, nth, probability, times, status, reason, "
        + "retryAfterSeconds, delayMilliseconds, dropAfterBytes, headers, jsonFields, hold, afterHandling, endless, "
        + "holdBody, sessionLocation, goAway, resetConnection"

    private static let wireUsage =
        "the wire's settings are JSON with goaway_after_requests, max_connection_age_seconds, refuse_handshakes "
        + "and refusal (alert or untrusted); each one left out is off"

    private static let fileRoutes: [ControlRoute] = [
        ControlRoute("GET", "files") { state, call in
            let listed = state.dump(email: call.query["email"]).map { file in
                var object = state.fileJSON(file)
                object["owner"] = file.owner
                object["content"] = file.content.base64EncodedString()
                return JSONValue(object)
            }
            return ["files": listed]
        },
        ControlRoute(
            "POST", "files", NewFileBody.self, usage: "give email and name (and parents, content as base64, mimeType)"
        ) { state, call in
            let body = call.body
            let project: String? =
                switch body.project {
                // Absent: a file of ivy's project; null: one made in Drive's web page.
                case .absent: EmulatedClient.ivyProject
                case .null: nil
                case .value(let project): project
                }
            let file = state.putFile(
                email: body.email, name: body.name, parents: body.parents ?? ["root"],
                content: body.content.flatMap { Data(base64Encoded: $0) } ?? Data(),
                mimeType: body.mimeType ?? "application/octet-stream", project: project)
            return JSONValue(state.fileJSON(file))
        },
        ControlRoute("POST", "files/*/corrupt", CorruptBody.self) { state, call in
            let content = call.body.content.flatMap { Data(base64Encoded: $0) } ?? Data("{not json".utf8)
            try state.corruptFile(id: call.ids[0], content: content)
            return Done()
        },
        ControlRoute("POST", "files/*/misreport", MisreportBody.self) { state, call in
            let lie = Misreport(
                size: call.body.size, extraBytes: max(0, call.body.extraBytes ?? 0), endless: call.body.endless ?? false
            )
            try state.misreport(id: call.ids[0], lie.size == nil && lie.extraBytes == 0 && !lie.endless ? nil : lie)
            return Done()
        },
        ControlRoute("POST", "files/*/trash") { state, call in
            try state.trash(id: call.ids[0])
            return Done()
        },
    ]

    private static let settingRoutes: [ControlRoute] = [
        ControlRoute("POST", "clock", ClockBody.self) { state, call in
            if call.body.freeze == true { state.freezeClock() }
            state.advanceClock(by: call.body.advanceSeconds ?? 0)
            return Done()
        },
        ControlRoute("GET", "clock") { state, _ in
            ClockAnswer(now: RFC3339.string(state.now()), manual: state.clock.isManual)
        },
        ControlRoute("GET", "seed") { state, _ in ["seed": state.seed] },
        ControlRoute("POST", "seed", SeedBody.self, usage: "give seed") { state, call in
            state.reseed(call.body.seed)
            return Done()
        },
        ControlRoute("POST", "config", ConfigBody.self) { state, call in
            state.configure(call.body)
            return Done()
        },
        ControlRoute("POST", "accounts", AccountBody.self, usage: "give email") { state, call in
            state.addAccount(EmulatedAccount(email: call.body.email))
            return Done()
        },
        ControlRoute("POST", "clients", ClientBody.self, usage: "give id and secret") { state, call in
            let body = call.body
            state.addClient(
                EmulatedClient(id: body.id, secret: body.secret, project: body.project ?? EmulatedClient.ivyProject))
            return Done()
        },
    ]

    private func configure(_ config: ConfigBody) {
        if let seconds = config.tokenLifetime { setTokenLifetime(seconds: seconds) }
        if let cap = config.pageSizeCap { setPageSizeCap(cap) }
        if let delay = config.nameIndexDelay { setNameIndexDelay(seconds: delay) }
        if let lifetime = config.pageTokenLifetime { setPageTokenLifetime(seconds: lifetime) }
        setDeviceCode(lifetime: config.deviceCodeLifetime, interval: config.pollInterval)
        switch config.changesPageSize {
        case .absent: break
        case .null: setChangesPageSize(nil)
        case .value(let size): setChangesPageSize(size)
        }
        switch config.changeTokenLifetime {
        case .absent: break
        case .null: setChangeTokenLifetime(seconds: nil)
        case .value(let lifetime): setChangeTokenLifetime(seconds: lifetime)
        }
        if let omits = config.aboutOmitsEmail { setAboutOmitsEmail(omits) }
        if let offset = config.dateOffset { setDateOffset(seconds: offset) }
        if let limit = config.deviceCodeLimit { setDeviceCodeLimit(perMinute: limit > 0 ? limit : nil) }
        if let enabled = config.driveAPIEnabled {
            setDriveAPI(enabled: enabled, project: config.project ?? EmulatedClient.ivyProject)
        }
    }
}

// The bodies routes read, each field under the name callers send.

private struct ApproveBody: ControlBody {
    var userCode: String?
    var email: String?
    var scope: String?

    enum CodingKeys: String, CodingKey {
        case userCode = "user_code"
        case email, scope
    }
}

private struct DenyBody: ControlBody {
    var userCode: String?

    enum CodingKeys: String, CodingKey { case userCode = "user_code" }
}

private struct RevokeBody: ControlBody {
    var refreshToken: String?
    var email: String?

    enum CodingKeys: String, CodingKey {
        case refreshToken = "refresh_token"
        case email
    }
}

private struct LatencyBody: ControlBody {
    var milliseconds: Int?
}

private struct WriteLimitBody: ControlBody {
    var writesPerSecond: Double
    var burst: Double
    var status: Int?
    var quota: RateLimit.Quota?

    var limit: RateLimit { RateLimit(perSecond: writesPerSecond, burst: burst, status: status ?? 403, quota: quota) }

    enum CodingKeys: String, CodingKey {
        case writesPerSecond = "writes_per_second"
        case burst, status, quota
    }
}

private struct ReadLimitBody: ControlBody {
    var readsPerSecond: Double
    var burst: Double
    var status: Int?
    var quota: RateLimit.Quota?

    var limit: RateLimit { RateLimit(perSecond: readsPerSecond, burst: burst, status: status ?? 403, quota: quota) }

    enum CodingKeys: String, CodingKey {
        case readsPerSecond = "reads_per_second"
        case burst, status, quota
    }
}

/// `{"bytes": N}` sets every account's storage limit; `{"bytes": null}` makes it unlimited.
private struct StorageLimitBody: ControlBody {
    var bytes: Int64?
}

extension FaultRule: ControlBody {
    /// A fault needs a body: `{}` would be a rule that matches every request and does nothing,
    /// shadowing the rules added after it.
    static func read(_ data: Data, with decoder: JSONDecoder) throws -> Self {
        try decoder.decode(Self.self, from: data)
    }
}

private struct ListFaultBody: ControlBody {
    var kind: ListFault.Kind
    var queryContains: String?
    var count: Int?

    enum CodingKeys: String, CodingKey {
        case queryContains = "query_contains"
        case kind, count
    }
}

private struct NewFileBody: ControlBody {
    var email: String
    var name: String
    var parents: [String]?
    /// Base64.
    var content: String?
    var mimeType: String?
    var project: Nullable<String>
}

private struct CorruptBody: ControlBody {
    /// Base64; nil for text that is not JSON.
    var content: String?
}

private struct MisreportBody: ControlBody {
    var size: String?
    var extraBytes: Int?
    var endless: Bool?

    enum CodingKeys: String, CodingKey {
        case extraBytes = "extra_bytes"
        case size, endless
    }
}

private struct ClockBody: ControlBody {
    var freeze: Bool?
    var advanceSeconds: Double?

    enum CodingKeys: String, CodingKey {
        case advanceSeconds = "advance_seconds"
        case freeze
    }
}

private struct SeedBody: ControlBody {
    var seed: UInt64
}

private struct ConfigBody: ControlBody {
    var tokenLifetime: Int?
    var pageSizeCap: Int?
    var nameIndexDelay: Double?
    var pageTokenLifetime: Double?
    var deviceCodeLifetime: Int?
    var pollInterval: Int?
    var changesPageSize: Nullable<Int>
    var changeTokenLifetime: Nullable<Double>
    var aboutOmitsEmail: Bool?
    var dateOffset: Double?
    var deviceCodeLimit: Int?
    var driveAPIEnabled: Bool?
    /// The Cloud project `drive_api_enabled` turns the Drive API on or off in.
    var project: String?

    enum CodingKeys: String, CodingKey {
        case tokenLifetime = "token_lifetime"
        case pageSizeCap = "page_size_cap"
        case nameIndexDelay = "name_index_delay"
        case pageTokenLifetime = "page_token_lifetime"
        case deviceCodeLifetime = "device_code_lifetime"
        case pollInterval = "poll_interval"
        case changesPageSize = "changes_page_size"
        case changeTokenLifetime = "change_token_lifetime"
        case aboutOmitsEmail = "about_omits_email"
        case dateOffset = "date_offset"
        case deviceCodeLimit = "device_code_limit"
        case driveAPIEnabled = "drive_api_enabled"
        case project
    }
}

private struct AccountBody: ControlBody {
    var email: String
}

private struct ClientBody: ControlBody {
    var id: String
    var secret: String
    var project: String?
}

// The answers, each field under the name callers read.

private struct PendingAnswer: Encodable {
    var userCodes: [String]
    var events: Int
    var signIns: [SignIn]

    struct SignIn: Encodable {
        var userCode: String
        var clientID: String
        var order: Int
        var idleSeconds: Double
        var abandoned: Bool
        var lastEvent: Int

        init(_ signIn: PendingSignIn) {
            userCode = signIn.userCode
            clientID = signIn.clientID
            order = signIn.order
            idleSeconds = signIn.idleSeconds
            abandoned = signIn.abandoned
            lastEvent = signIn.lastEvent
        }

        enum CodingKeys: String, CodingKey {
            case userCode = "user_code"
            case clientID = "client_id"
            case idleSeconds = "idle_seconds"
            case lastEvent = "last_event"
            case order, abandoned
        }
    }

    enum CodingKeys: String, CodingKey {
        case userCodes = "user_codes"
        case signIns = "sign_ins"
        case events
    }
}

private struct ApprovedAnswer: Encodable {
    let ok = true
    var userCode: String
    var email: String

    enum CodingKeys: String, CodingKey {
        case userCode = "user_code"
        case ok, email
    }
}

private struct HealthAnswer: Encodable {
    var pings: [Ping]

    struct Ping: Encodable {
        var path: String
        var body: String
    }
}

extension WireSettings: ControlBody {
    func check() throws {
        if let count = goAwayAfterRequests, count < 1 {
            throw EmulatorControlError("goaway_after_requests must be 1 or more")
        }
        if let age = maxConnectionAgeSeconds, !(age >= 0 && age < 1e9) {
            throw EmulatorControlError("max_connection_age_seconds must be 0 or more")
        }
        if let count = refuseHandshakes, count < 0 { throw EmulatorControlError("refuse_handshakes must be 0 or more") }
    }
}

/// The wire's settings and what the front end has done.
private struct WireAnswer: Encodable {
    var settings: WireSettings
    var counts: WireCounts
}

private struct ClockAnswer: Encodable {
    var now: String
    var manual: Bool
}
