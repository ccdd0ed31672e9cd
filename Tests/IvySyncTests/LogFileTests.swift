import Foundation
import IvyCore
import IvySync
import IvyTestSupport
import Logging
import Testing

@Suite("ivy.log")
struct LogFileTests {
    @Test("one event is one line: a newline in the message or in metadata cannot forge another")
    func oneEventOneLine() throws {
        let directory = try TemporaryHome(prefix: "ivy-log")
        defer { withExtendedLifetime(directory) {} }
        let path = directory.file("ivy.log")
        let logger = Logger(label: "ivy", factory: { _ in FileLogHandler(path: path) })
        let forged = "x\n2026-01-01T00:00:00Z error forged line"
        logger.warning("skipped", metadata: ["entity": "\(forged)", "reason": "not an ivy file name\r\u{1B}[2K"])
        logger.error("sync failed: \(forged)")
        logger.info("sync finished", metadata: ["list": ["a\nb", "c"], "key\nforged": "v"])

        let log = try String(contentsOfFile: path, encoding: .utf8)
        let lines = log.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.count == 4 && lines.last == "", "\(log)")
        #expect(!lines.contains { $0.hasPrefix("2026-01-01") })
        #expect(lines[0].contains(#"entity=x\n2026-01-01T00:00:00Z error forged line"#))
        #expect(lines[0].contains(#"\r\u{1B}[2K"#))
        #expect(!log.unicodeScalars.contains { $0 != "\n" && ($0.value < 0x20 || (0x7F...0x9F).contains($0.value)) })
    }

    @Test("log_format json: every line one JSON object; quotes, newlines and control characters escaped")
    func jsonLines() throws {
        let directory = try TemporaryHome(prefix: "ivy-log")
        defer { withExtendedLifetime(directory) {} }
        let path = directory.file("ivy.log")
        let logger = Logger(label: "ivy", factory: { _ in FileLogHandler(path: path, format: .json) })
        let forged = "say \"hi\"\n{\"level\":\"error\",\"message\":\"forged\"}\u{1B}[2J\u{0}"
        logger.error("sync failed: \(forged)", metadata: ["error": "\(forged)"])
        logger.warning("skipped", metadata: ["entity": "a\r\nb", "message": "a field named message"])
        logger.info("sync finished", metadata: ["list": ["a\nb", "c"]])

        let log = try String(contentsOfFile: path, encoding: .utf8)
        let lines = log.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.count == 4 && lines.last == "", "\(log)")
        let objects = try lines.dropLast().map { line in
            try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: String], "\(line)")
        }
        #expect(objects[0]["level"] == "error" && objects[0]["message"] == "sync failed: \(forged)")
        #expect(objects[0]["error"] == forged)
        #expect(objects[1]["message"] == "skipped" && objects[1]["field_message"] == "a field named message")
        #expect(objects[1]["entity"] == "a\r\nb")
        #expect(objects[2]["list"] != nil && objects[2]["level"] == "info")
        let stamp = ISO8601DateFormatter()
        stamp.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        #expect(objects.allSatisfy { $0["time"].flatMap(stamp.date(from:)) != nil })
        #expect(!log.unicodeScalars.contains { $0 != "\n" && ($0.value < 0x20 || (0x7F...0x9F).contains($0.value)) })
    }
}
