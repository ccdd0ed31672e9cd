import Foundation

/// A moment at which the soak read every device's library, with no `ivy` running: what each
/// device held, and the time its own clock showed then (ms). A device whose clock showed
/// that time before (after a step back) has no entry: that time is no one moment there.
struct Moment {
    var number: Int
    var round: Int
    var held: [String: (state: DeviceState, at: Int64, real: Int64)] = [:]
}

/// What the restore checks found.
struct RestoreFindings {
    var checks = 0
    var mismatches: [String] = []
    var deletedExisting: [String] = []
}

/// One `ivy restore --at WHEN --yes` on a copy of a device, compared with what the device
/// held at WHEN (`recorded`), what the copy held just before the restore (`before`) and
/// the ledger's record of when each entity was made.
///
/// - What the device held at WHEN comes back as it was: every synced field but
///   `updated_at`, and the audio, byte for byte (a clip deleted since comes back).
/// - What it did not hold at WHEN (it joined later, or had not synced it yet) and was made
///   before WHEN is left exactly as it was, `updated_at` included ("unknown here at WHEN:
///   left as is").
/// - What was made after WHEN is deleted: a book hidden, a clip gone.
///
/// "Made before WHEN" holds when the maker's clock (what `created_at` carries) was before
/// WHEN by this device's clock and the real time of making was before the moment's real
/// time; "after" when both were after. When the two disagree (a clock was off: c made it
/// while 20 minutes ahead, or this is c restoring while ahead), a restore may rightly go
/// either way (ivy goes by `created_at` or the earliest time any version carries, both of
/// some clock), and both are accepted.
///
/// An entity that existed at WHEN (held then, or made before WHEN) and that the restore
/// deleted or hid is counted apart, as `restore_deleted_existing`; any other difference is a
/// mismatch.
struct RestoreCheck {
    var mismatches: [String] = []
    var deletedExisting: [String] = []

    init(
        device: String, label: String, when: (device: Int64, real: Int64), recorded: DeviceState,
        before: DeviceState, after: DeviceState, ledger: Ledger
    ) {
        let prefix = "restore of a copy of \(device) to \(when.device) (\(label))"
        /// True: made before WHEN; false: after; nil: the clocks disagree.
        func madeBefore(_ id: String) -> Bool? {
            guard let made = ledger.madeAt[id] else { return true }
            let (byStamp, byReal) = (made.stamp <= when.device, made.real <= when.real)
            return byStamp == byReal ? byStamp : nil
        }
        let synced = (
            book: Checker.bookFields.filter { $0 != "updated_at" },
            clip: Checker.clipFields.filter { $0 != "updated_at" }
        )
        for id in ledger.ordered(Set(recorded.books.keys).union(before.books.keys)) {
            let what = "book \(ledger.tag(id))"
            let now = after.books[id]
            let hiddenNow = now?["hidden"]?.bool == true
            if let then = recorded.books[id] {
                let hiddenThen = then["hidden"]?.bool == true
                if now == nil || hiddenNow && !hiddenThen {
                    deletedExisting.append("restore deleted existing: \(prefix): \(what), held then, is deleted")
                    continue
                }
                let (want, got) = (
                    Checker.canonical(then, fields: synced.book),
                    now.map {
                        Checker.canonical($0, fields: synced.book)
                    }
                )
                if want != got {
                    mismatches.append("restore mismatch: \(prefix): \(what) is \(got ?? [:]), was \(want)")
                }
            } else if let was = before.books[id], let madeBefore = madeBefore(id) {
                if madeBefore {
                    if now == nil || hiddenNow && was["hidden"]?.bool != true {
                        deletedExisting.append(
                            "restore deleted existing: \(prefix): \(what), made before WHEN but unknown here then, "
                                + "is deleted")
                        continue
                    }
                    let (want, got) = (
                        Checker.canonical(was, fields: Checker.bookFields),
                        now.map {
                            Checker.canonical($0, fields: Checker.bookFields)
                        }
                    )
                    if want != got {
                        mismatches.append(
                            "restore mismatch: \(prefix): \(what), unknown here at WHEN, was changed to \(got ?? [:]) "
                                + "from \(want)")
                    }
                } else if !hiddenNow {
                    mismatches.append("restore mismatch: \(prefix): \(what), made after WHEN, is not deleted")
                }
            }
        }
        for id in ledger.ordered(Set(recorded.clips.keys).union(before.clips.keys)) {
            let what = "clip \(ledger.tag(id))"
            let now = after.clips[id]
            if let then = recorded.clips[id] {
                guard let now else {
                    if before.clips[id] != nil {
                        deletedExisting.append("restore deleted existing: \(prefix): \(what), held then, is deleted")
                    } else {
                        mismatches.append(
                            "restore mismatch: \(prefix): \(what), held then and deleted since, "
                                + "is not back")
                    }
                    continue
                }
                let (want, got) = (
                    Checker.canonical(then, fields: synced.clip), Checker.canonical(now, fields: synced.clip)
                )
                if want != got { mismatches.append("restore mismatch: \(prefix): \(what) is \(got), was \(want)") }
                if recorded.audio[id] != after.audio[id] {
                    mismatches.append("restore mismatch: \(prefix): \(what) has other audio than it had then")
                }
            } else if let was = before.clips[id], let madeBefore = madeBefore(id) {
                guard madeBefore else {
                    if now != nil {
                        mismatches.append("restore mismatch: \(prefix): \(what), made after WHEN, is still there")
                    }
                    continue
                }
                guard let now else {
                    deletedExisting.append(
                        "restore deleted existing: \(prefix): \(what), made before WHEN but unknown here then, "
                            + "is deleted")
                    continue
                }
                let (want, got) = (
                    Checker.canonical(was, fields: Checker.clipFields),
                    Checker.canonical(now, fields: Checker.clipFields)
                )
                if want != got || before.audio[id] != after.audio[id] {
                    mismatches.append(
                        "restore mismatch: \(prefix): \(what), unknown here at WHEN, was changed to \(got) from \(want)"
                            + (before.audio[id] != after.audio[id] ? " (and its audio)" : ""))
                }
            }
        }
    }
}
