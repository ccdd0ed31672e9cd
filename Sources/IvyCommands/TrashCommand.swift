import ArgumentParser
import Foundation
import IvyCore
import IvyStore
import IvySystem

struct TrashCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "trash",
        abstract: "List, restore and empty what a sync deleted or overwrote here.",
        discussion: """
            Before a sync deletes a clip here (another device deleted it) or replaces a book or clip with Drive's \
            copy or a merge, it keeps the local one in the trash: its backup JSON, and its MP3 when the clip was \
            deleted or its MP3 replaced. Entries are kept trash_days days (default 30; 0 keeps nothing) and purged \
            at the end of a sync.
            """,
        subcommands: [List.self, Restore.self, Empty.self]
    )
}

extension TrashCommand {
    struct List: ContextCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the trash: id, kind, entity id, title or note, why and when.")

        @OptionGroup var global: GlobalOptions
        @Flag(help: "Show whole ids (the table cuts them to the width that keeps them apart).") var fullIds = false
        @Flag(help: "Print one JSON array.") var json = false

        /// One entry as `ivy trash list --json` prints it (`JSONOutput`).
        struct Item: Encodable {
            let id: Int64
            let entityType: String
            let entityID: String
            @Null var title: String?
            @Null var note: String?
            let reason: String
            let why: String
            let trashedAt: String
            let trashedAtMS: Milliseconds
            let hasAudio: Bool
            @Null var backup: JSONValue?

            init(_ entry: TrashEntry) {
                id = entry.id
                entityType = entry.key.kind.rawValue
                entityID = entry.key.id
                let described = TrashCommand.described(entry)
                title = described.title
                note = described.note
                reason = entry.reason.rawValue
                why = entry.reason.description
                trashedAt = Display.rfc3339(entry.trashedAt)
                trashedAtMS = entry.trashedAt
                hasAudio = entry.audioFile != nil
                backup = try? JSONDecoder().decode(JSONValue.self, from: entry.json)
            }
        }

        func run(_ context: Context) async throws {
            let home = try global.home(context)
            let entries = try await home.library(readOnly: true).trashEntries()
            if json { return try home.output.json(entries.map(Item.init)) }
            guard !entries.isEmpty else { return home.output.line("The trash is empty.") }
            let shown = IDPrefix.shown(entries.map(\.key.id), full: fullIds)
            home.output.table(
                ["ID", "KIND", "ENTITY", "TITLE OR NOTE", "WHY", "WHEN"],
                entries.map { entry in
                    let (title, note) = TrashCommand.described(entry)
                    return [
                        String(entry.id), entry.key.kind.rawValue, shown(entry.key.id), Display.cell(title ?? note),
                        entry.reason.description + (entry.audioFile != nil ? " (with MP3)" : ""),
                        Display.time(entry.trashedAt, zone: home.displayZone),
                    ]
                })
        }
    }

    struct Restore: ContextCommand {
        static let configuration = CommandConfiguration(
            abstract: "Put a trash entry back as it was; the next sync sends it to every device.",
            discussion: """
                The book or clip gets the fields it had (and a clip its MP3) as a change made now, so the next sync \
                uploads it and it wins against the copy that replaced it. The entry leaves the trash.
                """)

        @OptionGroup var global: GlobalOptions
        @Argument(
            help: ArgumentHelp(
                "The entry's id, as `ivy trash list` shows it, or a book's or clip's id or its first 4 or more "
                    + "characters (its newest entry; book:ID or clip:ID when a book and a clip share it). Digits "
                    + "that are both an entry's id and the start of an id in the trash are refused as ambiguous.",
                valueName: "ID"))
        var id: String
        @Flag(
            help: ArgumentHelp(
                "Restore even over a version changed here after the entry was kept (that version is kept in the "
                    + "trash); on a terminal ivy asks instead."))
        var yes = false

        func validate() throws {
            let (kind, id) = IDPrefix.kindPrefixed(self.id)
            if kind == nil, let number = Int64(id), number >= 1 { return }
            guard kind != nil || Int64(id) == nil, EntityID.isValid(id) else {
                throw ValidationError(
                    "\(id) is not a trash entry id: ids are whole numbers from 1, as `ivy trash list` shows them, "
                        + "or the id of a book or clip in the trash")
            }
            guard id.count >= IDPrefix.shortest else {
                throw ValidationError(
                    "'\(id)' is too short to name a book or clip in the trash: give at least \(IDPrefix.shortest) "
                        + "characters of its id (`ivy trash list` shows them)")
            }
        }

        /// The entry `id` names: itself, or the newest entry of the book or clip whose id is `id`
        /// or starts with it (`ivy trash list` cuts ids short).
        private func entryID(in library: LibraryDatabase) async throws -> Int64 {
            // `book:` or `clip:` keeps to that kind's entries, and names no entry number.
            let (kind, id) = IDPrefix.kindPrefixed(self.id)
            let entries = try await library.trashEntries().filter { kind == nil || $0.key.kind == kind }
            let number = kind == nil ? Int64(id) : nil
            // Digits too few to start an id (`validate` refuses so short a prefix) are an entry's
            // number only: `trash restore 1` run again once entry 1 is back (a second try, or a
            // retry after a kill) must say it is gone, not put back the newest entry of whatever
            // book or clip has an id that starts with 1, over a newer edit.
            let prefix = number == nil || id.count >= IDPrefix.shortest
            let named =
                IDPrefix.isWhole(id)
                ? [id] : prefix ? Array(Set(entries.map(\.key.id).filter { $0.hasPrefix(id) })) : []
            // Digits may be an entry's number and start an id (`0003`, `12345678`): which one was
            // meant is the person's to say.
            if let number, number >= 1, let numbered = entries.first(where: { $0.id == number }) {
                guard id.count >= IDPrefix.shortest, !named.isEmpty else { return number }
                let started = entries.filter { named.contains($0.key.id) }.map {
                    "\($0.key.kind.rawValue) \($0.key.id)"
                }
                let entry = TrashCommand.entryWords(numbered)
                throw ValidationError(
                    "'\(id)' is both trash entry \(number) (\(entry)) and the start of the id of "
                        + Array(Set(started)).sorted().joined(separator: ", ") + " in the trash; give "
                        + "`ivy trash restore \(number)` for the entry, or more of the id for the "
                        + (named.count == 1 ? "book or clip" : "books and clips"))
            }
            guard named.count <= 1 else {
                let listed = entries.filter { named.contains($0.key.id) }.map { "\($0.key.kind.rawValue) \($0.key.id)" }
                throw ValidationError(
                    "'\(id)' starts the ids of \(named.count) books and clips in the trash; give more of it:\n"
                        + Array(Set(listed)).sorted().map { "  " + $0 }.joined(separator: "\n"))
            }
            // A book and a clip of one id (another program can make them): which is the person's to say.
            if let whole = named.first, Set(entries.filter { $0.key.id == whole }.map(\.key.kind)).count > 1 {
                throw ValidationError(
                    "\(whole) is the id of a book and of a clip in the trash; give book:\(whole) or clip:\(whole) "
                        + "to say which, or the entry's number (`ivy trash list` shows them)")
            }
            guard let whole = named.first, let entry = entries.last(where: { $0.key.id == whole }) else {
                // Digits that start no id: the entry number the person meant, which the restore says is gone.
                if let number { return number }
                // An unknown id, as everywhere: exit 1, not a usage error.
                throw TrashCommand.UnknownEntry(
                    errorDescription: "no trash entry for \(id); `ivy trash list` shows the entries kept")
            }
            return entry.id
        }

        func run(_ context: Context) async throws {
            let home = try global.home(context)
            let library = try await home.library()
            // A running sync may be removing this clip's audio or purging the trash: wait for it.
            try await withSyncLock(home.waitForSyncLock()) {
                let id = try await entryID(in: library)
                let entry: TrashEntry
                do {
                    entry = try await library.restoreFromTrash(id: id, replacingNewer: yes)
                } catch TrashError.newerHere(let id, let key, let trashedAt) {
                    guard home.terminal.input, home.terminal.output else {
                        throw ValidationError(
                            TrashError.newerHere(id: id, key: key, trashedAt: trashedAt).localizedDescription)
                    }
                    let kept = Display.time(trashedAt, zone: home.displayZone)
                    let question =
                        "\(key) here changed after trash entry \(id) was kept on \(kept). "
                        + "Restore the entry over it? (The version here is kept in the trash.)"
                    guard home.agrees(question) else { return home.output.line("Nothing changed.") }
                    entry = try await library.restoreFromTrash(id: id, replacingNewer: true)
                }
                home.output.line(
                    "Restored \(entry.key.kind.rawValue) \(entry.key.id) from trash entry \(entry.id); "
                        + "the next `ivy sync` sends it to Drive.")
            }
        }
    }

    struct Empty: ContextCommand {
        static let configuration = CommandConfiguration(
            abstract: "Remove every trash entry and its MP3 for good.",
            discussion: "Asks first on a terminal; elsewhere it needs --yes.")

        @OptionGroup var global: GlobalOptions
        @Flag(help: "Do not ask for confirmation.") var yes = false

        func run(_ context: Context) async throws {
            let home = try global.home(context)
            let library = try await home.library()
            if !yes {
                guard home.terminal.input else {
                    throw ValidationError("trash empty needs confirmation; run it on a terminal or pass --yes")
                }
                let count = try await library.trashEntries().count
                guard count > 0 else { return home.output.line("The trash is empty.") }
                guard home.agrees("Remove the \(count) entr\(count == 1 ? "y" : "ies") in the trash for good?") else {
                    return home.output.line("Nothing changed.")
                }
            }
            try await withSyncLock(home.waitForSyncLock()) {
                let removed = try await library.emptyTrash()
                home.output.line("Removed \(removed) trash entr\(removed == 1 ? "y" : "ies").")
            }
        }
    }

    /// An id that names no entry of the trash.
    struct UnknownEntry: LocalizedError {
        let errorDescription: String?
    }

    /// An entry in words: `clip 5f2e… "note", deleted by sync`.
    static func entryWords(_ entry: TrashEntry) -> String {
        let (title, note) = TrashCommand.described(entry)
        let words = (title ?? note).map { " \"" + Display.cell($0, limit: 30) + "\"" } ?? ""
        return "\(entry.key.kind.rawValue) \(entry.key.id)\(words), \(entry.reason.description)"
    }

    /// A book's title or a clip's note, the entry's JSON decoded once.
    static func described(_ entry: TrashEntry) -> (title: String?, note: String?) {
        switch entry.entity {
        case .book(let book): (book.title, nil)
        case .clip(let clip): (nil, clip.note)
        case nil: (nil, nil)
        }
    }
}
