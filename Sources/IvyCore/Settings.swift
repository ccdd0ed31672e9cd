/// The keys of the `settings` table that a user may read with `ivy config`.
package enum SettingKey: String, Sendable, CaseIterable {
    case syncEnabled = "sync_enabled"
    case autoSyncCooldown = "auto_sync_cooldown"
    case concurrency
    case syncTimeout = "sync_timeout"
    case logFormat = "log_format"
    case trashDays = "trash_days"
    case historyDays = "history_days"
    case historyCheckDays = "history_check_days"
    case replaceGrace = "replace_grace"
    case quotaUnitsPerMinute = "quota_units_per_minute"
    case watchMaxInterval = "watch_max_interval"
    case clientID = "client_id"
    case clientSecret = "client_secret"
    case healthURL = "health_url"
    case lastSyncTime = "last_sync_time"
    case lastSuccess = "last_success"
    case lastError = "last_error"

    /// Ten years: far beyond any use, and small enough that the cutoff in milliseconds never
    /// overflows.
    package static let maximumTrashDays = 3650

    /// Keys that ivy records itself; `ivy config set` refuses them.
    package var isReadOnly: Bool {
        self == .lastSyncTime || self == .lastSuccess || self == .lastError
    }

    /// Values never printed: the client secret is a credential.
    package var isSecret: Bool { self == .clientSecret }

    /// `value` as ivy may show it: nil for a secret, a URL's user name and password as `***`.
    package func shown(_ value: String) -> String? {
        if isSecret { return nil }
        return self == .healthURL ? URLText.masked(value) : value
    }

    package var defaultValue: String? {
        switch self {
        case .syncEnabled: "true"
        case .autoSyncCooldown: "300"
        case .concurrency: "8"
        case .syncTimeout: "1800"
        case .logFormat: LogFormat.text.rawValue
        case .trashDays: "30"
        case .historyDays: String(History.defaultDays)
        case .historyCheckDays: "7"
        case .replaceGrace: "60"
        case .quotaUnitsPerMinute: String(QuotaBudget.perUserPerMinute)
        case .watchMaxInterval: String(WatchSchedule.defaultMaxInterval)
        case .clientID, .clientSecret, .healthURL, .lastSyncTime, .lastSuccess, .lastError: nil
        }
    }

    package var summary: String {
        switch self {
        case .syncEnabled: "whether `ivy sync --auto` runs at all (true or false)"
        case .autoSyncCooldown: "seconds `ivy sync --auto` waits after a sync before syncing again"
        case .concurrency: "Drive requests in flight at once (1 to 32)"
        case .syncTimeout: "seconds one sync may run before it stops cleanly and frees the lock (1 to 86400)"
        case .logFormat: "how ivy.log is written: text (a line per event) or json (a JSON object per line)"
        case .trashDays: "days the local trash keeps what a sync deleted or overwrote here (0 to 3650; 0 keeps nothing)"
        case .historyDays:
            "days the history keeps old versions of books and clips (0 to 3650; 0 turns history off, and the next "
                + "sync removes it)"
        case .historyCheckDays:
            "days between the restore drills a sync runs at its end (0 to 3650; 0 runs none: `ivy check --history` "
                + "runs one by hand)"
        case .replaceGrace:
            "seconds a synced file must stay missing on Drive before a sync puts it back (0 to 3600): another device "
                + "may be between the delete and the create of a replace"
        case .quotaUnitsPerMinute:
            "Google Drive quota units ivy may spend a minute (1000 to 10000000; Google's per-user limit is 325000, "
                + "some Workspace accounts have others)"
        case .watchMaxInterval:
            "seconds an idle `ivy sync --watch` lengthens its interval to (1 to 86400; at most --interval keeps it "
                + "fixed)"
        case .clientID: "OAuth client id of a \"TVs and Limited Input devices\" client"
        case .clientSecret: "OAuth client secret of that client (never printed)"
        case .healthURL:
            "health-check URL (healthchecks.io's convention): each sync pings URL/start, then URL or URL/fail "
                + "(https, or http to loopback; a user name and password in it are shown as ***; unset to stop)"
        case .lastSyncTime: "when the last sync finished, in ms since the epoch (set by ivy)"
        case .lastSuccess:
            "when the last sync that left everything on Drive finished, in ms since the epoch (set by ivy)"
        case .lastError: "the last sync's error, if any (set by ivy)"
        }
    }

    /// The canonical stored form of `value`, or an error message that says what is accepted.
    package func normalize(_ value: String) -> Result<String, SettingError> {
        let trimmed = value.trimmingSpaces()
        switch self {
        case .syncEnabled:
            switch trimmed.lowercased() {
            case "true", "yes", "on", "1": return .success("true")
            case "false", "no", "off", "0": return .success("false")
            default: return .failure(SettingError(key: self, value: value, expected: "true or false"))
            }
        case .autoSyncCooldown:
            guard let seconds = Int(trimmed), seconds >= 0, seconds <= 31_536_000 else {
                return .failure(
                    SettingError(key: self, value: value, expected: "a whole number of seconds from 0 to 31536000"))
            }
            return .success(String(seconds))
        case .concurrency:
            guard let count = Int(trimmed), (1...32).contains(count) else {
                return .failure(SettingError(key: self, value: value, expected: "a whole number from 1 to 32"))
            }
            return .success(String(count))
        case .syncTimeout:
            guard let seconds = Int(trimmed), (1...86_400).contains(seconds) else {
                return .failure(
                    SettingError(key: self, value: value, expected: "a whole number of seconds from 1 to 86400"))
            }
            return .success(String(seconds))
        case .logFormat:
            guard let format = LogFormat(rawValue: trimmed.lowercased()) else {
                return .failure(SettingError(key: self, value: value, expected: "text or json"))
            }
            return .success(format.rawValue)
        case .trashDays, .historyDays, .historyCheckDays:
            guard let days = Int(trimmed), (0...Self.maximumTrashDays).contains(days) else {
                return .failure(
                    SettingError(
                        key: self, value: value, expected: "a whole number of days from 0 to \(Self.maximumTrashDays)"))
            }
            return .success(String(days))
        case .replaceGrace:
            guard let seconds = Int(trimmed), (0...3600).contains(seconds) else {
                return .failure(
                    SettingError(key: self, value: value, expected: "a whole number of seconds from 0 to 3600"))
            }
            return .success(String(seconds))
        case .quotaUnitsPerMinute:
            guard let units = Int(trimmed), (1000...10_000_000).contains(units) else {
                return .failure(SettingError(key: self, value: value, expected: "a whole number from 1000 to 10000000"))
            }
            return .success(String(units))
        case .watchMaxInterval:
            guard let seconds = Int(trimmed), (1...86_400).contains(seconds) else {
                return .failure(
                    SettingError(key: self, value: value, expected: "a whole number of seconds from 1 to 86400"))
            }
            return .success(String(seconds))
        case .clientID, .clientSecret:
            guard !trimmed.isEmpty, !trimmed.contains(where: \.isWhitespace) else {
                let shown = isSecret ? "…" : value
                return .failure(SettingError(key: self, value: shown, expected: "a non-empty value without spaces"))
            }
            return .success(trimmed)
        case .healthURL:
            // The loopback rule for plain http is IvyGoogle's (`GoogleEndpoints.checkedURL`), which
            // `ivy config set` applies too; this is the shape every stored value has.
            var url = URLText.lowercasingScheme(trimmed)
            while url.hasSuffix("/") { url.removeLast() }
            let scheme = url.prefix(while: { $0 != ":" }).lowercased()
            guard ["http", "https"].contains(scheme), url.contains("://"), !url.contains(where: \.isWhitespace) else {
                return .failure(
                    SettingError(
                        key: self, value: URLText.masked(value), expected: "an https:// URL (or http:// to loopback)"))
            }
            return .success(url)
        case .lastSyncTime, .lastSuccess, .lastError:
            return .failure(SettingError(key: self, value: value, expected: "nothing: ivy records this key itself"))
        }
    }
}

/// How `ivy.log` is written (setting `log_format`, option `--log-format`).
package enum LogFormat: String, Sendable, CaseIterable {
    /// `TIME LEVEL message key=value ...`, escaped: for people reading the file.
    case text
    /// One JSON object per line, for log collectors (like rclone's `--use-json-log`).
    case json
}

package struct SettingError: Error, Equatable, Sendable {
    package let key: SettingKey
    package let value: String
    package let expected: String

    package var message: String {
        key.isReadOnly
            ? "\(key.rawValue) is recorded by ivy and cannot be set"
            : "invalid value '\(value)' for \(key.rawValue): expected \(expected)"
    }
}

/// Google Drive's per-minute quotas, in quota units (the Drive API's Usage limits page,
/// developers.google.com/workspace/drive/api/guides/limits, for projects from 1 May 2026).
package enum QuotaBudget {
    /// Per minute per user per project: what one person's ivy may spend.
    package static let perUserPerMinute = 325_000
    /// Per minute per project: every user of the OAuth client together.
    package static let perProjectPerMinute = 1_000_000
    /// The daily billing threshold per project, which cannot be raised.
    package static let perProjectPerDay = 400_000_000
}
