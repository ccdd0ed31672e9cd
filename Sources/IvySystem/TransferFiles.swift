import Foundation

/// The temporary files transfers leave beside ivy's audio: `.download-*` (a download being
/// checked before it is renamed into place), `.upload-*` (the tail of a resumed upload) and
/// `.incoming-*` (an MP3 a command copies in, `clip add --audio` or a restore, before it is
/// renamed into place). The Drive client and the store write them, the store removes what a
/// killed run left behind.
package enum TransferFiles {
    package static let downloadPrefix = ".download-"
    package static let uploadPrefix = ".upload-"
    package static let incomingPrefix = ".incoming-"

    /// A fresh hidden name in `directory` for an MP3 on its way in (a copy, or one read out of
    /// an archive), swept by `removeLeftovers` if it is never renamed into place.
    package static func incomingPath(in directory: String) -> String {
        directory + "/" + incomingPrefix + "\(UUID().uuidString.lowercased()).mp3"
    }

    /// Removes what a killed run left in `directory`. Called under the sync lock, so no other
    /// transfer is using a `.download-` or `.upload-` file; an `.incoming-` one belongs to a
    /// command that takes no sync lock (`clip add`), so it goes only once its inode changed
    /// (it was made, or linked, there) at or before `incomingBefore` (seconds since the
    /// epoch): a command copying one in now keeps it. Returns how many were removed.
    @discardableResult
    package static func removeLeftovers(in directory: String, incomingBefore: Int64 = .min) -> Int {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        var removed = 0
        for name in names {
            let path = directory + "/" + name
            if name.hasPrefix(incomingPrefix) {
                var info = stat()
                guard lstat(path, &info) == 0, Int64(info.st_ctim.tv_sec) <= incomingBefore else { continue }
            } else if !name.hasPrefix(downloadPrefix) && !name.hasPrefix(uploadPrefix) {
                continue
            }
            if unlink(path) == 0 { removed += 1 }
        }
        return removed
    }
}
