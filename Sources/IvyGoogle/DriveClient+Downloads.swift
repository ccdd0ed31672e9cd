package import Foundation
package import IvyCore
import IvySystem

extension DriveClient {
    // MARK: downloads

    /// A small file (backup JSON) into memory, refusing anything over `limit` bytes, and
    /// more than Drive listed: reading stops there, however much the server sends.
    package func downloadData(_ file: RemoteFile, limit: Int = 1 << 20) async throws -> Data {
        if let size = file.size, size > limit {
            throw DriveError(
                .fileTooLarge,
                message: "\(file.name) is \(AudioRules.grouped(size)) bytes, more than a backup file can be")
        }
        let context = "downloading \(file.name)"
        let request = HTTPRequest(
            method: "GET", url: http.url("drive/v3/files/\(file.id)", ["alt": "media"]),
            responseLimit: min(file.size ?? Int64(limit), Int64(limit)))
        do {
            return try await http.execute(request, context: context).body
        } catch let error as DriveError where error.kind == .fileTooLarge {
            // What comes of it is the caller's to say: a sync skips such a JSON, as it does one
            // it cannot read.
            throw Self.longer(file, than: request.responseLimit, context: context)
        }
    }

    /// An MP3 streamed to a temporary file beside `destination`, its size and md5 checked,
    /// then renamed into place. Over the 50 MB cap it is refused before downloading; a body
    /// longer than Drive listed (or than the cap) is cut off as it streams, never kept.
    /// `progress` is told of its bytes as they arrive.
    package func downloadFile(
        _ file: RemoteFile, to destination: URL, progress: (@Sendable (Int64) -> Void)? = nil
    ) async throws {
        if let size = file.size, let excess = AudioRules.overLimit(size) {
            throw DriveError(.fileTooLarge, message: "\(file.name) on Drive is \(excess); it was not downloaded")
        }
        let context = "downloading \(file.name)"
        let temporary = destination.deletingLastPathComponent()
            .appendingPathComponent(TransferFiles.downloadPrefix + UUID().uuidString)
        defer { try? FileManager.default.removeItem(at: temporary) }
        let request = HTTPRequest(
            method: "GET", url: http.url("drive/v3/files/\(file.id)", ["alt": "media"]),
            responseLimit: min(file.size ?? AudioRules.maximumBytes, AudioRules.maximumBytes), progress: progress)
        do {
            if let size = file.size, size > downloadWindow {
                var start: Int64 = 0
                while start < size {
                    let end = min(start + downloadWindow, size)
                    try await downloadRange(start..<end, of: file, size: size, request, into: temporary)
                    start = end
                }
            } else {
                _ = try await http.execute(request, context: context, download: (temporary, 0))
            }
        } catch let error as DriveError where error.kind == .fileTooLarge {
            throw Self.longer(file, than: request.responseLimit, context: context, then: "the next sync tries again")
        } catch let error as StorageError {
            // Said of the directory: the temporary file's name means nothing to a reader.
            throw StorageError(path: destination.deletingLastPathComponent().path, problem: error.problem)
        }
        let size = try LocalFile.size(of: temporary)
        if let expected = file.size, expected != size {
            throw DriveError(
                .integrity, message: "downloading \(file.name): got \(size) bytes, Drive listed \(expected)")
        }
        if let md5 = file.md5, try LocalFile.md5(of: temporary) != md5 {
            throw DriveError(
                .integrity, message: "downloading \(file.name): the content does not match Drive's checksum")
        }
        CrashPoints.reach(.downloadAfterTemp)
        guard rename(temporary.path, destination.path) == 0 else {
            let code = errno
            if let storage = StorageError(path: destination.deletingLastPathComponent().path, errno: code) {
                throw storage
            }
            throw DriveError(
                .unexpected,
                message: "cannot move the download to \(destination.path): \(String(cString: strerror(code)))")
        }
        CrashPoints.reach(.downloadAfterRename)
    }

    /// Bytes `range` of `file` (Drive listed `size`) written at `range.lowerBound` of
    /// `temporary`: one Range request, retried as every request is, whose answer must be a
    /// 206 of exactly those bytes of a file of that size.
    private func downloadRange(
        _ range: Range<Int64>, of file: RemoteFile, size: Int64, _ whole: HTTPRequest, into temporary: URL
    ) async throws {
        let context = "downloading \(file.name)"
        var request = whole
        let last = range.upperBound - 1
        request.headers["Range"] = "bytes=\(range.lowerBound)-\(last)"
        request.responseLimit = range.upperBound - range.lowerBound
        let response: HTTPResponse
        do {
            response = try await http.execute(
                request, accept: [206, 416], context: context, download: (temporary, range.lowerBound))
        } catch let error as DriveError where error.kind == .fileTooLarge {
            throw DriveError(
                .integrity, status: error.status,
                message: "\(context): Drive sent more than the \(AudioRules.grouped(request.responseLimit)) bytes "
                    + "asked for at \(range.lowerBound), so the download was stopped and nothing was kept")
        }
        let total = response.headers["content-range"].flatMap { $0.split(separator: "/").last }.flatMap { Int64($0) }
        if response.status == 416 || (total != nil && total != size) {
            let has = total.map { "\(AudioRules.grouped($0)) bytes" } ?? "fewer bytes"
            throw DriveError(
                .integrity, status: response.status,
                message: "\(context): Drive has \(has), not the \(AudioRules.grouped(size)) it listed")
        }
        guard response.headers["content-range"]?.hasPrefix("bytes \(range.lowerBound)-\(last)/") == true else {
            throw DriveError(
                .unexpected, status: response.status,
                message: "\(context): Drive answered bytes \(range.lowerBound)-\(last) with "
                    + (response.headers["content-range"].map { TerminalText.escaped($0) } ?? "no range"))
        }
        let got = try LocalFile.size(of: temporary)
        if got != range.upperBound {
            throw DriveError(
                .integrity,
                message:
                    "\(context): got \(got - range.lowerBound) bytes of the \(range.upperBound - range.lowerBound) "
                    + "asked for at \(range.lowerBound)")
        }
    }

    /// A download that kept coming past what Drive listed (or past the cap); `then`, what
    /// comes of it, when the caller does not say it itself.
    static func longer(_ file: RemoteFile, than limit: Int64, context: String, then: String? = nil) -> DriveError {
        let listed =
            file.size.map { "the \(AudioRules.grouped($0)) bytes Drive listed" }
            ?? "\(AudioRules.grouped(limit)) bytes"
        return DriveError(
            .fileTooLarge,
            message: "\(context): Drive sent more than \(listed), so the download was stopped and nothing was kept"
                + (then.map { "; " + $0 } ?? ""))
    }
}
