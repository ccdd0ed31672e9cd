package import GRDB

/// A record whose row GRDB reads and writes from its `Codable` properties, each in the
/// column of its name in snake case: `createdAt` in `created_at`, `bookID` in `book_id`,
/// `remoteMP3FileID` in `remote_mp3_file_id`. Names are written once, in the type.
///
/// Decoding stays strict: a value of the wrong type in a column (another program may write
/// one) throws, as `Row.decode(forColumn:)` does, and never traps.
package protocol SnakeCaseColumns: FetchableRecord, PersistableRecord, Codable {}

extension SnakeCaseColumns {
    package static var databaseColumnEncodingStrategy: DatabaseColumnEncodingStrategy { .convertToSnakeCase }
    package static var databaseColumnDecodingStrategy: DatabaseColumnDecodingStrategy {
        .custom(ColumnName.property)
    }
}

/// The way back from a column to its property. GRDB's own `convertFromSnakeCase` reads
/// `book_id` as `bookId`, but Swift spells the initialisms ivy uses in capitals.
enum ColumnName {
    static let initialisms: Set<Substring> = ["id", "md5", "mp3", "url", "json"]

    @Sendable static func property(_ column: String) -> any CodingKey {
        let words = column.split(separator: "_")
        let rest = words.dropFirst().map { word in
            initialisms.contains(word) ? word.uppercased() : word.prefix(1).uppercased() + word.dropFirst()
        }
        return Key(stringValue: (words.first.map(String.init) ?? column) + rest.joined())
    }

    struct Key: CodingKey {
        let stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }
}
