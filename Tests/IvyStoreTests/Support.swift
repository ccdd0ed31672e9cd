import Foundation
import GRDB
import IvyCore

@testable import IvyStore

/// Ids in the allowed alphabet, predictable per test.
func testID(_ n: Int) -> String {
    let hex = String(n, radix: 16)
    return String(repeating: "0", count: max(0, 8 - hex.count)) + hex + "-0000-4000-8000-000000000000"
}

/// The same ids, typed, where a `BookID` or `ClipID` is wanted.
func testID<ID: TextIdentifier>(_ n: Int) -> ID { ID(testID(n)) }

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
            "\($0["entity_type"] as String) \($0["entity_id"] as String) "
                + "\($0["operation"] as String) \($0["attempts"] as Int)"
        }
    }
}
