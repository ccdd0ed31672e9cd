import Foundation
import GRDB
import GoogleEmulator
import IvyCore
import IvyTestSupport
import IvyZip
import Testing

/// `ivy export`, `ivy import` and `ivy check --archive` through the built binary (issue 41,
/// item 8): a copy of the library that does not depend on Google.
@Suite("ivy export, import and check --archive")
struct ArchiveTests {
    /// A library with an archived book, a book with a clip, and the clip's MP3 (random bytes,
    /// so a byte lost anywhere shows).
    static func library(_ ivy: IvyHome) async throws -> (book: String, clip: String, audio: Data) {
        let book = try await ivy.id("book", "add", "--title", "Dune", "--artist", "Frank Herbert")
        let archived = try await ivy.id("book", "add", "--title", "Emma")
        #expect(try await ivy.run("book", "archive", archived).status == 0)
        var audio = Data([0xFF, 0xFB, 0x90, 0x64])
        audio.append(contentsOf: (0..<20_000).map { _ in UInt8.random(in: 0...255) })
        let path = ivy.path + "/litany.mp3"
        try audio.write(to: URL(fileURLWithPath: path))
        let clip = try await ivy.id(
            "clip", "add", "--book", book, "--start", "45:00", "--duration", "30", "--audio", path, "--note",
            "The litany")
        return (book, clip, audio)
    }

    static func listing(_ ivy: IvyHome) async throws -> (books: String, clips: String) {
        let books = try await ivy.runBinaryAsync("book", "list", "--all", "--json")
        let clips = try await ivy.runBinaryAsync("clip", "list", "--json")
        #expect(books.status == 0 && clips.status == 0, "\(books.stderr)\(clips.stderr)")
        return (books.stdout, clips.stdout)
    }

    @Test("export, import into a new home and export again: the same bytes, and the same library")
    func roundTrip() async throws {
        let a = try IvyHome()
        let (_, clip, audio) = try await Self.library(a)
        let first = a.path + "/first.zip"
        let exported = try await a.runBinaryAsync("export", first)
        #expect(exported.status == 0, "\(exported.stderr)")
        #expect(exported.stdout == "Exported 2 books, 1 clip and 1 MP3 (21 KB) to \(first).\n", "\(exported.stdout)")
        let mode = try FileManager.default.attributesOfItem(atPath: first)[.posixPermissions] as? Int
        #expect(mode == 0o600)

        let b = try IvyHome()
        let imported = try await b.runBinaryAsync("import", first)
        #expect(imported.status == 0, "\(imported.stderr)")
        #expect(imported.stdout.hasPrefix("Imported 2 books, 1 clip and 1 MP3 from "), "\(imported.stdout)")
        let second = b.path + "/second.zip"
        #expect(try await b.runBinaryAsync("export", second).status == 0)
        let (one, two) = (
            try Data(contentsOf: URL(fileURLWithPath: first)), try Data(contentsOf: URL(fileURLWithPath: second))
        )
        #expect(one == two, "the archive exported again differs: \(one.count) and \(two.count) bytes")
        #expect(try await Self.listing(a) == Self.listing(b))
        #expect(try Data(contentsOf: URL(fileURLWithPath: b.home + "/audio/\(clip).mp3")) == audio)
        // What was imported waits for the next sync, as a change made here does.
        #expect(try b.count("SELECT count(*) FROM sync_queue") == 3)

        let checked = try await b.runBinaryAsync("check", "--archive", second, "--json")
        #expect(checked.status == 0, "\(checked.stdout)\(checked.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(checked.stdout.utf8)) as? [String: Any])
        #expect(report["ok"] as? Bool == true && report["books"] as? Int == 2 && report["audio_files"] as? Int == 1)
    }

    @Test("--at exports the library as it was then, each clip with the MP3 it had then")
    func atMoment() async throws {
        let a = try IvyHome()
        let (book, clip, audio) = try await Self.library(a)
        let then = try HistoryCommandTests().moment(a)
        #expect(try await a.run("book", "update", book, "--title", "Dune Messiah").status == 0)
        let retake = try a.mp3("retake.mp3", size: 5000)
        #expect(try await a.run("clip", "update", clip, "--audio", retake).status == 0)

        let file = a.path + "/then.zip"
        let exported = try await a.runBinaryAsync("export", "--at", then, file)
        #expect(exported.status == 0, "\(exported.stderr)")
        let b = try IvyHome()
        #expect(try await b.runBinaryAsync("import", file).status == 0)
        #expect(try b.sql("SELECT title FROM books WHERE id = '\(book)'").first?["title"] == "Dune")
        #expect(try Data(contentsOf: URL(fileURLWithPath: b.home + "/audio/\(clip).mp3")) == audio)

        let future = try await a.runBinaryAsync("export", "--at", "2999-01-01", a.path + "/future.zip")
        #expect(future.status == 64 && future.stderr.contains("is in the future"), "\(future.stderr)")
        let before = try await a.runBinaryAsync("export", "--at", "2001-01-01", a.path + "/empty.zip")
        #expect(before.status == 1 && before.stderr.contains("no book or clip at"), "\(before.stderr)")
        #expect(!FileManager.default.fileExists(atPath: a.path + "/empty.zip"))
    }

    /// Ways an archive can be damaged, each as bytes made from a good one.
    enum Damage: String, CaseIterable, CustomTestStringConvertible {
        case truncated, flippedAudioByte, empty, notAZip, editedJSON, extraEntry, missingEntry, traversalName
        case listTwice, fileTwice, miscounted
        var testDescription: String { rawValue }
    }

    /// The good archive's entries, read back.
    static func entries(_ path: String) throws -> [(name: String, data: Data)] {
        let reader = try ZipFile.Reader(path: path)
        return try reader.entries.map { ($0.name, try reader.data($0.name, limit: 1 << 30)) }
    }

    static func damaged(_ good: String, _ damage: Damage, into path: String) throws -> String {
        var bytes = try Data(contentsOf: URL(fileURLWithPath: good))
        var entries = try entries(good)
        let now = Date()
        func rewrite(_ entries: [(name: String, data: Data)]) throws {
            try ZipFile.write(entries.map { ($0.name, .data($0.data)) }, to: path, date: now, replacing: true)
        }
        switch damage {
        case .truncated:
            try bytes.prefix(bytes.count * 2 / 3).write(to: URL(fileURLWithPath: path))
            return "not a zip archive, or one cut short"
        case .flippedAudioByte:
            let header = try #require(bytes.firstRange(of: Data([0xFF, 0xFB, 0x90, 0x64])))
            bytes[header.lowerBound + 1000] ^= 0xFF
            try bytes.write(to: URL(fileURLWithPath: path))
            return ".mp3: its content is damaged"
        case .empty:
            try Data().write(to: URL(fileURLWithPath: path))
            return "not a zip archive"
        case .notAZip:
            try Data("{\"title\": \"Dune\"}\n".utf8).write(to: URL(fileURLWithPath: path))
            return "not a zip archive"
        case .editedJSON:
            let index = try #require(entries.firstIndex { $0.name.hasPrefix("book_") })
            entries[index].data = Data(
                String(decoding: entries[index].data, as: UTF8.self)
                    .replacingOccurrences(of: "\"created_at\":1", with: "\"created_at\":2").utf8)
            try rewrite(entries)
            return "its md5 differs from the one listed"
        case .extraEntry:
            try rewrite(entries + [("notes.txt", Data("hello".utf8))])
            return "'notes.txt' is in the archive but not in its list of files"
        case .missingEntry:
            try rewrite(entries.filter { !$0.name.hasSuffix(".mp3") })
            return ".mp3 is missing from the archive"
        case .listTwice:
            // A second list of files, which a reader that takes the first name would never check.
            let list = try #require(entries.first { $0.name == ArchiveManifest.fileName })
            try rewrite(entries + [list])
            return "'\(ArchiveManifest.fileName)' is in the archive twice: `ivy export` writes each file once"
        case .fileTwice:
            let book = try #require(entries.first { $0.name.hasPrefix("book_") })
            try rewrite(entries + [book])
            return "'\(book.name)' is in the archive twice"
        case .miscounted:
            let index = try #require(entries.firstIndex { $0.name == ArchiveManifest.fileName })
            let text = String(decoding: entries[index].data, as: UTF8.self)
            let edited = text.replacing(#/"books" ?: ?2/#) { _ in "\"books\" : 1" }
            #expect(edited != text)
            entries[index].data = Data(edited.utf8)
            try rewrite(entries)
            return "it says 1 book and 1 clip, and lists files of 2 books and 1 clip"
        case .traversalName:
            let index = try #require(entries.firstIndex { $0.name == ArchiveManifest.fileName })
            entries[index].data = Data(
                String(decoding: entries[index].data, as: UTF8.self)
                    .replacingOccurrences(of: "\"book_", with: "\"../book_").utf8)
            try rewrite(entries)
            return "is not the name of a book's or a clip's file"
        }
    }

    @Test(
        "a damaged archive is refused by check and by import, saying what is wrong, and nothing is imported",
        arguments: Damage.allCases)
    func damaged(_ damage: Damage) async throws {
        let a = try IvyHome()
        _ = try await Self.library(a)
        let good = a.path + "/good.zip"
        #expect(try await a.runBinaryAsync("export", good).status == 0)
        let bad = a.path + "/bad.zip"
        let said = try Self.damaged(good, damage, into: bad)

        let checked = try await a.runBinaryAsync("check", "--archive", bad)
        #expect(checked.status == 6, "\(checked.stdout)\(checked.stderr)")
        #expect(checked.stdout.hasPrefix("Archive damaged: "), "\(checked.stdout)")
        #expect(checked.stdout.contains(said), "\(checked.stdout)")

        let b = try IvyHome()
        let imported = try await b.runBinaryAsync("import", bad)
        #expect(imported.status == 1, "\(imported.stderr)")
        #expect(imported.stderr.contains(said) && imported.stderr.contains("nothing was written"), "\(imported.stderr)")
        // Not even a library.db: the home is as it was.
        #expect(!FileManager.default.fileExists(atPath: b.home + "/library.db"))
        #expect(!FileManager.default.fileExists(atPath: b.home + "/audio"))
    }

    @Test("import refuses a home that holds a book already, naming the fix, and changes nothing")
    func notEmpty() async throws {
        let a = try IvyHome()
        _ = try await Self.library(a)
        let file = a.path + "/library.zip"
        #expect(try await a.runBinaryAsync("export", file).status == 0)
        let again = try await a.runBinaryAsync("import", file)
        #expect(again.status == 1 && again.stderr.contains("import into a new home"), "\(again.stderr)")
        #expect(try a.count("SELECT count(*) FROM books") == 2)
        let exists = try await a.runBinaryAsync("export", file)
        #expect(exists.status == 64 && exists.stderr.contains("--force"), "\(exists.stderr)")
        let missing = try await a.runBinaryAsync("import", a.path + "/nope.zip")
        #expect(missing.status == 1 && missing.stderr.contains("there is no file"), "\(missing.stderr)")
    }

    @Test("export takes a bare name in the working directory, and says plainly where it cannot write")
    func whereToWrite() async throws {
        let a = try IvyHome()
        _ = try await Self.library(a)
        // Run in a.path: a name with no directory part is written there.
        let bare = try await a.runBinaryAsync("export", "bare.zip")
        #expect(bare.status == 0, "\(bare.stderr)")
        #expect(FileManager.default.fileExists(atPath: a.path + "/bare.zip"))
        let directory = try await a.runBinaryAsync("export", "--force", a.home)
        #expect(directory.status == 64 && directory.stderr.contains("is a directory"), "\(directory.stderr)")
        let nowhere = try await a.runBinaryAsync("export", a.path + "/no/such/dir/x.zip")
        #expect(nowhere.status == 1, "\(nowhere.stderr)")
        #expect(
            nowhere.stderr.contains("cannot write \(a.path)/no/such/dir: No such file or directory"),
            "\(nowhere.stderr)")
        // Nothing is left beside it either: no staging directory.
        let left = try FileManager.default.contentsOfDirectory(atPath: a.path).filter { $0.hasPrefix(".ivy-archive") }
        #expect(left.isEmpty, "\(left)")
    }

    @Test("an import killed inside its transaction leaves the home empty, and runs again whole")
    func killedImport() async throws {
        let a = try IvyHome()
        let (_, clip, audio) = try await Self.library(a)
        let file = a.path + "/library.zip"
        #expect(try await a.runBinaryAsync("export", file).status == 0)
        let b = try IvyHome()
        let killed = try await b.runBinaryAsync("import", file, environment: ["IVY_CRASH_AT": "import.before-commit"])
        #expect(killed.status == 128 + 9 || killed.status == -9 || killed.status == 9, "\(killed.status)")
        #expect(try b.count("SELECT count(*) FROM books") + b.count("SELECT count(*) FROM clips") == 0)
        let again = try await b.runBinaryAsync("import", file)
        #expect(again.status == 0, "\(again.stderr)")
        #expect(try await Self.listing(a) == Self.listing(b))
        #expect(try Data(contentsOf: URL(fileURLWithPath: b.home + "/audio/\(clip).mp3")) == audio)
    }

    @Test("an imported library syncs: to an empty Drive it is uploaded, and to a Drive holding it nothing doubles")
    func importedSyncs() async throws {
        try await withEmulator { emulator in
            let a = try await SignInHarness.signedIn(emulator)
            _ = try await Self.library(a.ivy)
            #expect(try await a.ivy.run("sync").status == 0)
            let onDrive = await emulator.state.dump().filter { !$0.isFolder }.map(\.name).sorted()
            #expect(onDrive.count == 4)
            let file = a.ivy.path + "/library.zip"
            #expect(try await a.ivy.runBinaryAsync("export", file).status == 0)

            // The same account, a new device restored from the archive: it finds Drive holds it all.
            let b = try await SignInHarness.signedIn(emulator)
            #expect(try await b.ivy.runBinaryAsync("import", file).status == 0)
            let synced = try await b.ivy.run("sync")
            #expect(synced.status == 0, "\(synced.stderr)")
            #expect(await emulator.state.dump().filter { !$0.isFolder }.map(\.name).sorted() == onDrive)
            #expect(try b.ivy.count("SELECT count(*) FROM sync_queue") == 0)

            // Another account, whose Drive is empty: the archive is all there is, and goes up whole.
            let c = try await SignInHarness.signedIn(emulator, as: "bob@example.com")
            #expect(try await c.ivy.runBinaryAsync("import", file).status == 0)
            #expect(try await c.ivy.run("sync").status == 0)
            let d = try await SignInHarness.signedIn(emulator, as: "bob@example.com")
            #expect(try await d.ivy.run("sync").status == 0)
            #expect(try await Self.listing(a.ivy) == Self.listing(d.ivy))
        }
    }
}
