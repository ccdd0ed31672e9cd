import Foundation
package import IvyCore
package import IvyGoogle
package import IvyStore
import IvySystem

/// What `ivy check` found: the backup on Drive compared with this library, read-only.
package struct BackupCheck: Sendable {
    package struct Checked: Sendable, Encodable, Equatable {
        package var books = 0
        package var clips = 0
        /// Drive files looked at.
        package var files = 0
    }

    /// One difference, with what to do about it.
    package struct Problem: Sendable, Encodable, Equatable {
        package var kind: Kind
        package var entity: String
        package var detail: String
        package var fix: String
    }

    package enum Kind: String, Sendable, Encodable {
        /// A book or clip here has no JSON on Drive.
        case missingOnDrive = "missing_on_drive"
        /// A clip's JSON is on Drive without its MP3.
        case missingMP3 = "missing_mp3"
        /// Drive's JSON is not what this library last synced or would upload.
        case jsonDiffers = "json_differs"
        /// Drive's JSON cannot be read as backup JSON (--read-data).
        case unreadableJSON = "unreadable_json"
        /// Drive's MP3 is not this library's audio.
        case mp3Differs = "mp3_differs"
        /// The clip's audio is missing here.
        case audioMissingHere = "audio_missing_here"
        /// Several Drive files share one name.
        case duplicateName = "duplicate_name"
        /// An entity on Drive that this library does not have.
        case remoteOnly = "remote_only"
        /// Changed here since the last sync, yet not in the queue.
        case notQueued = "not_queued"
        /// An MP3 kept in the history whose content is not what its name says: removed.
        case damagedKeptAudio = "damaged_kept_audio"
    }

    /// A queue item, as `ivy check` lists it.
    package struct QueueEntry: Sendable, Encodable, Equatable {
        package var entity: String
        package var operation: String
        package var attempts: Int
        @Null package var lastError: String?
    }

    package var checked = Checked()
    package var problems: [Problem] = []
    /// Local changes not on Drive yet: the backup lacks them until the next sync.
    package var pending: [QueueEntry] = []
    /// Changes held back after failing: a failure of the backup.
    package var failed: [QueueEntry] = []
    /// Whether the JSON files were downloaded and compared field by field.
    package var readData = false

    /// Everything matches: no difference, nothing waiting to be uploaded, nothing held back.
    package var ok: Bool { problems.isEmpty && failed.isEmpty && pending.isEmpty }

    /// What `ivy check --json` prints (`JSONOutput`), `ok` included.
    package struct JSON: Encodable {
        let ok: Bool
        let checked: Checked
        let problems: [Problem]
        let pending: [QueueEntry]
        let failed: [QueueEntry]
        let readData: Bool
    }

    package var jsonForm: JSON {
        JSON(ok: ok, checked: checked, problems: problems, pending: pending, failed: failed, readData: readData)
    }

    /// One line for people.
    package var summary: String {
        let counts =
            "\(checked.books) book\(checked.books == 1 ? "" : "s"), "
            + "\(checked.clips) clip\(checked.clips == 1 ? "" : "s"),"
            + " \(checked.files) file\(checked.files == 1 ? "" : "s") on Drive"
        var parts: [String] = []
        if !problems.isEmpty { parts.append("\(problems.count) difference\(problems.count == 1 ? "" : "s")") }
        if !pending.isEmpty { parts.append("\(pending.count) not on Drive yet (run `ivy sync`)") }
        if !failed.isEmpty { parts.append("\(failed.count) held back") }
        let verdict = ok ? "Backup OK" : "Backup differs"
        return "\(verdict): checked \(counts)\(readData ? " (JSON read in full)" : "")"
            + (parts.isEmpty ? "" : "; " + parts.joined(separator: ", "))
    }
}

/// Reads Drive in full and this library, and compares them; writes nothing anywhere but for
/// removing kept MP3s that are not what their names say (`removeDamagedHistoryAudio`). The
/// listing is Drive's own (never the mirror kept here), so the check does not trust what it
/// checks.
package struct BackupChecker: Sendable {
    let library: LibraryDatabase
    let drive: DriveClient

    package init(library: LibraryDatabase, drive: DriveClient) {
        self.library = library
        self.drive = drive
    }

    /// Why the check cannot say anything: Drive's listing stopped early.
    package struct IncompleteListing: LocalizedError {
        let reason: String
        package var errorDescription: String? {
            "Drive's listing stopped early (\(reason)), so the backup cannot be checked; try again later"
        }
    }

    package func run(readData: Bool) async throws -> BackupCheck {
        let listing = try await drive.listLibrary(remembered: try library.rememberedFolders(), createFolders: false)
        if let reason = listing.incompleteReason { throw IncompleteListing(reason: reason) }
        let listed = RemoteListing(files: listing.files, isComplete: true)
        // Twins a sync read and could not use are left alone by every sync: compared as a sync
        // sees Drive, and said apart.
        let unreadable = try await library.unreadableDriveFiles()
        let remote = listed.settingAside(unreadable)
        let queue = try await Dictionary(library.queueItems().map { ($0.key, $0) }, uniquingKeysWith: { $1 })
        let manifest = try await Dictionary(library.manifestEntries().map { ($0.key, $0) }, uniquingKeysWith: { $1 })
        let books = try await library.books(includeHidden: true)
        let clips = try await library.clips()

        var check = BackupCheck()
        check.readData = readData
        check.checked = .init(books: books.count, clips: clips.count, files: listing.files.count)
        for item in queue.values.sorted(by: { $0.key < $1.key }) {
            let entry = BackupCheck.QueueEntry(
                entity: "\(item.key)", operation: item.operation.rawValue, attempts: item.attempts,
                lastError: item.lastError)
            if item.hasFailed { check.failed.append(entry) } else { check.pending.append(entry) }
        }

        var local: [EntityKey: LocalEntity] = [:]
        for book in books {
            local[EntityKey(book.id)] = try await .book(
                BookBackup(book, extras: library.extras(EntityKey(book.id))))
        }
        for clip in clips {
            local[EntityKey(clip.id)] = try await .clip(
                ClipBackup(clip, extras: library.extras(EntityKey(clip.id))))
        }

        let setAside = Dictionary(grouping: listed.setAside(unreadable), by: { $0.known.key })
        // What no sync here acts on, so no listing in full would change it either.
        var leftAlone: Set<String> = []
        for key in Set(local.keys).union(remote.entities.keys).sorted() {
            let entity = remote.entities[key]
            for name in Set((entity?.stale ?? []).map(\.name)).sorted() {
                let count = entity?.allFiles.filter { $0.name == name }.count ?? 0
                check.problems.append(
                    .init(
                        kind: .duplicateName, entity: "\(key)", detail: "\(count) files on Drive are named \(name)",
                        fix: name.hasSuffix(".json")
                            ? "the next `ivy sync` reads them all, keeps the newest content with what the others add, "
                                + "and deletes the rest (a copy it cannot read is left on Drive, and left alone after)"
                            : "the next `ivy sync` reads them all, keeps the clip's newer take, keeps any other "
                                + "take in the history here, and deletes the rest"))
            }
            for (file, known) in setAside[key] ?? [] {
                check.problems.append(
                    .init(
                        kind: .unreadableJSON, entity: "\(key)",
                        detail: "Drive has another \(file.name) (file \(file.id), modified "
                            + "\(Self.time(file.modifiedTime))) that is not usable backup JSON (\(known.reason)); "
                            + "syncs go by the other copy and leave this one alone: they do not read it again while it "
                            + "is unchanged, and never delete it",
                        fix: "nothing is lost by leaving it; to be rid of it, delete that copy of \(file.name) in "
                            + "Drive (My Drive › Ivy › \(key.kind.rawValue)s, the one modified "
                            + "\(Self.time(file.modifiedTime))); if it holds changes you want, correct it there "
                            + "instead: the next `ivy sync` reads a changed copy again"))
            }
            // A lone JSON every sync found unusable, unchanged since: syncs only skip it, so
            // `ivy sync` is no advice; what a person can do with the file is.
            if let json = entity?.json, let known = unreadable.first(where: { $0.matches(json) }) {
                check.problems.append(Self.unusable(key, json, known, here: local[key] != nil))
                continue
            }
            // A change still in the queue is what `pending` (or `failed`) reports.
            if queue[key] != nil { continue }
            guard let mine = local[key] else {
                if let incomplete = Self.incompleteClip(key, entity) {
                    check.problems.append(incomplete)
                    leftAlone.insert("\(key)")
                    continue
                }
                check.problems.append(
                    .init(
                        kind: .remoteOnly, entity: "\(key)", detail: "on Drive but not in this library",
                        fix: "run `ivy sync` to download it (or to delete it on Drive if it was deleted here)"))
                continue
            }
            try await compare(key, mine, entity, manifest[key], readData: readData, into: &check)
        }
        try await adviseFullListing(remote, except: leftAlone, into: &check)
        for file in library.removeDamagedHistoryAudio() {
            check.problems.append(
                .init(
                    kind: .damagedKeptAudio, entity: "history/\(file.name)",
                    detail: "holds \(file.bytes) bytes whose md5 is \(file.md5 ?? "unreadable"), not its name's",
                    fix: "removed: no restore uses it (a version that names it restores without that MP3)"))
        }
        return check
    }

    /// A sync reads Drive through the mirror of its listing kept here, brought up to date by
    /// Drive's change feed. Where Drive's own listing and that mirror, brought up to date in
    /// memory as the next sync would, disagree about an entity's files (the feed left a
    /// change out), a plain `ivy sync` would not see what the check found: the fix is
    /// `ivy sync --full`, which lists Drive in full and rebuilds the mirror. Nothing is saved.
    private func adviseFullListing(
        _ remote: RemoteListing, except leftAlone: Set<String>, into check: inout BackupCheck
    ) async throws {
        let syncFixes: Set<BackupCheck.Kind> = [
            .remoteOnly, .missingOnDrive, .jsonDiffers, .duplicateName, .missingMP3,
        ]
        // Nothing a sync would fix: no request for advice nobody needs.
        guard check.problems.contains(where: { syncFixes.contains($0.kind) }),
            let mirror = try await library.driveMirror(), let folders = try await library.rememberedFolders()
        else { return }
        // A change the mirror cannot follow means the next sync lists Drive in full anyway,
        // and a Drive that does not answer leaves the check standing without the advice.
        guard
            case .current(let files)? = try? await SyncEngine.followChanges(
                mirror, folders: folders, drive: drive, saving: nil)
        else { return }
        let mirrored = RemoteListing(files: files, isComplete: true)
        func ids(_ entity: RemoteEntity?) -> Set<DriveFileID> { Set(entity?.allFiles.map(\.id) ?? []) }
        let disagreeing = Set(
            Set(remote.entities.keys).union(mirrored.entities.keys)
                .filter { ids(remote.entities[$0]) != ids(mirrored.entities[$0]) }
                .map { "\($0)" })
        for index in check.problems.indices {
            let problem = check.problems[index]
            guard syncFixes.contains(problem.kind), disagreeing.contains(problem.entity),
                !leftAlone.contains(problem.entity)
            else { continue }
            check.problems[index].fix =
                "run `ivy sync --full`: the mirror of Drive kept here (followed through Drive's change feed) does "
                + "not match Drive's listing here, so a plain `ivy sync` would not see this"
        }
    }

    enum LocalEntity {
        case book(BookBackup)
        case clip(ClipBackup)

        var updatedAt: Milliseconds {
            switch self {
            case .book(let book): book.updatedAt
            case .clip(let clip): clip.updatedAt
            }
        }

        func encoded() throws -> Data {
            switch self {
            case .book(let book): try BackupCodec.encode(book)
            case .clip(let clip): try BackupCodec.encode(clip)
            }
        }
    }

    private func compare(
        _ key: EntityKey, _ mine: LocalEntity, _ remote: RemoteEntity?, _ entry: ManifestEntry?, readData: Bool,
        into check: inout BackupCheck
    ) async throws {
        func problem(_ kind: BackupCheck.Kind, _ detail: String, _ fix: String) {
            check.problems.append(.init(kind: kind, entity: "\(key)", detail: detail, fix: fix))
        }
        if let entry, entry.localUpdatedAt != mine.updatedAt {
            problem(
                .notQueued, "changed here since the last sync, but not in the queue",
                "run `ivy sync` to upload it")
        }
        guard let json = remote?.json else {
            // What the next sync does with it is the planner's rule: a book (or a clip whose
            // MP3 is still the one agreed) is restored; a synced clip gone whole was deleted
            // on another device, and the sync deletes it here too unless it changed here.
            let deletedElsewhere = key.kind == .clip && entry != nil && remote?.mp3 == nil
            problem(
                .missingOnDrive, "\(key.jsonFileName) is not on Drive",
                deletedElsewhere
                    ? "it was deleted on Drive (on another device?): the next `ivy sync` deletes it here too; to keep "
                        + "it, change it here first (an edit beats a delete), then run `ivy sync`"
                    : entry == nil
                        ? "run `ivy sync` to upload it"
                        : "run `ivy sync`: it is uploaded once a sync has found it missing for a minute (another "
                            + "device may be between the delete and the create of a replace)")
            return
        }
        let fix: String
        if let entry, json.id == entry.remoteFileID, json.modifiedTime <= (entry.remoteUpdatedAt ?? .min) {
            fix =
                "`ivy sync` does not see this (neither side changed since the last sync by its records): change it "
                + "here (`ivy \(key.kind.rawValue) update \(key.id) ...`), then run `ivy sync` to upload this copy"
        } else {
            fix = "run `ivy sync`: it brings Drive's copy here, merged with any change made here"
        }
        if readData {
            try await compareContent(key, mine, json, fix, problem)
        } else {
            await compareChecksum(key, mine, json, entry, fix, problem)
        }
        guard case .clip(let clip) = mine else { return }
        let audio = library.audioPath(clipID: clip.id)
        guard let mp3 = remote?.mp3 else {
            problem(
                .missingMP3, "\(key.jsonFileName) is on Drive without \(key.mp3FileName)",
                "another device may still be uploading it; once a sync has found it so for a minute, "
                    + "`ivy sync` sends the MP3 from here")
            return
        }
        guard let localMD5 = try await library.audioMD5(clipID: clip.id) else {
            problem(
                .audioMissingHere, "the clip's audio \(audio) is missing here",
                "run `ivy clip update \(key.id) --audio FILE` with the recording")
            return
        }
        if mp3.md5 != localMD5 {
            // Drive's MP3 is not the one agreed (new bytes, perhaps under the same id): the next
            // sync reads it. Only an MP3 that still looks agreed escapes every sync.
            let changedOnDrive = entry.map { $0.mp3Changed(mp3) } ?? false
            problem(
                .mp3Differs,
                "Drive's \(key.mp3FileName) has md5 \(mp3.md5 ?? "unknown"), the audio here \(localMD5)",
                changedOnDrive
                    ? "it changed on Drive since the last sync: run `ivy sync`, which downloads it (merged with any "
                        + "change here) and keeps the audio here in the history"
                    : "if this library's audio is right, copy \(audio) elsewhere and run "
                        + "`ivy clip update \(key.id) --audio COPY`, then `ivy sync`")
        }
    }

    /// The cheap check: Drive's md5 of the JSON is that of the JSON last agreed on (the
    /// manifest's base) or of what this library would upload now.
    private func compareChecksum(
        _ key: EntityKey, _ mine: LocalEntity, _ json: RemoteFile, _ entry: ManifestEntry?, _ fix: String,
        _ problem: (BackupCheck.Kind, String, String) async -> Void
    ) async {
        var expected: [Data] = []
        let base = try? await library.base(key)
        if let base, entry?.localUpdatedAt == mine.updatedAt { expected.append(base.json) }
        // Synced by an ivy that kept no copy of what it agreed on: Drive's bytes (the app's,
        // say) cannot be matched by checksum; only --read-data can compare them.
        if base == nil, entry != nil, json.id == entry?.remoteFileID { return }
        if let data = try? mine.encoded() { expected.append(data) }
        let matches = expected.contains { data in
            if let md5 = json.md5 { return md5 == MD5.hex(data) }
            // No checksum from Drive: the same file as last agreed, of the same size.
            return json.id == entry?.remoteFileID && json.size == Int64(data.count)
        }
        if !matches {
            await problem(
                .jsonDiffers,
                "Drive's \(key.jsonFileName) is not what this library last synced or would upload "
                    + "(md5 \(json.md5 ?? "unknown"))",
                fix + " (`ivy check --read-data` shows the fields)")
        }
    }

    /// Drive's copy as a sync takes it: a time beyond what Google's clock allows was taken as
    /// the time Google received the file (`StampedBackup.bounded`), so this library's own time
    /// there is no difference.
    private func asSynced<Backup: StampedBackup>(_ theirs: Backup, _ ours: Backup, received: Milliseconds) -> Backup {
        let limit = min(received + Backup.googleAllowance, library.clock.now() + Backup.futureAllowance)
        var copy = theirs
        if copy.updatedAt > limit { copy.updatedAt = ours.updatedAt }
        if copy.createdAt > limit { copy.createdAt = ours.createdAt }
        return copy
    }

    /// The full check: Drive's JSON downloaded and compared field by field with what this
    /// library would upload.
    private func compareContent(
        _ key: EntityKey, _ mine: LocalEntity, _ json: RemoteFile, _ fix: String,
        _ problem: (BackupCheck.Kind, String, String) -> Void
    ) async throws {
        let data: Data
        do {
            data = try await drive.downloadData(json, limit: BackupCodec.maximumBytes)
        } catch let error as DriveError where error.kind != .network && error.kind != .rateLimited {
            // One file too large, or gone since the listing: said, and the rest still checked.
            problem(
                .unreadableJSON, "Drive's \(key.jsonFileName) could not be read: \(error.localizedDescription)",
                "run `ivy check --read-data` again; if it stays, change the entity here and run `ivy sync`")
            return
        }
        let theirs: Data
        do {
            switch mine {
            case .book(let book):
                theirs = try BackupCodec.encode(
                    asSynced(
                        try BackupCodec.decodeBook(data, expectedID: book.id), book, received: json.modifiedTime))
            case .clip(let clip):
                theirs = try BackupCodec.encode(
                    asSynced(
                        try BackupCodec.decodeClip(data, expectedID: clip.id), clip, received: json.modifiedTime))
            }
        } catch {
            problem(
                .unreadableJSON, "Drive's \(key.jsonFileName) is not readable backup JSON: \(error)",
                "change the entity here, then run `ivy sync`: the merge replaces Drive's copy with this library's")
            return
        }
        guard let ours = try? mine.encoded(), let differing = Self.differingFields(ours, theirs) else {
            problem(
                .unreadableJSON, "this library's \(key) cannot be written as backup JSON, so it cannot reach Drive",
                "look at it with `ivy \(key.kind.rawValue) show \(key.id)` and correct what is out of range")
            return
        }
        guard !differing.isEmpty else { return }
        problem(
            .jsonDiffers, "Drive's \(key.jsonFileName) differs in " + differing.joined(separator: "; "), fix)
    }

    /// The fields two backup JSON objects disagree on, each with both values.
    static func differingFields(_ ours: Data, _ theirs: Data) -> [String]? {
        let decoder = JSONDecoder()
        guard case .object(let here) = try? decoder.decode(JSONValue.self, from: ours),
            case .object(let there) = try? decoder.decode(JSONValue.self, from: theirs)
        else { return nil }
        return Set(here.keys).union(there.keys).sorted().compactMap { field in
            let left = here[field] ?? .null
            let right = there[field] ?? .null
            guard left != right else { return nil }
            return "\(field) (here \(Self.text(left)), Drive \(Self.text(right)))"
        }
    }

    /// A clip on Drive that this library does not have, with its JSON or its MP3 missing: every
    /// sync here leaves it alone (there is nothing whole to download, and no audio here to
    /// complete it), so `ivy sync` is no advice. What completes it is another device: one still
    /// uploading it, or one that has the clip, whose sync puts the missing file back; where no
    /// device has it any more, what is left can only be deleted in Drive. Nil for anything else.
    static func incompleteClip(_ key: EntityKey, _ entity: RemoteEntity?) -> BackupCheck.Problem? {
        guard key.kind == .clip, let entity, (entity.json == nil) != (entity.mp3 == nil) else { return nil }
        let (present, missing) =
            entity.json == nil ? (key.mp3FileName, key.jsonFileName) : (key.jsonFileName, key.mp3FileName)
        return .init(
            kind: entity.json == nil ? .remoteOnly : .missingMP3, entity: "\(key)",
            detail: "\(present) is on Drive without \(missing), and this library does not have the clip",
            fix: "nothing to do here: every sync leaves it alone while it is incomplete. Another device may still be "
                + "uploading it (a sync after that brings the clip here), and a device that has the clip puts "
                + "\(missing) back when it syncs; if no device has it any more, delete \(present) in Drive "
                + "(My Drive › Ivy › clips)")
    }

    /// A JSON on Drive every sync skips, alone under its name: what is wrong with it, and what
    /// a person can do in Drive. `here`: this library has the entity too.
    private static func unusable(_ key: EntityKey, _ file: RemoteFile, _ known: UnreadableDriveFile, here: Bool)
        -> BackupCheck.Problem
    {
        let kind = key.kind.rawValue
        let place = "in Drive (My Drive › Ivy › \(kind)s, the \(file.name) modified \(time(file.modifiedTime)))"
        var fix: String
        if let other = known.reason.firstMatch(of: /its id (\S+) does not match/)?.1 {
            // The app or a person saved another entity under this name.
            fix =
                "it holds \(kind) \(other), not the \(kind) its name says: \(place), rename it \(kind)_\(other).json "
                + "if Drive has no file of that name, or delete it if it is a stray copy"
        } else {
            fix = "correct it \(place), or delete it"
        }
        fix +=
            here
            ? "; once no file of that name is left, a sync a minute later puts this library's copy back"
            : "; the next `ivy sync` reads a changed file again"
        return .init(
            kind: .unreadableJSON, entity: "\(key)",
            detail: "Drive's \(file.name) (file \(file.id)) is not usable backup JSON (\(known.reason)), so every "
                + "sync skips it",
            fix: fix)
    }

    /// A Drive time as RFC 3339, as Drive's web page can be searched for it.
    private static func time(_ milliseconds: Milliseconds) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.string(from: Date(timeIntervalSince1970: Double(milliseconds) / 1000))
    }

    private static func text(_ value: JSONValue) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let text = (try? encoder.encode(value)).map { String(decoding: $0, as: UTF8.self) } ?? "?"
        return text.count > 60 ? String(text.prefix(59)) + "…" : text
    }
}
