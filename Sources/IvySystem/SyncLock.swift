import Foundation

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
    ///
    /// The wait polls (`LOCK_NB`, then a sleep) instead of blocking in `flock`: a blocked
    /// thread would be one of Swift's few cooperative threads, and on two cores two such
    /// waits stop every task in the process, the ones the lock's holder may be waiting on
    /// included. Cancelling the task ends the wait with `CancellationError`.
    package static func acquireWaiting(
        path: String, poll: Duration = pollInterval, waiting: (Int32?) -> Void
    ) async throws -> SyncLock {
        let descriptor = try openLockFile(path)
        var told = false
        while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            guard errno == EWOULDBLOCK || errno == EINTR else {
                let reason = String(cString: strerror(errno))
                close(descriptor)
                throw PrivateFileError(path: path, reason: reason)
            }
            if !told {
                waiting(holder(descriptor))
                told = true
            }
            do {
                try await Task.sleep(for: poll)
            } catch {
                close(descriptor)
                throw error
            }
        }
        return SyncLock(holding: descriptor)
    }

    /// How often a waiting `acquireWaiting` tries the lock again: a person waiting for a sync
    /// to end notices no delay, and a try costs one system call.
    package static let pollInterval = Duration.milliseconds(50)

    /// Whether a sync holds the lock now, and its process id when it could be read; looked
    /// at without creating anything (no lock file: no sync ever ran here). A shared lock is
    /// tried and dropped at once, so a sync starting in that instant is not held up.
    package static func holder(path: String) -> (running: Bool, pid: Int32?) {
        let descriptor = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard descriptor >= 0 else { return (false, nil) }
        defer { close(descriptor) }
        if flock(descriptor, LOCK_SH | LOCK_NB) == 0 {
            flock(descriptor, LOCK_UN)
            return (false, nil)
        }
        return (true, holder(descriptor))
    }

    /// Opens (creating) the lock file 0600 in its private directory; never through a link.
    private static func openLockFile(_ path: String) throws -> Int32 {
        try PrivateDirectory.ensure((path as NSString).deletingLastPathComponent)
        return try PrivateFile.open(path, .readWrite)
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

/// Runs `body` while `lock` is held, however `body` ends: the lock's lifetime is a scope said
/// in the code, not wherever Swift ends the life of a variable nothing reads. Given the lock's
/// only reference (`withSyncLock(home.waitForSyncLock()) { … }`), it lets the lock go as `body`
/// ends. `nil` (the caller holds the lock already, or a read-only home needs none) runs `body`
/// alone.
package func withSyncLock<Result, Failure: Error>(
    _ lock: SyncLock?, _ body: () throws(Failure) -> Result
) throws(Failure) -> Result {
    defer { withExtendedLifetime(lock) {} }
    return try body()
}

/// `withSyncLock(_:_:)` for a body that awaits; it runs where its caller runs, so a caller on
/// ivy's own executor stays there.
nonisolated(nonsending) package func withSyncLock<Result, Failure: Error>(
    _ lock: SyncLock?, _ body: nonisolated(nonsending) () async throws(Failure) -> Result
) async throws(Failure) -> Result {
    defer { withExtendedLifetime(lock) {} }
    return try await body()
}
