import Synchronization

/// The kinds of entity that ivy stores and syncs; the raw values are the
/// `entity_type` values of the queue and manifest tables.
package enum EntityKind: String, Sendable, CaseIterable, Codable {
    case book
    case clip
}

/// Rules for entity ids. Other devices only accept Drive file names whose id part
/// matches `^[a-f0-9-]+$`, so an id outside that alphabet would be silently ignored
/// by every other device: it is rejected everywhere instead.
package enum EntityID {
    package static func isValid(_ id: String) -> Bool {
        !id.isEmpty
            && id.utf8.allSatisfy { byte in
                (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "f"))
                    || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
                    || byte == UInt8(ascii: "-")
            }
    }
}

/// Makes new entity ids. Injected so tests can produce predictable ids.
package struct IDGenerator: Sendable {
    private let make: @Sendable () -> String

    package init(_ make: @escaping @Sendable () -> String) {
        self.make = make
    }

    /// Lowercase UUIDs: Foundation's `uuidString` is upper case, which the id rule rejects.
    package static let uuid = IDGenerator { UUIDText.random() }

    package func next<ID: TextIdentifier>() -> ID { ID(make()) }

    /// The same ids for the same `seed`, one after another: the UUIDs a `SplitMix64` the
    /// seed's text starts makes. For the crash checker's fixture, so that a replay of a failure
    /// that hangs on an id (one that starts with a digit) meets the same ids.
    package static func seeded(_ seed: String) -> IDGenerator {
        let stream = Mutex(SplitMix64(text: seed))
        return IDGenerator { stream.withLock { $0.uuid() } }
    }
}

/// A random version-4 UUID in lowercase text, without Foundation.
enum UUIDText {
    static func random() -> String {
        var generator = SystemRandomNumberGenerator()
        var bytes = (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }
        bytes[6] = (bytes[6] & 0x0F) | 0x40
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        let hex = bytes.map { byte in
            let text = String(byte, radix: 16)
            return text.count == 1 ? "0" + text : text
        }
        let groups = [0..<4, 4..<6, 6..<8, 8..<10, 10..<16].map { hex[$0].joined() }
        return groups.joined(separator: "-")
    }
}

/// An id that is text on the wire, in the database and in output, but a type of its own in
/// code, so one kind of id cannot be passed where another is meant: a book's id for a
/// clip's, an entity's id for a Drive file's, a file's name for its folder's id.
///
/// It encodes as the plain string and prints as it, so JSON on Drive, the log and `--json`
/// output read exactly as with a `String`. A string literal makes one, for tests and
/// fixtures; Sources make ids only from text they read or generate, never from literals.
package protocol TextIdentifier: Hashable, Comparable, Sendable, Codable, CustomStringConvertible,
    ExpressibleByStringLiteral
{
    var rawValue: String { get }
    init(_ rawValue: String)
}

extension TextIdentifier {
    package init(stringLiteral value: String) { self.init(value) }

    package init(from decoder: any Decoder) throws {
        self.init(try decoder.singleValueContainer().decode(String.self))
    }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    package var description: String { rawValue }

    package static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// A book's id (a lowercase UUID; `EntityID` says which are accepted).
package struct BookID: TextIdentifier {
    package let rawValue: String
    package init(_ rawValue: String) { self.rawValue = rawValue }
}

/// A clip's id (a lowercase UUID; `EntityID` says which are accepted).
package struct ClipID: TextIdentifier {
    package let rawValue: String
    package init(_ rawValue: String) { self.rawValue = rawValue }
}

/// The id Drive gives a file. Folders share it: Drive treats a folder as a file (the same
/// `files.get`, `files.delete` and `parents` take either), so the mix-up the type rules out
/// is between Drive's ids and anything else (entity ids, names, tokens), not between files
/// and folders.
package struct DriveFileID: TextIdentifier {
    package let rawValue: String
    package init(_ rawValue: String) { self.rawValue = rawValue }
}
