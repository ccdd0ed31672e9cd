package import Foundation

/// An item of the sync queue: what changed locally and still has to reach Drive.
/// It says *what* changed; the planner decides *how* to push it.
package struct QueueItem: Sendable, Equatable {
    package enum Operation: String, Sendable {
        case upsert, delete
    }

    package var key: EntityKey
    package var operation: Operation
    package var attempts: Int
    package var lastError: String?
    package var queuedAt: Milliseconds

    /// Items are retried until this many attempts; then they wait for `ivy retry-failed`.
    package static let maximumAttempts = 3

    package init(
        key: EntityKey, operation: Operation, attempts: Int = 0, lastError: String? = nil, queuedAt: Milliseconds = 0
    ) {
        self.key = key
        self.operation = operation
        self.attempts = attempts
        self.lastError = lastError
        self.queuedAt = queuedAt
    }

    package var hasFailed: Bool { attempts >= Self.maximumAttempts }
}

/// What local and remote looked like when they last agreed, for one entity.
/// `remoteUpdatedAt` is Drive's own `modifiedTime` of the JSON file ivy last wrote or
/// read, so later comparisons use one clock.
package struct ManifestEntry: Sendable, Equatable {
    package var key: EntityKey
    package var localUpdatedAt: Milliseconds?
    package var remoteUpdatedAt: Milliseconds?
    package var remoteFileID: DriveFileID?
    package var remoteMP3FileID: DriveFileID?
    /// md5 of the clip's MP3 both sides last agreed on (the base's audio); nil for a book, or
    /// when none was recorded. Drive replaces an MP3's bytes under the same id ("upload new
    /// version", `files.update` with media): only its md5 then tells that it changed.
    package var audioMD5: String?
    package var syncedAt: Milliseconds?
    /// When a sync first found the entity (or a clip's JSON) missing on Drive, this device's
    /// clock; nil while Drive has it. Another device's replace deletes, then creates: an
    /// absence is acted on only once it has outlasted `SyncPlanner.replaceGrace`.
    package var missingSince: Milliseconds?

    package init(
        key: EntityKey, localUpdatedAt: Milliseconds?, remoteUpdatedAt: Milliseconds?, remoteFileID: DriveFileID? = nil,
        remoteMP3FileID: DriveFileID? = nil, audioMD5: String? = nil, syncedAt: Milliseconds? = nil,
        missingSince: Milliseconds? = nil
    ) {
        self.key = key
        self.localUpdatedAt = localUpdatedAt
        self.remoteUpdatedAt = remoteUpdatedAt
        self.remoteFileID = remoteFileID
        self.remoteMP3FileID = remoteMP3FileID
        self.audioMD5 = audioMD5
        self.syncedAt = syncedAt
        self.missingSince = missingSince
    }
}

extension ManifestEntry {
    /// Whether a clip's MP3 on Drive is other than the one both sides agreed on: another file
    /// (delete-then-create), or the same file with other bytes. Drive keeps the id when its
    /// content is replaced in place ("Manage versions", `files.update` with media), so only
    /// the md5 tells; an md5 unknown on either side leaves the id to decide.
    package func mp3Changed(_ mp3: RemoteFile) -> Bool {
        if let recorded = remoteMP3FileID, recorded != mp3.id { return true }
        guard let audioMD5, let listed = mp3.md5 else { return false }
        return audioMD5 != listed
    }
}

/// What both sides last agreed on, kept with the manifest row: the base of a three-way merge.
package struct SyncBase: Sendable, Equatable {
    /// The backup JSON exactly as uploaded or downloaded.
    package var json: Data
    /// md5 of the clip's audio at that moment; nil for books.
    package var audioMD5: String?

    package init(json: Data, audioMD5: String? = nil) {
        self.json = json
        self.audioMD5 = audioMD5
    }
}

/// A file seen in the Drive listing (metadata only).
package struct RemoteFile: Sendable, Hashable {
    package var id: DriveFileID
    package var name: String
    package var modifiedTime: Milliseconds
    package var createdTime: Milliseconds?
    package var size: Int64?
    package var md5: String?

    package init(
        id: DriveFileID, name: String, modifiedTime: Milliseconds, createdTime: Milliseconds? = nil, size: Int64? = nil,
        md5: String? = nil
    ) {
        self.id = id
        self.name = name
        self.modifiedTime = modifiedTime
        self.createdTime = createdTime
        self.size = size
        self.md5 = md5
    }
}

/// The files of one entity on Drive. Several files may share a name: the newest is
/// current, the others are stale duplicates. Of several JSON files the newest by Drive's
/// clock is only the last upload, not the newest content (two devices replacing at once
/// leave two): the sync reads them all and goes by their `updated_at` and the merge.
package struct RemoteEntity: Sendable, Equatable {
    package var key: EntityKey
    package var json: RemoteFile?
    package var mp3: RemoteFile?
    package var stale: [RemoteFile]

    package init(key: EntityKey, json: RemoteFile?, mp3: RemoteFile? = nil, stale: [RemoteFile] = []) {
        self.key = key
        self.json = json
        self.mp3 = mp3
        self.stale = stale
    }

    /// A clip is complete only with both its JSON and its MP3.
    package var isComplete: Bool { json != nil && (key.kind == .book || mp3 != nil) }

    /// Every file of this entity: what an upload replaces or a remote delete removes.
    package var allFiles: [RemoteFile] { [json, mp3].compactMap { $0 } + stale }

    /// The other JSON files of the entity's name, besides `json`.
    package var jsonTwins: [RemoteFile] { stale.filter { $0.name == key.jsonFileName } }

    /// The other MP3 files of a clip's name, besides `mp3`, whose content may differ from it
    /// (Drive's md5 says so, or says nothing): new audio from two places at once. They are
    /// read and resolved by content, never deleted unread. One with `mp3`'s md5 is a plain
    /// stale duplicate.
    package var mp3Twins: [RemoteFile] {
        guard key.kind == .clip else { return [] }
        return stale.filter { $0.name == key.mp3FileName && ($0.md5 == nil || $0.md5 != mp3?.md5) }
    }
}

/// The remote files grouped by entity, and whether every page was read.
package struct RemoteListing: Sendable, Equatable {
    package var entities: [EntityKey: RemoteEntity]
    /// Files whose names are not ivy's: left alone.
    package var ignored: [RemoteFile]
    /// False when the listing stopped early: then nothing may be deleted locally.
    package var isComplete: Bool

    package init(entities: [EntityKey: RemoteEntity] = [:], ignored: [RemoteFile] = [], isComplete: Bool = true) {
        self.entities = entities
        self.ignored = ignored
        self.isComplete = isComplete
    }

    /// Groups listed files by the name rules; of several files with one name the newest
    /// (`modifiedTime`, then `createdTime`, then id) is current.
    package init(files: [RemoteFile], isComplete: Bool) {
        var byName: [EntityFileName: [RemoteFile]] = [:]
        var ignored: [RemoteFile] = []
        for file in files {
            if let parsed = EntityFileName(parsing: file.name) {
                byName[parsed, default: []].append(file)
            } else {
                ignored.append(file)
            }
        }
        var entities: [EntityKey: RemoteEntity] = [:]
        for (name, candidates) in byName {
            let ordered = candidates.sorted { a, b in
                (a.modifiedTime, a.createdTime ?? 0, a.id) > (b.modifiedTime, b.createdTime ?? 0, b.id)
            }
            var entity = entities[name.key] ?? RemoteEntity(key: name.key, json: nil)
            switch name.format {
            case .json: entity.json = ordered.first
            case .mp3: entity.mp3 = ordered.first
            }
            entity.stale += ordered.dropFirst()
            entities[name.key] = entity
        }
        self.init(entities: entities, ignored: ignored.sorted { $0.id < $1.id }, isComplete: isComplete)
    }
}

/// The local entities a plan is made from.
package struct LocalSnapshot: Sendable, Equatable {
    package var books: [BookID: Book]
    package var clips: [ClipID: Clip]

    package init(books: [Book] = [], clips: [Clip] = []) {
        self.books = Dictionary(books.map { ($0.id, $0) }, uniquingKeysWith: { $1 })
        self.clips = Dictionary(clips.map { ($0.id, $0) }, uniquingKeysWith: { $1 })
    }

    package func updatedAt(_ key: EntityKey) -> Milliseconds? {
        switch key {
        case .book(let id): books[id]?.updatedAt
        case .clip(let id): clips[id]?.updatedAt
        }
    }

    package var keys: [EntityKey] {
        books.keys.map { EntityKey($0) } + clips.keys.map { EntityKey($0) }
    }
}
