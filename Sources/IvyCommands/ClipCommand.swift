import ArgumentParser
import Foundation
import IvyCore
import IvyStore
import IvySystem

struct ClipCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "clip",
        abstract:
            "Add, list, show, change and delete clips (bookmarks with a note and an MP3), and copy one's MP3 out.",
        subcommands: [Add.self, List.self, Show.self, Update.self, Delete.self, Audio.self]
    )
}

/// The JSON form of a clip in `--json` output (`JSONOutput`), its timestamps as a book's.
struct ClipJSON: Encodable {
    let id: ClipID
    let bookID: BookID
    let start: Double
    let duration: Double
    @Null var note: String?
    @Null var transcription: String?
    let createdAt: String
    let updatedAt: String
    let createdAtMS: Milliseconds
    let updatedAtMS: Milliseconds

    init(clip: Clip) {
        id = clip.id
        bookID = clip.bookID
        start = clip.start
        duration = clip.duration
        note = clip.note
        transcription = clip.transcription
        createdAt = Display.rfc3339(clip.createdAt)
        updatedAt = Display.rfc3339(clip.updatedAt)
        createdAtMS = clip.createdAt
        updatedAtMS = clip.updatedAt
    }
}

extension ClipCommand {
    struct Add: ContextCommand {
        static let configuration = CommandConfiguration(
            abstract: "Add a clip to a book and print its id.",
            discussion: "The audio must be an MP3 of at most 50 MB (52,428,800 bytes); ivy keeps its own copy.")

        @OptionGroup var global: GlobalOptions
        @Option(help: "The id of the book the clip belongs to, or its first 4 or more characters.") var book: String
        @Option(parsing: .unconditional, help: "Where the clip starts in the book: seconds or H:MM:SS.")
        var start: String
        @Option(parsing: .unconditional, help: "How long the clip is: seconds or H:MM:SS.")
        var duration: String
        @Option(help: ArgumentHelp("The clip's MP3.", valueName: "FILE")) var audio: String
        @Option(help: "A note to keep with the clip.") var note: String?
        @Option(help: "A transcription of the clip.") var transcription: String?

        func validate() throws {
            try IDPrefix.check(book, kind: .book)
            _ = try seconds(start, option: "--start")
            try playing(seconds(duration, option: "--duration"), duration)
        }

        func run(_ context: Context) async throws {
            let home = try global.home(context)
            let library = try await home.library()
            let clip = try await library.addClip(
                id: home.ids.next(), bookID: try IDPrefix.book(book, in: library),
                start: try seconds(start, option: "--start") ?? 0,
                duration: try seconds(duration, option: "--duration") ?? 0,
                note: note.flatMap { $0.isEmpty ? nil : $0 },
                transcription: transcription.flatMap { $0.isEmpty ? nil : $0 },
                audio: context.userPath(audio))
            home.output.line(clip.id.rawValue)
            if let warning = implausible(clip.duration, audio: library.audioPath(clipID: clip.id), id: clip.id) {
                home.output.error(warning)
            }
        }
    }

    struct List: ContextCommand {
        static let configuration = CommandConfiguration(abstract: "List clips, of every book or of one.")

        @OptionGroup var global: GlobalOptions
        @Option(help: "Only the clips of this book (its id, or its first 4 or more characters).") var book: String?
        @Option(
            help: ArgumentHelp("Only clips whose note or transcription contains TEXT, in any case.", valueName: "TEXT"))
        var search: String?
        @Flag(help: "Show whole ids (the table cuts them to the width that keeps them apart).") var fullIds = false
        @Flag(help: "Print one JSON array.") var json = false

        func validate() throws {
            if let book { try IDPrefix.check(book, kind: .book) }
            if search?.isEmpty == true { throw ValidationError("--search is empty; give it the text to look for") }
        }

        func run(_ context: Context) async throws {
            let home = try global.home(context)
            let library = try await home.library(readOnly: true)
            var book: BookID?
            if let prefix = self.book { book = try await IDPrefix.book(prefix, in: library) }
            if let book, try await library.book(id: book) == nil { throw StoreError.bookNotFound(id: book) }
            let clips = try await library.clips(bookID: book, search: search)
            let output = home.output
            if json { return try output.json(clips.map(ClipJSON.init)) }
            if let search, clips.isEmpty {
                return output.line(Display.safe("No clip's note or transcription contains '\(search)'."))
            }
            guard !clips.isEmpty else {
                return output.line(
                    "No clips yet; add one with `ivy clip add --book ID --start S --duration D --audio FILE`.")
            }
            // Archived and deleted books keep their titles here: their clips are still clips.
            let titles = try await Dictionary(
                library.books(includeHidden: true).map { ($0.id, $0.title) },
                uniquingKeysWith: { first, _ in first })
            let clipID = IDPrefix.shown(clips.map(\.id), full: fullIds)
            let bookID = IDPrefix.shown(clips.map(\.bookID), full: fullIds)
            output.table(
                ["ID", "BOOK", "TITLE", "START", "DURATION", "NOTE"],
                clips.map { clip in
                    [
                        clipID(clip.id), bookID(clip.bookID), Display.cell(titles[clip.bookID], limit: 30),
                        TimeText.clock(clip.start), TimeText.clock(clip.duration), Display.cell(clip.note),
                    ]
                })
        }
    }

    struct Show: ContextCommand {
        static let configuration = CommandConfiguration(abstract: "Show one clip.")

        @OptionGroup var global: GlobalOptions
        @Argument(help: "The clip's id, or its first 4 or more characters.") var id: String
        @Flag(help: "Print one JSON object.") var json = false

        func validate() throws { try IDPrefix.check(id, kind: .clip) }

        func run(_ context: Context) async throws {
            let home = try global.home(context)
            let library = try await home.library(readOnly: true)
            let id = try await IDPrefix.clip(id, in: library)
            guard let clip = try await library.clip(id: id) else { throw StoreError.clipNotFound(id: id) }
            if json { return try home.output.json(ClipJSON(clip: clip)) }
            home.output.fields([
                ("id", clip.id.rawValue),
                ("book", clip.bookID.rawValue),
                ("start", TimeText.clock(clip.start)),
                ("duration", TimeText.clock(clip.duration)),
                ("note", Display.optional(clip.note)),
                ("transcription", Display.optional(clip.transcription)),
                ("audio", library.audioPath(clipID: clip.id)),
                ("created", Display.time(clip.createdAt, zone: home.displayZone)),
                ("updated", Display.time(clip.updatedAt, zone: home.displayZone)),
            ])
        }
    }

    struct Update: ContextCommand {
        static let configuration = CommandConfiguration(
            abstract: "Change a clip's note, times, transcription or audio.",
            discussion: "An empty --note or --transcription clears it. Changing nothing writes nothing.")

        @OptionGroup var global: GlobalOptions
        @Argument(help: "The clip's id, or its first 4 or more characters.") var id: String
        @Option(help: "A new note; empty clears it.") var note: String?
        @Option(parsing: .unconditional, help: "A new start: seconds or H:MM:SS.")
        var start: String?
        @Option(parsing: .unconditional, help: "A new duration: seconds or H:MM:SS.")
        var duration: String?
        @Option(help: "A new transcription; empty clears it.") var transcription: String?
        @Option(help: ArgumentHelp("New audio: an MP3 of at most 50 MB.", valueName: "FILE")) var audio: String?

        func validate() throws {
            try IDPrefix.check(id, kind: .clip)
            _ = try seconds(start, option: "--start")
            try playing(seconds(duration, option: "--duration"), duration)
            if note == nil, start == nil, duration == nil, transcription == nil, audio == nil {
                throw ValidationError("nothing to change; give --note, --start, --duration, --transcription or --audio")
            }
        }

        func run(_ context: Context) async throws {
            let home = try global.home(context)
            let changes = ClipChanges(
                start: try seconds(start, option: "--start"),
                duration: try seconds(duration, option: "--duration"),
                note: clearable(note), transcription: clearable(transcription))
            let library = try await home.library()
            let id = try await IDPrefix.clip(id, in: library)
            if changes.duration != nil || audio != nil, let clip = try await library.clip(id: id) {
                let file = audio.map(context.userPath) ?? library.audioPath(clipID: id)
                if let warning = implausible(changes.duration ?? clip.duration, audio: file, id: id) {
                    home.output.error(warning)
                }
            }
            let result = try await library.updateClip(id: id, changes, audio: audio.map(context.userPath))
            home.output.line(result.changed ? "updated \(id)" : "unchanged \(id)")
        }
    }

    struct Delete: ContextCommand {
        static let configuration = CommandConfiguration(
            abstract: "Delete a clip and its audio; the next sync deletes it on Drive too.")

        @OptionGroup var global: GlobalOptions
        @Argument(help: "The clip's id, or its first 4 or more characters.") var id: String

        func validate() throws { try IDPrefix.check(id, kind: .clip) }

        func run(_ context: Context) async throws {
            let home = try global.home(context)
            let library = try await home.library()
            let id = try await IDPrefix.clip(id, in: library)
            try await library.deleteClip(id: id)
            home.output.line("deleted \(id)")
        }
    }
}

extension ClipCommand {
    struct Audio: ContextCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write a clip's MP3 to FILE, or to standard output.",
            discussion: """
                FILE may be a directory: the MP3 is written in it as ID.mp3. It is written beside FILE under a \
                hidden name and put in place whole (mode 0600), so FILE is whole or as it was; an existing FILE is \
                replaced only with --force. Without FILE (or with -) the MP3 goes to standard output, which must not \
                be a terminal. A clip whose MP3 is not here yet (a sync brings it) is an error, exit 1.
                """)

        @OptionGroup var global: GlobalOptions
        @Argument(help: "The clip's id, or its first 4 or more characters.") var id: String
        @Argument(help: ArgumentHelp("Where to write the MP3 (a file or a directory).", valueName: "FILE"))
        var file: String?
        @Flag(help: "Replace FILE if it exists.") var force = false

        func validate() throws { try IDPrefix.check(id, kind: .clip) }

        func run(_ context: Context) async throws {
            let home = try global.home(context)
            let library = try await home.library(readOnly: true)
            let id = try await IDPrefix.clip(id, in: library)
            guard try await library.clip(id: id) != nil else { throw StoreError.clipNotFound(id: id) }
            let source = library.audioPath(clipID: id)
            guard FileManager.default.fileExists(atPath: source) else {
                home.output.error(
                    "Error: clip \(id) has no MP3 here yet: run `ivy sync` to bring it from Drive, then try again")
                throw ExitCode.failure
            }
            guard let file, file != "-" else {
                guard !context.terminal.output else {
                    throw ValidationError(
                        "standard output is a terminal: give a FILE "
                            + "(`ivy clip audio \(id.rawValue.prefix(8)) clip.mp3`), "
                            + "or send it to a program or a file (`> clip.mp3`)")
                }
                try await BlockingExecutor.blocking { try Self.send(source) }
                return
            }
            var target = (context.userPath(file) as NSString).standardizingPath
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: target, isDirectory: &isDirectory), isDirectory.boolValue {
                target = (target as NSString).appendingPathComponent(id.rawValue + ".mp3")
            }
            let exists = FileManager.default.fileExists(atPath: target, isDirectory: &isDirectory)
            if exists, isDirectory.boolValue {
                throw ValidationError("\(target) is a directory; give the name of the MP3 to write")
            }
            if exists, !force { throw ValidationError("\(target) exists; give another FILE, or --force to replace it") }
            let bytes: Int64
            do {
                bytes = try await BlockingExecutor.blocking { [force] in
                    try CopyOut.copy(source, to: target, replacing: force)
                }
            } catch CopyOut.Failure.exists {
                throw ValidationError("\(target) exists; give another FILE, or --force to replace it")
            } catch CopyOut.Failure.cannotWrite(let path, let reason) {
                home.output.error(
                    "Error: cannot write \(path): \(reason); give a FILE in a directory that exists and that you can "
                        + "write to")
                throw ExitCode.failure
            } catch CopyOut.Failure.cannotRead(let path, let reason) {
                home.output.error("Error: cannot read the clip's MP3 \(path): \(reason)")
                throw ExitCode.failure
            }
            home.output.line("wrote \(target) (\(ExportCommand.size(bytes)))")
        }

        /// The MP3 to standard output, a megabyte at a time.
        private static func send(_ source: String) throws {
            guard let input = FileHandle(forReadingAtPath: source) else {
                throw StoreError.audioUnreadable(path: source, reason: String(cString: strerror(errno)))
            }
            defer { try? input.close() }
            while let chunk = try input.read(upToCount: 1 << 20), !chunk.isEmpty {
                if let code = PrivateFile.writeAll(chunk, to: STDOUT_FILENO) {
                    // A reader that went away (`| head -c 100`) is no failure of ivy's.
                    if code == EPIPE { return }
                    throw StorageError(path: "standard output", errno: code)
                        ?? StoreError.audioUnreadable(path: "standard output", reason: String(cString: strerror(code)))
                }
            }
        }
    }
}

/// A clip plays for some time: `--duration 0` is refused (a clip from Drive may still have it).
private func playing(_ seconds: Double?, _ text: String?) throws {
    guard seconds == 0, let text else { return }
    throw ValidationError(
        "invalid --duration '\(text)': a clip lasts more than 0 seconds; give how long it plays, in seconds or H:MM:SS")
}

/// A warning when `duration` is longer than the MP3 at `audio` can play: MP3's lowest bitrate is
/// 8 kbit/s (MPEG-2.5 layer III), so a file of n bytes plays at most n / 1,000 seconds. Nil
/// when it may be right, or when the file cannot be read (the add or update then says why).
private func implausible(_ duration: Double, audio: String, id: ClipID) -> String? {
    guard let bytes = try? LocalFile.size(of: URL(fileURLWithPath: audio)) else { return nil }
    let most = (Double(bytes) / 1000).rounded(.up)
    guard duration > most + 1 else { return nil }
    return "warning: a clip of \(TimeText.clock(duration)) is longer than an MP3 of \(AudioRules.grouped(bytes)) bytes "
        + "can play (at most \(TimeText.clock(most)) at MP3's lowest bitrate, 8 kbit/s); if --duration is wrong, "
        + "correct it with `ivy clip update \(id) --duration`"
}
