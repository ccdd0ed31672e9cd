import ArgumentParser
import Foundation
import IvyCore

/// A secret given as a file's first line instead of on the command line, where every user's
/// `ps` shows it for as long as the command runs. The file may be anything a shell hands
/// over: a regular file, a pipe or FIFO (`<(pass show ivy)`), or `-` for standard input.
enum SecretInput {
    /// More than any OAuth client secret or setting: a file past it is not a secret.
    static let limit = 64 * 1024

    /// The first line of `path` (`-`: standard input), trimmed; an error that says what to
    /// fix when it cannot be read or holds nothing.
    static func firstLine(of path: String, _ context: Context) throws -> String {
        let text: String?
        if path == "-" {
            text = context.readLine()
        } else {
            text = try read(path).split(whereSeparator: \.isNewline).first.map(String.init)
        }
        let secret = text?.trimmingCharacters(in: .whitespaces) ?? ""
        guard !secret.isEmpty else {
            throw ValidationError("no secret in \(path == "-" ? "standard input" : Display.safe(path))")
        }
        return secret
    }

    /// Reads to the end (or the limit) with plain reads, which a pipe or FIFO answers as a
    /// file does; its size, which a pipe does not have, is never asked.
    private static func read(_ path: String) throws -> String {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw ValidationError(failure(path, errno)) }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while bytes.count <= limit {
            let count = chunk.withUnsafeMutableBytes { Foundation.read(descriptor, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else { throw ValidationError(failure(path, errno)) }
            if count == 0 { return String(decoding: bytes, as: UTF8.self) }
            bytes += chunk[..<count]
        }
        throw ValidationError(
            "\(Display.safe(path)) is longer than a secret can be; give a file holding just the secret")
    }

    private static func failure(_ path: String, _ code: Int32) -> String {
        let name = Display.safe(path)
        switch code {
        case ENOENT: return "cannot read the secret: \(name) does not exist; check the path"
        case EACCES: return "cannot read the secret: \(name) is not readable by you; check its permissions"
        case EISDIR: return "cannot read the secret: \(name) is a directory; give the file that holds it"
        default: return "cannot read the secret from \(name): \(String(cString: strerror(code)))"
        }
    }
}
