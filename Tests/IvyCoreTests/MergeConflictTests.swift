import IvyCore
import Testing

/// What a merge says it resolved: per field both sides changed, the value kept, the value not
/// kept, whose value won and by which rule (what `ivy history --conflicts` shows).
@Suite("The conflicts a merge reports")
struct MergeConflictTests {
    static let now: Milliseconds = 1_795_305_600_000

    static func book(
        _ updated: Milliseconds, title: String = "Dune", position: Double = 100, hidden: Bool = false
    ) -> BookBackup {
        BookBackup(id: "b1", title: title, position: position, hidden: hidden, createdAt: 10, updatedAt: updated)
    }

    static func clip(
        _ updated: Milliseconds, note: String? = "seed", start: Double = 60, transcription: String? = "said"
    ) -> ClipBackup {
        ClipBackup(
            id: "c1", bookID: "b1", start: start, duration: 5, note: note, transcription: transcription, createdAt: 10,
            updatedAt: updated)
    }

    static func audio(local: String, remote: String, localAt: Milliseconds, remoteAt: Milliseconds)
        -> [Merge.Conflict]
    {
        let state = Merge.AudioState(
            localMD5: local, localUpdatedAt: localAt, remoteMD5: remote, remoteFileID: "f2", remoteUpdatedAt: remoteAt,
            baseMD5: "old", baseFileID: "f1")
        return [Merge.audioMerge(state).conflict].compactMap { $0 }
    }

    static func conflict(
        _ field: String, kept: JSONValue, lost: JSONValue?, _ winner: Merge.Conflict.Winner, _ rule: Merge.Conflict.Rule
    ) -> Merge.Conflict {
        Merge.Conflict(field: field, kept: kept, lost: lost, winner: winner, rule: rule)
    }

    struct Case: Sendable, CustomTestStringConvertible {
        let testDescription: String
        let merge: @Sendable () -> [Merge.Conflict]
        let expected: [Merge.Conflict]
    }

    static let cases: [Case] = [
        Case(
            testDescription: "title changed on both: the later write's kept, the other's lost",
            merge: {
                Merge.bookMerge(
                    local: book(300, title: "Mine"), remote: book(200, title: "Theirs"), base: book(100), now: now
                ).conflicts
            },
            expected: [conflict("title", kept: .string("Mine"), lost: .string("Theirs"), .here, .laterWrite)]),
        Case(
            testDescription: "title changed on both at the same time: the tie break",
            merge: {
                Merge.bookMerge(local: book(300, title: "A"), remote: book(300, title: "B"), base: book(100), now: now)
                    .conflicts
            },
            expected: [conflict("title", kept: .string("B"), lost: .string("A"), .drive, .tieBreak)]),
        Case(
            testDescription: "position moved on both: the furthest, even from the earlier write",
            merge: {
                Merge.bookMerge(
                    local: book(300, position: 200), remote: book(200, position: 500), base: book(100), now: now
                ).conflicts
            },
            expected: [conflict("position", kept: .number(500), lost: .number(200), .drive, .furthestPosition)]),
        Case(
            testDescription: "hidden on one side, shown on the other (no base): hidden wins",
            merge: {
                Merge.bookMerge(local: book(300), remote: book(200, hidden: true), base: nil, now: now).conflicts
            },
            expected: [conflict("hidden", kept: .bool(true), lost: .bool(false), .drive, .hiddenWins)]),
        Case(
            testDescription: "notes edited on both: both kept under a conflict line, nothing lost",
            merge: {
                Merge.clipMerge(
                    local: clip(300, note: "mine"), remote: clip(200, note: "theirs"), base: clip(100), now: now
                ).conflicts
            },
            expected: [
                conflict(
                    "note", kept: .string("mine\n\n\(Merge.conflictMarker(now))\ntheirs"), lost: nil, .both,
                    .notesJoined)
            ]),
        Case(
            testDescription: "one note already holds the other: the longer",
            merge: {
                Merge.clipMerge(
                    local: clip(200, note: "a"), remote: clip(300, note: "a, b"), base: clip(100), now: now
                ).conflicts
            },
            expected: [conflict("note", kept: .string("a, b"), lost: .string("a"), .drive, .noteHoldsOther)]),
        Case(
            testDescription: "a note emptied here and edited there: the one with text",
            merge: {
                Merge.clipMerge(
                    local: clip(300, note: nil), remote: clip(200, note: "new"), base: clip(100), now: now
                ).conflicts
            },
            expected: [conflict("note", kept: .string("new"), lost: .null, .drive, .nonEmptyNote)]),
        Case(
            testDescription: "a transcription removed here and rewritten there: the present one",
            merge: {
                Merge.clipMerge(
                    local: clip(300, transcription: nil), remote: clip(200, transcription: "heard"),
                    base: clip(100), now: now
                ).conflicts
            },
            expected: [conflict("transcription", kept: .string("heard"), lost: .null, .drive, .transcriptionPresent)]),
        Case(
            testDescription: "start and transcription changed on both: the later write for each, in field order",
            merge: {
                Merge.clipMerge(
                    local: clip(200, start: 70, transcription: "mine"),
                    remote: clip(300, start: 80, transcription: "theirs"), base: clip(100), now: now
                ).conflicts
            },
            expected: [
                conflict("start", kept: .number(80), lost: .number(70), .drive, .laterWrite),
                conflict("transcription", kept: .string("theirs"), lost: .string("mine"), .drive, .laterWrite),
            ]),
        Case(
            testDescription: "audio replaced on both: the newer updated_at's md5 kept, the other's lost",
            merge: { audio(local: "aaa", remote: "bbb", localAt: 300, remoteAt: 200) },
            expected: [conflict("audio", kept: .string("aaa"), lost: .string("bbb"), .here, .laterWrite)]),
        Case(
            testDescription: "two takes on Drive: the newer JSON's, else Drive's later time, else the id; both md5s",
            merge: {
                let take = { (md5: String, at: Milliseconds?, modified: Milliseconds, here: Bool) in
                    Merge.Take(md5: md5, updatedAt: at, modifiedTime: modified, here: here)
                }
                return [
                    Merge.takeConflict(kept: take("aaa", 300, 10, false), lost: take("bbb", 200, 20, true)),
                    Merge.takeConflict(kept: take("aaa", nil, 20, true), lost: take("bbb", nil, 10, false)),
                    Merge.takeConflict(kept: take("aaa", 300, 20, false), lost: take("bbb", 300, 20, false)),
                ]
            },
            expected: [
                conflict("audio", kept: .string("aaa"), lost: .string("bbb"), .drive, .laterWrite),
                conflict("audio", kept: .string("aaa"), lost: .string("bbb"), .here, .driveTime),
                conflict("audio", kept: .string("aaa"), lost: .string("bbb"), .drive, .tieBreak),
            ]),
        Case(
            testDescription: "fields changed on one side only, or to the same value: no conflict",
            merge: {
                Merge.bookMerge(
                    local: book(300, title: "Same", position: 40), remote: book(200, title: "Same", hidden: true),
                    base: book(100), now: now
                ).conflicts
                    + Merge.clipMerge(
                        local: clip(300, note: "mine"), remote: clip(200, start: 9), base: clip(100), now: now
                    )
                    .conflicts + audio(local: "same", remote: "same", localAt: 300, remoteAt: 200)
            },
            expected: []),
    ]

    @Test("each rule names the field, the value kept and the value lost", arguments: cases)
    func conflictsPerRule(_ example: Case) {
        #expect(example.merge() == example.expected)
    }

    @Test("every rule has a case above")
    func everyRuleCovered() {
        let covered = Set(Self.cases.flatMap { $0.expected.map(\.rule) })
        #expect(covered == Set(Merge.Conflict.Rule.allCases))
    }
}
