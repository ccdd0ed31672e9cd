import ArgumentParser
import Foundation
import IvyCore
import IvyGoogle
import IvyStore
import IvySync
import IvySystem

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
            and free space, the library and its migrations, the OAuth client, the sign-in (one token refresh, under \
            the sync lock), Drive (about.get), the clock against Google's, held changes, the last success, the \
            health URL, and how syncs are scheduled (cron or the ivy-watch systemd user unit). Changes nothing \
            else; exits 0 when nothing is a problem, 1 otherwise.
            """)

    @OptionGroup var global: GlobalOptions
    @Flag(help: "Print one JSON array.") var json = false

    /// One check's verdict.
    struct Finding: Encodable, Equatable {
        enum Level: String, Encodable { case ok, warning, problem }
        let level: Level
        let check: String
        let detail: String
        /// What to do about it; nil when nothing need be done.
        let fix: String?
    }

    func run(_ context: Context) async throws {
        let home = try global.home(context)
        var findings: [Finding] = []
        func add(_ level: Finding.Level, _ check: String, _ detail: String, fix: String? = nil) {
            findings.append(Finding(level: level, check: check, detail: detail, fix: fix))
        }
        Self.checkHome(home, add)
        let library: LibraryDatabase?
        do {
            let opened = try home.library(readOnly: true)
            let pending = try opened.pendingMigrations()
            if let newer = try opened.migratedByNewerIvy() {
                add(.problem, "library", newer, fix: "run the newer ivy")
            } else if !pending.isEmpty {
                add(.warning, "library", "\(pending.count) migrations not applied yet", fix: "run `ivy sync` once")
            } else {
                let exists = FileManager.default.fileExists(atPath: home.paths.database)
                add(
                    .ok, "library",
                    exists
                        ? "\(home.paths.database) opens; its migrations are current"
                        : "none yet: the first command that writes creates it")
            }
            library = opened
        } catch {
            add(.problem, "library", error.localizedDescription, fix: "see the error; `ivy status` says more")
            library = nil
        }
        let credentials = Self.checkClient(home, library, add)
        await Self.checkSignIn(home, library: library, credentials: credentials, add)
        if let library { try Self.checkLibraryState(home, library, add) }
        await Self.checkSchedule(home, add)
        if json {
            try home.output.json(findings)
        } else {
            for finding in findings {
                let fix = finding.fix.map { "; fix: \($0)" } ?? ""
                home.output.line(
                    Display.safe(
                        "\(finding.level.rawValue.padding(toLength: 8, withPad: " ", startingAt: 0))"
                            + "\(finding.check): \(finding.detail)\(fix)"))
            }
        }
        if findings.contains(where: { $0.level == .problem }) { throw ExitCode.failure }
    }

    private static func checkHome(_ home: Home, _ add: (Finding.Level, String, String, String?) -> Void) {
        let directory = home.paths.dataDirectory
        var info = stat()
        if stat(directory, &info) != 0 {
            add(.warning, "home", "\(directory) does not exist yet", "any ivy command that writes creates it")
            return
        }
        let mode = info.st_mode & 0o777
        if info.st_uid != getuid() || mode & 0o077 != 0 {
            add(
                .problem, "home", "\(directory) has mode \(String(mode, radix: 8)) or another owner",
                "chmod 700 \(directory)")
        } else {
            add(.ok, "home", "\(directory) is private", nil)
        }
        var space = statvfs()
        if statvfs(directory, &space) == 0 {
            let free = Int64(space.f_bavail) * Int64(space.f_frsize)
            let megabytes = free / 1_000_000
            if free < 100_000_000 {
                add(.warning, "disk", "\(megabytes) MB free where the library is", "free some disk space")
            } else {
                add(.ok, "disk", "\(megabytes) MB free", nil)
            }
        }
    }

    /// The OAuth client and where it comes from (see `Home.client`).
    private static func checkClient(
        _ home: Home, _ library: LibraryDatabase?, _ add: (Finding.Level, String, String, String?) -> Void
    ) -> ClientCredentials? {
        guard let library, let resolution = try? home.client(library), let credentials = resolution.credentials
        else {
            add(
                .problem, "oauth client", "no OAuth client is configured, and this build has none built in",
                "install a release of ivy (it has a client built in), or `ivy config set client_id ID` and "
                    + "`ivy config set client_secret SECRET` (a \"TVs and Limited Input devices\" client), or "
                    + "IVY_CLIENT_ID and IVY_CLIENT_SECRET")
            return nil
        }
        add(.ok, "oauth client", "\(credentials.id) (from \(resolution.source.phrase))", nil)
        return credentials
    }

    /// The sign-in refreshed now (one token request, under the sync lock), then Drive's
    /// `about.get` with it, whose `Date` header says how far this clock is from Google's.
    private static func checkSignIn(
        _ home: Home, library: LibraryDatabase?, credentials: ClientCredentials?,
        _ add: (Finding.Level, String, String, String?) -> Void
    ) async {
        let tokens = home.tokenStore(warn: { _ in })
        guard case .signedIn(let token) = tokens.signIn() else {
            let problem = SignInText.problem(tokens.signIn()) ?? "not signed in"
            add(.problem, "sign-in", problem, "run `ivy login`")
            return
        }
        guard let credentials else {
            add(.warning, "sign-in", "\(token.email): not checked without an OAuth client", "configure the client")
            return
        }
        let effects = home.google
        let endpoints: GoogleEndpoints
        let access: String
        do {
            endpoints = try home.endpoints(for: token)
            access = try await refresh(home, token, tokens: tokens, endpoints, credentials, effects)
        } catch {
            let signedOut: Bool
            if case .signedOut? = error as? GoogleError { signedOut = true } else { signedOut = false }
            add(
                .problem, "sign-in", "\(token.email): \(error.localizedDescription)",
                signedOut ? "run `ivy login`" : "check the network, then run `ivy doctor` again")
            return
        }
        add(.ok, "sign-in", "\(token.email) refreshes", nil)
        if let scope = token.scope, !scope.split(separator: " ").contains(Substring(DeviceFlow.scope)) {
            add(
                .problem, "sign-in", "\(token.email) did not grant drive.file (granted: \(scope))",
                "run `ivy login` and allow access to the files ivy creates")
        }
        await checkDrive(home, endpoints: endpoints, access: access, transport: effects.transport, add)
    }

    /// One token request, under the sync lock (only its holder may write the token file),
    /// which is let go before Drive is asked anything.
    private static func refresh(
        _ home: Home, _ token: StoredToken, tokens: TokenStore, _ endpoints: GoogleEndpoints,
        _ credentials: ClientCredentials, _ effects: GoogleEffects
    ) async throws -> String {
        let lock = try await home.waitForSyncLock()
        defer { withExtendedLifetime(lock) {} }
        var stale = token
        stale.accessToken = nil
        let provider = TokenProvider(
            token: stale, store: tokens, endpoints: endpoints, credentials: credentials, effects: effects)
        return try await provider.accessToken()
    }

    private static func checkDrive(
        _ home: Home, endpoints: GoogleEndpoints, access: String, transport: any HTTPTransport,
        _ add: (Finding.Level, String, String, String?) -> Void
    ) async {
        var components = URLComponents(
            url: endpoints.drive.appendingPathComponent("drive/v3/about"), resolvingAgainstBaseURL: false)
        components?.queryItems = [URLQueryItem(name: "fields", value: "user(emailAddress,permissionId)")]
        guard let url = components?.url else { return }
        do {
            let response = try await transport.send(
                HTTPRequest(method: "GET", url: url, headers: ["Authorization": "Bearer \(access)"]))
            guard response.status == 200 else {
                add(
                    .problem, "drive", GoogleError.from(response).localizedDescription,
                    "enable the Drive API in the client's Cloud project and grant drive.file at `ivy login`")
                return
            }
            add(.ok, "drive", "Google Drive answers about.get", nil)
            guard let date = response.headers["date"].flatMap(Self.httpDate) else { return }
            let skew = abs(home.clock.now() - date) / 1000
            if skew >= 120 {
                add(
                    .problem, "clock", "this clock is \(skew / 60) minutes off Google's (merges compare times)",
                    "turn on time synchronisation (timedatectl set-ntp true)")
            } else {
                add(.ok, "clock", "within \(skew) s of Google's", nil)
            }
        } catch {
            add(.problem, "drive", error.localizedDescription, "check the network, then run `ivy doctor` again")
        }
    }

    /// An HTTP `Date` header (`Tue, 03 Nov 2026 10:00:00 GMT`) in ms since the epoch.
    static func httpDate(_ text: String) -> Milliseconds? {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        return formatter.date(from: text).map { Milliseconds(($0.timeIntervalSince1970 * 1000).rounded()) }
    }

    private static func checkLibraryState(
        _ home: Home, _ library: LibraryDatabase, _ add: (Finding.Level, String, String, String?) -> Void
    ) throws {
        let held = try library.heldItems()
        if let first = held.first {
            add(
                .problem, "held changes", "\(held.count) held back; first: \(first.key): \(first.lastError ?? "")",
                "fix the cause, then `ivy retry-failed`")
        } else {
            add(.ok, "held changes", "none", nil)
        }
        let now = home.clock.now()
        if let success = try library.localStatus().lastSuccess {
            let age = now - success
            add(
                age > 86_400_000 ? .warning : .ok, "last success", Display.dateWithAge(success, now: now),
                age > 86_400_000 ? "run `ivy sync` and read what it says" : nil)
        } else {
            add(.warning, "last success", "never", "run `ivy sync`")
        }
        if try library.setting(.healthURL) != nil {
            add(.ok, "health url", "configured: each sync pings it", nil)
        } else {
            add(
                .warning, "health url", "none: a cron sync that stops working tells no one",
                "`ivy config set health_url https://hc-ping.com/UUID` (healthchecks.io or your own)")
        }
    }

    /// A crontab line running `ivy sync --auto` whose program cron can run (cron's PATH is
    /// /usr/bin:/bin), or the ivy-watch systemd user unit enabled.
    private static func checkSchedule(_ home: Home, _ add: (Finding.Level, String, String, String?) -> Void) async {
        let path = home.environment["PATH"] ?? "/usr/bin:/bin"
        if let crontab = Self.find("crontab", in: path),
            let listing = await Self.output(of: crontab, ["-l"], environment: home.environment)
        {
            // Cron's PATH, unless the crontab sets its own.
            var cronPath = "/usr/bin:/bin"
            for whole in listing.split(separator: "\n") {
                let line = whole.trimmingCharacters(in: .whitespaces)
                if line.hasPrefix("PATH=") { cronPath = String(line.dropFirst(5)) }
                guard !line.hasPrefix("#"), line.contains("sync --auto") else { continue }
                let fields = line.split(whereSeparator: \.isWhitespace)
                // `*/10 * * * * ivy …`, or `@hourly ivy …`.
                let at = line.hasPrefix("@") ? 1 : 5
                guard fields.count > at else { continue }
                let program = String(fields[at])
                let runnable =
                    program.hasPrefix("/")
                    ? FileManager.default.isExecutableFile(atPath: program)
                    : Self.find(program, in: cronPath) != nil
                if runnable {
                    add(.ok, "schedule", "cron runs \(program) sync --auto", nil)
                } else {
                    add(
                        .problem, "schedule",
                        "the crontab line runs \(program), which cron (PATH=\(cronPath)) cannot find or run",
                        "write the full path in the crontab line with `crontab -e` (`command -v ivy` prints it): "
                            + "*/10 * * * * /full/path/to/ivy sync --auto"
                    )
                }
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
