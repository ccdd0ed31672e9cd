import Foundation
package import IvyCore
import IvySystem
package import Logging

/// swift-log lines into `ivy.log`, rotated once (to `ivy.log.1`) past `limit` bytes.
package struct FileLogHandler: LogHandler {
    let file: LogFile
    let format: LogFormat
    package var metadata: Logger.Metadata = [:]
    package var logLevel: Logger.Level = .info

    package init(path: String, limit: Int = 1 << 20, format: LogFormat = .text) {
        file = LogFile(path: path, limit: limit)
        self.format = format
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
        if format == .json { return file.append(Self.jsonLine(event, merged, at: Date())) }
        let details = merged.sorted { $0.key < $1.key }
            .map { TerminalText.escaped($0.key) + "=" + TerminalText.escaped("\($0.value)") }
            .joined(separator: " ")
        let stamp = ISO8601DateFormatter().string(from: Date())
        let message = TerminalText.escaped("\(event.message)")
        file.append("\(stamp) \(event.level) \(message)\(details.isEmpty ? "" : " " + details)\n")
    }

    /// `log_format = json`: one object per line, `time` (RFC 3339 with milliseconds), `level`,
    /// `message` and each metadata field as a string. The encoder escapes quotes, newlines and
    /// every control character, so each line parses on its own; format characters and line
    /// separators (`TerminalText.jsonEscaped`) are written as escapes too. A metadata field named like
    /// one of the three is kept under a `field_` prefix rather than overwriting it.
    static func jsonLine(_ event: LogEvent, _ metadata: Logger.Metadata, at date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        var object = ["time": formatter.string(from: date), "level": "\(event.level)", "message": "\(event.message)"]
        for (key, value) in metadata {
            object[object[key] == nil ? key : "field_" + key] = "\(value)"
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // [String: String] always encodes; the fallback keeps the line a JSON object regardless.
        let data = (try? encoder.encode(object)) ?? Data(#"{"message":"unencodable log event"}"#.utf8)
        return TerminalText.jsonEscaped(String(decoding: data, as: UTF8.self)) + "\n"
    }
}
