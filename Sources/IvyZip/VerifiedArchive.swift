import Foundation
package import IvyCore
package import IvySystem

/// An archive `ivy export` wrote, read whole and checked: every file the list names, with its
/// md5 and size, every JSON as a sync reads one from Drive. Anything may have written it.
package struct VerifiedArchive: Sendable {
    package var manifest: ArchiveManifest?
    /// Everything wrong with it, each said once; empty when it can be imported.
    package var problems: [String] = []
    package var books: [BookBackup] = []
    package var clips: [ClipBackup] = []
    /// Each clip's MP3, copied out to the staging directory given (flushed), when one was.
    package var audio: [ClipID: String] = [:]
    package var mp3s = 0
    package var bytes: Int64 = 0
    /// The disk the MP3s were copied out to is full or read-only: the archive was not read
    /// whole, and nothing is said of it.
    package var storage: StorageError?

    package var ok: Bool { problems.isEmpty }

    /// Reads the archive at `path`. With `staging`, each MP3 is also copied there (0600) as it
    /// is checked; the caller removes those copies when it does not use them. Blocks: run it on
    /// the blocking pool.
    package static func read(path: String, staging: String? = nil) -> VerifiedArchive {
        var archive = VerifiedArchive()
        do {
            try archive.check(path: path, staging: staging)
        } catch let storage as StorageError {
            archive.storage = storage
            archive.problems.append(storage.errorDescription ?? "\(storage.path) cannot be written")
        } catch let failure as ZipFile.Failure {
            archive.problems.append(Self.text(failure))
        } catch {
            archive.problems.append("it cannot be read: \(error)")
        }
        if !archive.ok { archive.discardStaged() }
        return archive
    }

    /// Removes the MP3s copied out.
    package mutating func discardStaged() {
        for path in audio.values { try? FileManager.default.removeItem(atPath: path) }
        audio = [:]
    }

    private static func text(_ failure: ZipFile.Failure) -> String {
        switch failure {
        case .unreadable(let reason): "it is \(reason)"
        case .damaged(let name, let reason): "\(TerminalText.escaped(name)): \(reason)"
        case .tooLarge(let name, let limit): "\(TerminalText.escaped(name)) holds more than the \(limit) bytes listed"
        case .exists(let path): "\(path) exists"
        case .cannotWrite(let path, let reason): "\(path) cannot be written: \(reason)"
        }
    }

    private mutating func check(path: String, staging: String?) throws {
        let zip = try ZipFile.Reader(path: path)
        guard zip.entries.contains(where: { $0.name == ArchiveManifest.fileName }) else {
            problems.append("it has no \(ArchiveManifest.fileName): it is not an archive `ivy export` wrote")
            return
        }
        let listing = try zip.data(ArchiveManifest.fileName, limit: ArchiveManifest.sizeLimit)
        guard let manifest = ArchiveManifest.decode(listing) else {
            problems.append("its \(ArchiveManifest.fileName) does not read as the list of files `ivy export` writes")
            return
        }
        self.manifest = manifest
        problems += manifest.problems(entries: zip.entries.map { ($0.name, $0.size) })
        guard ok else { return }
        var bookIDs: Set<BookID> = []
        for file in manifest.files {
            guard let name = EntityFileName(parsing: file.name) else { continue }
            var digest = MD5()
            var count: Int64 = 0
            var head = Data()
            var data = Data()
            var output: FileHandle?
            if name.format == .mp3, let staging, let clipID = name.key.clipID {
                let target = TransferFiles.incomingPath(in: staging)
                guard
                    FileManager.default.createFile(
                        atPath: target, contents: nil, attributes: [.posixPermissions: 0o600])
                else { throw StorageError(path: target, errno: errno) ?? CocoaError(.fileWriteUnknown) }
                audio[clipID] = target
                output = try FileHandle(forWritingTo: URL(fileURLWithPath: target))
            }
            defer { try? output?.close() }
            try zip.read(file.name, limit: file.size) { chunk in
                digest.update(chunk)
                count += Int64(chunk.count)
                if name.format == .json {
                    data.append(chunk)
                } else if head.count < AudioRules.sniffLength {
                    head.append(chunk.prefix(AudioRules.sniffLength - head.count))
                }
                do {
                    try output?.write(contentsOf: chunk)
                } catch {
                    throw StorageError(path: staging ?? path, error: error) ?? error
                }
            }
            do {
                try output?.synchronize()
            } catch {
                throw StorageError(path: staging ?? path, error: error) ?? error
            }
            bytes += count
            guard count == file.size else {
                problems.append("\(file.name) is \(count) bytes, shorter than the \(file.size) listed: cut short")
                continue
            }
            guard digest.finalize() == file.md5 else {
                problems.append("\(file.name) is not what was exported: its md5 differs from the one listed")
                continue
            }
            switch (name.key, name.format) {
            case (.book(let id), .json):
                do {
                    books.append(try BackupCodec.decodeBook(data, expectedID: id))
                    bookIDs.insert(id)
                } catch {
                    problems.append("\(file.name): \(error.reason)")
                }
            case (.clip(let id), .json):
                do {
                    clips.append(try BackupCodec.decodeClip(data, expectedID: id))
                } catch {
                    problems.append("\(file.name): \(error.reason)")
                }
            case (.clip, .mp3):
                mp3s += 1
                if !AudioRules.looksLikeMP3(head) { problems.append("\(file.name) is not an MP3") }
            default:
                break
            }
        }
        for clip in clips where !bookIDs.contains(clip.bookID) {
            problems.append("clip_\(clip.id).json is a clip of book \(clip.bookID), which is not in the archive")
        }
    }
}
