package import Foundation
import GRDB
package import IvyCore
import IvySystem

/// A file in the history directory that is not what its name says.
package struct DamagedKeptAudio: Sendable, Equatable {
    /// Its name in the history directory (`<md5>.mp3`).
    package let name: String
    package let bytes: Int64
    /// The md5 of what it holds; nil when it could not be read.
    package let md5: String?
}

extension LibraryDatabase {
    /// Checks every MP3 the history keeps against its name and removes each whose content is
    /// not that md5 (a copy cut short by a kill before ivy wrote kept files under a temporary
    /// name, or a file changed in place by another program): no restore may use it, and the
    /// next replacement of that audio keeps it again. Returns what it removed.
    package func removeDamagedHistoryAudio() -> [DamagedKeptAudio] {
        let directory = paths.historyDirectory
        let files = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        var damaged: [DamagedKeptAudio] = []
        for file in files.sorted() where file.hasSuffix(".mp3") && !file.hasPrefix(".") {
            let path = directory + "/" + file
            let expected = String(file.dropLast(4))
            var info = stat()
            guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { continue }
            let md5 = try? LocalFile.md5(of: URL(fileURLWithPath: path))
            guard md5 != expected else { continue }
            damaged.append(DamagedKeptAudio(name: file, bytes: Int64(info.st_size), md5: md5))
            unlink(path)
        }
        return damaged
    }
}

extension EngineWriter {
    /// Keeps other takes of the clip's audio (downloaded from Drive, each of which lost to a
    /// newer take) in the history, each as the version of the clip its writer had: the JSON
    /// made with that MP3, exactly as Drive held it, and that MP3. They are recorded before
    /// `write` applies the winner; if `write` records no version of the clip (its row did
    /// not change), the clip as it is after it is recorded, so the newest version is never a
    /// take that lost, and no version pairs a take with fields it never had. Only `write`
    /// with the history off.
    package func keepOtherTakes(clipID: ClipID, takes: [(json: Data, audio: String)], then write: () throws -> Void)
        throws
    {
        guard !takes.isEmpty, try HistoryAudio.enabled(db) else { return try write() }
        let exists = try clip(id: clipID) != nil
        var lastTake: Int64?
        for take in takes {
            guard let md5 = try HistoryAudio.keep(take.audio, in: historyDirectory) else { continue }
            try db.execute(
                sql: Schema.clipVersionWithAudio,
                arguments: [clipID, exists ? "update" : "insert", String(decoding: take.json, as: UTF8.self), md5])
            lastTake = db.lastInsertedRowID
        }
        try write()
        guard let lastTake, try latestVersion(.clip(clipID)) == lastTake else { return }
        try db.execute(sql: Schema.clipVersionNow, arguments: [clipID])
    }
}
