import Foundation

/// A write refused because the file system holding ivy's files is full or read-only: said
/// as that, whichever file hit it (the library, a clip's audio, a download, the sign-in, the
/// log), rather than as the failed call's errno or SQLite's result code. Whoever throws it
/// has removed what it half wrote.
package struct StorageError: LocalizedError, Equatable, Sendable {
    package enum Problem: Sendable, Equatable {
        /// ENOSPC or EDQUOT: no space (or no quota) left.
        case full
        /// EROFS: mounted read-only.
        case readOnly
    }

    /// The file or directory that could not be written.
    package let path: String
    package let problem: Problem

    package init(path: String, problem: Problem) {
        self.path = path
        self.problem = problem
    }

    /// The storage problem behind a failed call's `errno`, or nil for any other failure.
    package init?(path: String, errno code: Int32) {
        switch code {
        case ENOSPC, EDQUOT: self.init(path: path, problem: .full)
        case EROFS: self.init(path: path, problem: .readOnly)
        default: return nil
        }
    }

    /// The storage problem behind a Foundation file error (a copy, a directory made), found
    /// in its POSIX error or its Cocoa code; nil for any other failure.
    package init?(path: String, error: any Error) {
        if let error = error as? StorageError {
            self = error
            return
        }
        let error = error as NSError
        if error.domain == NSPOSIXErrorDomain {
            self.init(path: path, errno: Int32(error.code))
            return
        }
        if error.domain == NSCocoaErrorDomain {
            switch CocoaError.Code(rawValue: error.code) {
            case .fileWriteOutOfSpace:
                self.init(path: path, problem: .full)
                return
            case .fileWriteVolumeReadOnly:
                self.init(path: path, problem: .readOnly)
                return
            default: break
            }
        }
        guard let underlying = error.userInfo[NSUnderlyingErrorKey] as? any Error else { return nil }
        self.init(path: path, error: underlying)
    }

    /// Looks at the file system holding `path` (or its nearest existing parent) after a
    /// failure that does not say why, as SQLite's do not (an I/O error, a database it could
    /// only open read-only): read-only, or without a free block, or nil when neither.
    package static func probe(_ path: String) -> StorageError? {
        var existing = path
        var info = statvfs()
        while statvfs(existing, &info) != 0 {
            let parent = (existing as NSString).deletingLastPathComponent
            guard !parent.isEmpty, parent != existing else { return nil }
            existing = parent
        }
        if info.f_flag & UInt(ST_RDONLY) != 0 { return StorageError(path: path, problem: .readOnly) }
        let space = Space(
            blocks: UInt64(info.f_blocks), freeBlocks: UInt64(info.f_bfree),
            availableBlocks: UInt64(info.f_bavail), files: UInt64(info.f_files),
            availableFiles: UInt64(info.f_favail))
        if space.isFull(asRoot: geteuid() == 0) { return StorageError(path: path, problem: .full) }
        return nil
    }

    /// The figures `statvfs` gives for a file system, kept apart from the call so the
    /// decision of when it is full can be checked with any figures.
    package struct Space: Sendable, Equatable {
        package var blocks: UInt64
        package var freeBlocks: UInt64
        package var availableBlocks: UInt64
        package var files: UInt64
        package var availableFiles: UInt64

        package init(blocks: UInt64, freeBlocks: UInt64, availableBlocks: UInt64, files: UInt64, availableFiles: UInt64)
        {
            self.blocks = blocks
            self.freeBlocks = freeBlocks
            self.availableBlocks = availableBlocks
            self.files = files
            self.availableFiles = availableFiles
        }

        /// Whether a writer can add nothing more: no block it may use (root may use the blocks
        /// reserved for it, about 5% on ext4, so another user's disk is full while some are
        /// still free) or no inode left for a new file. A file system that reports no blocks
        /// (or no inodes) at all, as some virtual ones do, is not said to be full for that.
        package func isFull(asRoot: Bool) -> Bool {
            let usable = asRoot ? freeBlocks : availableBlocks
            if blocks > 0, usable == 0 { return true }
            return files > 0 && availableFiles == 0
        }
    }

    package var errorDescription: String? {
        switch problem {
        case .full:
            "no space left on device for \(path): free some space on that disk and run the command again; "
                + "nothing was half written"
        case .readOnly:
            "\(path) is on a read-only file system: remount it read-write (or choose another home with --home) "
                + "and run the command again; nothing was written"
        }
    }
}
