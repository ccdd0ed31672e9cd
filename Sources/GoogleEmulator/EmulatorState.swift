package import Foundation

/// What the emulator answers: a status, headers and a body, or a dropped connection.
package struct EmulatorReply: Sendable {
    package var status: Int
    package var headers: [String: String]
    package var body: Data
    /// Close the connection after sending this many bytes of the body.
    package var dropAfterBytes: Int?
    /// After the body, filler until the client hangs up (a download that never ends).
    package var endless: Bool
    /// A file's content: sent in pieces, each counted in `EmulatorState.mediaBytesSent`.
    package var media: Bool
    /// The status, headers and first byte of the body go out; the rest waits for
    /// `EmulatorState.releaseHeld` (fault `holdBody`).
    package var stalls = false

    package init(
        status: Int, headers: [String: String] = [:], body: Data = Data(), dropAfterBytes: Int? = nil,
        endless: Bool = false, media: Bool = false
    ) {
        self.status = status
        self.headers = headers
        self.body = body
        self.dropAfterBytes = dropAfterBytes
        self.endless = endless
        self.media = media
    }

    package static func json(_ status: Int, _ object: [String: Any], headers: [String: String] = [:]) -> EmulatorReply {
        let data = ReplyJSON.data(object)
        var all = headers
        all["Content-Type"] = "application/json; charset=UTF-8"
        return EmulatorReply(status: status, headers: all, body: data)
    }

    /// Drive's error envelope: `{"error":{"code","message","errors":[{"domain","reason","message"}],"status"}}`.
    package static func driveError(_ status: Int, reason: String, message: String, headers: [String: String] = [:])
        -> EmulatorReply
    {
        let domain =
            ["userRateLimitExceeded", "rateLimitExceeded", "dailyLimitExceeded"].contains(reason)
            ? "usageLimits" : "global"
        let canonical: String =
            switch status {
            case 400: "INVALID_ARGUMENT"
            case 401: "UNAUTHENTICATED"
            case 403: "PERMISSION_DENIED"
            case 404: "NOT_FOUND"
            case 409: "ALREADY_EXISTS"
            case 429: "RESOURCE_EXHAUSTED"
            case 503: "UNAVAILABLE"
            default: "INTERNAL"
            }
        return json(
            status,
            [
                "error": [
                    "code": status, "message": message, "status": canonical,
                    "errors": [["domain": domain, "reason": reason, "message": message]],
                ] as [String: Any]
            ], headers: headers)
    }

    /// OAuth endpoints answer with a flat body: `{"error","error_description"}`.
    package static func oauthError(_ status: Int, _ error: String, _ description: String) -> EmulatorReply {
        json(status, ["error": error, "error_description": description])
    }
}

/// A reply can be thrown where a handler gives up early.
extension EmulatorReply: Error {}

/// A sign-in in progress: the device code a client polls with and the user code a person enters.
struct DeviceSession: Sendable, Codable {
    enum Decision: Sendable, Codable, Equatable {
        case pending
        case approved(email: String)
        case denied
    }

    var deviceCode: String
    var userCode: String
    var clientID: String
    var scope: String
    /// When the code was asked for, and how many were asked for before it: which sign-in is
    /// the newest, even under a frozen clock.
    var requestedAt: Date
    var order: Int
    var expiresAt: Date
    var interval: Int
    var lastPoll: Date?
    /// `signInEvents` when it was asked for or last polled: whether its login is alive now
    /// shows as this passing a mark taken earlier, whatever the clock does.
    var lastEvent = 0
    var decision: Decision
    /// What the person allowed, when less than asked for: Google's consent screen lets them
    /// untick a scope.
    var grantedScope: String?
}

struct RefreshGrant: Sendable, Codable {
    var email: String
    var clientID: String
    var scope: String
    var revoked: Bool
}

struct AccessGrant: Sendable, Codable {
    var email: String
    var refreshToken: String
    var expiresAt: Date
}

/// The metadata of a file being created.
struct NewFile: Sendable {
    var id: String?
    var name: String
    var mimeType: String?
    var parents: [String]
    var modifiedTime: Date? = nil
    var description: String? = nil
    var appProperties: [String: String] = [:]
    var starred = false
}

/// A content update through `/upload` (files.update with media) waiting for its bytes: the
/// file, and the metadata body and query of the request that started it, applied when the
/// upload completes.
struct PendingUpdate: Sendable {
    var fileID: String
    var metadata: Data
    var query: [String: String]
}

/// Who is calling Drive: the account, and the Cloud project and scopes of the token's client.
struct Caller: Sendable {
    var email: String
    var project: String
    var scopes: Set<String>
}

struct UploadSession: Sendable {
    var email: String
    var metadata: NewFile
    var total: Int?
    var received: Data
    var createdAt: Date
    var completedFileID: String?
    /// Set when the session replaces an existing file's content instead of creating one.
    var update: PendingUpdate? = nil
    /// Answered a 4xx: Google wants a new session (see `sessionAnswered`).
    var dead = false
}

/// The emulator's whole state: accounts, clients, sign-ins, tokens, every Drive, upload
/// sessions, and the knobs tests turn (latency, write limit, faults, clock, page size).
package actor EmulatorState {
    package var accounts: [EmulatedAccount]
    package var clients: [EmulatedClient]
    /// Seconds an access token lives; tests shorten it to force refreshes.
    package var tokenLifetime: Int = 3599
    /// The port `ivy-emulator` listens on (kept in its state file, see `EmulatorSnapshot.port`).
    package var listeningPort: Int?

    package func setListeningPort(_ port: Int) { listeningPort = port }
    /// Seconds a device code lives, and the polling interval it asks for.
    package var deviceCodeLifetime: Int = 1800
    package var pollInterval: Int = 5
    /// The most files one list page returns, whatever pageSize asks for.
    package var pageSizeCap: Int = 1000
    package var latencyMilliseconds: Int = 0
    /// Seconds Google's clock is off the emulator's: a Google whose clock disagrees with the
    /// client's, as a machine without time synchronisation sees it (`ivy doctor`). Every time
    /// the emulator gives (answers' `Date` headers and files' times alike) is off by it: Google
    /// has one clock.
    package private(set) var dateOffset: TimeInterval = 0
    /// Pings received at `/health/…`, in order.
    package internal(set) var healthPings: [HealthPing] = []
    package private(set) var writeLimit: RateLimit?
    package private(set) var readLimit: RateLimit?
    /// Seconds before a new (or renamed) file shows in queries that test its name. Google
    /// indexes names apart from the file: `name = '…'` queries are not read-after-write
    /// consistent, while `'ID' in parents`, `mimeType` terms and `files.get` by id are (kopia
    /// issue #90). How long it lags is undocumented, so it is off (0) unless a test sets it.
    package private(set) var nameIndexDelay: TimeInterval = 0
    /// Seconds a `nextPageToken` stays good; an older one answers 400. The Drive reference
    /// (FileList.nextPageToken): "typically valid for several hours"; "if the token is
    /// rejected for any reason, it should be discarded, and pagination should be restarted
    /// from the first page of results."
    package private(set) var pageTokenLifetime: TimeInterval = 3 * 3600
    /// A cap on changes.list pages, shorter than pageSize asks for; nil for none.
    package private(set) var changesPageSizeCap: Int?
    /// Seconds a change token stays good after it was last handed out; nil (Drive's documented
    /// behaviour) for ever. See `setChangeTokenLifetime(seconds:)`.
    package private(set) var changeTokenLifetime: TimeInterval?
    package private(set) var faults: [FaultRule] = []
    /// How files.list misbehaves, if it does.
    package private(set) var listFault: ListFault?
    /// Cloud projects whose Drive API is turned off: their clients' Drive calls answer 403
    /// `accessNotConfigured`, as Google does until the API is enabled in the project.
    package private(set) var driveDisabledProjects: Set<String> = []
    /// Drive's `about` leaves out `emailAddress`, which Google documents it may do when the
    /// user has not made the address visible to the requester.
    package private(set) var aboutOmitsEmail = false
    /// Each account's storage limit in bytes, as `about.storageQuota.limit` reports it
    /// (Google's free 15 GB by default); nil: unlimited, and `limit` is left out as Google does.
    package private(set) var storageLimit: Int64? = 16_106_127_360

    package func setStorageLimit(_ bytes: Int64?) { storageLimit = bytes }
    /// How many device codes one client may ask for per minute; over it Google answers 403
    /// `{"error_code":"rate_limit_exceeded"}`. Nil: no limit.
    package private(set) var deviceCodeLimit: Int?
    /// Filler bytes endless answers have sent (or are sending) since the last `misreport`, or
    /// the last fault rule with `endless`: how a test sees that a client stopped reading.
    package private(set) var endlessBytesSent = 0
    /// Endless answers whose writing stopped, nearly always because the client hung up: one a
    /// client merely stopped reading stays blocked on the connection and is never counted.
    package var endlessAnswersEnded: Int { endlessEnded.value }
    private var endlessEnded = CountWaiters()
    /// Bytes of file content (`alt=media` answers) handed to the connection, and how many
    /// such answers were sent to the end: how a test sees how far the server got ahead of a
    /// client that reads slowly.
    package private(set) var mediaBytesSent = 0
    package private(set) var mediaAnswersSent = 0
    private var mediaWaiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
    /// Bytes of file content that reached the resumable sessions' PUTs, counted as they
    /// arrive, whether or not the request ended well: how a test sees how far an upload got
    /// and what it sent twice.
    package private(set) var uploadBytesReceived = 0
    private var uploadWaiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
    private var uploadsInFlight = 0
    private var settledWaiters: [CheckedContinuation<Void, Never>] = []
    package private(set) var requests: [LoggedRequest] = []

    var devices: [String: DeviceSession] = [:]
    /// How many device codes were asked for: the next sign-in's `order`.
    var deviceCodesIssued = 0
    /// Counts device codes asked for and polls for them, so `ivy-emulator approve` can tell a
    /// login that is alive now (its sign-in passes the count approve saw first) from one killed.
    var signInEvents = 0
    /// How many times the control API listed pending sign-ins: how a test starts a login just
    /// after `ivy-emulator approve` took its first look.
    package var pendingListings: Int { listings.value }
    private var listings = CountWaiters()
    var refreshTokens: [String: RefreshGrant] = [:]
    var accessTokens: [String: AccessGrant] = [:]
    var files: [String: DriveFile] = [:]
    /// Each account's change feed, by email.
    var changeLogs: [String: ChangeLog] = [:]
    var reservedIDs: Set<String> = []
    var uploads: [String: UploadSession] = [:]
    var deviceCodeRequests: [String: [Date]] = [:]
    /// The Cloud project of the Drive request being handled. Handlers run on the actor
    /// without suspending, so one request's project never leaks into another's.
    var requestProject: String?
    private var requestWaiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
    private var held: [CheckedContinuation<Void, Never>] = []
    private var heldCount = 0
    private var heldWaiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
    private var faultMatches: [Int: Int] = [:]
    private var faultFirings: [Int: Int] = [:]
    private var writeBucket: RateLimit.Bucket?
    private var readBucket: RateLimit.Bucket?
    /// The only time the emulator reads; see `EmulatorClock`.
    package private(set) var clock: EmulatorClock
    /// The seed `random` started from, for a failing run to be repeated with.
    package private(set) var seed: UInt64
    /// Every random choice the emulator makes comes from here.
    var random: SeededGenerator
    /// Counts the ids and tokens made; each carries it, so none repeats another.
    var serial: UInt64 = 0
    /// What every control request must carry (see `controlRefusal`): the control API approves
    /// sign-ins and reads every file, and every user of the machine can reach 127.0.0.1.
    package nonisolated let controlSecret: String
    /// The front end's connection faults and counts: a GOAWAY after N requests or at an age,
    /// refused handshakes (`/_emulator/wire`).
    package nonisolated let wire = WireFaults()
    /// The certificate authority a TLS emulator signs its certificate with: made when it
    /// first serves TLS, and kept in the state file so a restarted one is trusted as before.
    package internal(set) var authority: EmulatorAuthority?

    package func setAuthority(_ authority: EmulatorAuthority) { self.authority = authority }

    /// The seed of an emulator not given one: fixed, so tests repeat their ids and codes.
    package static let defaultSeed: UInt64 = 14

    package init(
        accounts: [EmulatedAccount], clients: [EmulatedClient], clock: EmulatorClock = .system,
        seed: UInt64 = EmulatorState.defaultSeed, controlSecret: String = EmulatorState.newControlSecret()
    ) {
        self.accounts = accounts
        self.clients = clients
        self.clock = clock
        self.seed = seed
        self.controlSecret = controlSecret
        random = SeededGenerator(seed: seed)
    }

    // MARK: clock and ids

    /// The emulator's time, in whole milliseconds, from its one clock (off by `dateOffset`).
    package func now() -> Date {
        let time = clock.now().timeIntervalSince1970 + dateOffset
        return Date(timeIntervalSince1970: (time * 1000).rounded(.down) / 1000)
    }

    /// Moves the emulator's clock forward, to expire codes and tokens without waiting.
    package func advanceClock(by seconds: TimeInterval) { clock.advance(by: seconds) }

    /// Stops the clock where it reads now: from then on time moves only by `advanceClock`,
    /// so rate-limit buckets refill only when a test (or a client's sleep it stands in for)
    /// says time has passed.
    package func freezeClock() { clock = clock.frozen() }

    /// Starts the random choices over from `seed`. Ids keep a serial number, so they stay
    /// unique across a reseed.
    package func reseed(_ seed: UInt64) {
        self.seed = seed
        random = SeededGenerator(seed: seed)
    }

    func token(_ prefix: String, length: Int = 32) -> String {
        serial += 1
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
        let tail = String((0..<length).map { _ in alphabet[Int.random(in: 0..<alphabet.count, using: &random)] })
        return prefix + String(serial, radix: 36) + tail
    }

    /// A new file id, never one a file or a `generateIds` answer already has (a state file
    /// restored under a reused seed holds ids the same sequence makes again).
    func newFileID() -> String {
        while true {
            let id = token("1", length: 27)
            if files[id] == nil && !reservedIDs.contains(id) { return id }
        }
    }

    // MARK: control

    package func setLatency(milliseconds: Int) { latencyMilliseconds = max(0, milliseconds) }
    package func setDateOffset(seconds: TimeInterval) { dateOffset = seconds }
    package func setTokenLifetime(seconds: Int) { tokenLifetime = max(1, seconds) }
    package func setPageSizeCap(_ cap: Int) { pageSizeCap = max(1, cap) }
    package func setDeviceCode(lifetime: Int? = nil, interval: Int? = nil) {
        if let lifetime { deviceCodeLifetime = lifetime }
        if let interval { pollInterval = interval }
    }

    package func setDriveAPI(enabled: Bool, project: String = EmulatedClient.ivyProject) {
        if enabled { driveDisabledProjects.remove(project) } else { driveDisabledProjects.insert(project) }
    }

    package func setAboutOmitsEmail(_ omits: Bool) { aboutOmitsEmail = omits }

    package func setDeviceCodeLimit(perMinute limit: Int?) {
        deviceCodeLimit = limit
        deviceCodeRequests = [:]
    }

    package func setWriteLimit(_ limit: RateLimit?) {
        writeLimit = limit
        writeBucket = limit?.fullBucket(at: now())
    }

    package func setReadLimit(_ limit: RateLimit?) {
        readLimit = limit
        readBucket = limit?.fullBucket(at: now())
    }

    package func setNameIndexDelay(seconds: TimeInterval) { nameIndexDelay = max(0, seconds) }
    package func setPageTokenLifetime(seconds: TimeInterval) { pageTokenLifetime = max(0, seconds) }

    /// Caps every changes.list page at `size` changes whatever pageSize asks for: the changes
    /// reference says of pageSize that "the service might return fewer than this value".
    package func setChangesPageSize(_ size: Int?) { changesPageSizeCap = size.map { max(1, $0) } }

    /// Makes change tokens expire `seconds` after the emulator last handed them out; nil (the
    /// default) for never. Drive's reference says of startPageToken, nextPageToken and
    /// newStartPageToken: "The page token doesn't expire." Yet ChangeList.nextPageToken also
    /// said: "If the token is rejected for any reason, it should be discarded, and pagination
    /// should be restarted from the first page of results." This knob is that rejection.
    package func setChangeTokenLifetime(seconds: TimeInterval?) { changeTokenLifetime = seconds.map { max(0, $0) } }

    /// False while a file's name is not yet in Drive's name index.
    func isNameIndexed(_ file: DriveFile) -> Bool {
        now().timeIntervalSince(file.nameTime ?? file.createdTime) >= nameIndexDelay
    }

    package func addFault(_ rule: FaultRule) {
        faults.append(rule)
        if rule.endless == true { endlessBytesSent = 0 }
    }

    package func setListFault(_ fault: ListFault?) {
        listFault = fault
    }

    package func clearFaults() {
        faults = []
        faultMatches = [:]
        faultFirings = [:]
    }

    package func clearRequests() { requests = [] }

    /// Counts a listing of pending sign-ins by the control API and wakes who waits for it.
    func countPendingListing() { listings.add() }

    /// Returns once the control API has listed pending sign-ins `count` times in all.
    package func waitForPendingListings(count: Int) async {
        if listings.value >= count { return }
        await withCheckedContinuation { listings.wait(for: count, $0) }
    }

    package func addAccount(_ account: EmulatedAccount) {
        if !accounts.contains(where: { $0.email == account.email }) { accounts.append(account) }
    }

    package func addClient(_ client: EmulatedClient) {
        clients.removeAll { $0.id == client.id }
        clients.append(client)
    }

    /// The user codes of sign-ins waiting for a person.
    package func pendingUserCodes() -> [String] {
        pendingSignIns().map(\.userCode).sorted()
    }

    /// The sign-ins waiting for a person, oldest first.
    package func pendingSignIns() -> [PendingSignIn] {
        let time = now()
        return devices.values.filter { $0.decision == .pending && $0.expiresAt > time }.sorted { $0.order < $1.order }
            .map { session in
                let idle = time.timeIntervalSince(session.lastPoll ?? session.requestedAt)
                // A client polls every interval (backing off on trouble, but not for long): one
                // silent for a minute and several intervals was stopped, and its sign-in can
                // no longer reach anyone.
                let abandoned = idle > max(60, 3 * Double(session.interval))
                return PendingSignIn(
                    userCode: session.userCode, clientID: session.clientID, order: session.order,
                    idleSeconds: idle, abandoned: abandoned, lastEvent: session.lastEvent)
            }
    }

    /// A person approves a sign-in, choosing the account. With no code given, the only pending
    /// one. `scope` is what they allowed when they unticked some of what was asked for.
    package func approve(userCode: String?, email: String?, scope: String? = nil) throws(EmulatorControlError) {
        _ = try approveNaming(userCode: userCode, email: email, scope: scope)
    }

    /// `approve`, answering the code approved and the account chosen.
    func approveNaming(
        userCode: String?, email: String?, scope: String?
    ) throws(EmulatorControlError) -> (userCode: String, email: String) {
        let key = try pendingDevice(userCode)
        let chosen = email ?? accounts.first?.email
        guard let chosen, accounts.contains(where: { $0.email == chosen }) else {
            let known = accounts.map(\.email).joined(separator: ", ")
            throw EmulatorControlError(
                "no account \(email ?? "") in the emulator; it has \(known.isEmpty ? "none" : known) (approve "
                    + "--account takes one of them; an emulator started with `--account \(email ?? "EMAIL")` has that "
                    + "one too)")
        }
        devices[key]?.decision = .approved(email: chosen)
        devices[key]?.grantedScope = scope
        return (devices[key]?.userCode ?? "", chosen)
    }

    package func deny(userCode: String?) throws(EmulatorControlError) {
        let key = try pendingDevice(userCode)
        devices[key]?.decision = .denied
    }

    private func pendingDevice(_ userCode: String?) throws(EmulatorControlError) -> String {
        let time = now()
        let pending = devices.filter { $0.value.decision == .pending && $0.value.expiresAt > time }
        if let userCode {
            guard let match = pending.first(where: { $0.value.userCode == userCode }) else {
                throw EmulatorControlError("no pending sign-in with code \(userCode)")
            }
            return match.key
        }
        guard pending.count == 1, let only = pending.first else {
            throw EmulatorControlError(
                pending.isEmpty ? "no sign-in is waiting" : "\(pending.count) sign-ins are waiting; name the code")
        }
        return only.key
    }

    /// The Cloud project of a client; a client the emulator no longer knows has none.
    func project(ofClient id: String) -> String? {
        clients.first { $0.id == id }?.project
    }

    /// Revokes as Google does: a token's revocation removes the whole grant of its account to
    /// the client's Cloud project, killing the tokens of every client of that project
    /// ("OAuth 2.0 for TV and Limited-Input Device Applications", Token revocation). With an
    /// email only, every grant of the account (the user removed all access).
    package func revoke(refreshToken: String? = nil, email: String? = nil) {
        if let refreshToken, let grant = refreshTokens[refreshToken] {
            let project = project(ofClient: grant.clientID)
            for (token, other) in refreshTokens
            where other.email == grant.email
                && (token == refreshToken || (project != nil && self.project(ofClient: other.clientID) == project))
            {
                revokeToken(token)
            }
        }
        if let email {
            for (token, grant) in refreshTokens where grant.email == email { revokeToken(token) }
        }
    }

    private func revokeToken(_ refreshToken: String) {
        refreshTokens[refreshToken]?.revoked = true
        accessTokens = accessTokens.filter { $0.value.refreshToken != refreshToken }
    }

    /// A sign-in the emulator grants without the device flow, as another client (the Ivy
    /// phone app signs in its own way) gets one: returns its access and refresh tokens.
    package func grant(
        email: String, clientID: String, scope: String = "https://www.googleapis.com/auth/drive.file"
    ) throws(EmulatorControlError) -> (access: String, refresh: String) {
        guard clients.contains(where: { $0.id == clientID }) else {
            throw EmulatorControlError("no client \(clientID)")
        }
        guard accounts.contains(where: { $0.email == email }) else { throw EmulatorControlError("no account \(email)") }
        let refresh = token("1//0g", length: 48)
        refreshTokens[refresh] = RefreshGrant(email: email, clientID: clientID, scope: scope, revoked: false)
        return (issueAccessToken(email: email, refreshToken: refresh), refresh)
    }

    /// Every file of one account (or of all), content included.
    package func dump(email: String? = nil) -> [DriveFile] {
        files.values.filter { email == nil || $0.owner == email }.sorted {
            ($0.createdTime, $0.id) < ($1.createdTime, $1.id)
        }
    }

    /// Puts a file straight into a Drive, as if an app of `project` had created it (by
    /// default one of ivy's project, such as the Ivy app); a nil project is a file a person
    /// made in Drive's web page.
    @discardableResult
    package func putFile(
        email: String, name: String, parents: [String], content: Data, mimeType: String = "application/octet-stream",
        modifiedTime: Date? = nil, project: String? = EmulatedClient.ivyProject
    ) -> DriveFile {
        let time = now()
        let file = DriveFile(
            id: newFileID(), name: name, mimeType: mimeType, parents: parents, owner: email, createdTime: time,
            modifiedTime: modifiedTime ?? time, content: content, explicitlyTrashed: false, project: project)
        files[file.id] = file
        noteChange(file)
        return file
    }

    /// Replaces a file's content in place (bad remote input for tests), keeping its id.
    package func corruptFile(id: String, content: Data) throws(EmulatorControlError) {
        guard files[id] != nil else { throw EmulatorControlError("no file \(id)") }
        files[id]?.content = content
        files[id]?.modifiedTime = now()
        files[id]?.version += 1
        if let file = files[id] { noteChange(file) }
    }

    /// Makes a file's metadata or download lie (nil clears it): a hostile server for tests.
    package func misreport(id: String, _ misreport: Misreport?) throws(EmulatorControlError) {
        guard files[id] != nil else { throw EmulatorControlError("no file \(id)") }
        files[id]?.misreport = misreport
        endlessBytesSent = 0
    }

    func countEndless(_ bytes: Int) { endlessBytesSent += bytes }

    func endlessAnswerEnded() { endlessEnded.add() }

    /// Returns once `count` endless answers have stopped being written.
    package func waitForEndlessAnswersEnded(count: Int) async {
        if endlessEnded.value >= count { return }
        await withCheckedContinuation { endlessEnded.wait(for: count, $0) }
    }

    func countMedia(_ bytes: Int) { mediaBytesSent += bytes }

    func mediaAnswerSent() {
        mediaAnswersSent += 1
        let ready = mediaWaiters.filter { $0.count <= mediaAnswersSent }
        mediaWaiters.removeAll { $0.count <= mediaAnswersSent }
        for waiter in ready { waiter.continuation.resume() }
    }

    func countUploadBytes(_ bytes: Int) {
        uploadBytesReceived += bytes
        let ready = uploadWaiters.filter { $0.count <= uploadBytesReceived }
        uploadWaiters.removeAll { $0.count <= uploadBytesReceived }
        for waiter in ready { waiter.continuation.resume() }
    }

    /// Waits until at least `count` bytes of file content reached the upload sessions.
    package func waitForUploadBytes(atLeast count: Int) async {
        guard uploadBytesReceived < count else { return }
        await withCheckedContinuation { uploadWaiters.append((count, $0)) }
    }

    func uploadStarted() { uploadsInFlight += 1 }

    func uploadEnded() {
        uploadsInFlight -= 1
        guard uploadsInFlight == 0 else { return }
        let waiting = settledWaiters
        settledWaiters = []
        for waiter in waiting { waiter.resume() }
    }

    /// Waits until no session PUT is being read or answered: what a killed client sent is all
    /// in, logged and applied.
    package func waitForUploadsSettled() async {
        guard uploadsInFlight > 0 else { return }
        await withCheckedContinuation { settledWaiters.append($0) }
    }

    /// Ends every `waitForUploadBytes` now, reached or not: for a test whose client ended first.
    package func endUploadWaits() {
        let waiting = uploadWaiters
        uploadWaiters = []
        for waiter in waiting { waiter.continuation.resume() }
    }

    /// Returns once `count` file-content answers have been handed to their connections whole.
    package func waitForMediaAnswers(count: Int) async {
        if mediaAnswersSent >= count { return }
        await withCheckedContinuation { mediaWaiters.append((count, $0)) }
    }

    package func trash(id: String) throws(EmulatorControlError) {
        guard files[id] != nil else { throw EmulatorControlError("no file \(id)") }
        files[id]?.explicitlyTrashed = true
        files[id]?.version += 1
        if let file = files[id] { noteChange(file, withDescendantsIn: files) }
    }

    /// True when the file or any folder above it is trashed.
    func isTrashed(_ file: DriveFile) -> Bool {
        if file.explicitlyTrashed { return true }
        // Up the first parents; a chain longer than there are files has gone round a cycle
        // (which Drive forbids, but the state file could hold), so it ends there.
        var parent = file.parents.first
        var steps = 0
        while let id = parent, let item = files[id], steps < files.count {
            if item.explicitlyTrashed { return true }
            parent = item.parents.first
            steps += 1
        }
        return false
    }

    // MARK: per-request machinery

    func log(_ entry: LoggedRequest) {
        requests.append(entry)
        let ready = requestWaiters.filter { $0.count <= requests.count }
        requestWaiters.removeAll { $0.count <= requests.count }
        for waiter in ready { waiter.continuation.resume() }
    }

    /// Returns once the log holds at least `count` requests: how a test acts at a chosen
    /// moment of a sync without sleeping.
    package func waitForRequests(count: Int) async {
        if requests.count >= count { return }
        await withCheckedContinuation { requestWaiters.append((count, $0)) }
    }

    /// Parks a request until `releaseHeld`.
    func hold() async {
        await withCheckedContinuation { continuation in
            held.append(continuation)
            heldCount += 1
            let ready = heldWaiters.filter { $0.count <= heldCount }
            heldWaiters.removeAll { $0.count <= heldCount }
            for waiter in ready { waiter.continuation.resume() }
        }
    }

    /// Returns once `count` requests in all have been held by a `hold` fault.
    package func waitForHeld(count: Int) async {
        if heldCount >= count { return }
        await withCheckedContinuation { heldWaiters.append((count, $0)) }
    }

    /// Ends every `waitForHeld` still waiting, for a test that learned another way that no
    /// request will be held.
    package func endHeldWaits() {
        let waiting = heldWaiters
        heldWaiters = []
        for waiter in waiting { waiter.continuation.resume() }
    }

    /// Requests a `hold` fault holds now, unanswered.
    package var requestsHeldNow: Int { held.count }

    /// Lets every held request go on.
    package func releaseHeld() {
        let parked = held
        held = []
        for continuation in parked { continuation.resume() }
    }

    /// The first fault rule that fires for this request, counting matches as it goes.
    /// How many times fault rules have fired since they were set: a test learns that a
    /// request has arrived (and is being delayed) without waiting for its answer.
    package var faultsFired: Int { faultFirings.values.reduce(0, +) }

    func fault(method: String, target: String) -> FaultRule? {
        for (index, rule) in faults.enumerated() {
            if let wanted = rule.method, wanted.uppercased() != method { continue }
            if let part = rule.pathContains, !target.contains(part) { continue }
            if let times = rule.times, faultFirings[index, default: 0] >= times { continue }
            faultMatches[index, default: 0] += 1
            let fires: Bool
            if let nth = rule.nth {
                fires = faultMatches[index] == nth
            } else {
                fires = Double.random(in: 0..<1, using: &random) < (rule.probability ?? 1)
            }
            if fires {
                faultFirings[index, default: 0] += 1
                return rule
            }
        }
        return nil
    }

    /// Takes one write from the write bucket; false when over Drive's sustained rate.
    func admitWrite() -> Bool {
        guard let limit = writeLimit, var bucket = writeBucket else { return true }
        defer { writeBucket = bucket }
        return limit.take(from: &bucket, at: now())
    }

    /// Takes one read from the read bucket; false when over the read limit.
    func admitRead() -> Bool {
        guard let limit = readLimit, var bucket = readBucket else { return true }
        defer { readBucket = bucket }
        return limit.take(from: &bucket, at: now())
    }

    /// The account, project and scopes behind a bearer token, or why there is none.
    func caller(bearer header: String?) -> Result<Caller, EmulatorReply> {
        let unauthorized = EmulatorReply.driveError(
            401, reason: "authError",
            message:
                "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or "
                + "other valid authentication credential.",
            headers: ["WWW-Authenticate": "Bearer realm=\"https://accounts.google.com/\", error=\"invalid_token\""])
        guard let header, header.hasPrefix("Bearer ") else { return .failure(unauthorized) }
        let token = String(header.dropFirst("Bearer ".count))
        guard let grant = accessTokens[token], grant.expiresAt > now(), let refresh = refreshTokens[grant.refreshToken],
            !refresh.revoked, let project = project(ofClient: refresh.clientID)
        else {
            return .failure(unauthorized)
        }
        let scopes = Set(refresh.scope.split(separator: " ").map(String.init))
        return .success(Caller(email: grant.email, project: project, scopes: scopes))
    }
}

package struct EmulatorControlError: Error, Sendable, CustomStringConvertible {
    package let description: String
    init(_ description: String) { self.description = description }
}

/// A sign-in waiting for a person, as the control API shows it.
package struct PendingSignIn: Sendable, Equatable {
    package var userCode: String
    package var clientID: String
    /// Its place among every sign-in asked for: a larger one is newer.
    package var order: Int
    /// Seconds since the client last polled for it (or asked for it, before its first poll).
    package var idleSeconds: Double
    /// Nobody has polled for it in a long while: the `ivy login` that asked for it was stopped.
    package var abandoned: Bool
    /// The emulator's sign-in event count when it was asked for or last polled.
    package var lastEvent: Int = 0
}

/// One ping a health-check service received: its path (`/health/NAME`, `/health/NAME/start`,
/// `/health/NAME/fail`) and its body.
package struct HealthPing: Sendable, Equatable {
    package var path: String
    package var body: String
}

/// A count the state keeps, and the tests waiting for it to reach a number: each is resumed
/// once it has.
struct CountWaiters {
    private(set) var value = 0
    private var waiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []

    mutating func add() {
        value += 1
        let due = value
        let ready = waiters.filter { $0.count <= due }
        waiters.removeAll { $0.count <= due }
        for waiter in ready { waiter.continuation.resume() }
    }

    mutating func wait(for count: Int, _ continuation: CheckedContinuation<Void, Never>) {
        waiters.append((count, continuation))
    }
}
