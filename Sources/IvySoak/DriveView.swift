import Foundation
import GoogleEmulator

/// One account's Drive as the emulator holds it now: ivy's folders and the files in them
/// (trashed ones left out, as every client's listing leaves them out).
struct DriveView {
    let ivyFolders: [DriveFile]
    let booksFolders: [DriveFile]
    let clipsFolders: [DriveFile]
    /// Files in the books and clips folders by name, oldest first.
    let byName: [String: [DriveFile]]
    /// Folder twins: more than one folder of one name in one parent.
    let folderTwins: [String]

    init(state: EmulatorState, email: String) async {
        let all = await state.dump(email: email).filter { !$0.explicitlyTrashed }
        let folders = all.filter(\.isFolder)
        ivyFolders = folders.filter { $0.name == "Ivy" && $0.parents == ["root"] }
        let ivyIDs = Set(ivyFolders.map(\.id))
        booksFolders = folders.filter { $0.name == "books" && $0.parents.contains { ivyIDs.contains($0) } }
        clipsFolders = folders.filter { $0.name == "clips" && $0.parents.contains { ivyIDs.contains($0) } }
        let homes = Set((booksFolders + clipsFolders).map(\.id))
        var byName: [String: [DriveFile]] = [:]
        for file in all where !file.isFolder && file.parents.contains(where: { homes.contains($0) }) {
            byName[file.name, default: []].append(file)
        }
        self.byName = byName
        var twins: [String] = []
        for (key, group) in Dictionary(grouping: folders, by: { "\($0.parents.joined(separator: ","))/\($0.name)" })
        where group.count > 1 {
            twins.append("\(group.count) folders \(group[0].name) in \(key.split(separator: "/").first ?? "root")")
        }
        folderTwins = twins.sorted()
    }

    /// The newest file of that name (the one a reader is most likely to see when there are twins).
    func newest(_ name: String) -> DriveFile? {
        byName[name]?.max { ($0.modifiedTime, $0.createdTime) < ($1.modifiedTime, $1.createdTime) }
    }

    func json(_ name: String) -> JSON? { newest(name).flatMap { JSON.parse($0.content) } }

    /// Entity ids with a backup JSON of that kind (`book` or `clip`).
    func ids(_ kind: Ledger.Kind) -> [String] {
        byName.keys.compactMap { name in
            let prefix = "\(kind.rawValue)_"
            guard name.hasPrefix(prefix), name.hasSuffix(".json") else { return nil }
            return String(name.dropFirst(prefix.count).dropLast(".json".count))
        }
    }

    /// Ids with an MP3 on Drive.
    var mp3IDs: [String] {
        byName.keys.compactMap { name in
            guard name.hasPrefix("clip_"), name.hasSuffix(".mp3") else { return nil }
            return String(name.dropFirst("clip_".count).dropLast(".mp3".count))
        }
    }
}
