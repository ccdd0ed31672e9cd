import Foundation
import IvyGoogle
import Logging
import Synchronization

/// The exclusive lock one sync holds for its whole run: `flock` on the lock file, which the
/// operating system releases if ivy dies, with the holder's process id written inside.
package final class SyncLock: Sendable {
    private let descriptor: Int32

    private init(descriptor: Int32) { self.descriptor = descriptor }

    package enum Outcome: Sendable {
        case acquired(SyncLock)
        /// Another process holds it; its id when it could be read.
        case busy(pid: Int32?)
    }

    package static func acquire(path: String) throws -> Outcome {
        let directory = (path as NSString).deletingLastPathComponent
        try PrivateDirectory.ensure(directory)
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw CocoaError(.fileWriteNoPermission, userInfo: [NSFilePathErrorKey: path])
        }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            let text = (try? String(contentsOfFile: path, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
            close(descriptor)
            return .busy(pid: text.flatMap { Int32($0) })
        }
        ftruncate(descriptor, 0)
        let pid = "\(getpid())\n"
        _ = pid.withCString { write(descriptor, $0, strlen($0)) }
        return .acquired(SyncLock(descriptor: descriptor))
    }

    deinit {
        flock(descriptor, LOCK_UN)
        close(descriptor)
    }
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
                if stat(path, &info) == 0, Int(info.st_size) > limit {
                    rename(path, path + ".1")
                }
                let descriptor = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
                guard descriptor >= 0 else { return }
                _ = line.withCString { Glibc.write(descriptor, $0, strlen($0)) }
                close(descriptor)
            }
        }
    }

    let sink: Sink
    package var metadata: Logger.Metadata = [:]
    package var logLevel: Logger.Level = .info

    package init(path: String, limit: Int = 1 << 20) {
        sink = Sink(path: path, limit: limit)
    }

    package subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    package func log(event: LogEvent) {
        let merged = metadata.merging(event.metadata ?? [:]) { $1 }
        let details = merged.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        let stamp = ISO8601DateFormatter().string(from: Date())
        sink.write("\(stamp) \(event.level) \(event.message)\(details.isEmpty ? "" : " " + details)\n")
    }
}
