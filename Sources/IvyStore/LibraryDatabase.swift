import Foundation
import GRDB
import IvyCore

/// The library database, `library.db`, and the clip audio beside it.
///
/// Owns the only writer. Every write that keeps an invariant has its own method, so that
/// timestamps, id rules and audio files cannot be got wrong by a caller.
package final class LibraryDatabase: Sendable {
    package let paths: IvyPaths
    let pool: DatabasePool
    let clock: WallClock

    /// How long a write waits for another process that holds the database lock.
    static let busyTimeout: TimeInterval = 10

    /// Opens (creating when missing) and migrates the library. A file that is not an SQLite
    /// database, or that a newer ivy has migrated, is refused and left exactly as it was.
    package init(paths: IvyPaths, clock: WallClock) throws {
        self.paths = paths
        self.clock = clock
        try Directories.ensurePrivate(paths.dataDirectory)
        let path = paths.database
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue {
            throw StoreError.cannotOpen(path: path, reason: "it is a directory")
        }
        var configuration = Configuration()
        configuration.busyMode = .timeout(Self.busyTimeout)
        // In WAL mode NORMAL never corrupts the database and survives a crash of ivy; it
        // saves an fsync per commit, which a sync makes thousands of.
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = NORMAL") }
        do {
            pool = try DatabasePool(path: path, configuration: configuration)
            let migrator = Schema.migrator
            if try pool.read({ try migrator.hasBeenSuperseded($0) }) {
                throw StoreError.newerSchema(path: path)
            }
            try migrator.migrate(pool)
        } catch let error as DatabaseError {
            throw Self.openError(error, path: path)
        }
    }

    private static func openError(_ error: DatabaseError, path: String) -> StoreError {
        switch error.resultCode {
        case .SQLITE_NOTADB, .SQLITE_CORRUPT:
            return .notADatabase(path: path)
        default:
            return .cannotOpen(path: path, reason: error.message ?? "\(error.resultCode)")
        }
    }

    /// Runs a write transaction, turning SQLite's refusals into messages that name the library.
    func write<T>(_ updates: (Database) throws -> T) throws -> T {
        do {
            return try pool.write(updates)
        } catch {
            throw describing(error)
        }
    }

    func read<T>(_ value: (Database) throws -> T) throws -> T {
        do {
            return try pool.read(value)
        } catch {
            throw describing(error)
        }
    }

    private func describing(_ error: any Error) -> any Error {
        switch error {
        case let error as StoreError: error
        case let error as DatabaseError:
            StoreError.database(path: paths.database, message: error.message ?? "\(error.resultCode)")
        case let error as RowDecodingError:
            StoreError.database(path: paths.database, message: "unreadable row: \(error)")
        default:
            error
        }
    }

    /// The path of a clip's audio.
    package func audioPath(clipID: String) -> String {
        paths.audioDirectory + "/\(clipID).mp3"
    }
}

enum Directories {
    /// Creates `path` (and missing parents) with mode 0700 for the directory itself.
    static func ensurePrivate(_ path: String) throws {
        let manager = FileManager.default
        var isDirectory: ObjCBool = false
        if manager.fileExists(atPath: path, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else {
                throw StoreError.cannotCreateDirectory(path: path, reason: "a file of that name exists")
            }
            return
        }
        do {
            let parent = (path as NSString).deletingLastPathComponent
            if !parent.isEmpty, !manager.fileExists(atPath: parent) {
                try manager.createDirectory(atPath: parent, withIntermediateDirectories: true)
            }
            if mkdir(path, 0o700) != 0, errno != EEXIST {
                throw StoreError.cannotCreateDirectory(path: path, reason: String(cString: strerror(errno)))
            }
            // mkdir applies the umask; the mode must be exactly 0700.
            _ = chmod(path, 0o700)
        } catch let error as StoreError {
            throw error
        } catch {
            throw StoreError.cannotCreateDirectory(path: path, reason: error.localizedDescription)
        }
    }
}
