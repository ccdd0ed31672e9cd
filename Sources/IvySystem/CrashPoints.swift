import Foundation
import Synchronization

/// A durable step of ivy's: a SQLite commit, a file written or renamed, a request that
/// changes Drive sent or answered, the token written. A test names one in `IVY_CRASH_AT`
/// (CONTRIBUTING.md) to have ivy kill itself right there, and so replays a crash in exactly
/// that window instead of hoping a random kill lands in it. `ivy-soak --list-crash-points`
/// prints them. Names are stable: tests and replay commands spell them.
package enum CrashPoint: String, CaseIterable, Sendable {
    // SQLite commits, each reached just after its transaction committed (`LibraryDatabase.write`).
    case storeMigrate = "store.migrate.after-commit"
    case storeAccount = "store.commit.account"
    case storeResetManifest = "store.commit.reset-manifest"
    case storeEmptyTrash = "store.commit.trash-empty"
    case storePurgeTrash = "store.commit.trash-purge"
    case storeRestoreTrash = "store.commit.trash-restore"
    case storeMirrorReplace = "store.commit.mirror-replace"
    case storeMirrorPage = "store.commit.mirror-page"
    case storeMirrorClear = "store.commit.mirror-clear"
    case storeBookAdd = "store.commit.book-add"
    case storeBookUpdate = "store.commit.book-update"
    case storeClipAdd = "store.commit.clip-add"
    case storeClipUpdate = "store.commit.clip-update"
    case storeClipDelete = "store.commit.clip-delete"
    case storeQuota = "store.commit.quota"
    case storeRemoteChange = "store.commit.remote-change"
    case storeConflictsSeen = "store.commit.conflicts-seen"
    case storeSetting = "store.commit.setting"
    case storeSettingUnset = "store.commit.setting-unset"
    case storeSyncOutcome = "store.commit.sync-outcome"
    case storeHeldReported = "store.commit.held-reported"
    case storeSynced = "store.commit.synced"
    case storeMissingOnDrive = "store.commit.missing-on-drive"
    case storeReplaceCutShort = "store.commit.replace-cut-short"
    case storeReplaceWithdrawn = "store.commit.replace-withdrawn"
    case storeForgetSynced = "store.commit.forget-synced"
    case storeManifestCleanUp = "store.commit.manifest-clean-up"
    case storeQueueDrop = "store.commit.queue-drop"
    case storeFailure = "store.commit.failure"
    case storeRetryFailed = "store.commit.retry-failed"
    case storeUnreadableRemember = "store.commit.unreadable-remember"
    case storeUnreadableForget = "store.commit.unreadable-forget"
    case storeRestore = "store.commit.restore"
    case storeImport = "store.commit.import"
    case storeAudioReplaced = "store.commit.audio-replaced"
    case storeAudioRecovered = "store.commit.audio-recovered"
    case storePrune = "store.commit.prune"
    case storeUploadSession = "store.commit.upload-session"
    case storeUploadSessionForget = "store.commit.upload-session-forget"
    // Inside a transaction, after its last write and before its commit: the kill rolls it back.
    case restoreBeforeCommit = "restore.before-commit"
    case importBeforeCommit = "import.before-commit"
    // Files.
    case importAfterCopy = "import.after-copy"
    case audioStageAfterCopy = "audio.stage.after-copy"
    case restoreStageAfterLink = "restore.stage.after-link"
    case audioJournalAfterAside = "audio.journal.after-aside"
    case audioReplaceAfterRename = "audio.replace.after-rename"
    case audioRollbackAfterRename = "audio.rollback.after-rename"
    case audioRecoveryAfterRename = "audio.recovery.after-rename"
    case syncDownloadAfterRename = "sync.download.after-rename"
    case trashKeepAfterCopy = "trash.keep.after-copy"
    case trashKeepAfterPlace = "trash.keep.after-place"
    case historyKeepAfterCopy = "history.keep.after-copy"
    case historyKeepAfterPlace = "history.keep.after-place"
    case pruneAfterUnlink = "prune.after-unlink"
    case downloadAfterTemp = "drive.download.after-temp"
    case downloadAfterRename = "drive.download.after-rename"
    case tokenWriteAfterTemp = "token.write.after-temp"
    case tokenWriteAfterRename = "token.write.after-rename"
    case exportAfterTemp = "export.after-temp"
    case exportAfterPlace = "export.after-place"
    case copyOutAfterTemp = "audio.copy-out.after-temp"
    case copyOutAfterPlace = "audio.copy-out.after-place"
    case drillAfterCopy = "history.drill.after-copy"
    case logRotateAfterRename = "log.rotate.after-rename"
    // Requests that change Drive: before each is sent, and after its answer arrived but
    // before anything of it is recorded.
    case driveCreateBeforeSend = "drive.create.before-send"
    case driveCreateAfterAnswer = "drive.create.after-answer"
    case driveDeleteBeforeSend = "drive.delete.before-send"
    case driveDeleteAfterAnswer = "drive.delete.after-answer"
    case driveFolderBeforeSend = "drive.folder.before-send"
    case driveFolderAfterAnswer = "drive.folder.after-answer"
    case driveSessionBeforeSend = "drive.session.before-send"
    case driveSessionAfterAnswer = "drive.session.after-answer"
    case driveUploadBeforeSend = "drive.upload.before-send"
    case driveUploadAfterAnswer = "drive.upload.after-answer"

    /// One line saying where the point is, for `ivy-soak --list-crash-points`.
    package var about: String {
        switch self {
        case .storeMigrate: "the library was created or migrated on opening"
        case .storeAccount: "login bound the library to the signed-in Google account"
        case .storeResetManifest: "reset-manifest cleared what ivy knew of Drive"
        case .storeEmptyTrash: "`ivy trash empty` removed the trash's entries"
        case .storePurgeTrash: "a sync purged trash entries older than trash_days"
        case .storeRestoreTrash: "`ivy trash restore` put an entry back and removed it from the trash"
        case .storeMirrorReplace: "the Drive mirror was replaced by a full listing"
        case .storeMirrorPage: "a page of Drive's changes was applied to the mirror, with its token"
        case .storeMirrorClear: "the Drive mirror was cleared"
        case .storeBookAdd: "a book was added or saved whole"
        case .storeBookUpdate: "a book's fields were changed"
        case .storeClipAdd: "a clip was added with its audio"
        case .storeClipUpdate: "a clip's fields or audio were changed"
        case .storeClipDelete: "a clip was deleted (its audio kept in the history)"
        case .storeQuota: "a sync recorded the Drive quota it spent"
        case .storeRemoteChange: "a sync applied Drive's change here, with its agreement, trash and audio"
        case .storeConflictsSeen: "conflicts were marked as seen"
        case .storeSetting: "a setting was stored"
        case .storeSettingUnset: "a setting was unset"
        case .storeSyncOutcome: "a sync recorded how it ended"
        case .storeHeldReported: "held deletions were marked as reported"
        case .storeSynced: "a sync recorded an agreement reached by a push"
        case .storeMissingOnDrive: "a sync recorded entities gone from Drive"
        case .storeReplaceCutShort: "an upload marked its replace of Drive's files as begun"
        case .storeReplaceWithdrawn: "an upload withdrew its replace mark"
        case .storeForgetSynced: "a sync forgot an entity deleted on both sides"
        case .storeManifestCleanUp: "a sync removed manifest rows of entities gone everywhere"
        case .storeQueueDrop: "a sync dropped a queue item with nothing left to do"
        case .storeFailure: "a sync recorded a failed item for retry"
        case .storeRetryFailed: "retry-failed queued failed items again"
        case .storeUnreadableRemember: "a sync remembered a Drive file it cannot read"
        case .storeUnreadableForget: "a sync forgot unreadable Drive files no longer listed"
        case .storeRestore: "`ivy restore` put books and clips back to an earlier time"
        case .storeImport: "`ivy import` wrote an archive's books, clips and MP3s"
        case .storeAudioReplaced: "a replacement of audio finished: its journal rows removed"
        case .storeAudioRecovered: "an opening finished or undid audio replacements a killed ivy left"
        case .storePrune: "a sync pruned history versions older than history_days"
        case .storeUploadSession: "an MP3 upload kept its session: opened, or as Drive confirmed a chunk"
        case .storeUploadSessionForget: "an MP3 upload forgot its session: done, failed for good, or not resumable"
        case .restoreBeforeCommit: "`ivy restore`, its MP3s in place, before its transaction commits"
        case .importBeforeCommit: "`ivy import`, its MP3s in place, before its transaction commits"
        case .importAfterCopy: "`ivy import` copied the archive's MP3s out, none yet in place"
        case .audioStageAfterCopy: "an MP3 given to ivy was copied beside the audio and flushed"
        case .restoreStageAfterLink: "a restore linked a kept MP3 beside the audio, not yet in place"
        case .audioJournalAfterAside: "a clip's current audio was kept aside before its replacement"
        case .audioReplaceAfterRename: "a new MP3 was renamed into place inside its transaction"
        case .audioRollbackAfterRename: "a replacement that failed put the previous audio back"
        case .audioRecoveryAfterRename: "an opening put back the audio a killed replacement kept aside"
        case .syncDownloadAfterRename: "a downloaded MP3 was renamed into place, before its transaction commits"
        case .trashKeepAfterCopy: "an MP3 for the trash was copied to a temporary name and flushed"
        case .trashKeepAfterPlace: "an MP3 was linked or renamed into the trash, before its entry commits"
        case .historyKeepAfterCopy: "an MP3 for the history was copied to a temporary name and flushed"
        case .historyKeepAfterPlace: "an MP3 was linked or renamed into the history, before its version commits"
        case .pruneAfterUnlink: "the prune removed history MP3s no version names"
        case .downloadAfterTemp: "a download was written whole to its temporary file and checked"
        case .downloadAfterRename: "a download was renamed to its staging name"
        case .tokenWriteAfterTemp: "the token's temporary file was written and flushed, not yet renamed"
        case .tokenWriteAfterRename: "the token file was renamed into place"
        case .exportAfterTemp: "`ivy export` wrote the archive to its temporary directory"
        case .exportAfterPlace: "`ivy export` put the archive in place"
        case .copyOutAfterTemp: "`ivy clip audio` wrote and flushed its copy beside FILE, not yet in place"
        case .copyOutAfterPlace: "`ivy clip audio` put its copy in place as FILE"
        case .drillAfterCopy: "a restore drill made its scratch copy beside the library, before restoring into it"
        case .logRotateAfterRename: "the log was renamed to .1 to start a new one"
        case .driveCreateBeforeSend: "a JSON file's create (multipart upload) is about to be sent"
        case .driveCreateAfterAnswer: "Drive answered a JSON file's create; nothing recorded yet"
        case .driveDeleteBeforeSend: "a file's delete is about to be sent"
        case .driveDeleteAfterAnswer: "Drive answered a file's delete; nothing recorded yet"
        case .driveFolderBeforeSend: "a folder's create is about to be sent"
        case .driveFolderAfterAnswer: "Drive answered a folder's create; its id not yet remembered"
        case .driveSessionBeforeSend: "an MP3's resumable session is about to be asked for"
        case .driveSessionAfterAnswer: "Drive opened an MP3's resumable session; nothing sent yet"
        case .driveUploadBeforeSend: "an MP3's upload PUT (bytes or a status query) is about to be sent"
        case .driveUploadAfterAnswer: "Drive answered an MP3's upload PUT; nothing recorded yet"
        }
    }
}

/// Where ivy reaches its crash points. Unarmed (always, in a release), `reach` is one relaxed
/// atomic load; the binary arms it in a debug build alone, from `IVY_CRASH_AT=NAME[:N]`, and
/// from `IVY_CRASH_TRACE=FILE`, which appends each point reached to FILE, one name a line:
/// the points a run passes, and how often, are then the crashes worth trying.
package enum CrashPoints {
    private static let armed = Atomic<Bool>(false)
    private static let target = Mutex<(point: CrashPoint, remaining: Int)?>(nil)
    private static let traceFile = Atomic<Int32>(-1)

    /// Marks a durable step: kills the process with SIGKILL when it is the armed point,
    /// reached for the Nth time.
    @inline(__always)
    package static func reach(_ point: CrashPoint) {
        guard armed.load(ordering: .relaxed) else { return }
        hit(point)
    }

    private static func hit(_ point: CrashPoint) {
        let trace = traceFile.load(ordering: .relaxed)
        if trace >= 0 {
            // One write to a file opened to append: lines of processes tracing to one file
            // never interleave.
            let line = Array((point.rawValue + "\n").utf8)
            _ = line.withUnsafeBytes { Glibc.write(trace, $0.baseAddress, $0.count) }
        }
        let fires = target.withLock { target -> Bool in
            guard let armed = target, armed.point == point else { return false }
            target = (point, armed.remaining - 1)
            return armed.remaining == 1
        }
        guard fires else { return }
        // Said first, so a test that expected this point can tell it from a kill elsewhere.
        let line = Array("ivy: crash point \(point.rawValue) reached; killed (IVY_CRASH_AT)\n".utf8)
        _ = line.withUnsafeBytes { Glibc.write(STDERR_FILENO, $0.baseAddress, $0.count) }
        kill(getpid(), SIGKILL)
    }

    /// Arms `point` to kill the process the `count`th time it is reached.
    package static func arm(_ point: CrashPoint, count: Int = 1) {
        target.withLock { $0 = (point, max(1, count)) }
        armed.store(true, ordering: .relaxed)
    }

    /// Every point, one line each, sorted by name: the name, then what it marks.
    package static var listing: [String] {
        let points = CrashPoint.allCases.sorted { $0.rawValue < $1.rawValue }
        let width = points.map(\.rawValue.count).max() ?? 0
        return points.map { $0.rawValue.padding(toLength: width + 2, withPad: " ", startingAt: 0) + $0.about }
    }

    /// Appends the name of each point reached to the file at `path` (created 0600); false when
    /// it cannot be opened.
    package static func trace(to path: String) -> Bool {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { return false }
        traceFile.store(descriptor, ordering: .relaxed)
        armed.store(true, ordering: .relaxed)
        return true
    }

    /// `NAME` or `NAME:N` (N from 1), as `IVY_CRASH_AT` spells it; nil for an unknown name or
    /// a count that is not a positive number.
    package static func parse(_ text: String) -> (point: CrashPoint, count: Int)? {
        let parts = text.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
        guard let point = CrashPoint(rawValue: String(parts[0])) else { return nil }
        guard parts.count == 2 else { return (point, 1) }
        guard let count = Int(parts[1]), count >= 1 else { return nil }
        return (point, count)
    }
}
