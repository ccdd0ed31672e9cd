import Foundation
import GRDB
package import IvyCore
package import IvySystem
import Synchronization

/// The library database, `library.db`, and the clip audio beside it.
///
/// Owns the only writer. Every write that keeps an invariant has its own method, so that
/// timestamps, id rules and audio files cannot be got wrong by a caller.
package final class LibraryDatabase: Sendable {
    package let paths: IvyPaths
    /// A `DatabasePool` when writing; one read-only connection (or an empty in-memory library
    /// when there is no file yet) for the commands that only read.
    let pool: any DatabaseWriter
    package let clock: WallClock
    /// The range of Google's time last kept in the library (`InternalSetting.googleTime`): a
    /// write keeps it again when the clock has learned more.
    private let keptGoogleTime = Mutex<GoogleTimeRange?>(nil)
    /// When `removeDeletedClipsAudio` last looked, by `clock`.
    private let deletedAudioLookedAt = Mutex<Milliseconds?>(nil)

    /// How long a write waits for another process that holds the database lock.
    static let busyTimeout: TimeInterval = 10

    package enum Access: Sendable {
        /// Creates the library when missing and migrates it.
        case readWrite
        /// Changes nothing on disk: no migration, no journal-mode switch, no file or directory
        /// created (only what a killed ivy left beside the audio is put right: an import's
        /// copies, `ImportStaging`, and a replacement's MP3s, `AudioJournal`). A library that
        /// does not exist yet reads as an empty one.
        case readOnly
    }

    /// Opens the library. A file that is not an ivy library (not SQLite, or SQLite without
    /// ivy's migrations), or that a newer ivy has migrated, is refused before anything in it
    /// changes. `.readWrite` creates a missing library (mode 0600) and migrates it. Opening
    /// and migrating block, so they run on ivy's own threads.
    package convenience init(paths: IvyPaths, clock: WallClock, access: Access = .readWrite) async throws {
        let pool = try await BlockingExecutor.blocking {
            let pool = try LibraryDatabase.connect(paths, access)
            // What a killed `ivy import` copied in outlives no command that opens the library,
            // reading or writing: it is no one's, and may be gigabytes.
            ImportStaging.removeAbandoned(in: paths.audioDirectory)
            return pool
        }
        self.init(paths: paths, clock: clock, pool: pool)
        try await adoptGoogleTime()
        if access == .readWrite {
            try await recoverAudioReplacements()
        } else {
            // Best effort: a read-only file system, say, keeps what it holds.
            try? await recoverAudioReplacements(rows: false)
        }
    }

    private init(paths: IvyPaths, clock: WallClock, pool: any DatabaseWriter) {
        self.paths = paths
        self.clock = clock
        self.pool = pool
    }

    private static func connect(_ paths: IvyPaths, _ access: Access) throws -> any DatabaseWriter {
        let path = paths.database
        switch access {
        case .readOnly:
            try Directories.checkPrivate(paths.dataDirectory)
            switch try Self.inspect(path) {
            case .ivy(let connection):
                return connection
            case .missing, .empty:
                // An empty library with the current schema, in memory: nothing is created on disk.
                let memory = try DatabaseQueue(configuration: configuration())
                try Schema.migrator.migrate(memory)
                return memory
            }
        case .readWrite:
            try Directories.ensurePrivate(paths.dataDirectory)
            switch try Self.inspect(path) {
            case .missing: try LibraryFiles.create(path)
            case .empty: break
            case .ivy(let connection): try connection.close()
            }
            LibraryFiles.tighten(path)
            var configuration = Self.configuration()
            // In WAL mode NORMAL never corrupts the database and survives a crash of ivy; it
            // saves an fsync per commit, which a sync makes thousands of.
            configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = NORMAL") }
            do {
                let pool = try DatabasePool(path: path, configuration: configuration)
                try Schema.migrator.migrate(pool)
                CrashPoints.reach(.storeMigrate)
                return pool
            } catch let error as DatabaseError {
                throw Self.openError(error, path: path)
            }
        }
    }

    /// How every connection to the library is made: the busy timeout, and GRDB's queues
    /// targeting ivy's own (`BlockingExecutor.dispatchQueue`).
    static func configuration(readOnly: Bool = false) -> Configuration {
        var configuration = Configuration()
        configuration.busyMode = .timeout(busyTimeout)
        configuration.readonly = readOnly
        // Every database access (GRDB runs each on a serial queue of its own) counts as ivy's.
        configuration.targetQueue = BlockingExecutor.dispatchQueue
        return configuration
    }

    /// What is at the library's path.
    private enum Found {
        /// No file: a new library.
        case missing
        /// An empty file, or an SQLite database without a single schema object: nothing to
        /// lose, so it becomes the library.
        case empty
        /// A library whose every migration this ivy knows, with the read-only connection
        /// that looked.
        case ivy(DatabaseQueue)
    }

    /// Decides what is at `path` through a read-only connection, so that nothing in a file
    /// that turns out not to be a library changes, journal mode included. What ivy must not
    /// use (not SQLite, SQLite without ivy's migrations, a newer ivy's library) throws.
    private static func inspect(_ path: String) throws -> Found {
        var info = stat()
        guard stat(path, &info) == 0 else {
            if errno == ENOENT { return .missing }
            throw StoreError.cannotOpen(path: path, reason: String(cString: strerror(errno)))
        }
        if info.st_mode & S_IFMT == S_IFDIR { throw StoreError.cannotOpen(path: path, reason: "it is a directory") }
        if info.st_size == 0 { return .empty }
        guard LibraryFiles.hasSQLiteHeader(path) else { throw StoreError.notADatabase(path: path) }
        let connection = try readOnlyConnection(path)
        do {
            let (objects, applied) = try connection.read { db in
                let objects = try Int.fetchOne(db, sql: "SELECT count(*) FROM sqlite_master") ?? 0
                guard try db.tableExists("grdb_migrations") else { return (objects, [String]?.none) }
                return (objects, try String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations"))
            }
            let known = Schema.migrator.migrations
            if objects == 0 {
                try connection.close()
                return .empty
            }
            guard let applied, let first = known.first, applied.contains(first) else {
                throw StoreError.notAnIvyLibrary(path: path)
            }
            if !Set(applied).isSubset(of: known) { throw StoreError.newerSchema(path: path) }
            return .ivy(connection)
        } catch {
            try? connection.close()
            if let error = error as? DatabaseError { throw openError(error, path: path) }
            throw error
        }
    }

    /// Why this ivy must stop using the library, when a newer ivy has migrated it since it
    /// was opened (a long-running watch after an upgrade); nil otherwise.
    package func migratedByNewerIvy() async throws -> String? {
        let applied = try await read { db in try String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations") }
        guard !Set(applied).isSubset(of: Schema.migrator.migrations) else { return nil }
        return "\(paths.database) was upgraded by a newer ivy; start the newer ivy instead of this one "
            + "(systemctl --user restart ivy-watch)"
    }

    /// A read-only connection. In a directory ivy may not write, SQLite cannot create the
    /// shared-memory file a WAL reader needs; when no write-ahead log holds data the main
    /// file alone is the database, and SQLite may read it as immutable.
    private static func readOnlyConnection(_ path: String) throws -> DatabaseQueue {
        do {
            let connection = try DatabaseQueue(path: path, configuration: configuration(readOnly: true))
            try connection.read { db in _ = try Int.fetchOne(db, sql: "SELECT count(*) FROM sqlite_master") }
            return connection
        } catch let error as DatabaseError where [.SQLITE_READONLY, .SQLITE_CANTOPEN].contains(error.resultCode) {
            guard !LibraryFiles.hasPendingLog(path) else {
                throw StoreError.cannotOpen(
                    path: path,
                    reason: "changes in \(path)-wal can only be read with permission to write its directory; "
                        + "run any ivy command that changes something once with that permission")
            }
            do {
                let immutable = LibraryFiles.immutableURI(path)
                return try DatabaseQueue(path: immutable, configuration: configuration(readOnly: true))
            } catch let error as DatabaseError {
                throw openError(error, path: path)
            }
        } catch let error as DatabaseError {
            throw openError(error, path: path)
        }
    }

    private static func openError(_ error: DatabaseError, path: String) -> any Error {
        if let storage = storageError(error, path: path) { return storage }
        switch error.resultCode {
        case .SQLITE_NOTADB, .SQLITE_CORRUPT:
            return StoreError.notADatabase(path: path)
        case .SQLITE_BUSY, .SQLITE_LOCKED:
            return StoreError.busy(path: path)
        case .SQLITE_READONLY:
            return StoreError.cannotOpen(
                path: path, reason: "it (or its directory) cannot be written; check their permissions and owner")
        default:
            return StoreError.cannotOpen(path: path, reason: error.message ?? "\(error.resultCode)")
        }
    }

    /// A full or read-only disk under the library, when SQLite's error may mean one. SQLite
    /// says SQLITE_FULL for a full disk only when a write to the database or its log fails;
    /// growing its shared-memory file reports an I/O error, and a read-only file system a
    /// database it could open only for reading, so those ask the file system itself.
    private static func storageError(_ error: DatabaseError, path: String) -> StorageError? {
        switch error.resultCode {
        case .SQLITE_FULL:
            return full(path: path, temporaryDirectory: temporaryDirectory(), probe: StorageError.probe)
        case .SQLITE_READONLY, .SQLITE_IOERR, .SQLITE_CANTOPEN:
            return StorageError.probe(path)
        default:
            return nil
        }
    }

    /// Which disk SQLITE_FULL was about. SQLite also says it when its temporary files (a big
    /// sort or transaction spills to them) fill their directory: when the library's own disk
    /// has room and that one has none, the message names the temporary directory instead.
    package static func full(
        path: String, temporaryDirectory: String?, probe: (String) -> StorageError?
    ) -> StorageError {
        if probe(path)?.problem == .full { return StorageError(path: path, problem: .full) }
        if let temporaryDirectory, probe(temporaryDirectory)?.problem == .full {
            return StorageError(path: temporaryDirectory + " (SQLite's temporary directory, TMPDIR)", problem: .full)
        }
        return StorageError(path: path, problem: .full)
    }

    /// The directory SQLite puts its temporary files in on Unix: the first of these that is
    /// a writable directory (sqlite3's unixTempFileDir).
    private static func temporaryDirectory() -> String? {
        let environment = ProcessInfo.processInfo.environment
        let candidates = [environment["SQLITE_TMPDIR"], environment["TMPDIR"], "/var/tmp", "/usr/tmp", "/tmp", "."]
        return candidates.compactMap { $0 }.first { candidate in
            var info = stat()
            return stat(candidate, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR
                && access(candidate, W_OK | X_OK) == 0
        }
    }

    /// Runs a write transaction, turning SQLite's refusals into messages that name the library.
    /// The caller suspends while GRDB runs `updates` on the writer's own queue; a cancelled
    /// task interrupts it and gets `CancellationError`.
    ///
    /// The history's triggers date the versions the transaction records by ivy's clock
    /// (Google's when known, `history_clock`), and what the clock learned of Google's time since
    /// it was last kept is kept with it. Every commit is a crash point: `point`, reached once it
    /// committed.
    func write<T: Sendable>(_ point: CrashPoint, _ updates: @Sendable (Database) throws -> T) async throws -> T {
        let learned = clock.google?.range
        let keep = learned != nil && keptGoogleTime.withLock { $0 } != learned
        do {
            let result = try await pool.write { [clock] db in
                BlockingCalls.check("a library write")
                // Read once the transaction holds the lock: another writer may have kept it waiting.
                let reading = clock.reading()
                try db.execute(
                    sql: "INSERT OR REPLACE INTO history_clock (id, now, sure) VALUES (1, ?, ?)",
                    arguments: [reading.now, reading.sure])
                if keep, let learned {
                    try db.execute(
                        sql: "INSERT OR REPLACE INTO settings (key, value) VALUES (?, ?)",
                        arguments: [InternalSetting.googleTime.rawValue, learned.text])
                }
                let result = try updates(db)
                try db.execute(sql: "DELETE FROM history_clock")
                return result
            }
            if keep { keptGoogleTime.withLock { $0 = learned } }
            CrashPoints.reach(point)
            return result
        } catch {
            throw describing(error)
        }
    }

    /// Takes what an earlier run of this boot learned of Google's time (a library written by
    /// an older ivy has none).
    private func adoptGoogleTime() async throws {
        guard let google = clock.google else { return }
        let text = try await read { db in
            try String.fetchOne(
                db, sql: "SELECT value FROM settings WHERE key = ?", arguments: [InternalSetting.googleTime.rawValue])
        }
        guard let kept = text.flatMap(GoogleTimeRange.init(text:)) else { return }
        google.adopt(kept)
        keptGoogleTime.withLock { $0 = kept }
    }

    /// Runs a read transaction (a snapshot, while writes go on) on a reader's own queue.
    func read<T: Sendable>(_ value: @Sendable (Database) throws -> T) async throws -> T {
        do {
            return try await pool.read { db in
                BlockingCalls.check("a library read")
                return try value(db)
            }
        } catch {
            throw describing(error)
        }
    }

    private func describing(_ error: any Error) -> any Error {
        if let error = error as? DatabaseError, let storage = Self.storageError(error, path: paths.database) {
            return storage
        }
        return switch error {
        case let error as StoreError: error
        case let error as DatabaseError where [.SQLITE_BUSY, .SQLITE_LOCKED].contains(error.resultCode):
            StoreError.busy(path: paths.database)
        case let error as DatabaseError:
            StoreError.database(path: paths.database, message: error.message ?? "\(error.resultCode)")
        case let error as RowDecodingError:
            StoreError.database(path: paths.database, message: "unreadable row: \(error)")
        default:
            error
        }
    }

    /// The path of a clip's audio.
    /// Closes the database's connections; nothing may use the library after.
    package func closeConnections() throws {
        try pool.close()
    }

    package func audioPath(clipID: ClipID) -> String {
        paths.audioDirectory + "/\(clipID).mp3"
    }
}

/// The database file and its companions on disk.
enum LibraryFiles {
    /// Creates an empty database file with mode 0600 before SQLite sees it: SQLite gives the
    /// `-wal` and `-shm` files the database's mode, so none of them is ever readable by others.
    static func create(_ path: String) throws {
        do {
            close(try PrivateFile.open(path, .createNew))
        } catch {
            if error.code == EEXIST { return }
            throw StorageError(path: path, errno: error.code)
                ?? StoreError.cannotOpen(path: path, reason: String(cString: strerror(error.code)))
        }
    }

    /// A library made by an older ivy (or under a loose umask) may be readable by others.
    static func tighten(_ path: String) {
        for file in [path, path + "-wal", path + "-shm"] {
            var info = stat()
            guard lstat(file, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_mode & 0o077 != 0 else { continue }
            chmod(file, 0o600)
        }
    }

    /// Whether the file starts with SQLite's 16-byte magic string.
    static func hasSQLiteHeader(_ path: String) -> Bool {
        guard let handle = FileHandle(forReadingAtPath: path) else { return true }
        defer { try? handle.close() }
        let header = (try? handle.read(upToCount: 16)) ?? Data()
        return header == Data("SQLite format 3\0".utf8)
    }

    /// Whether a write-ahead log with content lies beside the database.
    static func hasPendingLog(_ path: String) -> Bool {
        var info = stat()
        return stat(path + "-wal", &info) == 0 && info.st_size > 0
    }

    /// The database as an SQLite URI that reads the main file without locks or a log.
    static func immutableURI(_ path: String) -> String {
        var allowed = CharacterSet.urlPathAllowed
        allowed.remove(charactersIn: "?#%")
        let escaped = path.addingPercentEncoding(withAllowedCharacters: allowed) ?? path
        return "file:\(escaped)?mode=ro&immutable=1"
    }
}

/// The store's private directories (`PrivateDirectory`), refused in the store's words.
enum Directories {
    /// Creates `path` (and missing parents) with mode 0700 for the directory itself; an
    /// existing one must belong to the user and be writable by no one else.
    static func ensurePrivate(_ path: String) throws {
        do {
            try PrivateDirectory.ensure(path)
        } catch let error as PrivateDirectoryError {
            throw StoreError.cannotCreateDirectory(path: error.path, reason: error.reason)
        } catch let error as UnsafeDirectoryError {
            throw StoreError.unsafeDirectory(error)
        }
    }

    /// Refuses an existing directory that another user owns or others can write to.
    /// A missing one passes: it is created private when something is first written.
    static func checkPrivate(_ path: String) throws {
        do {
            try PrivateDirectory.check(path)
        } catch {
            throw StoreError.unsafeDirectory(error)
        }
    }
}

extension LibraryDatabase {
    /// Whether `removeDeletedClipsAudio` looks now: the first time, then once an hour (a clock
    /// stepped back by an hour or more counts as one), so a watch polling every few seconds
    /// does not list the audio and every clip's id at every poll.
    func deletedAudioLookIsDue() -> Bool {
        let now = clock.now()
        return deletedAudioLookedAt.withLock { last in
            guard last.map({ abs(now - $0) >= 3_600_000 }) ?? true else { return false }
            last = now
            return true
        }
    }
}
