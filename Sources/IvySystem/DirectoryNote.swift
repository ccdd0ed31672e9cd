import Foundation

/// A line ivy keeps in one of its directories while the path to it cannot be trusted (a
/// directory above it others can write to, `PrivateDirectory.ancestorProblem`): read and
/// written through a descriptor of the directory itself, opened without following a link and
/// checked to be the user's and writable by no one else, so no rename above it can send the
/// read or the write anywhere else. Nothing else is created: a directory that is missing, or
/// not private, holds no note.
package struct DirectoryNote: Sendable {
    package let directory: String
    package let name: String

    package init(_ name: String, in directory: String) {
        self.name = name
        self.directory = directory
    }

    /// The note's text, or nil when there is none (or it cannot be read).
    package func read() -> String? {
        withDirectory { descriptor in
            let file = openat(descriptor, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
            guard file >= 0 else { return nil }
            let handle = FileHandle(fileDescriptor: file, closeOnDealloc: true)
            guard let data = try? handle.read(upToCount: 64 << 10) else { return nil }
            return String(decoding: data, as: UTF8.self)
        }
    }

    /// Replaces the note with `text` (mode 0600); false when it could not be kept.
    @discardableResult
    package func write(_ text: String) -> Bool {
        withDirectory { descriptor in
            let file = openat(descriptor, name, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0o600)
            guard file >= 0 else { return false }
            defer { close(file) }
            fchmod(file, 0o600)
            return PrivateFile.writeAll(Data(text.utf8), to: file) == nil
        } ?? false
    }

    /// Removes the note, if there is one.
    package func remove() {
        _ = withDirectory { descriptor in unlinkat(descriptor, name, 0) }
    }

    /// Whether the directory is one a note can be kept in: the user's, private, not a link.
    package var directoryIsPrivate: Bool { withDirectory { _ in true } ?? false }

    /// `body` with a descriptor of the directory, when it is a directory (not a link to one)
    /// that belongs to the user and that no one else may write to.
    private func withDirectory<Result>(_ body: (Int32) -> Result?) -> Result? {
        let descriptor = open(directory, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0,
            UnsafeDirectoryError.check(
                path: directory, mode: UInt32(info.st_mode), owner: UInt32(info.st_uid), user: UInt32(geteuid()))
                == nil
        else { return nil }
        return body(descriptor)
    }
}
