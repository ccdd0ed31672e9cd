import Foundation
import IvyCore
import IvySystem
import Logging

/// swift-log lines into `ivy.log`, rotated once (to `ivy.log.1`) past `limit` bytes.
package struct FileLogHandler: LogHandler {
    let file: LogFile
    package var metadata: Logger.Metadata = [:]
    package var logLevel: Logger.Level = .info

    package init(path: String, limit: Int = 1 << 20) {
        file = LogFile(path: path, limit: limit)
    }

    /// Checks that the log can be written (creating it 0600), so that a log that cannot be
    /// (a symbolic link planted at its path, a directory) is an error before a sync starts
    /// rather than lines silently lost.
    package static func prepare(path: String) throws {
        try LogFile.prepare(path: path)
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
        file.append("\(stamp) \(event.level) \(message)\(details.isEmpty ? "" : " " + details)\n")
    }
}
