import Foundation
import GRDB
import Testing

/// Two books and two clips whose ids share their first four characters and part at the fifth.
private struct PrefixLibrary {
    static let dune = "2b48aaaa-0000-4000-8000-000000000001"
    static let messiah = "2b48bbbb-0000-4000-8000-000000000002"
    static let litany = "fa62aaaa-0000-4000-8000-000000000003"
    static let spice = "fa62bbbb-0000-4000-8000-000000000004"

    let ivy: IvyHome

    init() async throws {
        ivy = try IvyHome()
        // The library exists once a command has written to it; the rest is written as another program would.
        _ = try await ivy.id("book", "add", "--title", "Children of Dune")
        try ivy.execute(
            """
            INSERT INTO books (id, title, created_at, updated_at) VALUES
                ('\(Self.dune)', 'Dune', 1, 1), ('\(Self.messiah)', 'Dune Messiah', 1, 1);
            INSERT INTO clips (id, book_id, start, duration, note, created_at, updated_at) VALUES
                ('\(Self.litany)', '\(Self.dune)', 1, 2, 'The litany', 1, 1),
                ('\(Self.spice)', '\(Self.messiah)', 1, 2, 'The spice', 1, 1);
            """)
        let audio = ivy.home + "/audio"
        try FileManager.default.createDirectory(atPath: audio, withIntermediateDirectories: true)
        chmod(audio, 0o700)
        for clip in [Self.litany, Self.spice] {
            try FileManager.default.copyItem(atPath: try ivy.mp3("\(clip).mp3"), toPath: "\(audio)/\(clip).mp3")
        }
    }
}

@Suite("ids by unique prefix")
struct IDPrefixTests {
    /// Every command that takes a book or clip id; BOOK and CLIP stand for the id given.
    static let commands: [[String]] = [
        ["book", "show", "BOOK"],
        ["book", "update", "BOOK", "--position", "10"],
        ["book", "archive", "BOOK"],
        ["book", "unarchive", "BOOK"],
        ["book", "delete", "BOOK"],
        ["clip", "add", "--book", "BOOK", "--start", "1", "--duration", "2", "--audio", "AUDIO"],
        ["clip", "list", "--book", "BOOK"],
        ["clip", "show", "CLIP"],
        ["clip", "update", "CLIP", "--note", "changed"],
        ["clip", "delete", "CLIP"],
    ]

    private static func arguments(_ command: [String], book: String, clip: String, audio: String) -> [String] {
        command.map { ["BOOK": book, "CLIP": clip, "AUDIO": audio][$0] ?? $0 }
    }

    @Test("a unique prefix names the one id; the command works on it", arguments: commands)
    func unique(_ command: [String]) async throws {
        let library = try await PrefixLibrary()
        let ivy = library.ivy
        let result = try await ivy.run(
            Self.arguments(command, book: "2b48a", clip: "fa62a", audio: try ivy.mp3("new.mp3")))
        #expect(result.status == 0, "\(command): \(result.stderr)")
        #expect(result.stderr.isEmpty, "\(command): \(result.stderr)")
        if ["show", "update", "archive", "unarchive", "delete"].contains(command[1]) {
            let whole = command[0] == "book" ? PrefixLibrary.dune : PrefixLibrary.litany
            #expect(result.stdout.contains(whole), "\(command) says the whole id: \(result.stdout)")
        }
        if command[1] == "list" {
            #expect(result.stdout.contains("The litany") && !result.stdout.contains("The spice"), "\(result.stdout)")
        }
        if command[1] == "add" {
            let added = try ivy.sql("SELECT book_id FROM clips WHERE note IS NULL").map { $0["book_id"] as String }
            #expect(added == [PrefixLibrary.dune])
        }
    }

    @Test("an ambiguous prefix is a usage error listing every match with its title", arguments: commands)
    func ambiguous(_ command: [String]) async throws {
        let library = try await PrefixLibrary()
        let ivy = library.ivy
        let before = try ivy.sql("SELECT * FROM books ORDER BY id") + ivy.sql("SELECT * FROM clips ORDER BY id")
        let result = try await ivy.run(
            Self.arguments(command, book: "2b48", clip: "fa62", audio: try ivy.mp3("new.mp3")))
        #expect(result.status == 64, "\(command): \(result.stderr)")
        let kind = command.contains("BOOK") ? "book" : "clip"
        #expect(result.stderr.hasPrefix("Error: '\(kind == "book" ? "2b48" : "fa62")' names more than one \(kind)"))
        if kind == "book" {
            #expect(result.stderr.contains("  \(PrefixLibrary.dune)  Dune\n"), "\(result.stderr)")
            #expect(result.stderr.contains("  \(PrefixLibrary.messiah)  Dune Messiah\n"), "\(result.stderr)")
        } else {
            #expect(result.stderr.contains("  \(PrefixLibrary.litany)  Dune  The litany\n"), "\(result.stderr)")
            #expect(result.stderr.contains("  \(PrefixLibrary.spice)  Dune Messiah  The spice\n"), "\(result.stderr)")
        }
        #expect(result.stdout.isEmpty)
        let after = try ivy.sql("SELECT * FROM books ORDER BY id") + ivy.sql("SELECT * FROM clips ORDER BY id")
        #expect(before.map(\.description) == after.map(\.description), "nothing changed")
    }

    @Test("a prefix under 4 characters is refused with the command's own usage", arguments: commands)
    func tooShort(_ command: [String]) async throws {
        let library = try await PrefixLibrary()
        let ivy = library.ivy
        let result = try await ivy.run(
            Self.arguments(command, book: "2b4", clip: "fa6", audio: try ivy.mp3("new.mp3")))
        #expect(result.status == 64, "\(command): \(result.stderr)")
        let kind = command.contains("BOOK") ? "book" : "clip"
        let typed = kind == "book" ? "2b4" : "fa6"
        #expect(
            result.stderr.hasPrefix(
                "Error: '\(typed)' is too short to name a \(kind): give at least 4 characters of its id"),
            "\(result.stderr)")
        #expect(result.stderr.contains("Usage: ivy \(command[0]) \(command[1])"), "\(result.stderr)")
    }

    @Test("a prefix no id starts with is an unknown id (exit 1); a bad one prints its command's usage")
    func unknownAndBad() async throws {
        let library = try await PrefixLibrary()
        let ivy = library.ivy
        let none = try await ivy.run("book", "show", "dead")
        #expect(none.status == 1)
        #expect(
            none.stderr == "Error: no book with id dead or an id starting with it; `ivy book list --all` shows them\n")
        let noClip = try await ivy.run("clip", "update", "dead", "--note", "x")
        #expect(
            noClip.status == 1 && noClip.stderr.contains("no clip with id dead or an id starting"), "\(noClip.stderr)")
        let bad = try await ivy.run("book", "show", "2B48")
        #expect(bad.status == 64)
        #expect(bad.stderr.contains("'2B48' is not a book id"), "\(bad.stderr)")
        #expect(bad.stderr.contains("Usage: ivy book show"), "\(bad.stderr)")
        #expect(bad.stderr.contains("See 'ivy book show --help'"), "\(bad.stderr)")
        // A whole id is taken as it is, found or not.
        let whole = try await ivy.run("book", "show", "2b48aaaa-0000-4000-8000-00000000000f")
        #expect(whole.status == 1 && whole.stderr.contains("2b48aaaa-0000-4000-8000-00000000000f"), "\(whole.stderr)")
        // Archived books are books: unarchive finds one by its prefix.
        #expect(try await ivy.run("book", "archive", "2b48b").status == 0)
        let back = try await ivy.run("book", "unarchive", "2b48b")
        #expect(back.stdout == "unarchived \(PrefixLibrary.messiah)\n", "\(back.stderr)")
    }

    @Test("tables cut ids to the width that keeps them apart (8 at least); --full-ids and --json keep them whole")
    func tableWidths() async throws {
        let library = try await PrefixLibrary()
        let ivy = library.ivy
        let books = try await ivy.run("book", "list")
        #expect(books.stdout.contains("\n2b48aaaa  Dune  "), "\(books.stdout)")
        #expect(!books.stdout.contains(PrefixLibrary.dune))
        try ivy.execute(
            "INSERT INTO books (id, title, created_at, updated_at) VALUES ('2b48aaaa-0001-4000-8000-0', 'Twin', 1, 1)")
        let twins = try await ivy.run("book", "list")
        #expect(twins.stdout.contains("\n2b48aaaa-0000  Dune  "), "\(twins.stdout)")
        #expect(twins.stdout.contains("\n2b48aaaa-0001  Twin  "), "\(twins.stdout)")
        let full = try await ivy.run("book", "list", "--full-ids")
        #expect(full.stdout.contains("\n\(PrefixLibrary.dune)  Dune  "), "\(full.stdout)")
        let json = try #require(try await ivy.run("book", "list", "--json").json() as? [[String: Any]])
        #expect(json.compactMap { $0["id"] as? String }.contains(PrefixLibrary.dune))
        let clips = try await ivy.run("clip", "list")
        #expect(
            clips.lines.first?.split(separator: " ", omittingEmptySubsequences: true).prefix(3) == [
                "ID", "BOOK", "TITLE",
            ])
        #expect(clips.stdout.contains("\nfa62aaaa  2b48aaaa  Dune          0:00:01"), "\(clips.stdout)")
        #expect(clips.stdout.contains("\nfa62bbbb  2b48bbbb  Dune Messiah  0:00:01"), "\(clips.stdout)")
        let fullClips = try await ivy.run("clip", "list", "--full-ids")
        #expect(fullClips.stdout.contains("\(PrefixLibrary.litany)  \(PrefixLibrary.dune)  Dune "))
        let clipJSON = try #require(try await ivy.run("clip", "list", "--json").json() as? [[String: Any]])
        #expect(clipJSON.compactMap { $0["id"] as? String }.sorted() == [PrefixLibrary.litany, PrefixLibrary.spice])
    }

    @Test("ivy queue cuts ids to the width that keeps them apart, books and clips alike; --full-ids and --json do not")
    func queueWidths() async throws {
        let library = try await PrefixLibrary()
        let ivy = library.ivy
        let queue = try await ivy.run("queue")
        #expect(queue.status == 0, "\(queue.stderr)")
        let row = try #require(queue.lines.first { $0.hasPrefix("book  2b48aaaa  ") }, "\(queue.stdout)")
        #expect(row.contains("pending"), "\(row)")
        #expect(queue.stdout.contains("clip  fa62bbbb  "), "\(queue.stdout)")
        #expect(!queue.stdout.contains(PrefixLibrary.dune))
        try ivy.execute(
            "INSERT INTO books (id, title, created_at, updated_at) VALUES ('2b48aaaa-0001-4000-8000-0', 'Twin', 1, 1)")
        let twins = try await ivy.run("queue")
        #expect(twins.stdout.contains("book  2b48aaaa-0000  "), "\(twins.stdout)")
        #expect(twins.stdout.contains("book  2b48aaaa-0001  "), "\(twins.stdout)")
        #expect(twins.stdout.contains("clip  fa62aaaa-0000  "), "\(twins.stdout)")
        let full = try await ivy.run("queue", "--full-ids")
        #expect(full.stdout.contains("book  \(PrefixLibrary.dune)  "), "\(full.stdout)")
        let json = try #require(try await ivy.run("queue", "--json").json() as? [[String: Any]])
        #expect(json.compactMap { $0["entity_id"] as? String }.contains(PrefixLibrary.dune))
    }

    /// A book's backup JSON, as the trash keeps it.
    static func bookJSON(_ id: String, _ title: String) -> String {
        #"{"created_at":1,"hidden":false,"id":"\#(id)","position":0,"title":"\#(title)","updated_at":1}"#
    }

    @Test("ivy trash list cuts ids; trash restore takes a prefix, refusing an ambiguous or too short one (exit 64)")
    func trashPrefixes() async throws {
        let library = try await PrefixLibrary()
        let ivy = library.ivy
        // What a sync's merge would have kept: no trigger watches the trash, so rows are enough.
        try ivy.execute(
            """
            INSERT INTO trash (entity_type, entity_id, reason, trashed_at, json) VALUES
                ('book', '\(PrefixLibrary.dune)', 'merge', 1000, '\(Self.bookJSON(PrefixLibrary.dune, "Dune"))'),
                ('book', '\(PrefixLibrary.messiah)', 'merge', 1000,
                    '\(Self.bookJSON(PrefixLibrary.messiah, "Dune Messiah"))');
            """)
        let list = try await ivy.run("trash", "list")
        #expect(list.status == 0, "\(list.stderr)")
        #expect(list.stdout.contains("  book  2b48aaaa  Dune  "), "\(list.stdout)")
        #expect(list.stdout.contains("  book  2b48bbbb  Dune Messiah  "), "\(list.stdout)")
        #expect(!list.stdout.contains(PrefixLibrary.dune))
        let full = try await ivy.run("trash", "list", "--full-ids")
        #expect(full.stdout.contains("  book  \(PrefixLibrary.dune)  Dune  "), "\(full.stdout)")
        let json = try #require(try await ivy.run("trash", "list", "--json").json() as? [[String: Any]])
        #expect(json.compactMap { $0["entity_id"] as? String }.sorted() == [PrefixLibrary.dune, PrefixLibrary.messiah])

        let ambiguous = try await ivy.run("trash", "restore", "2b48")
        #expect(ambiguous.status == 64, "\(ambiguous.stderr)")
        #expect(
            ambiguous.stderr.contains("'2b48' starts the ids of 2 books and clips in the trash"), "\(ambiguous.stderr)")
        #expect(
            ambiguous.stderr.contains("book \(PrefixLibrary.dune)")
                && ambiguous.stderr.contains("book \(PrefixLibrary.messiah)"), "\(ambiguous.stderr)")
        let short = try await ivy.run("trash", "restore", "2b4")
        #expect(short.status == 64 && short.stderr.contains("'2b4' is too short"), "\(short.stderr)")
        let none = try await ivy.run("trash", "restore", "2b48cccc")
        #expect(none.status == 1 && none.stderr.contains("no trash entry for 2b48cccc"), "\(none.stderr)")
        #expect(try await ivy.run("trash", "list", "--json").json() as? [Any] != nil)
    }

    @Test("trash restore 0003: digits that are entry 3 and the start of an id in the trash are refused with both")
    func trashDigitsBothWays() async throws {
        let library = try await PrefixLibrary()
        let ivy = library.ivy
        let digits = "0003aaaa-0000-4000-8000-000000000005"
        try ivy.execute(
            """
            INSERT INTO trash (id, entity_type, entity_id, reason, trashed_at, json) VALUES
                (3, 'book', '\(PrefixLibrary.dune)', 'merge', 1000, '\(Self.bookJSON(PrefixLibrary.dune, "Dune"))'),
                (4, 'book', '\(digits)', 'deleted', 1000, '\(Self.bookJSON(digits, "Numbered"))');
            """)
        let before = try ivy.sql("SELECT * FROM books ORDER BY id").map(\.description)
        let refused = try await ivy.run("trash", "restore", "0003")
        #expect(refused.status == 64, "\(refused.stdout)\(refused.stderr)")
        #expect(refused.stderr.hasPrefix("Error: '0003' is both trash entry 3 (book \(PrefixLibrary.dune) \"Dune\""))
        #expect(refused.stderr.contains("the start of the id of book \(digits) in the trash"), "\(refused.stderr)")
        #expect(refused.stderr.contains("`ivy trash restore 3` for the entry"), "\(refused.stderr)")
        #expect(try ivy.sql("SELECT * FROM books ORDER BY id").map(\.description) == before, "nothing restored")
        #expect(try ivy.count("SELECT count(*) FROM trash") == 2)
        // More of the id names the book; the entry's number alone (under 4 digits) is the entry.
        let book = try await ivy.run("trash", "restore", "0003a")
        #expect(
            book.status == 0 && book.stdout.contains("Restored book \(digits) from trash entry 4"), "\(book.stderr)")
        let entry = try await ivy.run("trash", "restore", "3")
        #expect(entry.status == 0 && entry.stdout.contains("from trash entry 3"), "\(entry.stderr)")
    }

    @Test("history and restore take a unique prefix of a book's or clip's id, a deleted clip's too")
    func historyPrefixes() async throws {
        let library = try await PrefixLibrary()
        let ivy = library.ivy
        let book = try await ivy.run("history", "2b48a")
        #expect(book.status == 0, "\(book.stderr)")
        #expect(book.lines.first?.hasPrefix("TIME") == true && book.stdout.contains("created"), "\(book.stdout)")
        let json = try #require(try await ivy.run("history", "fa62b", "--json").json() as? [[String: Any]])
        #expect(json.first?["entity_id"] as? String == PrefixLibrary.spice, "\(json)")

        let before = try HistoryCommandTests().moment(ivy)
        #expect(try await ivy.run("clip", "delete", "fa62b").status == 0)
        let deleted = try #require(try await ivy.run("history", "fa62b", "--json").json() as? [[String: Any]])
        #expect(deleted.first?["deleted"] as? Bool == true, "a deleted clip is found in the history by its prefix")
        let restore = try await ivy.run("restore", "--at", before, "fa62b", "--dry-run")
        #expect(restore.status == 0, "\(restore.stderr)")
        #expect(restore.stdout.contains("would make again clip \(PrefixLibrary.spice)"), "\(restore.stdout)")
        let restored = try await ivy.run("restore", "--at", before, "fa62b")
        #expect(restored.status == 0 && restored.stdout.contains("made again clip \(PrefixLibrary.spice)"))
        #expect(try ivy.count("SELECT count(*) FROM clips WHERE id = '\(PrefixLibrary.spice)'") == 1)
    }

    @Test("history and restore refuse a prefix that several books and clips have, listing them (exit 64)")
    func historyAmbiguous() async throws {
        let library = try await PrefixLibrary()
        let ivy = library.ivy
        try ivy.execute(
            """
            INSERT INTO clips (id, book_id, start, duration, note, created_at, updated_at) VALUES
                ('2b48cccc-0000-4000-8000-000000000006', '\(PrefixLibrary.dune)', 1, 2, 'Arrakis', 1, 1)
            """)
        for arguments in [["history", "2b48"], ["restore", "--at", "1h", "2b48", "--dry-run"]] {
            let result = try await ivy.run(arguments)
            #expect(result.status == 64, "\(arguments): \(result.stderr)")
            #expect(result.stderr.hasPrefix("Error: '2b48' names more than one book or clip; give more of the id:\n"))
            #expect(result.stderr.contains("  book \(PrefixLibrary.dune)  Dune\n"), "\(result.stderr)")
            #expect(result.stderr.contains("  book \(PrefixLibrary.messiah)  Dune Messiah\n"), "\(result.stderr)")
            #expect(
                result.stderr.contains("  clip 2b48cccc-0000-4000-8000-000000000006  Dune  Arrakis\n"),
                "\(result.stderr)")
            #expect(result.stdout.isEmpty)
        }
        let short = try await ivy.run("history", "2b4")
        #expect(short.status == 64 && short.stderr.contains("'2b4' is too short"), "\(short.stderr)")
    }
}

@Suite("list --search")
struct SearchTests {
    @Test("book list --search looks in titles and artists, in any case; % and _ are plain characters")
    func books() async throws {
        let ivy = try IvyHome()
        let dune = try await ivy.id("book", "add", "--title", "Dune", "--artist", "Frank Herbert")
        let emile = try await ivy.id("book", "add", "--title", "Émile", "--artist", "Rousseau")
        let percent = try await ivy.id("book", "add", "--title", "100% Herbert_fan")
        let other = try await ivy.id("book", "add", "--title", "Other", "--artist", "Someone")
        func found(_ arguments: String...) async throws -> [String] {
            let result = try await ivy.run(["book", "list", "--json"] + arguments)
            #expect(result.status == 0, "\(result.stderr)")
            return (try result.json() as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }.sorted()
        }
        #expect(try await found("--search", "dUNE") == [dune])
        #expect(try await found("--search", "herbert") == [dune, percent].sorted())
        #expect(try await found("--search", "émile") == [emile])
        #expect(try await found("--search", "%") == [percent])
        #expect(try await found("--search", "t_f") == [percent])
        #expect(try await found("--search", "r_f").isEmpty)
        let everything = try await found()
        #expect(everything.contains(other) && everything.count == 4)
        #expect(try await ivy.run("book", "archive", dune).status == 0)
        #expect(try await found("--search", "dune").isEmpty)
        #expect(try await found("--search", "dune", "--all") == [dune])
        let none = try await ivy.run("book", "list", "--search", "dune")
        #expect(none.stdout == "No book's title or artist contains 'dune'; `--all` looks at archived ones too.\n")
        let table = try await ivy.run("book", "list", "--search", "ROUSSEAU")
        #expect(table.lines.count == 2 && table.lines[1].contains("Émile"), "\(table.stdout)")
        #expect(try await ivy.run("book", "list", "--search", "").status == 64)
    }

    @Test("clip list --search looks in notes and transcriptions, in any case, with the book's title beside")
    func clips() async throws {
        let ivy = try IvyHome()
        let book = try await ivy.id("book", "add", "--title", "Dune")
        func add(_ extra: String...) async throws -> String {
            let audio = try ivy.mp3("a.mp3")
            let result = try await ivy.run(
                ["clip", "add", "--book", book, "--start", "1", "--duration", "2", "--audio", audio] + extra)
            #expect(result.status == 0, "\(result.stderr)")
            return result.lines.first ?? ""
        }
        let fear = try await add("--note", "Fear is the MIND-killer")
        let spoken = try await add("--transcription", "I must not fear.")
        let percent = try await add("--note", "50% of_it")
        _ = try await add("--note", "Spice")
        func found(_ text: String) async throws -> [String] {
            let result = try await ivy.run("clip", "list", "--json", "--search", text)
            return (try result.json() as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }.sorted()
        }
        #expect(try await found("fear") == [fear, spoken].sorted())
        #expect(try await found("mind-KILLER") == [fear])
        #expect(try await found("%") == [percent])
        #expect(try await found("of_it") == [percent])
        #expect(try await found("5_%").isEmpty, "_ is no wildcard")
        let table = try await ivy.run("clip", "list", "--search", "spice")
        #expect(table.lines.count == 2 && table.lines[1].contains("  Dune  "), "\(table.stdout)")
        let none = try await ivy.run("clip", "list", "--search", "sandworm")
        #expect(none.stdout == "No clip's note or transcription contains 'sandworm'.\n")
    }
}

@Suite("mistyped commands")
struct SuggestionTests {
    @Test("a mistyped subcommand is named, with the nearest one and its group's usage")
    func subcommand() async throws {
        let ivy = try IvyHome()
        let result = try await ivy.run("book", "updat", "2b48", "--title", "Dune")
        #expect(result.status == 64)
        #expect(result.stderr.hasPrefix("Error: unknown command 'updat'; did you mean 'update'?\n"), "\(result.stderr)")
        #expect(result.stderr.contains("Usage: ivy book <subcommand>"), "\(result.stderr)")
        #expect(!result.stderr.contains("--title"), "\(result.stderr)")
        let clip = try await ivy.run("--home", ivy.home, "clip", "delet", "fa62")
        #expect(clip.stderr.hasPrefix("Error: unknown command 'delet'; did you mean 'delete'?"), "\(clip.stderr)")
        let trash = try await ivy.run("trash", "lst")
        #expect(trash.stderr.hasPrefix("Error: unknown command 'lst'; did you mean 'list'?"), "\(trash.stderr)")
    }

    @Test("a mistyped top-level command suggests the nearest; a word near none says where the list is")
    func topLevel() async throws {
        let ivy = try IvyHome()
        let books = try await ivy.run("books", "list")
        #expect(books.status == 64)
        #expect(books.stderr.hasPrefix("Error: unknown command 'books'; did you mean 'book'?\n"), "\(books.stderr)")
        #expect(books.stderr.contains("Usage: ivy ") && books.stderr.contains("See 'ivy --help'"), "\(books.stderr)")
        let far = try await ivy.run("book", "frobnicate")
        #expect(far.status == 64)
        #expect(
            far.stderr.hasPrefix("Error: unknown command 'frobnicate'; `ivy book --help` lists the commands\n"),
            "\(far.stderr)")
        let sink = try await ivy.run("synk")
        #expect(sink.stderr.hasPrefix("Error: unknown command 'synk'; did you mean 'sync'?"), "\(sink.stderr)")
        // What was right before still is.
        #expect(try await ivy.run("help", "book").status == 0)
        #expect(try await ivy.run("book", "--help").status == 0)
        #expect(try await ivy.run("--log-format", "json", "book", "list").status == 0)
        #expect(try await ivy.run("config", "set", "trash_days", "7").status == 0)
    }
}
