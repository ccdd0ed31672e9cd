import Foundation

/// The control API under `/_emulator/`: what tests, benchmarks and `ivy-emulator approve`
/// use to play the user and the weather.
extension EmulatorState {
    /// The header a control request carries `controlSecret` in. Not `Authorization`, which is
    /// Drive's; and a header a web page cannot send to 127.0.0.1 without a CORS preflight,
    /// which the emulator never grants.
    package static let controlSecretHeader = "X-Ivy-Emulator-Secret"

    /// 32 bytes of the system's randomness, in hex: never from the seeded generator, whose seed
    /// is printed, nor kept in the state file, so each run's secret is its own.
    package static func newControlSecret() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<32).map { _ in String(format: "%02x", UInt8.random(in: .min ... .max, using: &generator)) }
            .joined()
    }

    /// The answer to a control request without this emulator's secret, or nil when it has it.
    /// Refused before the path is looked at, so a stranger learns nothing of the routes either.
    func controlRefusal(_ request: EmulatedRequest) -> EmulatorReply? {
        guard let given = request.headers[Self.controlSecretHeader.lowercased()] else {
            return .json(
                401,
                [
                    "error": "the emulator's control API needs its secret: send the \(Self.controlSecretHeader) "
                        + "header with IVY_EMULATOR_SECRET of the export line ivy-emulator printed as it started"
                ])
        }
        guard Self.sameSecret(given, controlSecret) else {
            return .json(
                403,
                [
                    "error": "wrong \(Self.controlSecretHeader): not the secret this emulator printed "
                        + "(IVY_EMULATOR_SECRET of its export line; an emulator makes a new one each time it starts)"
                ])
        }
        return nil
    }

    /// Compares in time that depends on the secret's length only, not on how much of it a
    /// guess got right.
    static func sameSecret(_ given: String, _ secret: String) -> Bool {
        let guess = Array(given.utf8)
        var difference: UInt8 = guess.count == secret.utf8.count ? 0 : 1
        for (index, byte) in secret.utf8.enumerated() {
            difference |= byte ^ (index < guess.count ? guess[index] : 0)
        }
        return difference == 0
    }

    func handleControl(_ request: EmulatedRequest) -> EmulatorReply {
        let segments = request.path.split(separator: "/").dropFirst().map(String.init)
        let body = request.jsonBody ?? [:]
        func failure(_ error: EmulatorControlError) -> EmulatorReply { .json(400, ["error": error.description]) }
        let ok = EmulatorReply.json(200, ["ok": true])
        do {
            switch (request.method, segments) {
            case ("GET", ["pending"]):
                let signIns = pendingSignIns()
                countPendingListing()
                return .json(
                    200,
                    [
                        "user_codes": signIns.map(\.userCode).sorted(), "events": signInEvents,
                        "sign_ins": signIns.map { signIn -> [String: Any] in
                            [
                                "user_code": signIn.userCode, "client_id": signIn.clientID, "order": signIn.order,
                                "idle_seconds": signIn.idleSeconds, "abandoned": signIn.abandoned,
                                "last_event": signIn.lastEvent,
                            ]
                        },
                    ])
            case ("POST", ["approve"]):
                let approved = try approveNaming(
                    userCode: body["user_code"] as? String, email: body["email"] as? String,
                    scope: body["scope"] as? String)
                return .json(200, ["ok": true, "user_code": approved.userCode, "email": approved.email])
            case ("POST", ["deny"]):
                try deny(userCode: body["user_code"] as? String)
                return ok
            case ("POST", ["revoke"]):
                revoke(refreshToken: body["refresh_token"] as? String, email: body["email"] as? String)
                return ok
            case ("GET", ["health"]):
                return .json(200, ["pings": healthPings.map { ["path": $0.path, "body": $0.body] }])
            case ("POST", ["latency"]):
                setLatency(milliseconds: body["milliseconds"] as? Int ?? 0)
                return ok
            case ("POST", ["write-limit"]):
                guard let rate = body["writes_per_second"] as? Double, let burst = body["burst"] as? Double else {
                    return .json(400, ["error": "give writes_per_second and burst"])
                }
                setWriteLimit(
                    RateLimit(
                        perSecond: rate, burst: burst, status: body["status"] as? Int ?? 403,
                        quota: (body["quota"] as? String).flatMap(RateLimit.Quota.init(rawValue:))))
                return ok
            case ("DELETE", ["write-limit"]):
                setWriteLimit(nil)
                return ok
            case ("POST", ["storage-limit"]):
                // {"bytes": N} sets every account's storage limit; {"bytes": null} makes it unlimited.
                setStorageLimit((body["bytes"] as? NSNumber)?.int64Value)
                return ok
            case ("POST", ["read-limit"]):
                guard let rate = (body["reads_per_second"] as? NSNumber)?.doubleValue,
                    let burst = (body["burst"] as? NSNumber)?.doubleValue
                else {
                    return .json(400, ["error": "give reads_per_second and burst"])
                }
                setReadLimit(
                    RateLimit(
                        perSecond: rate, burst: burst, status: body["status"] as? Int ?? 403,
                        quota: (body["quota"] as? String).flatMap(RateLimit.Quota.init(rawValue:))))
                return ok
            case ("DELETE", ["read-limit"]):
                setReadLimit(nil)
                return ok
            case ("POST", ["faults"]):
                guard let rule = try? JSONDecoder().decode(FaultRule.self, from: request.body) else {
                    let fields =
                        "method, pathContains, nth, probability, times, status, reason, retryAfterSeconds, "
                        + "delayMilliseconds, dropAfterBytes, headers, jsonFields, hold, afterHandling, endless, "
                        + "holdBody"
                    return .json(400, ["error": "a fault rule is JSON with \(fields)"])
                }
                addFault(rule)
                return ok
            case ("DELETE", ["faults"]):
                clearFaults()
                return ok
            case ("POST", ["release"]):
                releaseHeld()
                return ok
            case ("POST", ["list-fault"]):
                guard let kind = (body["kind"] as? String).flatMap(ListFault.Kind.init(rawValue:)) else {
                    return .json(
                        400,
                        ["error": "give kind: repeat_token, empty_pages or drop_or_parent (and query_contains, count)"])
                }
                setListFault(
                    ListFault(kind, queryContains: body["query_contains"] as? String, count: body["count"] as? Int))
                return ok
            case ("DELETE", ["list-fault"]):
                setListFault(nil)
                return ok
            case ("GET", ["requests"]):
                let encoder = JSONEncoder()
                encoder.dateEncodingStrategy = .millisecondsSince1970
                let data = (try? encoder.encode(requests)) ?? Data("[]".utf8)
                return EmulatorReply(status: 200, headers: ["Content-Type": "application/json"], body: data)
            case ("DELETE", ["requests"]):
                clearRequests()
                return ok
            case ("GET", ["files"]):
                let listed = dump(email: request.query["email"]).map { file -> [String: Any] in
                    var object = fileJSON(file)
                    object["owner"] = file.owner
                    object["content"] = file.content.base64EncodedString()
                    return object
                }
                return .json(200, ["files": listed])
            case ("POST", ["files"]):
                guard let email = body["email"] as? String, let name = body["name"] as? String else {
                    return .json(400, ["error": "give email and name (and parents, content as base64, mimeType)"])
                }
                let content = (body["content"] as? String).flatMap { Data(base64Encoded: $0) } ?? Data()
                // "project": null is a file made in Drive's web page; absent, one of ivy's project.
                let project: String? =
                    body.keys.contains("project") ? body["project"] as? String : EmulatedClient.ivyProject
                let file = putFile(
                    email: email, name: name, parents: body["parents"] as? [String] ?? ["root"], content: content,
                    mimeType: body["mimeType"] as? String ?? "application/octet-stream", project: project)
                return .json(200, fileJSON(file))
            case ("POST", _) where segments.count == 3 && segments[0] == "files" && segments[2] == "corrupt":
                let content = (body["content"] as? String).flatMap { Data(base64Encoded: $0) } ?? Data("{not json".utf8)
                try corruptFile(id: segments[1], content: content)
                return ok
            case ("POST", _) where segments.count == 3 && segments[0] == "files" && segments[2] == "misreport":
                let lie = Misreport(
                    size: body["size"] as? String, extraBytes: max(0, body["extra_bytes"] as? Int ?? 0),
                    endless: body["endless"] as? Bool ?? false)
                try misreport(id: segments[1], lie.size == nil && lie.extraBytes == 0 && !lie.endless ? nil : lie)
                return ok
            case ("POST", _) where segments.count == 3 && segments[0] == "files" && segments[2] == "trash":
                try trash(id: segments[1])
                return ok
            case ("POST", ["clock"]):
                if body["freeze"] as? Bool == true { freezeClock() }
                advanceClock(by: (body["advance_seconds"] as? NSNumber)?.doubleValue ?? 0)
                return ok
            case ("GET", ["clock"]):
                return .json(200, ["now": RFC3339.string(now()), "manual": clock.isManual])
            case ("GET", ["seed"]):
                return .json(200, ["seed": NSNumber(value: seed)])
            case ("POST", ["seed"]):
                guard let seed = (body["seed"] as? NSNumber)?.uint64Value else {
                    return .json(400, ["error": "give seed"])
                }
                reseed(seed)
                return ok
            case ("POST", ["config"]):
                if let seconds = body["token_lifetime"] as? Int { setTokenLifetime(seconds: seconds) }
                if let cap = body["page_size_cap"] as? Int { setPageSizeCap(cap) }
                if let delay = (body["name_index_delay"] as? NSNumber)?.doubleValue {
                    setNameIndexDelay(seconds: delay)
                }
                if let lifetime = (body["page_token_lifetime"] as? NSNumber)?.doubleValue {
                    setPageTokenLifetime(seconds: lifetime)
                }
                setDeviceCode(lifetime: body["device_code_lifetime"] as? Int, interval: body["poll_interval"] as? Int)
                if let size = body["changes_page_size"] {
                    setChangesPageSize((size as? NSNumber)?.intValue)
                }
                if let lifetime = body["change_token_lifetime"] {
                    setChangeTokenLifetime(seconds: (lifetime as? NSNumber)?.doubleValue)
                }
                if let omits = body["about_omits_email"] as? Bool { setAboutOmitsEmail(omits) }
                if let offset = (body["date_offset"] as? NSNumber)?.doubleValue { setDateOffset(seconds: offset) }
                if let limit = body["device_code_limit"] as? Int {
                    setDeviceCodeLimit(perMinute: limit > 0 ? limit : nil)
                }
                if let enabled = body["drive_api_enabled"] as? Bool {
                    setDriveAPI(enabled: enabled, project: body["project"] as? String ?? EmulatedClient.ivyProject)
                }
                return ok
            case ("POST", ["accounts"]):
                guard let email = body["email"] as? String else { return .json(400, ["error": "give email"]) }
                addAccount(EmulatedAccount(email: email))
                return ok
            case ("POST", ["clients"]):
                guard let id = body["id"] as? String, let secret = body["secret"] as? String else {
                    return .json(400, ["error": "give id and secret"])
                }
                addClient(
                    EmulatedClient(
                        id: id, secret: secret, project: body["project"] as? String ?? EmulatedClient.ivyProject))
                return ok
            default:
                return .json(404, ["error": "no control endpoint \(request.method) \(request.path)"])
            }
        } catch {
            return failure(error)
        }
    }
}
