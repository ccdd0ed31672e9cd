import Foundation
package import IvyCore
import IvySystem

/// Writes `ivy export`'s archive.
package enum ArchiveWriter {
    /// Writes the archive at `path`: `files` after `ivy-export.json`, which lists each with its
    /// md5 and size, every entry dated `newest`. Then reads it back whole and returns what it
    /// found, so an MP3 replaced while it was read is caught now, not on the day the copy is
    /// needed. Blocks: run it on the blocking pool.
    package static func write(
        _ files: [(name: String, source: ArchiveSource)], books: Int, clips: Int, newest: Milliseconds,
        ivyVersion: String, at: String?, to path: String, replacing: Bool
    ) throws -> VerifiedArchive {
        var listed: [ArchiveManifest.File] = []
        for (name, source) in files {
            switch source {
            case .data(let data):
                var digest = MD5()
                digest.update(data)
                listed.append(.init(name: name, md5: digest.finalize(), size: Int64(data.count)))
            case .file(let path):
                let url = URL(fileURLWithPath: path)
                listed.append(.init(name: name, md5: try LocalFile.md5(of: url), size: try LocalFile.size(of: url)))
            }
        }
        let manifest = ArchiveManifest(ivyVersion: ivyVersion, at: at, books: books, clips: clips, files: listed)
        try ZipFile.write(
            [(ArchiveManifest.fileName, .data(try manifest.encoded()))] + files, to: path,
            date: Date(timeIntervalSince1970: Double(newest) / 1000), replacing: replacing)
        return VerifiedArchive.read(path: path)
    }
}
