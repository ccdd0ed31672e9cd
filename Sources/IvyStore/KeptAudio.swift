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
    /// Keeps other takes of the clip's audio (the MP3s at `paths`, downloaded from Drive, which
    /// lost to a newer take) in the history, each as a version of the clip with `json` and that
    /// MP3, recorded before the write that applies the winner; then the clip as it is here
    /// again, so that the newest version never names a take that lost. Nothing with the
    /// history off.
    package func keepOtherTakes(clipID: ClipID, json: Data, audio paths: [String]) throws {
        guard !paths.isEmpty, try HistoryAudio.enabled(db) else { return }
        let exists = try clip(id: clipID) != nil
        for path in paths {
            guard let md5 = try HistoryAudio.keep(path, in: historyDirectory) else { continue }
            try db.execute(
                sql: Schema.clipVersionWithAudio,
                arguments: [clipID, exists ? "update" : "insert", String(decoding: json, as: UTF8.self), md5])
        }
        if exists { try db.execute(sql: Schema.clipVersionNow, arguments: [clipID]) }
    }
}
