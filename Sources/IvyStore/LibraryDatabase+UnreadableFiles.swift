import GRDB
package import IvyCore

extension LibraryDatabase {
    /// The Drive files a sync read and could not use, as they were then.
    package func unreadableDriveFiles() async throws -> [UnreadableDriveFile] {
        try await read { db in
            // A library an older ivy wrote last, read without migrating it, has none.
            guard try db.tableExists("unreadable_drive_files") else { return [] }
            return try Row.fetchAll(db, sql: "SELECT * FROM unreadable_drive_files ORDER BY file_id").map { row in
                UnreadableDriveFile(
                    key: EntityKey(
                        EntityKind(rawValue: try row.decode(forColumn: "entity_type")) ?? .clip,
                        try row.decode(forColumn: "entity_id")),
                    fileID: try row.decode(forColumn: "file_id"), name: try row.decode(forColumn: "name"),
                    modifiedTime: try row.decode(forColumn: "modified_time"), md5: try row.decode(forColumn: "md5"),
                    reason: try row.decode(forColumn: "reason"), readAt: try row.decode(forColumn: "read_at"))
            }
        }
    }

    /// Remembers a Drive file that could not be used, as it is now.
    package func rememberUnreadable(_ file: UnreadableDriveFile) async throws {
        try await write { db in
            try db.execute(
                sql: """
                    INSERT OR REPLACE INTO unreadable_drive_files
                        (file_id, entity_type, entity_id, name, modified_time, md5, reason, read_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    file.fileID, file.key.kind.rawValue, file.key.id, file.name, file.modifiedTime, file.md5,
                    file.reason, file.readAt,
                ])
        }
    }

    /// Forgets the files no longer on Drive as they were read (gone, or changed since: a
    /// changed one is read again), given a complete listing. One read when there are none.
    package func forgetUnreadable(keeping listed: [RemoteFile]) async throws {
        let known = try await unreadableDriveFiles()
        let gone = known.filter { file in !listed.contains { file.matches($0) } }
        guard !gone.isEmpty else { return }
        try await write { db in
            for file in gone {
                try db.execute(sql: "DELETE FROM unreadable_drive_files WHERE file_id = ?", arguments: [file.fileID])
            }
        }
    }
}
