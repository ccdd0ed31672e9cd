import ArgumentParser
import IvyCore
import IvyStore

struct BookCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "book",
        abstract: "Add, list, show, change, archive and delete books.",
        subcommands: [Add.self, List.self, Show.self, Update.self, Archive.self, Unarchive.self, Delete.self]
    )
}

/// The JSON form of a book in `--json` output (`JSONOutput`): seconds for times of play, RFC
/// 3339 for timestamps as everywhere in `--json`, and the stored milliseconds under `_ms`.
struct BookJSON: Encodable {
    let id: BookID
    let title: String
    @Null var artist: String?
    @Null var artwork: String?
    let position: Double
    let hidden: Bool
    @Null var uri: String?
    let createdAt: String
    let updatedAt: String
    let createdAtMS: Milliseconds
    let updatedAtMS: Milliseconds

    init(book: Book) {
        id = book.id
        title = book.title
        artist = book.artist
        artwork = book.artwork
        position = book.position
        hidden = book.hidden
        uri = book.uri
        createdAt = Display.rfc3339(book.createdAt)
        updatedAt = Display.rfc3339(book.updatedAt)
        createdAtMS = book.createdAt
        updatedAtMS = book.updatedAt
    }
}

extension BookCommand {
    struct Add: ContextCommand {
        static let configuration = CommandConfiguration(
            abstract: "Add a book and print its id.")

        @OptionGroup var global: GlobalOptions
        @Option(help: "The book's title (required, not empty).") var title: String
        @Option(help: "The author or narrator.") var artist: String?
        @Option(help: "Where the cover art is (a URL or path).") var artwork: String?
        @Option(parsing: .unconditional, help: "Where listening stands: seconds or H:MM:SS (default 0).")
        var position: String?

        func validate() throws {
            if title.trimmingSpaces().isEmpty {
                throw ValidationError("the title is empty; give the book a title with --title")
            }
            _ = try seconds(position, option: "--position")
        }

        func run(_ context: Context) async throws {
            let home = try global.home(context)
            let book = try await home.library().addBook(
                id: home.ids.next(), title: title,
                artist: artist.flatMap { $0.isEmpty ? nil : $0 },
                artwork: artwork.flatMap { $0.isEmpty ? nil : $0 },
                position: try seconds(position, option: "--position") ?? 0)
            home.output.line(book.id.rawValue)
        }
    }

    struct List: ContextCommand {
        static let configuration = CommandConfiguration(
            abstract: "List books (archived ones, deleted ones among them, only with --all).")

        @OptionGroup var global: GlobalOptions
        @Flag(help: "Include archived books (book delete archives too).") var all = false
        @Option(help: ArgumentHelp("Only books whose title or artist contains TEXT, in any case.", valueName: "TEXT"))
        var search: String?
        @Flag(help: "Show whole ids (the table cuts them to the width that keeps them apart).") var fullIds = false
        @Flag(help: "Print one JSON array.") var json = false

        func validate() throws {
            if search?.isEmpty == true { throw ValidationError("--search is empty; give it the text to look for") }
        }

        func run(_ context: Context) async throws {
            let home = try global.home(context)
            let books = try await home.library(readOnly: true).books(includeHidden: all, search: search)
            let output = home.output
            if json { return try output.json(books.map(BookJSON.init)) }
            if let search, books.isEmpty {
                return output.line(
                    Display.safe("No book's title or artist contains '\(search)'")
                        + (all ? "." : "; `--all` looks at archived ones too."))
            }
            guard !books.isEmpty else {
                return output.line(
                    all
                        ? "No books yet; add one with `ivy book add --title TITLE`."
                        : "No books to show; `ivy book list --all` includes archived ones, `ivy book add --title "
                            + "TITLE` adds one."
                )
            }
            var headers = ["ID", "TITLE", "ARTIST", "POSITION"]
            if all { headers.append("ARCHIVED") }
            let shown = IDPrefix.shown(books.map(\.id), full: fullIds)
            output.table(
                headers,
                books.map { book in
                    var row = [
                        shown(book.id), Display.cell(book.title), Display.cell(book.artist, limit: 30),
                        TimeText.clock(book.position),
                    ]
                    if all { row.append(book.hidden ? "yes" : "no") }
                    return row
                })
        }
    }

    struct Show: ContextCommand {
        static let configuration = CommandConfiguration(abstract: "Show one book.")

        @OptionGroup var global: GlobalOptions
        @Argument(help: "The book's id, or its first 4 or more characters.") var id: String
        @Flag(help: "Print one JSON object.") var json = false

        func validate() throws { try IDPrefix.check(id, kind: .book) }

        func run(_ context: Context) async throws {
            let home = try global.home(context)
            let library = try await home.library(readOnly: true)
            let id = try await IDPrefix.book(id, in: library)
            guard let book = try await library.book(id: id) else {
                throw StoreError.bookNotFound(id: id)
            }
            if json { return try home.output.json(BookJSON(book: book)) }
            home.output.fields([
                ("id", book.id.rawValue),
                ("title", book.title),
                ("artist", Display.optional(book.artist)),
                ("artwork", Display.optional(book.artwork)),
                ("position", TimeText.clock(book.position)),
                ("archived", book.hidden ? "yes" : "no"),
                ("uri", Display.optional(book.uri)),
                ("created", Display.time(book.createdAt, zone: home.displayZone)),
                ("updated", Display.time(book.updatedAt, zone: home.displayZone)),
            ])
        }
    }

    struct Update: ContextCommand {
        static let configuration = CommandConfiguration(
            abstract: "Change a book's title, artist, artwork or position.",
            discussion: "An empty --artist or --artwork clears it. Changing nothing writes nothing.")

        @OptionGroup var global: GlobalOptions
        @Argument(help: "The book's id, or its first 4 or more characters.") var id: String
        @Option(help: "A new title (not empty).") var title: String?
        @Option(help: "A new artist; empty clears it.") var artist: String?
        @Option(help: "New cover art; empty clears it.") var artwork: String?
        @Option(parsing: .unconditional, help: "A new position: seconds or H:MM:SS.")
        var position: String?

        func validate() throws {
            try IDPrefix.check(id, kind: .book)
            if let title, title.trimmingSpaces().isEmpty {
                throw ValidationError("the title is empty; give --title a title")
            }
            _ = try seconds(position, option: "--position")
            if title == nil, artist == nil, artwork == nil, position == nil {
                throw ValidationError("nothing to change; give --title, --artist, --artwork or --position")
            }
        }

        func run(_ context: Context) async throws {
            let home = try global.home(context)
            let changes = BookChanges(
                title: title, artist: clearable(artist), artwork: clearable(artwork),
                position: try seconds(position, option: "--position"))
            try await change(book: id, changes, home: home, done: "updated")
        }
    }

    struct Archive: ContextCommand {
        static let configuration = CommandConfiguration(
            abstract: "Archive a book: hide it from lists on every device.")

        @OptionGroup var global: GlobalOptions
        @Argument(help: "The book's id, or its first 4 or more characters.") var id: String

        func validate() throws { try IDPrefix.check(id, kind: .book) }

        func run(_ context: Context) async throws {
            try await change(book: id, BookChanges(hidden: true), home: try global.home(context), done: "archived")
        }
    }

    struct Unarchive: ContextCommand {
        static let configuration = CommandConfiguration(
            abstract: "Bring an archived book (a deleted one too) back into lists.",
            discussion:
                "If another device changes the same book before this change reaches it, the merge keeps the book "
                + "archived: archived wins."
        )

        @OptionGroup var global: GlobalOptions
        @Argument(help: "The book's id, or its first 4 or more characters.") var id: String

        func validate() throws { try IDPrefix.check(id, kind: .book) }

        func run(_ context: Context) async throws {
            try await change(book: id, BookChanges(hidden: false), home: try global.home(context), done: "unarchived")
        }
    }

    struct Delete: ContextCommand {
        static let configuration = CommandConfiguration(
            abstract: "Delete a book: archive it and forget its local file.",
            discussion:
                "Deleting is archiving (the book is hidden from lists on every device) and forgetting the book's "
                + "local file (its uri); `ivy book unarchive` brings it back. Books are never removed from the "
                + "database or from Drive, so every device learns of the deletion; its clips stay."
        )

        @OptionGroup var global: GlobalOptions
        @Argument(help: "The book's id, or its first 4 or more characters.") var id: String

        func validate() throws { try IDPrefix.check(id, kind: .book) }

        func run(_ context: Context) async throws {
            let changes = BookChanges(hidden: true, uri: .some(nil))
            try await change(book: id, changes, home: try global.home(context), done: "deleted") { id in
                ": archived on every device and its local file forgotten; `ivy book unarchive \(id)` brings it back"
            }
        }
    }
}

/// Applies `changes` and says `done ID` (with `more`'s words after it), or `unchanged ID`.
private func change(
    book id: String, _ changes: BookChanges, home: Home, done: String, more: (BookID) -> String = { _ in "" }
) async throws {
    let library = try await home.library()
    let id = try await IDPrefix.book(id, in: library)
    let result = try await library.updateBook(id: id, changes)
    home.output.line(result.changed ? "\(done) \(id)\(more(id))" : "unchanged \(id)")
}
