import Foundation

/// A moment at which the soak read every device's library, with no `ivy` running, by Google's
/// time (the emulator's clock, the soak's real time: `at`, ms), in the middle of a stretch in
/// which nothing wrote, so that a time ivy recorded a little off Google's still falls on the
/// right side of it. Per device: what it held then and the clips its history held deleted
/// then. A device whose history then could not name the moment exactly has no entry (its
/// newest version was dated ahead, by its own unsure clock, or it knew Google's time only
/// roughly).
struct Moment {
    var number: Int
    var round: Int
    var at: Int64 = 0
    var held: [String: (state: DeviceState, tombstoned: Set<String>)] = [:]
}

/// What the restore checks found.
struct RestoreFindings {
    var checks = 0
    var mismatches: [String] = []
    var deletedExisting: [String] = []
}

/// One `ivy restore --at WHEN --yes [ID…]` on a copy of a device, compared with what the device
/// held at WHEN (`recorded`, with the clips its history held deleted then: `tombstoned`), what
/// the copy held just before the restore (`before`) and the ledger's record of when each entity
/// was made.
///
/// A whole-library restore:
/// - What the device held at WHEN comes back as it was: every synced field but `updated_at`,
///   and the audio, byte for byte (a clip deleted since comes back).
/// - What it did not hold at WHEN (it joined later, or had not synced it yet) and was made
///   before WHEN is left exactly as it was, `updated_at` included ("unknown here at WHEN:
///   left as is"); so is what was made after WHEN but with times that do not prove it.
/// - What was made after WHEN is deleted (a book hidden, a clip gone), and so is a clip its
///   history held deleted at WHEN.
///
/// "Made before WHEN" holds when the real time of making was before WHEN and every time the
/// maker's clock can have written as `created_at` was too; "after" when the real time of making
/// was after WHEN, and so was every time ivy can take for it: the earliest of `created_at` and
/// the times any version carries, which no clock puts more than `slack` before the real time
/// of making (a clock ahead only dates it later; Google's time as a device knows it is within a
/// second; a time from Drive is bounded by when Google received the file, after the making).
/// Otherwise (a clock ran ahead unsure: the maker's before WHEN, dated after) a restore may
/// rightly delete it or leave it exactly as it is, and both are accepted.
///
/// A restore of named books and clips puts each of them that the device held at WHEN back as
/// it was then, and leaves every other book and clip exactly as it was, those named included
/// (it never deletes).
///
/// An entity that existed at WHEN (held then, or made before WHEN) and that the restore
/// deleted or hid is counted apart, as `restore_deleted_existing`; any other difference is a
/// mismatch.
struct RestoreCheck {
    var mismatches: [String] = []
    var deletedExisting: [String] = []
    /// How far before the real time of making a time ivy takes for it can be (ms).
    static let slack: Int64 = 1_000

    /// True: made before `when`; false: after; nil: the clocks leave it open.
    static func madeBefore(_ id: String, when: Int64, ledger: Ledger) -> Bool? {
        guard let made = ledger.madeAt[id] else { return true }
        if made.real.upperBound <= when { return made.stamps.upperBound <= when ? true : nil }
        if made.real.lowerBound > when {
            return min(made.stamps.lowerBound, made.real.lowerBound - slack) > when ? false : nil
        }
        return nil
    }

    init(
        device: String, label: String, when: Int64, named: [String]? = nil, recorded: DeviceState,
        tombstoned: Set<String> = [], before: DeviceState, after: DeviceState, ledger: Ledger
    ) {
        let what = named.map { "restore of \($0.map(ledger.tag).joined(separator: ", ")) in" } ?? "restore of"
        let prefix = "\(what) a copy of \(device) to \(when) (\(label))"
        let synced = (
            book: Checker.bookFields.filter { $0 != "updated_at" },
            clip: Checker.clipFields.filter { $0 != "updated_at" }
        )
        func fail(_ text: String) { mismatches.append("restore mismatch: \(prefix): " + text) }
        func deleted(_ text: String) { deletedExisting.append("restore deleted existing: \(prefix): " + text) }
        let all = (
            books: ledger.ordered(Set(recorded.books.keys).union(before.books.keys).union(after.books.keys)),
            clips: ledger.ordered(Set(recorded.clips.keys).union(before.clips.keys).union(after.clips.keys))
        )
        for id in all.books {
            let what = "book \(ledger.tag(id))"
            let (now, was) = (after.books[id], before.books[id])
            let hiddenNow = now?["hidden"]?.bool == true
            let hiddenBefore = was?["hidden"]?.bool == true
            let unchanged =
                now.map { Checker.canonical($0, fields: Checker.bookFields) }
                == was.map { Checker.canonical($0, fields: Checker.bookFields) }
            if let then = recorded.books[id], named?.contains(id) ?? true {
                if now == nil || hiddenNow && !(then["hidden"]?.bool == true) {
                    deleted("\(what), held then, is deleted")
                    continue
                }
                let (want, got) = (
                    Checker.canonical(then, fields: synced.book), now.map { Checker.canonical($0, fields: synced.book) }
                )
                if want != got { fail("\(what) is \(got ?? [:]), was \(want)") }
                continue
            }
            guard let was else {
                if now != nil { fail("\(what), which it did not hold then nor before, is there") }
                continue
            }
            let leftAsIs = named != nil ? true : Self.madeBefore(id, when: when, ledger: ledger)
            if leftAsIs != false, unchanged { continue }
            if now == nil || hiddenNow && !hiddenBefore {
                if leftAsIs == true {
                    deleted(
                        "\(what), " + (named == nil ? "made before WHEN but unknown here then" : "not restored")
                            + ", is deleted")
                    continue
                }
                // Made after WHEN, or the clocks leave it open: deleted is right, if nothing else changed.
                let rest = Checker.bookFields.filter { $0 != "hidden" && $0 != "updated_at" }
                if now.map({ Checker.canonical($0, fields: rest) }) != Checker.canonical(was, fields: rest) {
                    fail("\(what), deleted, is \(now ?? .null), was \(was)")
                }
                continue
            }
            if leftAsIs == false, !hiddenNow {
                fail("\(what), made after WHEN, is not deleted")
            } else if !unchanged {
                fail("\(what), to be left as it is, was changed to \(now ?? .null) from \(was)")
            }
        }
        for id in all.clips {
            let what = "clip \(ledger.tag(id))"
            let (now, was) = (after.clips[id], before.clips[id])
            let unchanged =
                now.map { Checker.canonical($0, fields: Checker.clipFields) }
                == was.map { Checker.canonical($0, fields: Checker.clipFields) } && before.audio[id] == after.audio[id]
            if let then = recorded.clips[id], named?.contains(id) ?? true {
                guard let now else {
                    if was != nil {
                        deleted("\(what), held then, is deleted")
                    } else {
                        fail("\(what), held then and deleted since, is not back")
                    }
                    continue
                }
                let (want, got) = (
                    Checker.canonical(then, fields: synced.clip), Checker.canonical(now, fields: synced.clip)
                )
                if want != got { fail("\(what) is \(got), was \(want)") }
                if recorded.audio[id] != after.audio[id] { fail("\(what) has other audio than it had then") }
                continue
            }
            guard was != nil else {
                if now != nil { fail("\(what), which it did not hold then nor before, is there") }
                continue
            }
            let leftAsIs: Bool? =
                named != nil ? true : tombstoned.contains(id) ? false : Self.madeBefore(id, when: when, ledger: ledger)
            if leftAsIs != false, unchanged { continue }
            if now == nil {
                if leftAsIs == true {
                    deleted(
                        "\(what), " + (named == nil ? "made before WHEN but unknown here then" : "not restored")
                            + ", is deleted")
                }
                continue
            }
            if leftAsIs == false {
                fail(
                    "\(what), " + (tombstoned.contains(id) ? "deleted here at WHEN" : "made after WHEN")
                        + ", is still there")
            } else {
                let (got, want) = (
                    now.map { Checker.canonical($0, fields: Checker.clipFields) } ?? [:],
                    was.map { Checker.canonical($0, fields: Checker.clipFields) } ?? [:]
                )
                fail(
                    "\(what), to be left as it is, was changed to \(got) from \(want)"
                        + (before.audio[id] != after.audio[id] ? " (and its audio)" : ""))
            }
        }
    }
}
