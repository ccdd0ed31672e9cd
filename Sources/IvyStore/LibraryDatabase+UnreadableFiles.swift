import GRDB
package import IvyCore
import IvySystem

extension LibraryDatabase {
    /// The Drive files a sync read and could not use, as they were then.
    package func unreadableDriveFiles() async throws -> [UnreadableDriveFile] {
        try await read { db in
            // A library an older ivy wrote last, read without migrating it, has none.
            guard try db.tableExists("unreadable_drive_files") else { return [] }
            return try UnreadableRow.fetchAll(db, sql: "SELECT * FROM unreadable_drive_files ORDER BY file_id")
                .map(\.file)
        }
    }

    /// Remembers a Drive file that could not be used, as it is now.
    package func rememberUnreadable(_ file: UnreadableDriveFile) async throws {
        try await write(.storeUnreadableRemember) { db in
            try UnreadableRow(file).insert(db, onConflict: .replace)
        }
    }

    /// Forgets the files no longer on Drive as they were read (gone, or changed since: a
    /// changed one is read again), given a complete listing. One read when there are none.
    package func forgetUnreadable(keeping listed: [RemoteFile]) async throws {
        let known = try await unreadableDriveFiles()
        let gone = known.filter { file in !listed.contains { file.matches($0) } }
        guard !gone.isEmpty else { return }
        try await write(.storeUnreadableForget) { db in
            for file in gone {
                try db.execute(sql: "DELETE FROM unreadable_drive_files WHERE file_id = ?", arguments: [file.fileID])
            }
        }
    }
}
