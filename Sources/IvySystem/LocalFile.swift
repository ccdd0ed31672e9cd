import Crypto
package import Foundation

/// What ivy needs to know of a file on disk before sending it or after receiving it.
package enum LocalFile {
    /// The file's size in bytes.
    package static func size(of file: URL) throws -> Int64 {
        let attributes = try FileManager.default.attributesOfItem(atPath: file.path)
        return (attributes[.size] as? NSNumber)?.int64Value ?? 0
    }

    /// The file's MD5 as Drive's `md5Checksum` writes it, read in 1 MiB chunks so an MP3 is
    /// never held whole in memory.
    package static func md5(of file: URL) throws -> String {
        BlockingCalls.check("hashing \(file.lastPathComponent)")
        let handle = try FileHandle(forReadingFrom: file)
        defer { try? handle.close() }
        var digest = MD5()
        while let chunk = try handle.read(upToCount: 1 << 20), !chunk.isEmpty { digest.update(chunk) }
        return digest.finalize()
    }
}

/// MD5 (RFC 1321) as 32 lowercase hex digits, for Drive's `md5Checksum`: downloads are
/// checked against it and unchanged audio is not sent again. Not for security. Computed by
/// swift-crypto, a maintained library, rather than by code of ivy's own.
package struct MD5: Sendable {
    private var hasher = Insecure.MD5()

    package init() {}

    /// Feeds more bytes; can be called repeatedly to hash a stream.
    package mutating func update(_ bytes: some Sequence<UInt8>) {
        hasher.update(data: Array(bytes))
    }

    /// Feeds more bytes without copying them.
    package mutating func update(_ data: Data) {
        hasher.update(data: data)
    }

    /// The digest of everything fed so far.
    package func finalize() -> String {
        hasher.finalize().map { byte in (byte < 16 ? "0" : "") + String(byte, radix: 16) }.joined()
    }

    package static func hex(_ bytes: some Sequence<UInt8>) -> String {
        var md5 = MD5()
        md5.update(bytes)
        return md5.finalize()
    }
}

/// What `stat` says of a path, for modules that must not call it themselves: one that loads
/// ZIPFoundation (IvyCommands, through IvyZip) sees CoreFoundation's `stat` in place of Glibc's.
package struct FileStatus: Sendable, Equatable {
    package let mode: UInt32
    package let owner: UInt32
    package var isRegularFile: Bool { mode & UInt32(S_IFMT) == UInt32(S_IFREG) }

    /// The path's status, following a link unless `followingLinks` is false; nil when it
    /// cannot be read (it does not exist, say).
    package static func of(_ path: String, followingLinks: Bool = true) -> FileStatus? {
        var info = stat()
        guard (followingLinks ? stat(path, &info) : lstat(path, &info)) == 0 else { return nil }
        return FileStatus(mode: UInt32(info.st_mode), owner: UInt32(info.st_uid))
    }
}
