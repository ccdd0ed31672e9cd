import Foundation
import IvyCore
import Testing

@Suite("Merge rules")
struct MergeTests {
    let now: Milliseconds = 1_795_305_600_000  // Nov 22, 2026 18:40 UTC

    func book(
        _ updated: Milliseconds, title: String = "Dune", position: Double = 0, hidden: Bool = false,
        extras: [String: JSONValue] = [:]
    ) -> BookBackup {
        BookBackup(
            id: "b1", title: title, position: position, hidden: hidden, createdAt: 10, updatedAt: updated,
            extras: extras)
    }

    func clip(_ updated: Milliseconds, note: String? = nil, start: Double = 0, transcription: String? = nil)
        -> ClipBackup
    {
        ClipBackup(
            id: "c1", bookID: "b1", start: start, duration: 5, note: note, transcription: transcription, createdAt: 10,
            updatedAt: updated)
    }

    @Test("book position: the furthest wins, whichever write is later")
    func position() {
        #expect(
            Merge.book(local: book(900, position: 1800), remote: book(100, position: 2700), now: now).position == 2700)
        #expect(
            Merge.book(local: book(100, position: 2700), remote: book(900, position: 1800), now: now).position == 2700)
    }

    @Test("book hidden: hidden on either side wins")
    func hidden() {
        #expect(Merge.book(local: book(900), remote: book(100, hidden: true), now: now).hidden)
        #expect(Merge.book(local: book(100, hidden: true), remote: book(900), now: now).hidden)
    }

    @Test("book title, artist, artwork: last write wins by updated_at")
    func lastWriteWins() {
        #expect(
            Merge.book(local: book(900, title: "Mine"), remote: book(100, title: "Theirs"), now: now).title == "Mine")
        #expect(
            Merge.book(local: book(100, title: "Mine"), remote: book(900, title: "Theirs"), now: now).title == "Theirs")
    }

    @Test("book tie on updated_at: both devices pick the same value")
    func tieIsDeterministic() {
        let a = book(500, title: "Alpha")
        let b = book(500, title: "Beta")
        let onA = Merge.book(local: a, remote: b, now: now)
        let onB = Merge.book(local: b, remote: a, now: now)
        #expect(onA == onB)
        let x = book(500, extras: ["rating": .number(4)])
        let y = book(500, extras: ["rating": .number(5)])
        #expect(Merge.book(local: x, remote: y, now: now) == Merge.book(local: y, remote: x, now: now))
    }

    @Test("the merged entity is stamped with now and keeps the earliest created_at")
    func stamped() {
        var remote = book(100)
        remote.createdAt = 5
        let merged = Merge.book(local: book(900), remote: remote, now: now)
        #expect(merged.updatedAt == now)
        #expect(merged.createdAt == 5)
    }

    @Test("unknown keys of both sides are kept; on a clash the later write's value")
    func extras() {
        let merged = Merge.book(
            local: book(900, extras: ["a": .string("local"), "shared": .number(1)]),
            remote: book(100, extras: ["b": .bool(true), "shared": .number(2)]), now: now)
        #expect(merged.extras == ["a": .string("local"), "b": .bool(true), "shared": .number(1)])
    }

    @Test(
        "clip note: equal, or one side empty, keeps the non-empty one",
        arguments: [
            ("same", "same", "same"), ("mine", nil, "mine"), (nil, "theirs", "theirs"), ("", "theirs", "theirs"),
            ("mine", "", "mine"),
        ] as [(String?, String?, String)])
    func noteSimple(local: String?, remote: String?, expected: String) {
        #expect(Merge.clip(local: clip(900, note: local), remote: clip(100, note: remote), now: now).note == expected)
    }

    @Test("clip note: different texts are both kept, local first, under a dated marker")
    func noteConflict() {
        let merged = Merge.clip(
            local: clip(100, note: "Key insight"), remote: clip(900, note: "Compare with chapter 3"), now: now)
        #expect(merged.note == "Key insight\n\n--- Conflict (Nov 22, 2026) ---\nCompare with chapter 3")
    }

    @Test("clip note: text already merged in is not added again")
    func noteNotRepeated() {
        let first = Merge.clip(local: clip(100, note: "A"), remote: clip(900, note: "B"), now: now)
        #expect(Merge.clip(local: first, remote: clip(900, note: "B"), now: now + 1).note == first.note)
        #expect(Merge.clip(local: clip(900, note: "A"), remote: first, now: now + 1).note == first.note)
        #expect(Merge.clip(local: clip(900, note: "B"), remote: first, now: now + 1).note == first.note)
    }

    @Test("clip start and duration: last write wins")
    func clipTimes() {
        #expect(Merge.clip(local: clip(900, start: 10), remote: clip(100, start: 20), now: now).start == 10)
        #expect(Merge.clip(local: clip(100, start: 10), remote: clip(900, start: 20), now: now).start == 20)
    }

    @Test("clip transcription: present beats absent; two different ones, the later write")
    func transcription() {
        #expect(
            Merge.clip(local: clip(900), remote: clip(100, transcription: "words"), now: now).transcription == "words")
        #expect(
            Merge.clip(local: clip(100, transcription: "mine"), remote: clip(900), now: now).transcription == "mine")
        #expect(
            Merge.clip(local: clip(100, transcription: "mine"), remote: clip(900, transcription: "theirs"), now: now)
                .transcription == "theirs")
    }

    @Test(
        "conflict dates are UTC calendar dates",
        arguments: [
            (Milliseconds(0), "Jan 1, 1970"), (951_782_400_000, "Feb 29, 2000"), (1_795_305_600_000, "Nov 22, 2026"),
            (1_798_761_599_999, "Dec 31, 2026"), (1_798_761_600_000, "Jan 1, 2027"),
        ])
    func civilDates(milliseconds: Milliseconds, text: String) {
        #expect(Merge.conflictMarker(milliseconds) == "--- Conflict (\(text)) ---")
    }
}

@Suite("Backup JSON")
struct BackupTests {
    @Test(
        "a book or a clip round-trips, unknown keys included, and equal content gives equal bytes",
        arguments: EntityKind.allCases)
    func roundTrip(kind: EntityKind) throws {
        let data: Data
        let again: Data
        let prefix: String
        switch kind {
        case .book:
            let book = BookBackup(
                id: "b1", title: "Dune", artist: "Frank Herbert", position: 2700.5, hidden: true, createdAt: 1,
                updatedAt: 2,
                extras: ["rating": .number(5), "tags": .array([.string("sf")]), "meta": .object(["x": .null])])
            data = try BackupCodec.encode(book)
            let decoded = try BackupCodec.decodeBook(data, expectedID: "b1")
            #expect(decoded == book)
            again = try BackupCodec.encode(decoded)
            prefix = #"{"artist":"Frank Herbert","artwork":null,"created_at":1,"hidden":true,"id":"b1","meta""#
        case .clip:
            let clip = ClipBackup(
                id: "c1", bookID: "b1", start: 60, duration: 5.5, note: "n\nline", transcription: nil, createdAt: 3,
                updatedAt: 4, extras: ["color": .string("red")])
            data = try BackupCodec.encode(clip)
            let decoded = try BackupCodec.decodeClip(data, expectedID: "c1")
            #expect(decoded == clip)
            again = try BackupCodec.encode(decoded)
            prefix = #"{"book_id":"b1","color":"red","created_at":3,"duration":5.5,"id":"c1""#
        }
        #expect(again == data)
        let text = String(decoding: data, as: UTF8.self)
        #expect(text.hasPrefix(prefix), "\(text)")
    }

    @Test("a missing hidden means false; a missing created_at means updated_at")
    func tolerant() throws {
        let book = try BackupCodec.decodeBook(
            Data(#"{"id":"b1","title":"Old","position":12,"updated_at":99}"#.utf8), expectedID: "b1")
        #expect(book.hidden == false)
        #expect(book.createdAt == 99)
        #expect(book.extras.isEmpty)
    }

    @Test(
        "bad files are decode errors naming the file, never crashes",
        arguments: [
            (#"{"id":"b2","title":"T","updated_at":1}"#, "does not match"),
            (#"{"id":"b1","title":7,"updated_at":1}"#, "\"title\""),
            (#"{"id":"b1","title":"T","updated_at":"yesterday"}"#, "\"updated_at\""),
            (#"{"id":"b1","title":"T","updated_at":1,"hidden":"no"}"#, "\"hidden\""),
            (#"{"id":"b1","title":"T","updated_at":1,"position":-4}"#, "\"position\""),
            (#"{"id":"b1","title":"T","updated_at":1.5}"#, "\"updated_at\""),
            (#"{"id":"b1","updated_at":1}"#, "\"title\""),
            (#"[1,2]"#, "not a JSON object"),
            (#"{"id":"b1","#, "not valid JSON"),
            ("", "not valid JSON"),
        ])
    func badBooks(json: String, reason: String) {
        #expect {
            try BackupCodec.decodeBook(Data(json.utf8), expectedID: "b1")
        } throws: { error in
            let error = error as? BackupDecodingError
            return error?.fileName == "book_b1.json" && error?.reason.contains(reason) == true
        }
    }

    @Test(
        "a clip with a bad book id or missing times is refused",
        arguments: [
            #"{"id":"c1","book_id":"B!","start":0,"duration":1,"updated_at":1}"#,
            #"{"id":"c1","book_id":"b1","duration":1,"updated_at":1}"#,
            #"{"id":"c1","book_id":"b1","start":0,"duration":null,"updated_at":1}"#,
        ])
    func badClips(json: String) {
        #expect(throws: BackupDecodingError.self) { try BackupCodec.decodeClip(Data(json.utf8), expectedID: "c1") }
    }
}
