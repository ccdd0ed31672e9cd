import Foundation
import GoogleEmulator
import IvyCore

/// The fourth writer: the Ivy phone app, changing Drive as the app does. It reads a backup
/// JSON, changes it, stamps its own `updated_at` (its own clock, a little skewed), and
/// replaces the file by delete-then-create; the same for a clip's MP3. It keeps every key it
/// finds, sometimes adds one ivy does not know (`app_color`), and leaves `hidden` out when false
/// half of the time (a missing `hidden` means false).
struct PhoneApp {
    let state: EmulatorState
    let email: String

    /// Zero to two changes on Drive (one or two when `eager`); returns what it did, for the log.
    /// `gap` is how long a replace leaves the name without a file between its delete and its
    /// create (a phone on a slow network), so a sync running meanwhile can list the gap.
    func act(
        round: Int, random: inout SplitMix64, ledger: inout Ledger, eager: Bool = false, gap: Duration? = nil
    ) async -> [String] {
        let acts = random.chance(0.35)
        guard acts || eager else { return [] }
        var done: [String] = []
        for _ in 0..<random.int(in: 1...2) {
            let drive = await DriveView(state: state, email: email)
            // The app only writes once ivy's folders exist (it would use the same ones).
            guard let books = drive.booksFolders.first, let clips = drive.clipsFolders.first else { break }
            let bookIDs = ledger.ordered(drive.ids(.book))
            let clipIDs = ledger.ordered(drive.ids(.clip).filter { drive.byName["clip_\($0).mp3"] != nil })
            let skew = Int64(random.int(in: -500...500))
            let now = Int64(Date().timeIntervalSince1970 * 1000) + skew
            switch random.weighted([4, 4, 1, 2]) {
            case 0:
                guard let id = random.pick(bookIDs), case .object(var fields)? = drive.json("book_\(id).json") else {
                    continue
                }
                var changed: [String] = []
                if random.chance(0.4) {
                    fields["title"] = .string("\(random.pick(words) ?? "Book") (app r\(round))")
                    changed.append("title")
                }
                if random.chance(0.5) {
                    fields["position"] = .number(Double(random.below(36_000)))
                    changed.append("position")
                }
                if random.chance(0.2) {
                    fields["artist"] = .string(random.pick(artists) ?? "Anon")
                    changed.append("artist")
                }
                if random.chance(0.15) {
                    fields["hidden"] = .bool(!(fields["hidden"]?.bool ?? false))
                    changed.append("hidden")
                }
                if changed.isEmpty {
                    fields["position"] = .number(Double(random.below(36_000)))
                    changed.append("position")
                }
                fields["updated_at"] = .number(Double(now))
                changed += decorate(&fields, id: id, random: &random, ledger: &ledger)
                await replace(
                    "book_\(id).json", in: books.id, content: JSON.object(fields).data, drive: drive, gap: gap)
                ledger.appWrote(
                    id, .book, object: fields, changed: changed, round: round, twins: twins("book_\(id).json", drive))
                done.append("app: edit book \(ledger.tag(id)) (\(changed.joined(separator: ", ")))")
            case 1:
                guard let id = random.pick(clipIDs), case .object(var fields)? = drive.json("clip_\(id).json") else {
                    continue
                }
                var changed: [String] = []
                if random.chance(0.5) {
                    fields["note"] = .string(phrase(&random, round: round, by: "app"))
                    changed.append("note")
                }
                if random.chance(0.3) {
                    fields["start"] = .number(Double(random.below(36_000)))
                    changed.append("start")
                }
                if random.chance(0.2) {
                    fields["duration"] = .number(Double(random.int(in: 1...120)))
                    changed.append("duration")
                }
                if random.chance(0.2) {
                    fields["transcription"] = .string(phrase(&random, round: round, by: "app transcript"))
                    changed.append("transcription")
                }
                let newAudio = random.chance(0.25) ? mp3(&random) : nil
                if newAudio != nil { changed.append("audio") }
                if changed.isEmpty {
                    fields["note"] = .string(phrase(&random, round: round, by: "app"))
                    changed.append("note")
                }
                fields["updated_at"] = .number(Double(now))
                changed += decorate(&fields, id: id, random: &random, ledger: &ledger)
                await replace(
                    "clip_\(id).json", in: clips.id, content: JSON.object(fields).data, drive: drive, gap: gap)
                ledger.appWrote(
                    id, .clip, object: fields, changed: changed, round: round, twins: twins("clip_\(id).json", drive))
                if let newAudio {
                    ledger.wroteAudio(id, newAudio)
                    await replace("clip_\(id).mp3", in: clips.id, content: newAudio, drive: drive, gap: gap)
                }
                done.append("app: edit clip \(ledger.tag(id)) (\(changed.joined(separator: ", ")))")
            case 2:
                let id = random.uuid()
                var fields: [String: JSON] = [
                    "id": .string(id), "title": .string("\(random.pick(words) ?? "Book") (app r\(round))"),
                    "artist": random.chance(0.5) ? .string(random.pick(artists) ?? "Anon") : .null, "artwork": .null,
                    "position": .number(Double(random.below(36_000))), "hidden": .bool(false),
                    "created_at": .number(Double(now)), "updated_at": .number(Double(now)),
                ]
                let extra = decorate(&fields, id: id, random: &random, ledger: &ledger)
                ledger.created(id, .book, origin: "round \(round) by the app", at: now)
                await replace("book_\(id).json", in: books.id, content: JSON.object(fields).data, drive: drive)
                ledger.appWrote(id, .book, object: fields, changed: [], round: round, creation: true)
                done.append("app: add book \(ledger.tag(id)) \(extra.joined(separator: ", "))")
            default:
                guard let book = random.pick(bookIDs) else { continue }
                let id = random.uuid()
                var fields: [String: JSON] = [
                    "id": .string(id), "book_id": .string(book), "start": .number(Double(random.below(36_000))),
                    "duration": .number(Double(random.int(in: 1...120))),
                    "note": random.chance(0.6) ? .string(phrase(&random, round: round, by: "app")) : .null,
                    "transcription": .null, "created_at": .number(Double(now)), "updated_at": .number(Double(now)),
                ]
                let extra = decorate(&fields, id: id, random: &random, ledger: &ledger)
                let audio = mp3(&random)
                ledger.created(id, .clip, origin: "round \(round) by the app", at: now)
                ledger.wroteAudio(id, audio)
                // The app writes the MP3 first, so no listing ever sees the JSON alone.
                await replace("clip_\(id).mp3", in: clips.id, content: audio, drive: drive)
                await replace("clip_\(id).json", in: clips.id, content: JSON.object(fields).data, drive: drive)
                ledger.appWrote(id, .clip, object: fields, changed: [], round: round, creation: true)
                done.append(
                    "app: add clip \(ledger.tag(id)) to book \(ledger.tag(book)) \(extra.joined(separator: ", "))")
            }
        }
        return done
    }

    /// Sometimes a key ivy does not know; sometimes no `hidden` key (when it is false).
    private func decorate(
        _ fields: inout [String: JSON], id: String, random: inout SplitMix64, ledger: inout Ledger
    ) -> [String] {
        var notes: [String] = []
        if random.chance(0.3) {
            fields["app_color"] = .string("teal")
            ledger.appKey(id, value: "teal")
            notes.append("+app_color")
        }
        if fields["hidden"] == .bool(false), random.chance(0.5) {
            fields["hidden"] = nil
            notes.append("no hidden key")
        }
        return notes
    }

    /// Two files of the name: what the app read may not be the library's latest state.
    private func twins(_ name: String, _ drive: DriveView) -> Bool { (drive.byName[name]?.count ?? 0) > 1 }

    /// Delete-then-create: every file of that name goes, then (after `gap`, if there was a
    /// file) one new file is made.
    private func replace(_ name: String, in folder: String, content: Data, drive: DriveView, gap: Duration? = nil) async
    {
        let old = drive.byName[name] ?? []
        for file in old { try? await state.trash(id: file.id) }
        if let gap, !old.isEmpty { try? await Task.sleep(for: gap) }
        let type = name.hasSuffix(".mp3") ? "audio/mpeg" : "application/json"
        await state.putFile(email: email, name: name, parents: [folder], content: content, mimeType: type)
    }
}

let words = ["Dune", "Emma", "Ulysses", "Beloved", "Middlemarch", "Solaris", "Kindred", "Walden", "Hyperion", "Ubik"]
let artists = ["Frank Herbert", "Jane Austen", "Toni Morrison", "Stanisław Lem", "Octavia Butler", "Ursula Le Guin"]

/// A short note; now and then two lines or a non-ASCII word.
func phrase(_ random: inout SplitMix64, round: Int, by author: String) -> String {
    var text =
        "\(author) r\(round): "
        + (0..<random.int(in: 1...4)).map { _ in random.pick(words) ?? "" }
        .joined(separator: " ")
    if random.chance(0.1) { text += "\nsecond line" }
    if random.chance(0.1) { text += " — café" }
    return text
}

/// An MP3-looking file (an ID3 header, then noise): mostly a few KB, sometimes a few hundred
/// KB so that an upload cut off part way has a middle to be cut in.
func mp3(_ random: inout SplitMix64) -> Data {
    let size = random.chance(0.1) ? random.int(in: 200_000...600_000) : random.int(in: 200...4_000)
    return Data(Array("ID3\u{4}\0".utf8) + random.bytes(size))
}
