package import Foundation

/// A backup entity: its content plus when it was created and last written.
package protocol StampedBackup: Equatable {
    var createdAt: Milliseconds { get set }
    var updatedAt: Milliseconds { get set }
}

extension StampedBackup {
    /// The same entity with both times zeroed: what it holds, whenever it was written.
    package var unstamped: Self {
        var copy = self
        (copy.createdAt, copy.updatedAt) = (0, 0)
        return copy
    }

    /// Equal apart from when each side was written.
    package func sameContent(as other: Self) -> Bool {
        unstamped == other.unstamped
    }

    /// How far ahead of this device's clock a time written elsewhere may be before it is taken
    /// for a wrong clock: a day, beyond any time zone mistake or drift between syncs.
    package static var futureAllowance: Milliseconds { 86_400_000 }

    /// How far a time written on another device may be ahead of when Google received its file:
    /// a device writes a time, then uploads, so a later time came from a clock ahead of
    /// Google's; a minute allows for a little drift.
    package static var googleAllowance: Milliseconds { 60_000 }

    /// The entity with its times bounded by Google's clock (DESIGN.md §12): never later than
    /// when Google received the file (`received`, its `modifiedTime`) plus `googleAllowance`,
    /// nor than `now` plus `futureAllowance` (a `modifiedTime` is a client's to set). A time
    /// beyond the bound is taken as the time Google received it (a device whose clock ran ahead
    /// would otherwise win every later conflict, and look made after moments it existed at);
    /// nil when neither time is beyond it. Times from elsewhere are evidence, not law.
    package func bounded(received: Milliseconds, now: Milliseconds) -> Self? {
        let limit = min(received + Self.googleAllowance, now + Self.futureAllowance)
        guard updatedAt > limit || createdAt > limit else { return nil }
        var copy = self
        let taken = min(received, now)
        if copy.updatedAt > limit { copy.updatedAt = taken }
        if copy.createdAt > limit { copy.createdAt = min(taken, copy.updatedAt) }
        return copy
    }
}

/// A book as stored on Drive in `book_<id>.json`: the entity's synced fields with
/// timestamps in ms and the position in seconds, plus any keys ivy does not know.
package struct BookBackup: Sendable, StampedBackup {
    package var id: BookID
    package var title: String
    package var artist: String?
    package var artwork: String?
    package var position: Double
    package var hidden: Bool
    package var createdAt: Milliseconds
    package var updatedAt: Milliseconds
    /// Keys written by another app that ivy keeps and writes back unchanged.
    package var extras: [String: JSONValue]

    package init(
        id: BookID, title: String, artist: String? = nil, artwork: String? = nil, position: Double = 0,
        hidden: Bool = false, createdAt: Milliseconds, updatedAt: Milliseconds, extras: [String: JSONValue] = [:]
    ) {
        self.id = id
        self.title = title
        self.artist = artist
        self.artwork = artwork
        self.position = position
        self.hidden = hidden
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.extras = extras
    }

    /// The synced part of a local book (its `uri` belongs to this device only).
    package init(_ book: Book, extras: [String: JSONValue] = [:]) {
        self.init(
            id: book.id, title: book.title, artist: book.artist, artwork: book.artwork, position: book.position,
            hidden: book.hidden, createdAt: book.createdAt, updatedAt: book.updatedAt, extras: extras)
    }

    /// The local book with these synced fields, keeping the device's own `uri`.
    package func book(uri: String?) -> Book {
        Book(
            id: id, title: title, artist: artist, artwork: artwork, position: position, hidden: hidden, uri: uri,
            createdAt: createdAt, updatedAt: updatedAt)
    }

    static let knownKeys: Set<String> = [
        "id", "title", "artist", "artwork", "position", "hidden", "created_at", "updated_at",
    ]
}

/// A clip as stored on Drive in `clip_<id>.json` (its audio is `clip_<id>.mp3`).
package struct ClipBackup: Sendable, StampedBackup {
    package var id: ClipID
    package var bookID: BookID
    package var start: Double
    package var duration: Double
    package var note: String?
    package var transcription: String?
    package var createdAt: Milliseconds
    package var updatedAt: Milliseconds
    package var extras: [String: JSONValue]

    package init(
        id: ClipID, bookID: BookID, start: Double, duration: Double, note: String? = nil, transcription: String? = nil,
        createdAt: Milliseconds, updatedAt: Milliseconds, extras: [String: JSONValue] = [:]
    ) {
        self.id = id
        self.bookID = bookID
        self.start = start
        self.duration = duration
        self.note = note
        self.transcription = transcription
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.extras = extras
    }

    package init(_ clip: Clip, extras: [String: JSONValue] = [:]) {
        self.init(
            id: clip.id, bookID: clip.bookID, start: clip.start, duration: clip.duration, note: clip.note,
            transcription: clip.transcription, createdAt: clip.createdAt, updatedAt: clip.updatedAt, extras: extras)
    }

    package var clip: Clip {
        Clip(
            id: id, bookID: bookID, start: start, duration: duration, note: note, transcription: transcription,
            createdAt: createdAt, updatedAt: updatedAt)
    }

    static let knownKeys: Set<String> = [
        "id", "book_id", "start", "duration", "note", "transcription", "created_at", "updated_at",
    ]
}

/// Why a backup file could not be read. The caller reports it and skips the file;
/// local data is never overwritten by something that failed to decode.
package struct BackupDecodingError: Error, Equatable, Sendable, CustomStringConvertible {
    package let fileName: String
    package let reason: String
    package var description: String { "\(fileName): \(reason)" }
}

/// Why an entity could not be written as backup JSON. Nothing is uploaded for it.
package struct BackupEncodingError: Error, Equatable, Sendable, CustomStringConvertible {
    package let entity: String
    package let reason: String
    package var description: String { "\(entity) cannot be written as backup JSON: \(reason)" }
}

/// Reading and writing backup JSON. Encoding sorts keys, so identical content is identical bytes.
package enum BackupCodec {
    /// The largest backup JSON ivy writes or reads (1 MiB). One cap both ways: ivy never
    /// uploads a file that it, or another ivy, would refuse to download.
    package static let maximumBytes = 1_048_576

    /// How deeply arrays and objects may nest in a backup file (unknown keys included):
    /// deeper is hostile, and refused before it is decoded.
    package static let maximumDepth = 32

    package static func encode(_ book: BookBackup) throws(BackupEncodingError) -> Data {
        var object = book.extras
        object["id"] = .string(book.id.rawValue)
        object["title"] = .string(book.title)
        object["artist"] = book.artist.map(JSONValue.string) ?? .null
        object["artwork"] = book.artwork.map(JSONValue.string) ?? .null
        object["position"] = .number(book.position)
        object["hidden"] = .bool(book.hidden)
        object["created_at"] = .number(Double(book.createdAt))
        object["updated_at"] = .number(Double(book.updatedAt))
        return try serialize(object, entity: "book \(book.id)")
    }

    package static func encode(_ clip: ClipBackup) throws(BackupEncodingError) -> Data {
        var object = clip.extras
        object["id"] = .string(clip.id.rawValue)
        object["book_id"] = .string(clip.bookID.rawValue)
        object["start"] = .number(clip.start)
        object["duration"] = .number(clip.duration)
        object["note"] = clip.note.map(JSONValue.string) ?? .null
        object["transcription"] = clip.transcription.map(JSONValue.string) ?? .null
        object["created_at"] = .number(Double(clip.createdAt))
        object["updated_at"] = .number(Double(clip.updatedAt))
        return try serialize(object, entity: "clip \(clip.id)")
    }

    /// Decodes `book_<expectedID>.json`. A missing `hidden` means false; a missing
    /// `created_at` means `updated_at`.
    package static func decodeBook(_ data: Data, expectedID: BookID) throws(BackupDecodingError) -> BookBackup {
        let file = "book_\(expectedID).json"
        let fields = try Fields(data, file: file)
        let id = try fields.string("id")
        guard id == expectedID.rawValue else {
            throw BackupDecodingError(fileName: file, reason: "its id \(id) does not match the file name")
        }
        let title = try fields.string("title")
        let updatedAt = try fields.milliseconds("updated_at")
        let book = BookBackup(
            id: expectedID, title: title, artist: try fields.optionalString("artist"),
            artwork: try fields.optionalString("artwork"),
            position: try fields.optionalSeconds("position") ?? 0, hidden: try fields.optionalBool("hidden") ?? false,
            createdAt: try fields.optionalMilliseconds("created_at") ?? updatedAt, updatedAt: updatedAt,
            extras: fields.unknown(known: BookBackup.knownKeys))
        return book
    }

    package static func decodeClip(_ data: Data, expectedID: ClipID) throws(BackupDecodingError) -> ClipBackup {
        let file = "clip_\(expectedID).json"
        let fields = try Fields(data, file: file)
        let id = try fields.string("id")
        guard id == expectedID.rawValue else {
            throw BackupDecodingError(fileName: file, reason: "its id \(id) does not match the file name")
        }
        let bookID = try fields.string("book_id")
        guard EntityID.isValid(bookID) else {
            throw BackupDecodingError(fileName: file, reason: "its book_id \(bookID) is not a valid id")
        }
        let updatedAt = try fields.milliseconds("updated_at")
        return ClipBackup(
            id: expectedID, bookID: BookID(bookID), start: try fields.seconds("start"),
            duration: try fields.seconds("duration"),
            note: try fields.optionalString("note"), transcription: try fields.optionalString("transcription"),
            createdAt: try fields.optionalMilliseconds("created_at") ?? updatedAt, updatedAt: updatedAt,
            extras: fields.unknown(known: ClipBackup.knownKeys))
    }

    /// Sorted keys; never a placeholder: what cannot be written exactly is an error.
    private static func serialize(_ object: [String: JSONValue], entity: String) throws(BackupEncodingError) -> Data {
        if let key = object.keys.sorted().first(where: { !isFinite(object[$0] ?? .null) }) {
            throw BackupEncodingError(entity: entity, reason: "\"\(key)\" is not a finite number")
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let data: Data
        do {
            data = try encoder.encode(JSONValue.object(object))
        } catch {
            throw BackupEncodingError(entity: entity, reason: "\(error)")
        }
        guard data.count <= maximumBytes else {
            throw BackupEncodingError(
                entity: entity,
                reason: "it would be \(AudioRules.grouped(Int64(data.count))) bytes, over the "
                    + "\(AudioRules.grouped(Int64(maximumBytes)))-byte limit for backup JSON; shorten its note or "
                    + "transcription"
            )
        }
        return data
    }

    private static func isFinite(_ value: JSONValue) -> Bool {
        switch value {
        case .number(let number): number.isFinite
        case .array(let items): items.allSatisfy(isFinite)
        case .object(let fields): fields.values.allSatisfy(isFinite)
        case .null, .bool, .string: true
        }
    }

    /// Refuses a file over the size cap, or nested deeper than `maximumDepth`, before any
    /// decoding: a hostile file costs one pass over its bytes.
    static func checkShape(_ data: Data, file: String) throws(BackupDecodingError) {
        guard data.count <= maximumBytes else {
            throw BackupDecodingError(
                fileName: file,
                reason: "\(AudioRules.grouped(Int64(data.count))) bytes, over the "
                    + "\(AudioRules.grouped(Int64(maximumBytes)))-byte limit for backup JSON")
        }
        var depth = 0
        var inString = false
        var escaped = false
        for byte in data {
            if inString {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""): inString = true
            case UInt8(ascii: "["), UInt8(ascii: "{"):
                depth += 1
                if depth > maximumDepth {
                    throw BackupDecodingError(fileName: file, reason: "nested more than \(maximumDepth) levels deep")
                }
            case UInt8(ascii: "]"), UInt8(ascii: "}"): depth -= 1
            default: break
            }
        }
    }

    /// Typed access to a decoded object, with errors that name the file and the key.
    private struct Fields {
        let object: [String: JSONValue]
        let file: String

        init(_ data: Data, file: String) throws(BackupDecodingError) {
            self.file = file
            try BackupCodec.checkShape(data, file: file)
            let value: JSONValue
            do {
                value = try JSONDecoder().decode(JSONValue.self, from: data)
            } catch {
                throw BackupDecodingError(fileName: file, reason: "not valid JSON")
            }
            guard case .object(let object) = value else {
                throw BackupDecodingError(fileName: file, reason: "not a JSON object")
            }
            self.object = object
        }

        func fail(_ key: String, _ expected: String) -> BackupDecodingError {
            BackupDecodingError(fileName: file, reason: "\"\(key)\" must be \(expected)")
        }

        func string(_ key: String) throws(BackupDecodingError) -> String {
            guard case .string(let value)? = object[key], !value.isEmpty else { throw fail(key, "a non-empty string") }
            return value
        }

        func optionalString(_ key: String) throws(BackupDecodingError) -> String? {
            switch object[key] {
            case nil, .null?: return nil
            case .string(let value)?: return value.isEmpty ? nil : value
            default: throw fail(key, "a string or null")
            }
        }

        func optionalBool(_ key: String) throws(BackupDecodingError) -> Bool? {
            switch object[key] {
            case nil, .null?: return nil
            case .bool(let value)?: return value
            default: throw fail(key, "true or false")
            }
        }

        func seconds(_ key: String) throws(BackupDecodingError) -> Double {
            guard let value = try optionalSeconds(key) else {
                throw fail(key, "a number of seconds from \(TimeRules.range)")
            }
            return value
        }

        func optionalSeconds(_ key: String) throws(BackupDecodingError) -> Double? {
            switch object[key] {
            case nil, .null?: return nil
            // Out of range is unreadable, not clamped: the file is skipped and reported, and
            // local data is never overwritten with a time the database would refuse.
            case .number(let value)? where TimeRules.isValid(value): return value
            default: throw fail(key, "a number of seconds from \(TimeRules.range)")
            }
        }

        func milliseconds(_ key: String) throws(BackupDecodingError) -> Milliseconds {
            guard let value = try optionalMilliseconds(key) else { throw fail(key, "a time in milliseconds") }
            return value
        }

        func optionalMilliseconds(_ key: String) throws(BackupDecodingError) -> Milliseconds? {
            switch object[key] {
            case nil, .null?: return nil
            case .number(let value)? where value.isFinite && value.rounded() == value && abs(value) < 9e15:
                return Milliseconds(value)
            default: throw fail(key, "a whole number of milliseconds")
            }
        }

        func unknown(known: Set<String>) -> [String: JSONValue] {
            object.filter { !known.contains($0.key) }
        }
    }
}
