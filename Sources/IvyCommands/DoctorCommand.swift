import ArgumentParser
import Foundation
import IvyCore
import IvyGoogle
import IvyStore
import IvySync
import IvySystem
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// `ivy doctor`: the whole setup checked, one line per check with the fix for each problem.
struct DoctorCommand: ContextCommand {
    static let configuration = CommandConfiguration(
        commandName: "doctor",
        abstract: "Check the whole setup and name the fix for each problem.",
        discussion: """
            One line per check: ok, warning or problem, what was checked, and the fix. Checks the home's permissions \
            (its directories, library.db and token.json) and free space, the library and its migrations (read only: \
            it migrates nothing), the OAuth client, the sign-in (one token refresh, never holding the sync lock), \
            Drive (about.get) and its used and free space (a warning when the library's audio would not fit), the \
            clock against Google's Date header, that the Ivy folders exist once (twins named, oldest first), held \
            changes and held deletions, the last success, the health URL, and how syncs are scheduled (cron or the \
            ivy-watch systemd user unit). The network checks get 25 s in all; a server that does not answer by then \
            is named. Changes nothing else; exits 0 when nothing is a problem, 1 otherwise.
            """)

    @OptionGroup var global: GlobalOptions
    @Flag(help: "Print one JSON array.") var json = false

    typealias Finding = DoctorFinding

    func run(_ context: Context) async throws {
        // Unchecked: a home ivy refuses is a finding here, not an error.
        let home = try global.home(context, checked: false)
        var findings: [Finding] = []
        func add(_ level: Finding.Level, _ check: String, _ detail: String, fix: String? = nil) {
            findings.append(Finding(level: level, check: check, detail: detail, fix: fix))
        }
        func note(_ finding: Finding) { findings.append(finding) }
        guard Self.checkHome(home, note) else {
            // Every other command refuses this home, and the sign-in check would write in it.
            add(
                .warning, "other checks", "not run: ivy uses no home it refuses",
                fix: "fix the home, then run `ivy doctor` again")
            try report(findings, home)
            throw ExitCode.failure
        }
        let library: LibraryDatabase?
        do {
            // Read-only: nothing migrated, no journal switched, no file created.
            let opened = try await home.library(readOnly: true)
            if let newer = try await opened.migratedByNewerIvy() {
                add(.problem, "library", newer, fix: "run the newer ivy")
            } else {
                let exists = FileManager.default.fileExists(atPath: home.paths.database)
                try await note(
                    DoctorRules.library(home.paths.database, exists: exists, pending: opened.pendingMigrations()))
            }
            library = opened
        } catch {
            add(.problem, "library", error.localizedDescription, fix: "see the error; `ivy status` says more")
            library = nil
        }
        let credentials = await Self.checkClient(home, library, add)
        await Self.checkNetwork(home, library: library, credentials: credentials, note)
        if let library { try await Self.checkLibraryState(home, library, add) }
        await Self.checkSchedule(home, add)
        try report(findings, home)
        if findings.contains(where: { $0.level == .problem }) { throw ExitCode.failure }
    }

    private func report(_ findings: [Finding], _ home: Home) throws {
        if json { return try home.output.json(findings) }
        for finding in findings {
            let fix = finding.fix.map { "; fix: \($0)" } ?? ""
            home.output.line(
                Display.safe(
                    "\(finding.level.rawValue.padding(toLength: 8, withPad: " ", startingAt: 0))"
                        + "\(finding.check): \(finding.detail)\(fix)"))
        }
    }

    /// The directories ivy keeps files in and its private files (the library, its journal, the
    /// sign-in), then the free space where the library is. False when ivy refuses the home: by
    /// the rule every command refuses it by (`GlobalOptions.refusals`), each directory at fault
    /// named once with its fix, whether the one it makes unsafe exists yet or not.
    private static func checkHome(_ home: Home, _ add: (Finding) -> Void) -> Bool {
        let paths = home.paths
        let directory = paths.dataDirectory
        let refusals = GlobalOptions.refusals(paths)
        refusals.map(DoctorRules.refused).forEach(add)
        guard FileManager.default.fileExists(atPath: directory) else {
            if refusals.isEmpty {
                add(
                    Finding(
                        level: .warning, check: "home", detail: "\(directory) does not exist yet",
                        fix: "any ivy command that writes creates it"))
            }
            return refusals.isEmpty
        }
        var wrong: [Finding] = []
        var directories: [String] = []
        for each in [paths.dataDirectory, paths.configDirectory, paths.stateDirectory]
        where !directories.contains(each) {
            directories.append(each)
            guard let status = FileStatus.of(each),
                let finding = DoctorRules.directory(
                    each, mode: status.mode, owner: status.owner, user: UInt32(geteuid())),
                // What ivy refuses is among the refusals already.
                finding.level != .problem
            else { continue }
            wrong.append(finding)
        }
        for file in [paths.database, paths.database + "-wal", paths.database + "-shm", paths.tokenFile] {
            guard let status = FileStatus.of(file, followingLinks: false), status.isRegularFile else { continue }
            if let finding = DoctorRules.file(file, mode: status.mode) { wrong.append(finding) }
        }
        if wrong.isEmpty, refusals.isEmpty {
            add(Finding(level: .ok, check: "home", detail: "\(directory) and its files are private", fix: nil))
        }
        wrong.forEach(add)
        var space = statvfs()
        if statvfs(directory, &space) == 0 {
            add(DoctorRules.disk(freeBytes: Int64(space.f_bavail) * Int64(space.f_frsize)))
        }
        return refusals.isEmpty
    }

    /// The OAuth client and where it comes from (see `Home.client`).
    private static func checkClient(
        _ home: Home, _ library: LibraryDatabase?, _ add: (Finding.Level, String, String, String?) -> Void
    ) async -> ClientCredentials? {
        var resolution: ClientResolution?
        if let library { resolution = try? await home.client(library) }
        if let incomplete = resolution?.incomplete {
            add(.problem, "oauth client", incomplete, ClientResolution.halfClientFix)
            return nil
        }
        guard let resolution, let credentials = resolution.credentials else {
            add(
                .problem, "oauth client", "no OAuth client is configured, and this build has none built in",
                "install a release of ivy (it has a client built in), or `ivy config set client_id ID` and "
                    + "`ivy config set client_secret --from-file FILE` (a \"TVs and Limited Input devices\" client; "
                    + "FILE holding the secret, or - for standard input), or IVY_CLIENT_ID and IVY_CLIENT_SECRET")
            return nil
        }
        add(.ok, "oauth client", "\(credentials.id) (\(resolution.source.phrase))", nil)
        return credentials
    }

    /// The network checks (sign-in, Drive, folders) within `doctorDeadline` (25 s): past it
    /// they are cancelled and the server that did not answer is named, so a server that takes
    /// connections and never answers holds doctor half a minute, not minutes.
    private static func checkNetwork(
        _ home: Home, library: LibraryDatabase?, credentials: ClientCredentials?, _ note: (Finding) -> Void
    ) async {
        let found = Shared<[Finding]>([])
        // Said after the sign-in's findings, whichever answer comes first.
        let scopeFound = Shared<[Finding]>([])
        let deadline = home.context.doctorDeadline
        let answered = await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                async let scope: Void = checkScope(home, credentials: credentials) { level, check, detail, fix in
                    scopeFound.update { $0.append(Finding(level: level, check: check, detail: detail, fix: fix)) }
                }
                await checkSignIn(home, library: library, credentials: credentials) { level, check, detail, fix in
                    found.update { $0.append(Finding(level: level, check: check, detail: detail, fix: fix)) }
                }
                await scope
                return true
            }
            group.addTask {
                try? await Task.sleep(for: deadline)
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
        for finding in found.value + scopeFound.value { note(finding) }
        guard !answered else { return }
        let server = otherServer(home).map { "the server this sign-in was made at, \($0)," } ?? "Google"
        note(
            Finding(
                level: .problem, check: "network", detail: "\(server) did not answer within \(seconds(deadline)) s",
                fix: "check the network, then run `ivy doctor` again"))
    }

    /// Whether Google's device sign-in takes the scope ivy asks for with this client: one device
    /// code asked for and never used (it lapses), no Drive quota spent. Google allows the device
    /// flow a short list of scopes; were drive.file taken off it, or the client deleted, `ivy
    /// login` could not work, and this says so before anyone needs it.
    private static func checkScope(
        _ home: Home, credentials: ClientCredentials?,
        _ add: @Sendable (Finding.Level, String, String, String?) -> Void
    ) async {
        guard let credentials else { return }
        let endpoints: GoogleEndpoints
        do {
            let tokens = home.tokenStore(warn: { _ in })
            if case .signedIn(let token) = tokens.signIn() {
                endpoints = try home.endpoints(for: token)
            } else {
                endpoints = try home.endpoints()
            }
        } catch {
            return  // The sign-in check names what is wrong with the servers.
        }
        let flow = DeviceFlow(endpoints: endpoints, credentials: credentials, effects: home.google)
        do {
            _ = try await flow.start()
            add(.ok, "sign-in scope", "Google's device sign-in takes \(DeviceFlow.scope) from this client", nil)
        } catch GoogleError.invalidClient {
            add(
                .problem, "sign-in scope", "Google does not know the OAuth client \(credentials.id) (invalid_client)",
                "check the client id and secret (`ivy config get client_id`), or use a release's built-in client")
        } catch GoogleError.http(_, let reason, let message) where reason == "invalid_scope" {
            add(
                .problem, "sign-in scope",
                "Google's device sign-in refuses the scope ivy asks for, \(DeviceFlow.scope): \(message)",
                "`ivy login` cannot work until it is allowed again; a newer ivy may ask for another")
        } catch GoogleError.codeRateLimited {
            add(
                .warning, "sign-in scope", "not checked: Google limits how often this client asks for sign-in codes",
                "run `ivy doctor` again in a minute")
        } catch {
            add(.warning, "sign-in scope", "not checked: \(described(error, home))", "run `ivy doctor` again")
        }
    }

    /// A deadline in seconds, for people: `25`, `1.5`.
    private static func seconds(_ deadline: Duration) -> String {
        (deadline / .seconds(1)).formatted(.number.precision(.fractionLength(0...1)))
    }

    /// A value the network checks' own task writes and doctor reads after it.
    private final class Shared<Value: Sendable>: Sendable {
        private let state: Mutex<Value>
        init(_ value: Value) { state = Mutex(value) }
        func update(_ change: (inout Value) -> Void) { state.withLock { change(&$0) } }
        var value: Value { state.withLock { $0 } }
    }

    /// The address of the server the sign-in was made at (ivy-emulator); nil for Google's.
    private static func otherServer(_ home: Home) -> String? {
        guard let token = home.tokenStore(warn: { _ in }).quietLoad(), let endpoints = try? home.endpoints(for: token),
            !endpoints.isGoogle
        else { return nil }
        return endpoints.oauth.absoluteString
    }

    /// A network error names the server tried: Google's message says Google. A check the
    /// deadline cancelled says which server kept it waiting, and for how long.
    private static func described(_ error: any Error, _ home: Home) -> String {
        if error is CancellationError || Task.isCancelled {
            let server = otherServer(home).map { "the server this sign-in was made at, \($0)," } ?? "Google"
            return "\(server) did not answer within \(seconds(home.context.doctorDeadline)) s"
        }
        guard case .network(let message)? = error as? GoogleError, let server = otherServer(home) else {
            return error.localizedDescription
        }
        return "cannot reach the server this sign-in was made at, \(server): \(message)"
    }

    /// The sign-in refreshed now (one token request, the sync lock not held), then Drive's
    /// `about.get` with it, whose `Date` header says how far this clock is from Google's, then
    /// ivy's folders on Drive (one listing; nothing is created). A 401 there would refresh once
    /// more, outside the lock: a token seconds old is rejected only when Google revoked it.
    private static func checkSignIn(
        _ home: Home, library: LibraryDatabase?, credentials: ClientCredentials?,
        _ add: (Finding.Level, String, String, String?) -> Void
    ) async {
        let tokens = home.tokenStore(warn: { _ in })
        guard case .signedIn(let token) = tokens.signIn() else {
            let problem = SignInText.problem(tokens.signIn(), zone: home.displayZone) ?? "not signed in"
            add(.problem, "sign-in", problem, "run `ivy login`")
            return
        }
        guard let credentials else {
            add(.warning, "sign-in", "\(token.email): not checked without an OAuth client", "configure the client")
            return
        }
        let effects = home.google
        let endpoints: GoogleEndpoints
        let provider: TokenProvider
        let access: String
        do {
            endpoints = try home.endpoints(for: token)
            provider = try await refresh(home, token, tokens: tokens, endpoints, credentials, effects)
            // The token just refreshed: no second request.
            access = try await provider.accessToken()
        } catch {
            let signedOut: Bool
            if case .signedOut? = error as? GoogleError { signedOut = true } else { signedOut = false }
            add(
                .problem, "sign-in", "\(token.email): \(described(error, home))",
                signedOut ? "run `ivy login`" : "check the network, then run `ivy doctor` again")
            return
        }
        add(.ok, "sign-in", "\(token.email) refreshes", nil)
        if let scope = token.scope, !scope.split(separator: " ").contains(Substring(DeviceFlow.scope)) {
            add(
                .problem, "sign-in", "\(token.email) did not grant drive.file (granted: \(scope))",
                "run `ivy login` and allow access to the files ivy creates")
        }
        guard await checkDrive(home, endpoints: endpoints, access: access, transport: effects.transport, add) else {
            return
        }
        let drive = DriveClient(
            drive: endpoints.drive, authorized: AuthorizedTransport(tokens: provider, transport: effects.transport),
            concurrency: 1, sleep: effects.sleep, now: effects.elapsed)
        do {
            let remembered = try await library?.rememberedFolders()
            let found = try await drive.existingFolders(remembered: remembered)
            let finding = DoctorRules.folders(found, remembered: remembered)
            add(finding.level, finding.check, finding.detail, finding.fix)
        } catch {
            add(.problem, "folders", described(error, home), "check the network, then run `ivy doctor` again")
        }
    }

    /// One token request, made without the sync lock and without writing the token file: the
    /// provider keeps what Google answers in memory. Only when the answer must outlive doctor
    /// (a new refresh token, or Google's refusal, which `ivy status` reports) is it written,
    /// under the lock, a local write with no network wait inside it, and only if the file
    /// still holds the sign-in doctor started from.
    private static func refresh(
        _ home: Home, _ token: StoredToken, tokens: TokenStore, _ endpoints: GoogleEndpoints,
        _ credentials: ClientCredentials, _ effects: GoogleEffects
    ) async throws -> TokenProvider {
        var stale = token
        stale.accessToken = nil
        let latest = Shared<StoredToken?>(nil)
        let provider = TokenProvider(
            token: stale, saving: { answered in latest.update { $0 = answered } }, endpoints: endpoints,
            credentials: credentials, effects: effects)
        defer { keep(latest.value, startedFrom: token, tokens: tokens, home) }
        _ = try await provider.accessToken()
        return provider
    }

    /// Writes what Google answered when it must outlive doctor. The lock is tried, never
    /// waited for: while a sync runs, its own refresh records the same answer.
    private static func keep(_ answered: StoredToken?, startedFrom token: StoredToken, tokens: TokenStore, _ home: Home)
    {
        guard let answered,
            answered.refreshToken != token.refreshToken || answered.signedOutReason != token.signedOutReason
        else { return }
        guard case .acquired(let lock)? = try? SyncLock.acquire(path: home.paths.lockFile) else { return }
        withSyncLock(lock) {
            guard let current = tokens.quietLoad(), current.refreshToken == token.refreshToken else { return }
            try? tokens.save(answered)
        }
    }

    /// Drive's `about.get`, whose `Date` header says how far this clock is from Google's;
    /// false when Drive did not answer it.
    private static func checkDrive(
        _ home: Home, endpoints: GoogleEndpoints, access: String, transport: any HTTPTransport,
        _ add: (Finding.Level, String, String, String?) -> Void
    ) async -> Bool {
        var components = URLComponents(
            url: endpoints.drive.appendingPathComponent("drive/v3/about"), resolvingAgainstBaseURL: false)
        // storageQuota rides on the same request: the Drive's space, for the storage check.
        components?.queryItems = [URLQueryItem(name: "fields", value: "user(emailAddress,permissionId),storageQuota")]
        guard let url = components?.url else { return false }
        do {
            let response = try await transport.send(
                HTTPRequest(method: "GET", url: url, headers: ["Authorization": "Bearer \(access)"]))
            guard response.status == 200 else {
                add(
                    .problem, "drive", GoogleError.from(response).localizedDescription,
                    "enable the Drive API in the client's Cloud project and grant drive.file at `ivy login`")
                return false
            }
            add(.ok, "drive", "Google Drive answers about.get", nil)
            let storage = DoctorRules.storage(
                StorageQuota(response), libraryBytes: Self.bytes(under: home.paths.audioDirectory))
            add(storage.level, storage.check, storage.detail, storage.fix)
            guard let date = response.headers["date"].flatMap(HTTPDateHeader.milliseconds) else { return true }
            // This device's own clock: ivy records Google's time, but other programs use this one.
            let skew = abs(home.clock.wall() - date) / 1000
            if skew >= 120 {
                add(
                    // Rounded: Google's Date is to the second, so 10 minutes ahead reads as 599.x s.
                    .problem, "clock", "this clock is \((skew + 30) / 60) minutes off Google's (merges compare times)",
                    "turn on time synchronisation (timedatectl set-ntp true)")
            } else {
                add(.ok, "clock", "within \(skew) s of Google's", nil)
            }
            return true
        } catch {
            add(.problem, "drive", described(error, home), "check the network, then run `ivy doctor` again")
            return false
        }
    }

    /// A small restore drill (`ivy check --history` with 3 versions, the kept MP3s of those
    /// alone): the lock is tried, never waited for, and while a sync runs the drill is left out.
    private static func checkHistory(
        _ home: Home, _ library: LibraryDatabase, _ add: (Finding.Level, String, String, String?) -> Void
    ) async throws {
        guard case .acquired(let lock)? = try? SyncLock.acquire(path: home.paths.lockFile) else {
            return add(.warning, "history", "not drilled: a sync is running", "run `ivy doctor` again when it is done")
        }
        var random = SystemRandomNumberGenerator()
        let report: HistoryDrillReport
        do {
            report = try await withSyncLock(lock) {
                try await library.historyDrill(sample: 3, allKept: false, using: &random)
            }
        } catch {
            // Where it could not run (a read-only home has no room for the scratch copy).
            return add(
                .warning, "history", "not drilled: \(error.localizedDescription)",
                "run `ivy check --history` where the library can be written")
        }
        if report.versions == 0 {
            add(.ok, "history", "no versions kept yet", nil)
        } else if let first = report.problems.first {
            add(
                .problem, "history",
                "\(report.problems.count) of the versions drilled did not restore as recorded; first: \(first)",
                "run `ivy check --history` for the whole drill")
        } else {
            add(
                .ok, "history",
                "\(report.restored) version\(report.restored == 1 ? "" : "s") restored into a scratch copy as recorded",
                nil)
        }
    }

    /// The bytes of the files under `path` (the library's MP3s), 0 when it cannot be read.
    private static func bytes(under path: String) -> Int64 {
        guard let files = FileManager.default.enumerator(atPath: path) else { return 0 }
        var total: Int64 = 0
        for case let name as String in files {
            let size = (try? FileManager.default.attributesOfItem(atPath: path + "/" + name))?[.size] as? NSNumber
            total += size?.int64Value ?? 0
        }
        return total
    }

    private static func checkLibraryState(
        _ home: Home, _ library: LibraryDatabase, _ add: (Finding.Level, String, String, String?) -> Void
    ) async throws {
        let held = try await library.heldItems()
        if let first = held.first {
            add(
                .problem, "held changes", "\(held.count) held back; first: \(first.key): \(first.lastError ?? "")",
                "fix the cause, then `ivy retry-failed`")
        } else {
            add(.ok, "held changes", "none", nil)
        }
        try await checkHistory(home, library, add)
        if let held = try await library.internalSetting(.deletionsHeld) {
            // The planner's reason ends with what to do, which is the fix here.
            let reason = held.components(separatedBy: "; nothing was deleted").first ?? held
            add(
                .problem, "held deletions", "the last sync deleted nothing here: \(reason)",
                "check Drive; if they are really gone there, `ivy sync --allow-deletes` deletes them here")
        } else {
            add(.ok, "held deletions", "none", nil)
        }
        let now = home.clock.now()
        if let success = try await library.localStatus().lastSuccess {
            let age = now - success
            let shown = Display.dateWithAge(success, now: now, zone: home.displayZone)
            add(
                age > 86_400_000 ? .warning : .ok, "last success", shown,
                age > 86_400_000 ? "run `ivy sync` and read what it says" : nil)
        } else {
            add(.warning, "last success", "never", "run `ivy sync`")
        }
        if let stored = try await library.setting(.healthURL) {
            var refusal: String?
            do {
                _ = try GoogleEndpoints.checkedURL(stored, named: SettingKey.healthURL.rawValue)
            } catch {
                refusal = error.localizedDescription
            }
            let finding = try await DoctorRules.healthURL(
                stored, refusal: refusal, last: library.lastHealthPing(),
                when: { Display.dateWithAge($0, now: now, zone: home.displayZone) })
            add(finding.level, finding.check, finding.detail, finding.fix)
        } else {
            add(
                .warning, "health url", "none: a cron sync that stops working tells no one",
                "`ivy config set health_url https://hc-ping.com/UUID` (healthchecks.io or your own)")
        }
    }

    /// A crontab line running `ivy sync --auto` whose program cron can run, as cron's shell
    /// finds it (`Crontab`), or the ivy-watch systemd user unit enabled.
    private static func checkSchedule(_ home: Home, _ add: (Finding.Level, String, String, String?) -> Void) async {
        let path = home.environment["PATH"] ?? "/usr/bin:/bin"
        if let crontab = Self.find("crontab", in: path),
            let listing = await Self.output(of: crontab, ["-l"], environment: home.environment)
        {
            // Cron's HOME and LOGNAME are the passwd entry's, whatever this shell's HOME says.
            let user = getpwuid(getuid())
            let cron = Crontab.environment(
                home: user.map { String(cString: $0.pointee.pw_dir) } ?? home.environment["HOME"] ?? "/",
                user: user.map { String(cString: $0.pointee.pw_name) } ?? "")
            let jobs = Crontab.jobs(
                in: listing, environment: cron, isExecutable: Self.isRunnable,
                homeOf: { name in getpwnam(name).map { String(cString: $0.pointee.pw_dir) } })
            // One line that runs is what matters; else the first that does not says why.
            if let job = jobs.first(where: { $0.runs != nil }) ?? jobs.first {
                let finding = DoctorRules.schedule(job)
                add(finding.level, finding.check, finding.detail, finding.fix)
                return
            }
        }
        if let systemctl = Self.find("systemctl", in: path),
            let enabled = await Self.output(
                of: systemctl, ["--user", "is-enabled", "ivy-watch"], environment: home.environment),
            enabled.hasPrefix("enabled")
        {
            add(.ok, "schedule", "the ivy-watch systemd user unit is enabled", nil)
            return
        }
        add(
            .warning, "schedule", "no crontab line runs `ivy sync --auto` and no ivy-watch unit is enabled",
            "add `*/10 * * * * /full/path/to/ivy sync --auto` with `crontab -e`, or enable the ivy-watch unit")
    }

    /// A regular file this user may run.
    private static func isRunnable(_ path: String) -> Bool {
        var directory: ObjCBool = false
        return FileManager.default.fileExists(atPath: path, isDirectory: &directory) && !directory.boolValue
            && FileManager.default.isExecutableFile(atPath: path)
    }

    private static func find(_ program: String, in path: String) -> String? {
        for directory in path.split(separator: ":") {
            let candidate = "\(directory)/\(program)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }

    /// A child's standard output when it exits 0, awaited off the cooperative threads.
    private static func output(of program: String, _ arguments: [String], environment: [String: String]) async
        -> String?
    {
        try? await BlockingExecutor.run { () throws -> String? in
            let process = Process()
            process.executableURL = URL(fileURLWithPath: program)
            process.arguments = arguments
            process.environment = environment
            let pipe = Pipe()
            process.standardOutput = pipe
            process.standardError = FileHandle.nullDevice
            process.standardInput = FileHandle.nullDevice
            try process.run()
            let data = pipe.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return process.terminationStatus == 0 ? String(decoding: data, as: UTF8.self) : nil
        }
    }
}

extension StorageQuota {
    /// Read from an `about.get` answer; both nil when it has no `storageQuota`.
    init(_ response: HTTPResponse) {
        let object = (try? JSONSerialization.jsonObject(with: response.body)) as? [String: Any]
        let quota = object?["storageQuota"] as? [String: Any]
        self.init(
            limit: (quota?["limit"] as? String).flatMap { Int64($0) },
            usage: (quota?["usage"] as? String).flatMap { Int64($0) })
    }
}
