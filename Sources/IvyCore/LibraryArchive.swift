package import Foundation

/// What an archive entry holds: bytes in memory, or a file's, read in chunks.
package enum ArchiveSource: Sendable {
    case data(Data)
    case file(String)
}

/// What `ivy export` writes beside the library's files: `ivy-export.json`, the list every
/// other entry of the archive is checked against.
package struct ArchiveManifest: Codable, Sendable, Equatable {
    package static let fileName = "ivy-export.json"
    /// The layout this ivy writes and reads. A later layout is refused, not guessed at.
    package static let currentFormat = 1
    /// Larger than any list of files a library can have: 100,000 clips take about 20 MB.
    package static let sizeLimit: Int64 = 64 << 20

    package var format: Int
    /// `ivy --version` of the ivy that wrote it.
    package var ivyVersion: String
    /// The moment of `--at`, RFC 3339 in UTC; nil for the library as it was when exported.
    @Null package var at: String?
    package var books: Int
    package var clips: Int
    package var files: [File]

    package struct File: Codable, Sendable, Equatable {
        package var name: String
        package var md5: String
        package var size: Int64

        package init(name: String, md5: String, size: Int64) {
            self.name = name
            self.md5 = md5
            self.size = size
        }
    }

    package init(ivyVersion: String, at: String?, books: Int, clips: Int, files: [File]) {
        self.format = Self.currentFormat
        self.ivyVersion = ivyVersion
        self.at = at
        self.books = books
        self.clips = clips
        self.files = files
    }

    package func encoded() throws -> Data {
        Data((try JSONOutput.text(self, oneLine: false) + "\n").utf8)
    }

    package static func decode(_ data: Data) -> ArchiveManifest? {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        return try? decoder.decode(ArchiveManifest.self, from: data)
    }

    /// A name from an archive, shown safely: another program may have written anything there.
    private func quoted(_ name: String) -> String {
        "'" + TerminalText.escaped(String(name.prefix(100))) + (name.count > 100 ? "…" : "") + "'"
    }

    /// `1 book`, `2 books`: a count as its problems say it.
    package static func count(_ number: Int, _ noun: String) -> String {
        "\(number) \(noun)\(number == 1 ? "" : "s")"
    }

    /// The largest an entry of that name may be: the caps a sync keeps to.
    package static func sizeLimit(of name: EntityFileName) -> Int64 {
        name.format == .json ? Int64(BackupCodec.maximumBytes) : AudioRules.maximumBytes
    }

    /// What is wrong with an archive whose entries are `entries` (names and the sizes its
    /// directory claims), as this manifest lists them; empty when the listing holds together.
    /// The content (md5s, JSON) is checked as it is read.
    package func problems(entries: [(name: String, size: Int64)]) -> [String] {
        guard format == Self.currentFormat else {
            return ["it is of format \(format), which this ivy does not know: it was written by a newer ivy"]
        }
        var problems: [String] = []
        var listed: [String: File] = [:]
        var keys: [EntityKey: Set<EntityFileName.Format>] = [:]
        for file in files {
            guard let name = EntityFileName(parsing: file.name) else {
                problems.append("\(quoted(file.name)) is not the name of a book's or a clip's file")
                continue
            }
            if listed[file.name] != nil { problems.append("\(file.name) is listed twice") }
            listed[file.name] = file
            keys[name.key, default: []].insert(name.format)
            if file.size < 0 || file.size > Self.sizeLimit(of: name) {
                problems.append("\(file.name) is listed at \(file.size) bytes, over the \(Self.sizeLimit(of: name))")
            }
            if file.md5.count != 32 || !file.md5.allSatisfy(\.isHexDigit) {
                problems.append("\(file.name) is listed with no md5")
            }
        }
        for (key, formats) in keys where !formats.contains(.json) {
            problems.append("\(key.mp3FileName) has no \(key.jsonFileName) beside it")
        }
        let bookCount = keys.keys.filter { $0.kind == .book }.count
        let clipCount = keys.keys.filter { $0.kind == .clip }.count
        if bookCount != books || clipCount != clips {
            problems.append(
                "it says \(Self.count(books, "book")) and \(Self.count(clips, "clip")), and lists files of "
                    + "\(Self.count(bookCount, "book")) and \(Self.count(clipCount, "clip"))")
        }
        // A reader finds one entry of a name and skips the other, so a name twice (the list
        // of files included) means the archive holds content nobody checked.
        var times: [String: Int] = [:]
        for entry in entries { times[entry.name, default: 0] += 1 }
        for (name, count) in times.sorted(by: { $0.key < $1.key }) where count > 1 {
            problems.append(
                "\(quoted(name)) is in the archive \(count == 2 ? "twice" : "\(count) times"): `ivy export` writes "
                    + "each file once, so another program changed it; export the library again")
        }
        var seen: Set<String> = [Self.fileName]
        for entry in entries where entry.name != Self.fileName {
            guard let file = listed[entry.name] else {
                problems.append("\(quoted(entry.name)) is in the archive but not in its list of files")
                continue
            }
            guard seen.insert(entry.name).inserted else { continue }
            if entry.size != file.size {
                problems.append("\(entry.name) is \(entry.size) bytes in the archive, and listed at \(file.size)")
            }
        }
        for file in files where !seen.contains(file.name) {
            problems.append("\(file.name) is missing from the archive")
        }
        return problems
    }
}
