import Foundation
import IvyCore
import Testing

@Suite("Three-way merge against the base")
struct ThreeWayMergeTests {
    let now: Milliseconds = 1_795_305_600_000

    func book(
        _ updated: Milliseconds, title: String = "Dune", artist: String? = "Frank Herbert", position: Double = 2700,
        hidden: Bool = false, extras: [String: JSONValue] = [:]
    ) -> BookBackup {
        BookBackup(
            id: "b1", title: title, artist: artist, position: position, hidden: hidden, createdAt: 10,
            updatedAt: updated,
            extras: extras)
    }

    func clip(
        _ updated: Milliseconds, note: String? = "seed", start: Double = 60, duration: Double = 5,
        transcription: String? = nil
    ) -> ClipBackup {
        ClipBackup(
            id: "c1", bookID: "b1", start: start, duration: duration, note: note, transcription: transcription,
            createdAt: 10, updatedAt: updated)
    }

    @Test("a rewind on one device survives a title edit on the other, in both directions")
    func rewindSurvives() {
        let base = book(100, position: 2700)
        let rewound = book(300, position: 30)
        let retitled = book(200, title: "Dune (2021 edition)")
        for (local, remote) in [(rewound, retitled), (retitled, rewound)] {
            let merged = Merge.bookMerge(local: local, remote: remote, base: base, now: now)
            #expect(merged.value.position == 30)
            #expect(merged.value.title == "Dune (2021 edition)")
            #expect(merged.conflicts.isEmpty)
        }
        // Without the base the old two-way rule (furthest position) undoes the rewind.
        #expect(Merge.book(local: rewound, remote: retitled, now: now).position == 2700)
    }

    @Test("an unarchive on one device survives an edit of another field elsewhere")
    func unarchiveSurvives() {
        let base = book(100, hidden: true)
        let unarchived = book(300, hidden: false)
        let moved = book(200, position: 3000, hidden: true)
        let merged = Merge.book(local: moved, remote: unarchived, base: base, now: now)
        #expect(merged.hidden == false)
        #expect(merged.position == 3000)
    }

    @Test("a field changed on both sides still follows the rules and is named as a conflict")
    func bothChangedUsesRules() {
        let base = book(100, title: "Dune", position: 100, hidden: false)
        let mine = book(300, title: "Mine", position: 200, hidden: false)
        let theirs = book(200, title: "Theirs", position: 50, hidden: true)
        let merged = Merge.bookMerge(local: mine, remote: theirs, base: base, now: now)
        #expect(merged.value.title == "Mine")  // the later write
        #expect(merged.value.position == 200)  // the furthest
        #expect(merged.value.hidden)  // hidden wins: only their side changed it
        #expect(merged.conflicts.map(\.field).sorted() == ["position", "title"])
    }

    @Test("a cleared artist on one side stays cleared: a change to nil is a change")
    func clearedFieldSurvives() {
        let base = book(100, artist: "Frank Herbert")
        let cleared = book(200, artist: nil)
        let moved = book(300, position: 4000)
        #expect(Merge.book(local: moved, remote: cleared, base: base, now: now).artist == nil)
        #expect(Merge.book(local: cleared, remote: moved, base: base, now: now).artist == nil)
    }

    @Test("clip: a note edited here and a start moved there both survive; notes edited on both are joined")
    func clipFields() {
        let base = clip(100, note: "seed", start: 60)
        let noted = clip(300, note: "seed, and more")
        let moved = clip(200, start: 75)
        let merged = Merge.clipMerge(local: noted, remote: moved, base: base, now: now)
        #expect(merged.value.note == "seed, and more")
        #expect(merged.value.start == 75)
        #expect(merged.conflicts.isEmpty)

        let other = clip(250, note: "a different thought")
        let joined = Merge.clip(local: noted, remote: other, base: base, now: now)
        #expect(joined.note == "seed, and more\n\n\(Merge.conflictMarker(now))\na different thought")
    }

    @Test("clip: a start moved back on the earlier write still wins when the other side did not touch it")
    func olderSingleSidedChangeWins() {
        let base = clip(100, start: 60, duration: 5)
        let earlier = clip(200, start: 10)
        let later = clip(300, duration: 9)
        let merged = Merge.clip(local: later, remote: earlier, base: base, now: now)
        #expect(merged.start == 10 && merged.duration == 9)
    }

    @Test("unknown keys merge three-way: a key removed on one side stays removed, one added survives")
    func extrasThreeWay() {
        let base = book(100, extras: ["rating": .number(4), "shelf": .string("sf")])
        let mine = book(300, extras: ["rating": .number(4)])  // removed shelf
        let theirs = book(200, extras: ["rating": .number(5), "shelf": .string("sf"), "tag": .bool(true)])
        let merged = Merge.book(local: mine, remote: theirs, base: base, now: now)
        #expect(merged.extras == ["rating": .number(5), "tag": .bool(true)])
    }

    @Test("merging with the base is deterministic: both devices compute the same book")
    func symmetric() {
        let base = book(100, title: "Dune", position: 100)
        let a = book(300, title: "A", position: 10)
        let b = book(300, title: "B", artist: nil, position: 100, hidden: true)
        #expect(
            Merge.book(local: a, remote: b, base: base, now: now)
                == Merge.book(local: b, remote: a, base: base, now: now))
    }

    // MARK: audio

    func audio(
        local: String?, remote: String, base: String?, baseFile: DriveFileID? = "f1", remoteFile: DriveFileID = "f1",
        localAt: Milliseconds = 200, remoteAt: Milliseconds = 100
    ) -> (choice: Merge.AudioChoice, conflict: Bool) {
        Merge.audio(
            Merge.AudioState(
                localMD5: local, localUpdatedAt: localAt, remoteMD5: remote, remoteFileID: remoteFile,
                remoteUpdatedAt: remoteAt, baseMD5: base, baseFileID: baseFile))
    }

    @Test("audio changed here only: the local recording is kept, even when Drive's JSON is newer")
    func localAudioKept() {
        let result = audio(local: "new", remote: "old", base: "old", localAt: 100, remoteAt: 900)
        #expect(result.choice == .local && !result.conflict)
    }

    @Test("audio changed on Drive only: Drive's file is taken")
    func remoteAudioTaken() {
        let result = audio(local: "old", remote: "new", base: "old", remoteFile: "f2")
        #expect(result.choice == .remote && !result.conflict)
    }

    @Test("audio changed on both sides: the newer updated_at wins and it is a conflict")
    func bothAudioChanged() {
        let newerHere = audio(
            local: "mine", remote: "theirs", base: "old", remoteFile: "f2", localAt: 300, remoteAt: 200)
        #expect(newerHere.choice == .local && newerHere.conflict)
        let newerThere = audio(
            local: "mine", remote: "theirs", base: "old", remoteFile: "f2", localAt: 200, remoteAt: 300)
        #expect(newerThere.choice == .remote && newerThere.conflict)
    }

    @Test("audio without a recorded md5: Drive's new file against different local bytes is a conflict, never silent")
    func noBaseAudio() {
        let replacedThere = audio(
            local: "mine", remote: "theirs", base: nil, remoteFile: "f2", localAt: 300, remoteAt: 200)
        #expect(replacedThere == (.local, true))
        let sameFile = audio(local: "mine", remote: "theirs", base: nil)
        #expect(sameFile == (.local, false))
        #expect(audio(local: nil, remote: "theirs", base: "old") == (.remote, false))
        #expect(audio(local: "same", remote: "same", base: "old", remoteFile: "f9") == (.local, false))
    }
}
