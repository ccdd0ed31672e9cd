import Foundation
import GRDB
import IvyCore
import Synchronization

@testable import IvyStore

/// A fresh home directory for one test, removed when the test ends.
final class TemporaryHome {
    let path: String
    let paths: IvyPaths

    init() throws {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("ivy-store-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        paths = try IvyPaths.resolve(home: path, environment: [:], workingDirectory: "/")
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    func file(_ name: String) -> String { path + "/" + name }

    /// Writes an MP3-looking file (ID3 header) of `size` bytes, sparse beyond the header.
    func mp3(_ name: String, size: Int = 64) throws -> String {
        let target = file(name)
        _ = FileManager.default.createFile(atPath: target, contents: Data("ID3\u{4}\0".utf8))
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: target))
        try handle.truncate(atOffset: UInt64(size))
        try handle.close()
        return target
    }
}

/// A clock the test moves by hand.
final class ManualClock: Sendable {
    private let value: Mutex<Milliseconds>
    init(_ start: Milliseconds = 1_700_000_000_000) { value = Mutex(start) }
    func set(_ now: Milliseconds) { value.withLock { $0 = now } }
    var clock: WallClock { WallClock { [self] in value.withLock { $0 } } }
}

/// Ids in the allowed alphabet, predictable per test.
func testID(_ n: Int) -> String {
    let hex = String(n, radix: 16)
    return String(repeating: "0", count: max(0, 8 - hex.count)) + hex + "-0000-4000-8000-000000000000"
}

extension LibraryDatabase {
    /// A second, independent connection, as another program would open the file.
    func externalConnection() throws -> DatabaseQueue {
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        return try DatabaseQueue(path: paths.database, configuration: configuration)
    }
}

func queueRows(_ db: DatabaseQueue) throws -> [String] {
    try db.read { db in
        try Row.fetchAll(
            db,
            sql: "SELECT entity_type, entity_id, operation, attempts FROM sync_queue ORDER BY entity_type, entity_id"
        )
        .map {
            "\($0["entity_type"] as String) \($0["entity_id"] as String) \($0["operation"] as String) \($0["attempts"] as Int)"
        }
    }
}
