import ArgumentParser
import Foundation
import IvyCore
import IvyGoogle
import IvyStore
import IvySystem

struct StatusCommand: ContextCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show sign-in, queue and last-sync state.")

    @OptionGroup var global: GlobalOptions
    @Flag(help: "Print one JSON object.") var json = false

    struct Report {
        let authenticated: Bool
        let account: String?
        let accessTokenExpires: Milliseconds?
        let refreshToken: Bool
        let signedOutReason: String?
        let signedOutSince: Milliseconds?
        let pending: Int
        let failed: Int
        let lastSync: Milliseconds?
        /// The last sync that ran to the end with nothing failed or held.
        let lastSuccess: Milliseconds?
        /// `last_success` for people: local time and age.
        let lastSuccessAge: String?
        let lastError: String?
        let manifestEntries: Int
        let nextAutoSync: Milliseconds?
        let orphanClips: Int
        let history: HistorySummary
        /// Whether ivy's clock is Google's (it reached Google since the machine started), not
        /// this machine's own.
        let clockSure: Bool
        /// Conflicts recorded since `ivy history --conflicts` last showed them.
        let newConflicts: Int
        /// Google quota units (and requests) this device's syncs spent in the last 24 hours.
        let quotaUnits24h: Int
        let requests24h: Int
        /// The same since Google's quota day began (midnight Pacific time).
        let quotaUnitsToday: Int
        let requestsToday: Int
        /// How big the library is.
        let figures: LibraryFigures
        let heldChanges: [Held]
        /// Why the last sync held deletions back (the safety valve), or nil.
        let deletionsHeld: String?
        /// Not printed in JSON: only says why there is no next auto sync.
        let syncEnabled: Bool
        /// Why the sign-in does not work, when it stopped.
        let signInProblem: String?
        let syncRunning: Bool
        let syncProcess: Int32?
        /// Where this home keeps the library, the sign-in and the log.
        let library: String
        let tokenFile: String
        let logFile: String
        /// Where requests go (the sign-in's servers, else the environment's, else Google's),
        /// or why the sign-in cannot be used with what the environment names.
        let endpoints: Result<GoogleEndpoints, GoogleError>
        /// The OAuth client a sign-in would use, and where it comes from (never its secret).
        let client: ClientResolution
        /// `health_url`, its user name and password masked; nil when none is set.
        let healthURL: String?
        /// How the last ping to that URL went; nil before the first.
        let lastHealthPing: HealthPingRecord?
        /// `last_health_ping` for people: local time, age and outcome.
        let lastHealthPingShown: String?
        /// The zone times are shown to people in (`TZ`'s; UTC when it cannot be read).
        let zone: LocalZone?

        /// One ping's outcome as `status --json` prints it.
        struct Ping: Encodable {
            let time: String
            let signal: String
            @Null var status: Int?
            @Null var problem: String?
            let ok: Bool
        }

        struct Held: Encodable {
            let entity: String
            let reason: String
        }

        var jsonForm: StatusJSON {
            let used = try? endpoints.get()
            var problem: String? = nil
            if case .failure(let error) = endpoints { problem = error.localizedDescription }
            return StatusJSON(
                authenticated: authenticated, account: account,
                accessTokenExpires: accessTokenExpires.map(Display.rfc3339), refreshTokenPresent: refreshToken,
                signedOutReason: signedOutReason, signedOutSince: signedOutSince.map(Display.rfc3339),
                heldChanges: heldChanges, deletionsHeld: deletionsHeld, pending: pending, failed: failed,
                lastSync: lastSync.map(Display.rfc3339),
                lastSuccess: lastSuccess.map(Display.rfc3339), lastError: lastError, manifestEntries: manifestEntries,
                nextAutoSync: nextAutoSync.map(Display.rfc3339), orphanClips: orphanClips,
                historyVersions: history.versions, historySince: history.since.map(Display.rfc3339),
                historyBytes: history.bytes, clock: clockSure ? "google" : "device",
                newConflicts: newConflicts, quotaUnits24h: quotaUnits24h, requests24h: requests24h,
                quotaUnitsToday: quotaUnitsToday, requestsToday: requestsToday, books: figures.books,
                booksArchived: figures.archivedBooks, clips: figures.clips, audioFiles: figures.audioFiles,
                audioBytes: figures.audioBytes, syncRunning: syncRunning, syncProcess: syncProcess, library: library,
                tokenFile: tokenFile,
                logFile: logFile, oauthURL: used?.oauth.absoluteString, driveURL: used?.drive.absoluteString,
                endpointProblem: problem, clientSource: client.source.rawValue, clientProblem: client.problem,
                healthURL: healthURL,
                lastHealthPing: lastHealthPing.map {
                    Ping(
                        time: Display.rfc3339($0.at), signal: $0.signal, status: $0.status, problem: $0.problem,
                        ok: $0.succeeded)
                })
        }
    }

    /// `ivy status --json` (`JSONOutput`).
    struct StatusJSON: Encodable {
        let authenticated: Bool
        @Null var account: String?
        @Null var accessTokenExpires: String?
        let refreshTokenPresent: Bool
        @Null var signedOutReason: String?
        @Null var signedOutSince: String?
        let heldChanges: [Report.Held]
        @Null var deletionsHeld: String?
        let pending: Int
        let failed: Int
        @Null var lastSync: String?
        @Null var lastSuccess: String?
        @Null var lastError: String?
        let manifestEntries: Int
        @Null var nextAutoSync: String?
        let orphanClips: Int
        let historyVersions: Int
        @Null var historySince: String?
        let historyBytes: Int64
        /// `google` when ivy's times are Google's, `device` when they are this machine's own.
        let clock: String
        let newConflicts: Int
        let quotaUnits24h: Int
        let requests24h: Int
        let quotaUnitsToday: Int
        let requestsToday: Int
        let books: Int
        let booksArchived: Int
        let clips: Int
        let audioFiles: Int
        let audioBytes: Int64
        let syncRunning: Bool
        @Null var syncProcess: Int32?
        let library: String
        let tokenFile: String
        let logFile: String
        @Null var oauthURL: String?
        @Null var driveURL: String?
        @Null var endpointProblem: String?
        let clientSource: String
        @Null var clientProblem: String?
        @Null var healthURL: String?
        @Null var lastHealthPing: Report.Ping?
    }

    func run(_ context: Context) async throws {
        let home = try global.home(context)
        let library = try await home.library(readOnly: true)
        let report = try await Self.report(
            library: library, tokens: home.tokenStore, paths: home.paths, environment: home.environment,
            client: try home.client(library), clock: home.clock.reading(), zone: home.displayZone)
        if json { return try home.output.json(report.jsonForm) }
        home.output.fields(Self.fields(report))
    }

    private static func report(
        library: LibraryDatabase, tokens: TokenStore, paths: IvyPaths, environment: [String: String],
        client: ClientResolution, clock: ClockReading, zone: LocalZone?
    ) async throws -> Report {
        let now = clock.now
        let running = SyncLock.holder(path: paths.lockFile)
        let local = try await library.localStatus()
        let signIn = tokens.signIn()
        let token: StoredToken? = if case .signedIn(let saved) = signIn { saved } else { tokens.quietLoad() }
        let enabled = try await library.setting(.syncEnabled) == "true"
        let cooldown = try await Milliseconds(library.number(.autoSyncCooldown)) * 1000
        let signedIn = if case .signedIn = signIn { true } else { false }
        let next: Milliseconds? =
            if !enabled || !signedIn { nil } else { max(now, (local.lastSyncTime ?? 0) + cooldown) }
        let (stoppedReason, stoppedSince): (String?, Milliseconds?) =
            if case .stopped(let reason, let since) = signIn { (reason, since) } else { (nil, nil) }
        let spent = try await library.quotaSpent(since: now - 86_400_000)
        let today = try await library.quotaSpent(since: GoogleDay.start(containing: now))
        let held = try await library.heldItems().map {
            Report.Held(entity: "\($0.key)", reason: $0.lastError ?? "no error was recorded")
        }
        let healthURL = try await library.setting(.healthURL)
        // A record made for another URL says nothing of this one.
        let ping = try await library.lastHealthPing().flatMap { $0.url == healthURL ? $0 : nil }
        return Report(
            authenticated: signedIn, account: token?.email,
            accessTokenExpires: token?.expiresAt, refreshToken: token?.refreshToken != nil,
            signedOutReason: stoppedReason, signedOutSince: stoppedSince,
            pending: local.pending, failed: local.failed,
            lastSync: local.lastSyncTime,
            lastSuccess: local.lastSuccess,
            lastSuccessAge: local.lastSuccess.map { Display.dateWithAge($0, now: now, zone: zone) },
            // Never "-" while a change is held back: its error is the one that matters.
            lastError: local.lastError ?? held.first.map { "\($0.entity): \($0.reason)" },
            manifestEntries: local.manifestEntries, nextAutoSync: next,
            orphanClips: try await library.orphanClipCount(),
            history: try await library.historySummary(), clockSure: clock.sure,
            newConflicts: try await library.unseenConflicts(),
            quotaUnits24h: spent.units, requests24h: spent.requests, quotaUnitsToday: today.units,
            requestsToday: today.requests, figures: try await library.figures(), heldChanges: held,
            deletionsHeld: local.deletionsHeld, syncEnabled: enabled,
            signInProblem: SignInText.problem(signIn, zone: zone),
            syncRunning: running.running, syncProcess: running.pid, library: paths.database,
            tokenFile: paths.tokenFile, logFile: paths.logFile,
            endpoints: Result { () throws(GoogleError) in
                try GoogleEndpoints.from(environment: environment, signIn: token)
            }, client: client, healthURL: healthURL.map(URLText.masked), lastHealthPing: ping,
            lastHealthPingShown: ping.map {
                "\(Display.dateWithAge($0.at, now: now, zone: zone)): the \($0.signal) ping \($0.outcome)"
            }, zone: zone)
    }

    private static func fields(_ report: Report) -> [(String, String)] {
        let time = { (moment: Milliseconds) in Display.time(moment, zone: report.zone) }
        var fields: [(String, String)] = [
            (
                "authenticated",
                report.authenticated ? "yes" : "no: \(report.signInProblem ?? "not signed in"); run `ivy login`"
            ),
            ("account", Display.optional(report.account)),
            (
                "oauth client",
                report.client.credentials.map { "\(Display.safe($0.id)) (\(report.client.source.phrase))" }
                    // Half a client: the resolver's one answer, as doctor and login give it.
                    ?? report.client.problem.map { "none: \($0)" }
                    ?? "none: this build has none built in; see `ivy login --help`"
            ),
        ]
        switch report.endpoints {
        case .success(let endpoints) where endpoints.isGoogle: break
        case .success(let endpoints) where endpoints.oauth == endpoints.drive:
            fields.append(("google", "not Google: \(endpoints.oauth.absoluteString)"))
        case .success(let endpoints):
            fields.append(
                (
                    "google",
                    "not Google: OAuth \(endpoints.oauth.absoluteString), Drive \(endpoints.drive.absoluteString)"
                ))
        case .failure(let problem):
            fields.append(("google", "refused: \(problem.localizedDescription)"))
        }
        fields += [
            ("access token", report.accessTokenExpires.map { "expires \(time($0))" } ?? "-"),
            ("refresh token", report.refreshToken ? "present" : "none"),
            ("pending", String(report.pending)),
            ("failed", String(report.failed)),
            ("last sync", report.lastSync.map(time) ?? "never"),
            ("last success", report.lastSuccessAge ?? "never"),
            ("last error", Display.optional(report.lastError)),
            ("health url", report.healthURL ?? "none"),
            (
                "last health ping",
                report.lastHealthPingShown ?? (report.healthURL == nil ? "-" : "none yet: the next sync pings it")
            ),
            ("manifest entries", String(report.manifestEntries)),
            (
                "next auto sync",
                report.nextAutoSync.map(time)
                    ?? (report.syncEnabled ? "when signed in" : "never (sync_enabled is false)")
            ),
            ("books", Self.books(report.figures)),
            ("clips", String(report.figures.clips)),
            (
                "audio",
                "\(AudioRules.grouped(report.figures.audioBytes)) bytes in \(report.figures.audioFiles) "
                    + "MP3\(report.figures.audioFiles == 1 ? "" : "s")"
            ),
            ("orphan clips", String(report.orphanClips)),
            ("history", Self.history(report.history, zone: report.zone)),
            (
                "clock",
                report.clockSure
                    ? "Google's" : "this machine's own: ivy has not reached Google since the machine started"
            ),
            (
                "conflicts",
                report.newConflicts == 0
                    ? "none new" : "\(report.newConflicts) new; see `ivy history --conflicts`"
            ),
            (
                "google quota",
                "\(AudioRules.grouped(Int64(report.quotaUnits24h))) units in \(report.requests24h) "
                    + "request\(report.requests24h == 1 ? "" : "s") in the last 24 hours; "
                    + "\(AudioRules.grouped(Int64(report.quotaUnitsToday))) today (Google's day, from midnight "
                    + "Pacific time)"
            ),
            (
                "sync running",
                report.syncRunning ? "yes" + (report.syncProcess.map { " (process \($0))" } ?? "") : "no"
            ),
            ("library", report.library),
            ("sign-in file", report.tokenFile),
            ("log", report.logFile),
        ]
        for change in report.heldChanges {
            fields.append(("held back", "\(change.entity): \(change.reason); run `ivy retry-failed`"))
        }
        if let deletions = report.deletionsHeld { fields.append(("deletions held", deletions)) }
        return fields
    }
}

extension StatusCommand {
    /// `3 (1 archived)`.
    static func books(_ figures: LibraryFigures) -> String {
        figures.archivedBooks == 0 ? String(figures.books) : "\(figures.books) (\(figures.archivedBooks) archived)"
    }

    /// `12 versions since 2026-01-01 10:00:00 +01:00, 4,096 bytes`, or `none kept`.
    static func history(_ summary: HistorySummary, zone: LocalZone?) -> String {
        guard summary.versions > 0, let since = summary.since else { return "none kept" }
        return "\(summary.versions) version\(summary.versions == 1 ? "" : "s") since "
            + "\(Display.time(since, zone: zone)), "
            + "\(AudioRules.grouped(summary.bytes)) bytes"
    }
}

/// How a sign-in that stopped working is said, by `status` and by interactive `sync`.
enum SignInText {
    static func problem(_ state: TokenStore.SignIn, zone: LocalZone?) -> String? {
        guard case .stopped(let reason, let since) = state else { return nil }
        return "the sign-in stopped working: \(reason)"
            + (since.map { " (since \(Display.time($0, zone: zone)))" } ?? "")
    }
}
