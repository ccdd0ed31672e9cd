import Foundation
import Synchronization

/// `ivy.log`: lines appended to a private file, rotated once (to `ivy.log.1`) past `limit`
/// bytes. Each line opens the file anew, so a log removed or rotated meanwhile is recreated.
package final class LogFile: Sendable {
    package let path: String
    package let limit: Int
    private let lock = Mutex(())

    package init(path: String, limit: Int) {
        self.path = path
        self.limit = limit
    }

    /// Checks that the log can be written (creating it 0600 in a private directory), so that
    /// a log that cannot be (a symbolic link planted at its path, a directory) is an error
    /// before a sync starts rather than lines silently lost.
    package static func prepare(path: String) throws {
        try PrivateDirectory.ensure((path as NSString).deletingLastPathComponent)
        close(try PrivateFile.open(path, .append))
    }

    /// Appends one line; a log that cannot be opened loses it rather than stopping ivy. A line
    /// a full disk cut short is cut off whole again, so every line of the log (JSON lines
    /// included) still reads.
    package func append(_ line: String) {
        lock.withLock { _ in
            var info = stat()
            if lstat(path, &info) == 0, Int(info.st_size) > limit {
                rename(path, path + ".1")
                CrashPoints.reach(.logRotateAfterRename)
            }
            guard let descriptor = try? PrivateFile.open(path, .append) else { return }
            defer { close(descriptor) }
            var before = stat()
            guard fstat(descriptor, &before) == 0 else { return }
            if PrivateFile.writeAll(Data(line.utf8), to: descriptor) != nil {
                _ = ftruncate(descriptor, before.st_size)
            }
        }
    }
}
