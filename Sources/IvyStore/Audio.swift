import Foundation
import IvyCore
import IvySystem

/// Clip audio on disk: validated before anything is written, copied in through a
/// temporary file that is renamed into place, so an interrupted copy leaves no partial MP3.
enum AudioFiles {
    /// Checks that `path` is a regular MP3 file within the size cap.
    static func validate(_ path: String) throws {
        var info = stat()
        guard stat(path, &info) == 0 else {
            if errno == ENOENT { throw StoreError.audioMissing(path: path) }
            throw StoreError.audioUnreadable(path: path, reason: String(cString: strerror(errno)))
        }
        guard info.st_mode & S_IFMT == S_IFREG else { throw StoreError.audioNotAFile(path: path) }
        let size = Int64(info.st_size)
        guard AudioRules.allows(size) else { throw StoreError.audioTooLarge(path: path, bytes: size) }
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw StoreError.audioUnreadable(path: path, reason: "permission denied")
        }
        defer { try? handle.close() }
        let header = (try? handle.read(upToCount: AudioRules.sniffLength)) ?? Data()
        guard AudioRules.looksLikeMP3(header) else { throw StoreError.audioNotMP3(path: path) }
    }

    /// Copies `source` to a hidden temporary file in `directory`, flushed to disk.
    static func stage(_ source: String, in directory: String) throws -> String {
        try Directories.ensurePrivate(directory)
        let temporary = stagingPath(in: directory)
        do {
            try FileManager.default.copyItem(atPath: source, toPath: temporary)
            let descriptor = open(temporary, O_RDONLY)
            if descriptor >= 0 {
                fsync(descriptor)
                close(descriptor)
            }
            return temporary
        } catch {
            try? FileManager.default.removeItem(atPath: temporary)
            if let storage = StorageError(path: directory, error: error) { throw storage }
            throw StoreError.audioCopyFailed(path: directory, reason: error.localizedDescription)
        }
    }

    /// A fresh hidden name in `directory` for audio on its way in (a copy or a download).
    static func stagingPath(in directory: String) -> String {
        directory + "/.incoming-\(UUID().uuidString.lowercased()).mp3"
    }

    /// Atomically puts a staged file at `destination`, replacing any file there.
    static func place(_ staged: String, at destination: String) throws {
        if rename(staged, destination) != 0 {
            let code = errno
            if let storage = StorageError(path: destination, errno: code) { throw storage }
            throw StoreError.audioCopyFailed(path: destination, reason: String(cString: strerror(code)))
        }
    }

    static func remove(_ path: String) {
        _ = unlink(path)
    }
}

extension LibraryDatabase {
    /// A fresh `.download-` path in the audio directory (created private when missing) for an
    /// MP3 on its way in from Drive. It is moved into place only inside the transaction that
    /// checks its row (`EngineWriter.placeAudio`); if ivy is killed first, the next sync
    /// removes it (`removeTransferLeftovers`).
    package func downloadStagingPath() throws -> String {
        try Directories.ensurePrivate(paths.audioDirectory)
        return paths.audioDirectory + "/" + TransferFiles.downloadPrefix + UUID().uuidString + ".mp3"
    }

    /// Removes a staged file that was not placed (or was, and so is gone already).
    package func discardStagedAudio(_ path: String) {
        AudioFiles.remove(path)
    }

    /// Removes a clip's audio, after its row is gone.
    package func removeAudio(clipID: String) {
        AudioFiles.remove(audioPath(clipID: clipID))
    }

    /// Removes the transfer files a killed run left beside the audio. Only under the sync
    /// lock: then no other transfer is using them.
    package func removeTransferLeftovers() {
        TransferFiles.removeLeftovers(in: paths.audioDirectory)
    }

    /// Whether the clip's audio is on disk.
    package func hasAudio(clipID: String) -> Bool {
        FileManager.default.fileExists(atPath: audioPath(clipID: clipID))
    }

    /// The md5 of the clip's audio, or nil when there is no file.
    package func audioMD5(clipID: String) throws -> String? {
        guard hasAudio(clipID: clipID) else { return nil }
        return try LocalFile.md5(of: URL(fileURLWithPath: audioPath(clipID: clipID)))
    }
}
