package import IvyCore
package import IvySystem

/// One check's verdict in `ivy doctor`: ok, warning or problem, what was found, and the fix.
package struct DoctorFinding: Encodable, Equatable, Sendable {
    package enum Level: String, Encodable, Sendable { case ok, warning, problem }
    package let level: Level
    package let check: String
    package let detail: String
    /// What to do about it; nil (`null` in `--json`) when nothing need be done.
    @Null package var fix: String?

    package init(level: Level, check: String, detail: String, fix: String?) {
        self.level = level
        self.check = check
        self.detail = detail
        self.fix = fix
    }
}

/// Drive's `about.storageQuota`: int64 numbers as strings; `limit` absent when the Drive is
/// unlimited (the About resource's reference).
package struct StorageQuota: Equatable, Sendable {
    package var limit: Int64?
    package var usage: Int64?

    package init(limit: Int64?, usage: Int64?) {
        self.limit = limit
        self.usage = usage
    }

}

/// What `ivy doctor` makes of what it found, apart from finding it: pure, so every threshold
/// and wording is tested from a table without filling a disk or breaking a Drive.
package enum DoctorRules {
    /// Less free space than this where the library is is a warning: a sync downloads MP3s of
    /// up to 50 MB, keeps what it replaces in the trash and the history, and SQLite needs room
    /// for its journal.
    package static let minimumFreeBytes: Int64 = 100_000_000

    package static func disk(freeBytes: Int64, minimum: Int64 = minimumFreeBytes) -> DoctorFinding {
        let megabytes = freeBytes / 1_000_000
        guard freeBytes < minimum else {
            return DoctorFinding(level: .ok, check: "disk", detail: "\(megabytes) MB free", fix: nil)
        }
        return DoctorFinding(
            level: .warning, check: "disk",
            detail: "\(megabytes) MB free where the library is (less than \(minimum / 1_000_000) MB: a sync may "
                + "not find room for what it downloads)",
            fix: "free some disk space")
    }

    /// A directory ivy keeps files in, by its mode and owner; nil when it is as ivy makes it
    /// (0700, the user's). One others can write to, or another user's, ivy refuses to use
    /// (`refused`); one others can only read lets them list the library's file names.
    package static func directory(_ path: String, mode: UInt32, owner: UInt32, user: UInt32) -> DoctorFinding? {
        if let unsafe = UnsafeDirectoryError.check(path: path, mode: mode, owner: owner, user: user) {
            return refused(unsafe)
        }
        guard mode & 0o077 != 0 else { return nil }
        return DoctorFinding(
            level: .warning, check: "home",
            detail: "\(path) has mode \(String(mode & 0o7777, radix: 8)): other users can list the files in it",
            fix: "chmod 700 \(path)")
    }

    /// Why ivy refuses a directory (`PrivateDirectory.problem(of:)`), as a problem with its
    /// fix: one of its own that another user owns or others can write to, or a directory above
    /// one of its own through which another user could put a directory of theirs in its place.
    package static func refused(_ unsafe: UnsafeDirectoryError) -> DoctorFinding {
        let path = unsafe.path
        let bits = String(unsafe.mode, radix: 8)
        guard let reaches = unsafe.reaches else {
            let foreign = unsafe.owner != unsafe.user
            let why =
                foreign ? "belongs to another user (uid \(unsafe.owner))" : "can be written by others (mode \(bits))"
            return DoctorFinding(
                level: .problem, check: "home", detail: "\(path) \(why): ivy refuses to use it",
                fix: foreign
                    ? "use a directory of your own with --home or IVY_HOME, or `chown $(id -u) \(path)` and "
                        + "`chmod 700 \(path)`"
                    : "chmod 700 \(path)")
        }
        if unsafe.closed {
            return DoctorFinding(
                level: .problem, check: "home",
                detail: "\(path) does not let you in (mode \(bits), owner uid \(unsafe.owner)), and \(reaches) is "
                    + "inside it: ivy cannot reach it",
                fix: "use a home of your own with --home or IVY_HOME")
        }
        let foreign = unsafe.owner != unsafe.user && unsafe.owner != 0
        let why = foreign ? "belongs to another user (uid \(unsafe.owner))" : "can be written by others"
        return DoctorFinding(
            level: .problem, check: "home",
            detail: "\(path) \(why) (mode \(bits)), and \(reaches) is inside it: ivy refuses to use it",
            fix: foreign ? "use a home of your own with --home or IVY_HOME" : "chmod go-w \(path)")
    }

    /// One of ivy's private files (the library, its journal, the sign-in), by its mode; nil when
    /// only the user can read it.
    package static func file(_ path: String, mode: UInt32) -> DoctorFinding? {
        guard mode & 0o077 != 0 else { return nil }
        return DoctorFinding(
            level: .problem, check: "home",
            detail: "\(path) has mode \(String(mode & 0o7777, radix: 8)): other users can read it",
            fix: "chmod 600 \(path)")
    }

    /// The library's migrations. Opened read-only, doctor applies none: the next command that
    /// writes does, after which an older ivy refuses the library.
    package static func library(_ path: String, exists: Bool, pending: [String]) -> DoctorFinding {
        guard exists else {
            return DoctorFinding(
                level: .ok, check: "library", detail: "none yet: the first command that writes creates it", fix: nil)
        }
        guard let first = pending.first else {
            return DoctorFinding(
                level: .ok, check: "library", detail: "\(path) opens; its migrations are current", fix: nil)
        }
        let count = pending.count == 1 ? "1 migration" : "\(pending.count) migrations"
        return DoctorFinding(
            level: .warning, check: "library",
            detail: "\(path) opens; \(count) of this ivy not applied yet (\(first)\(pending.count > 1 ? ", …" : ""))",
            fix: "nothing to do: the next command that changes the library (`ivy sync`, for one) applies them, "
                + "and an older ivy cannot open it after that")
    }

    /// ivy's folders on Drive: each should exist once. Twins (made by two devices at once)
    /// are all read by every sync, new files going to the oldest; they are named, oldest first,
    /// so a person can merge them.
    package static func folders(_ found: DriveFolders, remembered: DriveFolders?) -> DoctorFinding {
        let kinds = [("Ivy", found.ivy), ("Ivy/books", found.books), ("Ivy/clips", found.clips)]
        let twins = kinds.filter { $0.1.count > 1 }
        if !twins.isEmpty {
            let named = twins.map { name, ids in
                "\(ids.count) folders \(name): \(ids.map(\.rawValue).joined(separator: ", "))"
            }
            return DoctorFinding(
                level: .problem, check: "folders", detail: named.joined(separator: "; ") + " (oldest first)",
                fix: "in drive.google.com, move the files of each newer twin into the oldest one of its name "
                    + "(where new files go), then delete the empty twins; until then every sync reads them all")
        }
        if found.ivy.isEmpty {
            guard remembered != nil else {
                return DoctorFinding(
                    level: .ok, check: "folders", detail: "no Ivy folder on Drive yet: the first sync makes it",
                    fix: nil)
            }
            return DoctorFinding(
                level: .warning, check: "folders", detail: "the Ivy folder this library synced with is not on Drive",
                fix: "restore it from Drive's trash; otherwise the next sync makes a new one and holds local "
                    + "deletions back")
        }
        return DoctorFinding(
            level: .ok, check: "folders",
            detail: "Ivy (\(found.ivy[0].rawValue))"
                + (found.books.isEmpty || found.clips.isEmpty ? ": the next sync makes what it lacks" : " exists once"),
            fix: nil)
    }

    /// The health URL (`stored`, shown with its user name and password masked) by the last
    /// ping sent to it: a ping the service did not take (a 404, a redirect, no answer) or a URL
    /// ivy refuses (`refusal`) is a problem, since every failure it should report goes unheard.
    package static func healthURL(
        _ stored: String, refusal: String?, last: HealthPingRecord?, when: (Milliseconds) -> String
    ) -> DoctorFinding {
        let shown = URLText.masked(stored)
        let check = "health url"
        let setIt = "`ivy config set health_url URL` with the ping URL your health-check service shows"
        if let refusal {
            return DoctorFinding(
                level: .problem, check: check, detail: "\(shown): ivy does not ping it: \(refusal)",
                fix: setIt + " (https://), or `ivy config unset health_url`")
        }
        guard let last, last.url == stored else {
            return DoctorFinding(
                level: .warning, check: check, detail: "\(shown): not pinged yet",
                fix: "run `ivy sync`, then `ivy doctor` again: it says how the ping went")
        }
        let detail = "\(shown): the last ping (\(last.signal), \(when(last.at))) \(last.outcome)"
        if last.succeeded { return DoctorFinding(level: .ok, check: check, detail: detail, fix: nil) }
        let fix =
            last.status != nil
            ? "the service did not take the ping: check the URL (a 404 or a redirect means it is not your check's "
                + "ping URL), correct it with " + setIt + ", then run `ivy sync` and `ivy doctor` again"
            : "check that the service is up and reachable from here, then run `ivy sync` and `ivy doctor` again"
        return DoctorFinding(level: .problem, check: check, detail: detail, fix: fix)
    }

    /// The Drive's used and free space, and a warning when the library's MP3s here
    /// (`libraryBytes`) would not fit in what is free: the uploads would be refused with
    /// `storageQuotaExceeded`.
    package static func storage(_ quota: StorageQuota, libraryBytes: Int64) -> DoctorFinding {
        func megabytes(_ bytes: Int64) -> String { AudioRules.grouped(bytes / 1_000_000) + " MB" }
        guard let usage = quota.usage else {
            return DoctorFinding(
                level: .ok, check: "drive storage", detail: "Google Drive did not say how full it is", fix: nil)
        }
        guard let limit = quota.limit else {
            return DoctorFinding(
                level: .ok, check: "drive storage", detail: "\(megabytes(usage)) used, no limit", fix: nil)
        }
        let free = max(0, limit - usage)
        let detail = "\(megabytes(usage)) used of \(megabytes(limit)), \(megabytes(free)) free"
        guard libraryBytes <= free else {
            return DoctorFinding(
                level: .warning, check: "drive storage",
                detail: detail + "; the library's audio here (\(megabytes(libraryBytes))) would not fit",
                fix: "free some space in Google Drive (or buy more) before the next sync")
        }
        return DoctorFinding(level: .ok, check: "drive storage", detail: detail, fix: nil)
    }

    /// The full-path line the fix of a crontab line shows.
    static let cronLine = "*/10 * * * * /full/path/to/ivy sync --auto"

    /// A crontab line running `sync --auto`, judged by what cron's shell runs (`Crontab`): the
    /// program found and runnable is ok; one that is not, a problem naming the word as written,
    /// what it came to, and the variables cron's environment lacks; a line doctor cannot follow,
    /// a warning.
    package static func schedule(_ job: Crontab.Job) -> DoctorFinding {
        let fix = "write the full path in the crontab line with `crontab -e` (`command -v ivy` prints it): " + cronLine
        if let unfollowed = job.unfollowed {
            return DoctorFinding(
                level: .warning, check: "schedule",
                detail: "cannot tell which program the crontab line `\(job.line)` runs: it uses \(unfollowed), "
                    + "which doctor does not follow",
                fix: "check that it runs: `env -i HOME=\"$HOME\" PATH=/usr/bin:/bin /bin/sh -c 'COMMAND'`; or " + fix)
        }
        if let runs = job.runs {
            return DoctorFinding(
                level: .ok, check: "schedule", detail: "cron runs " + ([runs] + job.arguments).joined(separator: " "),
                fix: nil)
        }
        let came = job.expanded.isEmpty ? "nothing" : job.expanded
        let word = job.written + (job.expanded == job.written ? "" : " (\(came) under cron)")
        var detail = "the crontab line runs \(word), which cron (PATH=\(job.path)) cannot find or run"
        if !job.unset.isEmpty {
            let names = job.unset.map { "$" + $0 }.joined(separator: ", ")
            detail +=
                "; cron sets no \(names) (only HOME, LOGNAME, SHELL, PATH and the crontab's own NAME=value lines)"
        }
        return DoctorFinding(level: .problem, check: "schedule", detail: detail, fix: fix)
    }
}
