import Foundation
import GRDB
package import IvyCore
import IvySystem

/// Clip audio on disk: validated before anything is written, copied in through a
/// temporary file that is renamed into place, so an interrupted copy leaves no partial MP3.
enum AudioFiles {
    /// Checks that `path` is a regular MP3 file within the size cap.
    static func validate(_ path: String) throws {
        var info = stat()
        guard stat(path, &info) == 0 else {
            if errno == ENOENT { throw StoreError.audioMissing(path: path) }
            throw StoreError.audioUnreadable(path: path, reason: String(cString: strerror(errno)))
        }
        guard info.st_mode & S_IFMT == S_IFREG else { throw StoreError.audioNotAFile(path: path) }
        let size = Int64(info.st_size)
        guard AudioRules.allows(size) else { throw StoreError.audioTooLarge(path: path, bytes: size) }
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw StoreError.audioUnreadable(path: path, reason: "permission denied")
        }
        defer { try? handle.close() }
        let header = (try? handle.read(upToCount: AudioRules.sniffLength)) ?? Data()
        guard AudioRules.looksLikeMP3(header) else { throw StoreError.audioNotMP3(path: path) }
    }

    /// Copies `source` to a hidden temporary file in `directory`, flushed to disk.
    static func stage(_ source: String, in directory: String) throws -> String {
        try Directories.ensurePrivate(directory)
        let temporary = stagingPath(in: directory)
        do {
            try FileManager.default.copyItem(atPath: source, toPath: temporary)
            // The copy keeps the source's mode (0666 stays 0666); audio is private like every
            // file ivy writes.
            guard chmod(temporary, 0o600) == 0 else {
                throw StoreError.audioCopyFailed(path: temporary, reason: String(cString: strerror(errno)))
            }
            let descriptor = open(temporary, O_RDONLY)
            if descriptor >= 0 {
                fsync(descriptor)
                close(descriptor)
            }
            CrashPoints.reach(.audioStageAfterCopy)
            return temporary
        } catch {
            try? FileManager.default.removeItem(atPath: temporary)
            if let storage = StorageError(path: directory, error: error) { throw storage }
            throw StoreError.audioCopyFailed(path: directory, reason: error.localizedDescription)
        }
    }

    /// A fresh hidden name in `directory` for audio on its way in (a copy or a download).
    static func stagingPath(in directory: String) -> String {
        TransferFiles.incomingPath(in: directory)
    }

    /// Atomically puts a staged file at `destination`, replacing any file there; `point` is
    /// reached once it is there (inside the caller's transaction, before its commit).
    static func place(_ staged: String, at destination: String, crash point: CrashPoint) throws {
        if rename(staged, destination) != 0 {
            let code = errno
            if let storage = StorageError(path: destination, errno: code) { throw storage }
            throw StoreError.audioCopyFailed(path: destination, reason: String(cString: strerror(code)))
        }
        CrashPoints.reach(point)
    }

    static func remove(_ path: String) {
        _ = unlink(path)
    }
}

extension LibraryDatabase {
    /// A fresh `.download-` path in the audio directory (created private when missing) for an
    /// MP3 on its way in from Drive. It is moved into place only inside the transaction that
    /// checks its row (`EngineWriter.placeAudio`); if ivy is killed first, the next sync
    /// removes it (`removeTransferLeftovers`).
    package func downloadStagingPath() throws -> String {
        try Directories.ensurePrivate(paths.audioDirectory)
        return paths.audioDirectory + "/" + TransferFiles.downloadPrefix + UUID().uuidString + ".mp3"
    }

    /// Removes a staged file that was not placed (or was, and so is gone already).
    package func discardStagedAudio(_ path: String) {
        AudioFiles.remove(path)
    }

    /// Removes a clip's audio, after its row is gone.
    package func removeAudio(clipID: ClipID) {
        AudioFiles.remove(audioPath(clipID: clipID))
    }

    /// Removes the transfer files a killed run left beside the audio. Only under the sync
    /// lock: then no other transfer is using them. An MP3 a command was copying in
    /// (`.incoming-`) goes once it is an hour old, the rule for the history's unnamed MP3s: a
    /// younger one may be a running `clip add`'s, which takes no sync lock.
    package func removeTransferLeftovers() {
        let hourAgo = (clock.now() - 3_600_000) / 1000
        TransferFiles.removeLeftovers(in: paths.audioDirectory, incomingBefore: hourAgo)
    }

    /// Removes the MP3 of each clip whose row is gone and whose bytes the history keeps. A
    /// deletion (`clip delete`, or a sync applying one) removes the MP3 only after its
    /// transaction commits, the MP3 kept in the history first; a kill between the two left it
    /// in the audio directory for good (`ivy-soak --crash-check --story delete --crash-at
    /// store.commit.clip-delete:1`). Only under the sync lock, which `restore`, `trash restore`
    /// and `import` hold while they put an MP3 back. A running `clip add` takes no lock, and its
    /// new MP3 is in place a moment before its row commits: it is a file of its own, never the
    /// history's (a hard link), so it is taken only when the history holds its bytes and it is
    /// an hour old, the rule for `.incoming-` files. Returns how many went.
    ///
    /// It lists the audio and every clip's id, so an open library looks at most once an hour
    /// (a clock stepped back by an hour or more counts as an hour): a watch polling every few
    /// seconds would otherwise pay for it at every poll, and an MP3 left so is only disk space.
    @discardableResult
    package func removeDeletedClipsAudio() async -> Int {
        guard deletedAudioLookIsDue() else { return 0 }
        let directory = paths.audioDirectory
        let history = paths.historyDirectory
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        let candidates = names.filter { !$0.hasPrefix(".") && $0.hasSuffix(".mp3") }
        guard !candidates.isEmpty,
            let held = try? await read({ db in Set(try String.fetchAll(db, sql: "SELECT id FROM clips")) })
        else { return 0 }
        let hourAgo = (clock.now() - 3_600_000) / 1000
        return await
            (try? BlockingExecutor.blocking {
                var removed = 0
                for name in candidates where !held.contains(String(name.dropLast(4))) {
                    let path = directory + "/" + name
                    var info = stat()
                    guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG,
                        let md5 = try? LocalFile.md5(of: URL(fileURLWithPath: path))
                    else { continue }
                    var kept = stat()
                    let keptPath = history + "/" + md5 + ".mp3"
                    guard lstat(keptPath, &kept) == 0, HistoryAudio.trusted(keptPath, md5: md5) else { continue }
                    let linked = kept.st_ino == info.st_ino && kept.st_dev == info.st_dev
                    guard linked || Int64(info.st_ctim.tv_sec) <= hourAgo else { continue }
                    if unlink(path) == 0 { removed += 1 }
                }
                return removed
            }) ?? 0
    }

    /// Whether the clip's audio is on disk.
    package func hasAudio(clipID: ClipID) -> Bool {
        FileManager.default.fileExists(atPath: audioPath(clipID: clipID))
    }

    /// The md5 of the clip's audio, or nil when there is no file. Hashing reads the whole file,
    /// so it runs on ivy's own threads.
    package func audioMD5(clipID: ClipID) async throws -> String? {
        try await BlockingExecutor.blocking { try hashAudio(clipID: clipID) }
    }

    /// `audioMD5` where blocking is already allowed: inside a transaction, on GRDB's queue.
    func hashAudio(clipID: ClipID) throws -> String? {
        guard hasAudio(clipID: clipID) else { return nil }
        return try LocalFile.md5(of: URL(fileURLWithPath: audioPath(clipID: clipID)))
    }
}

/// Replacing a clip's audio together with its row. The new MP3 is renamed into place inside
/// the transaction that changes the row; a kill between that rename and the commit would
/// leave the new audio with the old row (nothing queued, so Drive kept the old MP3 for good).
/// So the audio it replaces is kept aside first (a hard link `audio/.replacing-ID.mp3`, or an
/// `.replacing-ID.absent` marker when there was none), the transaction records the clip in
/// `audio_replacements`, and the copy aside goes only after the commit. Whoever opens the
/// library next finishes a replacement that committed and undoes one that did not. The copy
/// aside is held with `flock` while its replacement runs, so no other process undoes it.
struct AudioJournal {
    let clipID: ClipID
    let audioPath: String
    let asidePath: String
    let existed: Bool
    private let descriptor: Int32

    static let prefix = ".replacing-"

    /// Keeps the clip's current audio aside before it is replaced.
    static func begin(clipID: ClipID, audioPath: String, audioDirectory: String) throws -> AudioJournal {
        try Directories.ensurePrivate(audioDirectory)
        let existed = FileManager.default.fileExists(atPath: audioPath)
        let aside = audioDirectory + "/" + prefix + clipID.rawValue + (existed ? ".mp3" : ".absent")
        if existed {
            guard link(audioPath, aside) == 0 else {
                let code = errno
                if let storage = StorageError(path: aside, errno: code) { throw storage }
                throw StoreError.audioCopyFailed(
                    path: audioPath,
                    reason: code == EEXIST
                        ? "another ivy is replacing this clip's audio; try again when it is done"
                        : String(cString: strerror(code)))
            }
        }
        let descriptor = open(aside, O_RDONLY | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            let code = errno
            if existed { unlink(aside) }
            if let storage = StorageError(path: aside, errno: code) { throw storage }
            throw StoreError.audioCopyFailed(path: aside, reason: String(cString: strerror(code)))
        }
        _ = flock(descriptor, LOCK_EX)
        CrashPoints.reach(.audioJournalAfterAside)
        return AudioJournal(
            clipID: clipID, audioPath: audioPath, asidePath: aside, existed: existed, descriptor: descriptor)
    }

    /// The change committed: the audio aside is no longer needed.
    func committed() {
        unlink(asidePath)
        close(descriptor)
    }

    /// Lets go of the copy aside as a killed process does, leaving it for the next opening of
    /// the library to finish or undo.
    func abandoned() {
        close(descriptor)
    }

    /// The change did not commit: the previous audio goes back (or the new one away).
    func rolledBack() {
        if existed { rename(asidePath, audioPath) } else { unlink(audioPath) }
        CrashPoints.reach(.audioRollbackAfterRename)
        unlink(asidePath)
        close(descriptor)
    }
}

extension LibraryDatabase {
    /// Runs `body` (which changes the clip's row) and puts `staged` in place as the clip's
    /// audio: both happen or neither, even across a kill (`AudioJournal`).
    func writeReplacingAudio<T: Sendable>(
        _ point: CrashPoint, clipID: ClipID, staged: String, _ body: @Sendable (Database) throws -> T
    ) async throws -> T {
        try await writeReplacingAudios(point, [(clipID, staged)], body)
    }

    /// Runs `body` and puts each staged MP3 in place as its clip's audio, in one transaction:
    /// all of it happens or none, even across a kill (a journal per clip, each committed by
    /// the same `audio_replacements` rows). The MP3s replaced are kept in the history first.
    /// `beforeCommit` runs last inside the transaction, after the MP3s are in place; `point` is
    /// reached once it committed.
    func writeReplacingAudios<T: Sendable>(
        _ point: CrashPoint, _ replacements: [(clipID: ClipID, staged: String)],
        beforeCommit: @Sendable () throws -> Void = {},
        _ body: @Sendable (Database) throws -> T
    ) async throws -> T {
        let kept = try await keepAudioInHistory(clipIDs: replacements.map(\.clipID))
        // Linking and locking each copy aside waits on the file system: on ivy's own threads.
        let journals = try await BlockingExecutor.blocking { () throws -> [AudioJournal] in
            var journals: [AudioJournal] = []
            do {
                for replacement in replacements {
                    journals.append(
                        try AudioJournal.begin(
                            clipID: replacement.clipID, audioPath: audioPath(clipID: replacement.clipID),
                            audioDirectory: paths.audioDirectory))
                }
            } catch {
                for journal in journals { journal.rolledBack() }
                throw error
            }
            return journals
        }
        let result: T
        do {
            result = try await write(point) { db in
                for (clipID, md5) in kept { try HistoryAudio.stamp(clipID: clipID, md5: md5, in: db) }
                let newest = try HistoryAudio.newestVersions(replacements.map(\.clipID), in: db)
                let value = try body(db)
                // A new MP3 is a new version, even when the write changed no field.
                try HistoryAudio.recordAudioChanges(since: newest, in: db)
                for replacement in replacements {
                    try db.execute(
                        sql: "INSERT OR IGNORE INTO audio_replacements (clip_id) VALUES (?)",
                        arguments: [replacement.clipID])
                    try AudioFiles.place(
                        replacement.staged, at: audioPath(clipID: replacement.clipID), crash: .audioReplaceAfterRename)
                }
                try beforeCommit()
                return value
            }
        } catch {
            for journal in journals.reversed() { journal.rolledBack() }
            throw error
        }
        for journal in journals { journal.committed() }
        // A marker left by a failure here is dropped by the next opening of the library.
        try? await write(.storeAudioReplaced) { db in
            for replacement in replacements {
                try db.execute(
                    sql: "DELETE FROM audio_replacements WHERE clip_id = ?", arguments: [replacement.clipID])
            }
        }
        return result
    }

    /// Finishes or undoes the audio replacements a killed ivy left (`AudioJournal`); one still
    /// running in another process (its copy aside locked) is left to it. `rows` false (a
    /// library opened read-only) puts the files right and leaves the journal's rows to the
    /// next opening that writes: a killed import's MP3s outlive no command.
    func recoverAudioReplacements(rows: Bool = true) async throws {
        let directory = paths.audioDirectory
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter {
            $0.hasPrefix(AudioJournal.prefix)
        }
        guard rows || !names.isEmpty else { return }
        let pending = try await read { db in
            // A library an older ivy wrote last, read without migrating it, has no journal.
            guard try db.tableExists("audio_replacements") else { return [ClipID]() }
            return try ClipID.fetchAll(db, sql: "SELECT clip_id FROM audio_replacements")
        }
        guard !names.isEmpty || !pending.isEmpty else { return }
        let committed = Set(pending)
        var running: Set<ClipID> = []
        for name in names {
            let path = directory + "/" + name
            let clipID = ClipID(String(name.dropFirst(AudioJournal.prefix.count).prefix { $0 != "." }))
            let descriptor = open(path, O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else { continue }
            defer { close(descriptor) }
            guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
                running.insert(clipID)
                continue
            }
            if committed.contains(clipID) {
                unlink(path)
            } else if name.hasSuffix(".absent") {
                unlink(audioPath(clipID: clipID))
                unlink(path)
            } else {
                rename(path, audioPath(clipID: clipID))
                CrashPoints.reach(.audioRecoveryAfterRename)
                // When the run died before its new audio was placed, both names are one file,
                // and rename leaves them as they are.
                unlink(path)
            }
        }
        let done = pending.filter { !running.contains($0) }
        guard rows, !done.isEmpty else { return }
        try await write(.storeAudioRecovered) { db in
            for clipID in done {
                try db.execute(sql: "DELETE FROM audio_replacements WHERE clip_id = ?", arguments: [clipID])
            }
        }
    }
}
