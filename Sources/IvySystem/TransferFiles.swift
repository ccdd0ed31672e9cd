import Foundation

/// The temporary files transfers leave beside ivy's audio: `.download-*` (a download being
/// checked before it is renamed into place) and `.upload-*` (the tail of a resumed upload).
/// The Drive client writes them, the store removes what a killed run left behind.
package enum TransferFiles {
    package static let downloadPrefix = ".download-"
    package static let uploadPrefix = ".upload-"

    /// Removes what a killed run left in `directory`. Called under the sync lock, so no
    /// other transfer is using them. Returns how many were removed.
    @discardableResult
    package static func removeLeftovers(in directory: String) -> Int {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        var removed = 0
        for name in names where name.hasPrefix(downloadPrefix) || name.hasPrefix(uploadPrefix) {
            if unlink(directory + "/" + name) == 0 { removed += 1 }
        }
        return removed
    }
}
