/// A backup JSON on Drive that a sync read and could not use (not backup JSON, over the size
/// cap), as it was then: the same file id with the same `modifiedTime` and md5 holds the same
/// bytes, unusable still, so it is not read again until it changes.
package struct UnreadableDriveFile: Sendable, Equatable {
    package var key: EntityKey
    package var fileID: DriveFileID
    package var name: String
    package var modifiedTime: Milliseconds
    package var md5: String?
    /// Why it could not be used.
    package var reason: String
    /// When a sync read it (this device's clock).
    package var readAt: Milliseconds

    package init(
        key: EntityKey, fileID: DriveFileID, name: String, modifiedTime: Milliseconds, md5: String?, reason: String,
        readAt: Milliseconds
    ) {
        self.key = key
        self.fileID = fileID
        self.name = name
        self.modifiedTime = modifiedTime
        self.md5 = md5
        self.reason = reason
        self.readAt = readAt
    }

    /// Whether `file` is this file, unchanged since it was read.
    package func matches(_ file: RemoteFile) -> Bool {
        file.id == fileID && file.modifiedTime == modifiedTime && file.md5 == md5
    }
}

extension RemoteListing {
    /// The listing without the JSON files already read and found unusable, wherever another
    /// JSON of the same name is left: of several files of one name (twins) those are set
    /// aside, neither read again nor deleted (nothing on Drive is deleted that could not be
    /// read), and the entity goes by the others. An entity whose every JSON is unusable keeps
    /// them: its sync says so, and an edit here replaces them.
    package func settingAside(_ unreadable: [UnreadableDriveFile]) -> RemoteListing {
        guard !unreadable.isEmpty else { return self }
        var listing = self
        for (key, entity) in entities {
            let name = key.jsonFileName
            let files = [entity.json].compactMap { $0 } + entity.jsonTwins
            let kept = files.filter { file in !unreadable.contains { $0.matches(file) } }
            guard !kept.isEmpty, kept.count < files.count else { continue }
            // The newest left is current, by the listing's own rule.
            let ordered = kept.sorted { a, b in
                (a.modifiedTime, a.createdTime ?? 0, a.id) > (b.modifiedTime, b.createdTime ?? 0, b.id)
            }
            var changed = entity
            changed.json = ordered.first
            changed.stale = entity.stale.filter { $0.name != name } + ordered.dropFirst()
            listing.entities[key] = changed
        }
        return listing
    }

    /// The JSON files `settingAside(unreadable)` sets aside: known unusable, beside a usable one.
    package func setAside(_ unreadable: [UnreadableDriveFile]) -> [(file: RemoteFile, known: UnreadableDriveFile)] {
        let kept = settingAside(unreadable)
        return entities.keys.sorted().flatMap { key -> [(file: RemoteFile, known: UnreadableDriveFile)] in
            let left = Set(kept.entities[key]?.allFiles.map(\.id) ?? [])
            return (entities[key]?.allFiles ?? []).compactMap { file in
                guard !left.contains(file.id), let known = unreadable.first(where: { $0.matches(file) }) else {
                    return nil
                }
                return (file, known)
            }
        }
    }
}
