import Foundation
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
}
