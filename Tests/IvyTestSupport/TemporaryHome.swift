import Foundation
package import IvyCore

/// A fresh directory for one test, usable as an `IVY_HOME`; removed with everything in it
/// when the last reference goes, so a failing test leaves nothing behind either.
package final class TemporaryHome: Sendable {
    package let path: String
    /// ivy's paths with this directory as the home.
    package let paths: IvyPaths

    package init(prefix: String = "ivy-test") throws {
        // Nearly every test makes a home: the first one starts the watchdog for the process.
        PoolWatchdog.start()
        path = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        paths = try IvyPaths.resolve(home: path, environment: [:], workingDirectory: "/")
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    package func file(_ name: String) -> String { path + "/" + name }

    /// ivy's paths for a home of its own inside this directory (one per device).
    package func home(_ name: String) throws -> IvyPaths {
        try IvyPaths.resolve(home: file(name), environment: [:], workingDirectory: "/")
    }

    /// Writes an MP3-looking file called `name` here; see `writeMP3`.
    package func mp3(_ name: String, size: Int = 64, header: [UInt8] = mp3Header) throws -> String {
        try writeMP3(at: file(name), size: size, header: header)
    }
}

/// The start of an MP3 with an ID3 tag, which is all ivy checks of a recording.
package let mp3Header: [UInt8] = Array("ID3\u{4}\0".utf8)

/// Writes an MP3-looking file (`header`, then zeros; sparse) of `size` bytes, at least the
/// header's, and returns its path.
@discardableResult
package func writeMP3(at path: String, size: Int = 64, header: [UInt8] = mp3Header) throws -> String {
    _ = FileManager.default.createFile(atPath: path, contents: Data(header))
    let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
    try handle.truncate(atOffset: UInt64(max(size, header.count)))
    try handle.close()
    return path
}
