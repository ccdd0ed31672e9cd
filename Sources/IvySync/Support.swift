import Foundation
import IvyCore
import IvyGoogle
import Logging
import Synchronization

/// The exclusive lock one sync holds for its whole run: `flock` on the lock file, which the
/// operating system releases if ivy dies, with the holder's process id written inside.
/// `ivy login` and `ivy logout` take it too, so a sync's token refresh never writes back the
/// token of an account that was signed out or replaced meanwhile.
package final class SyncLock: Sendable {
    private let descriptor: Int32

    private init(descriptor: Int32) { self.descriptor = descriptor }

    package enum Outcome: Sendable {
        case acquired(SyncLock)
        /// Another process holds it; its id when it could be read.
        case busy(pid: Int32?)
    }

    /// Takes the lock if it is free, without waiting.
    package static func acquire(path: String) throws -> Outcome {
        let descriptor = try openLockFile(path)
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            let pid = holder(descriptor)
            close(descriptor)
            return .busy(pid: pid)
        }
        return .acquired(SyncLock(holding: descriptor))
    }

    /// Takes the lock, waiting as long as another process holds it; `waiting` runs once,
    /// before the wait, with the holder's process id when it could be read.
    package static func acquireWaiting(path: String, waiting: (Int32?) -> Void) throws -> SyncLock {
        let descriptor = try openLockFile(path)
        if flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            waiting(holder(descriptor))
            while flock(descriptor, LOCK_EX) != 0 {
                guard errno == EINTR else {
                    let reason = String(cString: strerror(errno))
                    close(descriptor)
                    throw SyncFileError(path: path, reason: reason)
                }
            }
        }
        return SyncLock(holding: descriptor)
    }

    /// Opens (creating) the lock file 0600 without following a symbolic link: one planted
    /// there would make ivy truncate and write whatever file it points to.
    private static func openLockFile(_ path: String) throws -> Int32 {
        let directory = (path as NSString).deletingLastPathComponent
        try PrivateDirectory.ensure(directory)
        let descriptor = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw SyncFileError(path: path, errno: errno) }
        fchmod(descriptor, 0o600)
        return descriptor
    }

    private static func holder(_ descriptor: Int32) -> Int32? {
        var buffer = [UInt8](repeating: 0, count: 32)
        let count = pread(descriptor, &buffer, buffer.count, 0)
        guard count > 0 else { return nil }
        return Int32(String(decoding: buffer[0..<count], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
    }

    private convenience init(holding descriptor: Int32) {
        ftruncate(descriptor, 0)
        let pid = "\(getpid())\n"
        _ = pid.withCString { pwrite(descriptor, $0, strlen($0), 0) }
        self.init(descriptor: descriptor)
    }

    deinit {
        flock(descriptor, LOCK_UN)
        close(descriptor)
    }
}

/// A lock or log file ivy cannot use, with the fix.
package struct SyncFileError: LocalizedError {
    package let path: String
    package let reason: String

    init(path: String, reason: String) {
        self.path = path
        self.reason = reason
    }

    init(path: String, errno code: Int32) {
        self.path = path
        reason =
            code == ELOOP
            ? "it is a symbolic link, which ivy does not follow; remove it (`rm \(path)`) and run ivy again"
            : String(cString: strerror(code))
    }

    package var errorDescription: String? { "cannot use \(path): \(reason)" }
}

/// swift-log lines into `ivy.log`, rotated once (to `ivy.log.1`) past `limit` bytes.
package struct FileLogHandler: LogHandler {
    final class Sink: Sendable {
        let path: String
        let limit: Int
        let lock = Mutex(())

        init(path: String, limit: Int) {
            self.path = path
            self.limit = limit
        }

        func write(_ line: String) {
            lock.withLock { _ in
                var info = stat()
                if lstat(path, &info) == 0, Int(info.st_size) > limit {
                    rename(path, path + ".1")
                }
                guard let descriptor = try? Self.open(path) else { return }
                _ = line.withCString { Glibc.write(descriptor, $0, strlen($0)) }
                close(descriptor)
            }
        }

        /// Opens (creating) the log 0600 for appending, never through a symbolic link: one
        /// planted there would make ivy append to whatever file it points to.
        static func open(_ path: String) throws -> Int32 {
            let descriptor = Glibc.open(path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0o600)
            guard descriptor >= 0 else { throw SyncFileError(path: path, errno: errno) }
            fchmod(descriptor, 0o600)
            return descriptor
        }
    }

    let sink: Sink
    package var metadata: Logger.Metadata = [:]
    package var logLevel: Logger.Level = .info

    package init(path: String, limit: Int = 1 << 20) {
        sink = Sink(path: path, limit: limit)
    }

    /// Checks that the log can be written (creating it 0600), so that a log that cannot be
    /// (a symbolic link planted at its path, a directory) is an error before a sync starts
    /// rather than lines silently lost.
    package static func prepare(path: String) throws {
        try PrivateDirectory.ensure((path as NSString).deletingLastPathComponent)
        close(try Sink.open(path))
    }

    package subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    /// One event, one line: the message and every metadata key and value are escaped, so a
    /// note or a Drive file name with a newline cannot forge a line of its own.
    package func log(event: LogEvent) {
        let merged = metadata.merging(event.metadata ?? [:]) { $1 }
        let details = merged.sorted { $0.key < $1.key }
            .map { TerminalText.escaped($0.key) + "=" + TerminalText.escaped("\($0.value)") }
            .joined(separator: " ")
        let stamp = ISO8601DateFormatter().string(from: Date())
        let message = TerminalText.escaped("\(event.message)")
        sink.write("\(stamp) \(event.level) \(message)\(details.isEmpty ? "" : " " + details)\n")
    }
}
