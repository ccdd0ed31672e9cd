package import GRDB
import IvyCore

/// A record whose row GRDB reads and writes from its `Codable` properties, each in the
/// column of its name in snake case by ivy's one rule (`SnakeCase`, the rule of `--json` keys
/// too): `createdAt` in `created_at`, `bookID` in `book_id`, `remoteMP3FileID` in
/// `remote_mp3_file_id`. Names are written once, in the type.
///
/// Decoding stays strict: a value of the wrong type in a column (another program may write
/// one) throws, as `Row.decode(forColumn:)` does, and never traps.
package protocol SnakeCaseColumns: FetchableRecord, PersistableRecord, Codable {}

extension SnakeCaseColumns {
    package static var databaseColumnEncodingStrategy: DatabaseColumnEncodingStrategy {
        .custom { key in SnakeCase.snake(key.stringValue) }
    }
    package static var databaseColumnDecodingStrategy: DatabaseColumnDecodingStrategy {
        .custom { column in SnakeCase.Key(SnakeCase.camel(column)) }
    }
}
