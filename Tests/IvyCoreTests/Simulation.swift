import Foundation
import IvyCore

/// An in-memory Drive for planner scenarios: files with Drive's own clock and ids,
/// several files per name allowed, as on the real service.
final class SimulatedDrive {
    struct StoredFile {
        var file: RemoteFile
        var content: Data
    }

    private(set) var files: [DriveFileID: StoredFile] = [:]
    private var tick: Milliseconds = 1_000_000
    private var nextID = 0

    func list() -> [RemoteFile] { files.values.map(\.file).sorted { $0.id < $1.id } }

    @discardableResult
    func create(name: String, content: Data) -> RemoteFile {
        tick += 7
        nextID += 1
        let file = RemoteFile(
            id: DriveFileID("f\(nextID)"), name: name, modifiedTime: tick, createdTime: tick, size: Int64(content.count)
        )
        files[file.id] = StoredFile(file: file, content: content)
        return file
    }

    func delete(_ id: DriveFileID) { files[id] = nil }
    func content(_ id: DriveFileID) -> Data? { files[id]?.content }

    /// How many files carry each name: more than one is a duplicate.
    var namesWithDuplicates: [String] {
        Dictionary(grouping: files.values, by: \.file.name).filter { $0.value.count > 1 }.keys.sorted()
    }
}

/// One device's library, manifest and queue, with the user's edits queued the way the
/// database triggers queue them, and a sync that carries out plans as the engine does.
final class SimulatedDevice {
    let name: String
    var books: [BookID: Book] = [:]
    var clips: [ClipID: Clip] = [:]
    var audio: [ClipID: String] = [:]
    var extras: [EntityKey: [String: JSONValue]] = [:]
    var manifest: [EntityKey: ManifestEntry] = [:]
    /// What each entity looked like when both sides last agreed: the merge's base.
    var bases: [EntityKey: SyncBase] = [:]
    var queue: [EntityKey: QueueItem] = [:]
    var clock: Milliseconds
    var lastPlan = SyncPlan()

    init(_ name: String, clock: Milliseconds = 1_000) {
        self.name = name
        self.clock = clock
    }

    private func now() -> Milliseconds {
        clock += 13
        return clock
    }

    private func enqueue(_ key: EntityKey, _ operation: QueueItem.Operation) {
        queue[key] = QueueItem(key: key, operation: operation, queuedAt: clock)
    }

    // MARK: the user's edits

    func addBook(_ id: BookID, title: String, position: Double = 0) {
        let at = now()
        books[id] = Book(id: id, title: title, position: position, createdAt: at, updatedAt: at)
        enqueue(EntityKey(id), .upsert)
    }

    func editBook(_ id: BookID, _ change: (inout Book) -> Void) {
        guard var book = books[id] else { return }
        let before = book
        change(&book)
        guard book != before else { return }
        book.updatedAt = Timestamp.next(now: now(), previous: before.updatedAt)
        books[id] = book
        enqueue(EntityKey(id), .upsert)
    }

    func addClip(_ id: ClipID, book: BookID, note: String? = nil, start: Double = 0) {
        let at = now()
        clips[id] = Clip(id: id, bookID: book, start: start, duration: 5, note: note, createdAt: at, updatedAt: at)
        audio[id] = "audio of \(id) from \(name)"
        enqueue(EntityKey(id), .upsert)
    }

    func editClip(_ id: ClipID, _ change: (inout Clip) -> Void) {
        guard var clip = clips[id] else { return }
        let before = clip
        change(&clip)
        guard clip != before else { return }
        clip.updatedAt = Timestamp.next(now: now(), previous: before.updatedAt)
        clips[id] = clip
        enqueue(EntityKey(id), .upsert)
    }

    func deleteClip(_ id: ClipID) {
        guard clips.removeValue(forKey: id) != nil else { return }
        audio[id] = nil
        enqueue(EntityKey(id), .delete)
    }

    // MARK: sync

    var snapshot: LocalSnapshot { LocalSnapshot(books: Array(books.values), clips: Array(clips.values)) }

    func plan(with drive: SimulatedDrive, complete: Bool = true, allowDeletes: Bool = true) -> SyncPlan {
        SyncPlanner.plan(
            PlanInput(
                local: snapshot, remote: RemoteListing(files: drive.list(), isComplete: complete),
                manifest: Array(manifest.values), queue: Array(queue.values), allowLocalDeletes: allowDeletes))
    }

    /// Plans and carries out one sync, as the engine does, with no failures.
    @discardableResult
    func sync(with drive: SimulatedDrive, allowDeletes: Bool = true) -> SyncPlan {
        let plan = plan(with: drive, allowDeletes: allowDeletes)
        lastPlan = plan
        let syncedAt = now()
        for action in plan.actions {
            let key = action.key
            switch action.action {
            case .upload:
                upload(key, replacing: action.remote, drive: drive, at: syncedAt)
            case .download:
                download(key, from: action.remote, drive: drive, at: syncedAt)
                queue[key] = nil
            case .merge:
                merge(key, remote: action.remote, drive: drive, at: syncedAt)
            case .deleteRemote:
                for file in action.remote?.allFiles ?? [] { drive.delete(file.id) }
                manifest[key] = nil
                queue[key] = nil
            case .deleteLocal:
                if let id = key.clipID { (clips[id], audio[id]) = (nil, nil) }
                manifest[key] = nil
            }
        }
        for duplicate in plan.staleDuplicates { drive.delete(duplicate.file.id) }
        for key in plan.manifestCleanup { manifest[key] = nil }
        for key in plan.droppedQueueItems { queue[key] = nil }
        return plan
    }

    private func upload(
        _ key: EntityKey, replacing remote: RemoteEntity?, drive: SimulatedDrive, at syncedAt: Milliseconds
    ) {
        for file in remote?.allFiles ?? [] { drive.delete(file.id) }
        switch key {
        case .book(let id):
            guard let book = books[id] else { return }
            guard let data = try? BackupCodec.encode(BookBackup(book, extras: extras[key] ?? [:])) else { return }
            let json = drive.create(name: "book_\(key.id).json", content: data)
            bases[key] = SyncBase(json: data)
            manifest[key] = ManifestEntry(
                key: key, localUpdatedAt: book.updatedAt, remoteUpdatedAt: json.modifiedTime, remoteFileID: json.id,
                syncedAt: syncedAt)
        case .clip(let id):
            guard let clip = clips[id] else { return }
            guard let data = try? BackupCodec.encode(ClipBackup(clip, extras: extras[key] ?? [:])) else { return }
            let json = drive.create(name: "clip_\(key.id).json", content: data)
            bases[key] = SyncBase(json: data, audioMD5: audio[id] ?? "")
            let mp3 = drive.create(name: "clip_\(key.id).mp3", content: Data((audio[id] ?? "").utf8))
            manifest[key] = ManifestEntry(
                key: key, localUpdatedAt: clip.updatedAt, remoteUpdatedAt: json.modifiedTime, remoteFileID: json.id,
                remoteMP3FileID: mp3.id, syncedAt: syncedAt)
        }
        queue[key] = nil
    }

    private func download(
        _ key: EntityKey, from remote: RemoteEntity?, drive: SimulatedDrive, at syncedAt: Milliseconds
    ) {
        guard let json = remote?.json, let data = drive.content(json.id) else { return }
        switch key {
        case .book(let id):
            guard let backup = try? BackupCodec.decodeBook(data, expectedID: id) else { return }
            books[id] = backup.book(uri: books[id]?.uri)
            extras[key] = backup.extras
            bases[key] = SyncBase(json: data)
            manifest[key] = ManifestEntry(
                key: key, localUpdatedAt: backup.updatedAt, remoteUpdatedAt: json.modifiedTime, remoteFileID: json.id,
                syncedAt: syncedAt)
        case .clip(let id):
            guard let backup = try? BackupCodec.decodeClip(data, expectedID: id), let mp3 = remote?.mp3,
                let sound = drive.content(mp3.id)
            else { return }
            clips[id] = backup.clip
            audio[id] = String(decoding: sound, as: UTF8.self)
            extras[key] = backup.extras
            bases[key] = SyncBase(json: data, audioMD5: audio[id])
            manifest[key] = ManifestEntry(
                key: key, localUpdatedAt: backup.updatedAt, remoteUpdatedAt: json.modifiedTime, remoteFileID: json.id,
                remoteMP3FileID: mp3.id, syncedAt: syncedAt)
        }
    }

    private func merge(_ key: EntityKey, remote: RemoteEntity?, drive: SimulatedDrive, at syncedAt: Milliseconds) {
        guard let json = remote?.json, let data = drive.content(json.id) else { return }
        let mergedAt = now()
        switch key {
        case .book(let id):
            guard let local = books[id], let theirs = try? BackupCodec.decodeBook(data, expectedID: id) else {
                return
            }
            let base = bases[key].flatMap { try? BackupCodec.decodeBook($0.json, expectedID: id) }
            let merged = Merge.book(
                local: BookBackup(local, extras: extras[key] ?? [:]), remote: theirs, base: base, now: mergedAt)
            books[id] = merged.book(uri: local.uri)
            extras[key] = merged.extras
        case .clip(let id):
            guard let local = clips[id], let theirs = try? BackupCodec.decodeClip(data, expectedID: id),
                let mp3 = remote?.mp3, let sound = drive.content(mp3.id)
            else { return }
            let base = bases[key].flatMap { try? BackupCodec.decodeClip($0.json, expectedID: id) }
            let merged = Merge.clip(
                local: ClipBackup(local, extras: extras[key] ?? [:]), remote: theirs, base: base, now: mergedAt)
            let remoteAudio = String(decoding: sound, as: UTF8.self)
            let audioChoice = Merge.audio(
                Merge.AudioState(
                    localMD5: audio[id], localUpdatedAt: local.updatedAt, remoteMD5: remoteAudio,
                    remoteFileID: mp3.id,
                    remoteUpdatedAt: theirs.updatedAt, baseMD5: bases[key]?.audioMD5,
                    baseFileID: manifest[key]?.remoteMP3FileID))
            if audioChoice.choice == .remote { audio[id] = remoteAudio }
            clips[id] = merged.clip
            extras[key] = merged.extras
        }
        upload(key, replacing: remote, drive: drive, at: syncedAt)
    }

    /// What must agree across devices: every synced field and the audio (`extras` is
    /// compared on its own: a dictionary's printed order is not stable).
    var library: String {
        let bookLines = books.values.sorted { $0.id < $1.id }.map {
            "book \($0.id) \($0.title) \($0.artist ?? "-") \($0.position) \($0.hidden) \($0.updatedAt)"
        }
        let clipLines = clips.values.sorted { $0.id < $1.id }.map {
            "clip \($0.id) \($0.bookID) \($0.start) \($0.duration) [\($0.note ?? "")] "
                + "\($0.transcription ?? "-") \($0.updatedAt) \(audio[$0.id] ?? "no audio")"
        }
        return (bookLines + clipLines).joined(separator: "\n")
    }
}
