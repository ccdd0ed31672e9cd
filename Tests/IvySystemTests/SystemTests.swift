import Foundation
import IvySystem
import Synchronization
import Testing

@Suite("MD5")
struct MD5Tests {
    @Test(
        "RFC 1321 test vectors, and streaming gives the same digest",
        arguments: [
            ("", "d41d8cd98f00b204e9800998ecf8427e"), ("a", "0cc175b9c0f1b6a831c399e269772661"),
            ("abc", "900150983cd24fb0d6963f7d28e17f72"), ("message digest", "f96b697d7cb7938d525a2f31aaf161d0"),
            (
                "12345678901234567890123456789012345678901234567890123456789012345678901234567890",
                "57edf4a22be3c955ac49da2e2107b67a"
            ),
        ])
    func vectors(text: String, digest: String) {
        #expect(MD5.hex(Array(text.utf8)) == digest)
        var streaming = MD5()
        for chunk in Array(text.utf8).chunked(into: 7) { streaming.update(chunk) }
        #expect(streaming.finalize() == digest)
    }

    @Test("a file's md5 and size, read in chunks, match the bytes'")
    func file() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // Over one 1 MiB chunk and not a multiple of it.
        let bytes = Data((0..<(3 << 19) + 17).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        let file = URL(fileURLWithPath: directory + "/audio.mp3")
        try bytes.write(to: file)
        #expect(try LocalFile.md5(of: file) == MD5.hex(bytes))
        #expect(try LocalFile.size(of: file) == Int64(bytes.count))
    }
}

@Suite("Private files")
struct PrivateFileTests {
    @Test("a private directory is created 0700 with its parents; one writable by others is refused")
    func directory() throws {
        let root = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let path = root + "/a/b"
        try PrivateDirectory.ensure(path)
        #expect(mode(path) == 0o700)
        chmod(path, 0o777)
        #expect(throws: UnsafeDirectoryError.self) { try PrivateDirectory.ensure(path) }
        #expect(throws: UnsafeDirectoryError.self) { try PrivateDirectory.check(path) }
        _ = FileManager.default.createFile(atPath: root + "/file", contents: Data())
        #expect(throws: PrivateDirectoryError.self) { try PrivateDirectory.ensure(root + "/file") }
    }

    /// A temporary directory, and `open` inside it that every user may write to (0777).
    private func directoryOthersCanWrite() throws -> (root: String, open: String) {
        let root = try temporaryDirectory()
        let open = root + "/open"
        #expect(mkdir(open, 0o700) == 0 && chmod(open, 0o777) == 0)
        return (root, open)
    }

    /// Second review of issue 40, item 9: the parents were made (0755) inside the directory
    /// others could write to before the refusal, and a missing directory passed the check.
    @Test("a directory under one others can write to is refused, missing or not, before anything is made")
    func refusedBeforeMaking() throws {
        let (root, open) = try directoryOthersCanWrite()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let path = open + "/share/ivy"
        #expect(throws: UnsafeDirectoryError.self) { try PrivateDirectory.check(path) }
        #expect(throws: UnsafeDirectoryError.self) { try PrivateDirectory.ensure(path) }
        #expect(try FileManager.default.contentsOfDirectory(atPath: open).isEmpty)

        #expect(chmod(open, 0o755) == 0)
        try PrivateDirectory.check(path)
        try PrivateDirectory.ensure(path)
        #expect(mode(open + "/share") == 0o755 && mode(path) == 0o700)
    }

    @Test("one rule for ivy's directories, existing or not: each directory at fault is named once, for the first")
    func refusals() throws {
        let (root, open) = try directoryOthersCanWrite()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let data = open + "/share/ivy"
        #expect(PrivateDirectory.problem(of: data)?.path == open)
        let own = root + "/config/ivy"
        #expect(mkdir(root + "/config", 0o700) == 0 && mkdir(own, 0o770) == 0 && chmod(own, 0o770) == 0)
        let refusals = PrivateDirectory.refusals(of: [data, own, open + "/state/ivy", data])
        #expect(refusals.map(\.path) == [open, own], "\(refusals)")
        #expect(refusals.first?.reaches == data && refusals.last?.reaches == nil)
        #expect(chmod(open, 0o1777) == 0, "sticky: no one may rename another's entries")
        #expect(PrivateDirectory.problem(of: data) == nil)
    }

    @Test("a note kept through its directory's descriptor: written 0600, read back, removed; none in another's")
    func directoryNote() throws {
        let root = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let directory = root + "/ivy"
        #expect(mkdir(directory, 0o700) == 0)
        let note = DirectoryNote("said", in: directory)
        #expect(note.read() == nil)
        #expect(note.write("once"))
        #expect(note.read() == "once" && mode(directory + "/said") == 0o600)
        note.remove()
        #expect(!FileManager.default.fileExists(atPath: directory + "/said"))
        // A directory others can write to keeps no note, and one reached through a link neither.
        #expect(chmod(directory, 0o777) == 0)
        #expect(!note.write("once") && !note.directoryIsPrivate)
        #expect(chmod(directory, 0o700) == 0 && symlink(directory, root + "/link") == 0)
        #expect(!DirectoryNote("said", in: root + "/link").write("once"))
        #expect(!FileManager.default.fileExists(atPath: directory + "/said"))
    }

    @Test("an atomic write leaves a 0600 file and no temporary one, replacing the old content")
    func atomicWrite() throws {
        let root = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let path = root + "/token.json"
        _ = FileManager.default.createFile(
            atPath: path, contents: Data("old".utf8), attributes: [.posixPermissions: 0o644])
        try PrivateFile.write(Data("new".utf8), atomicallyTo: path, temporaryPrefix: ".token-")
        #expect(FileManager.default.contents(atPath: path) == Data("new".utf8))
        #expect(mode(path) == 0o600)
        #expect(try FileManager.default.contentsOfDirectory(atPath: root) == ["token.json"])
    }

    @Test("an open never follows a symbolic link, and says how to fix it")
    func link() throws {
        let root = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let target = root + "/target"
        _ = FileManager.default.createFile(atPath: target, contents: Data("keep".utf8))
        symlink(target, root + "/ivy.log")
        #expect {
            try LogFile.prepare(path: root + "/ivy.log")
        } throws: { error in
            (error as? PrivateFileError)?.reason.contains("symbolic link") == true
        }
        #expect(FileManager.default.contents(atPath: target) == Data("keep".utf8))
    }

    @Test("the lock is exclusive across opens and records the holder's process id")
    func lock() throws {
        let root = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let path = root + "/state/sync.lock"
        guard case .acquired(let held) = try SyncLock.acquire(path: path) else {
            Issue.record("a free lock was busy")
            return
        }
        guard case .busy(let pid) = try SyncLock.acquire(path: path) else {
            Issue.record("a held lock was taken twice")
            return
        }
        #expect(pid == getpid())
        #expect(mode(path) == 0o600 && mode(root + "/state") == 0o700)
        _ = held
    }

    @Test("a waiting lock suspends until the holder lets go, says so once, and ends when cancelled")
    func waitingLock() async throws {
        let root = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let path = root + "/sync.lock"
        var held: SyncLock?
        if case .acquired(let lock) = try SyncLock.acquire(path: path) { held = lock }
        try #require(held != nil, "a free lock was busy")
        let told = Told()
        // Many more waiters than cooperative threads: a waiter that blocked its thread would
        // hold up the others, and this test's own task, until the holder let go.
        let waiters = (0..<8).map { _ in
            Task {
                try await SyncLock.acquireWaiting(path: path, poll: .milliseconds(5)) { pid in
                    told.pids.withLock { $0.append(pid) }
                }
            }
        }
        while told.pids.withLock({ $0.count }) < waiters.count { try await Task.sleep(for: .milliseconds(5)) }
        #expect(told.pids.withLock { $0 } == Array(repeating: getpid(), count: waiters.count))
        held = nil
        // One waiter takes it and keeps it; cancelling the others ends their waits.
        let (winner, cancelled) = try await withThrowingTaskGroup(of: SyncLock.self) { group in
            for waiter in waiters { group.addTask { try await waiter.value } }
            let winner = try await group.next()
            for waiter in waiters { waiter.cancel() }
            var cancelled = 0
            while let result = await group.nextResult() {
                if case .failure(let error) = result, error is CancellationError { cancelled += 1 }
            }
            return (winner, cancelled)
        }
        #expect(winner != nil && held == nil)
        #expect(cancelled == waiters.count - 1)
    }

    @Test("withSyncLock holds the lock for its body and lets it go as the body returns or throws")
    func scopedLock() async throws {
        let root = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let path = root + "/sync.lock"
        func take() throws -> SyncLock {
            guard case .acquired(let lock) = try SyncLock.acquire(path: path) else { throw Busy() }
            return lock
        }
        #expect(try withSyncLock(take()) { SyncLock.holder(path: path).running })
        #expect(!SyncLock.holder(path: path).running)
        #expect(throws: Busy.self) { try withSyncLock(take()) { throw Busy() } }
        #expect(!SyncLock.holder(path: path).running)
        let heldAcrossAwait = try await withSyncLock(take()) {
            try await Task.sleep(for: .milliseconds(1))
            return SyncLock.holder(path: path).running
        }
        #expect(heldAcrossAwait && !SyncLock.holder(path: path).running)
        #expect(withSyncLock(nil) { !SyncLock.holder(path: path).running })
    }
}

private struct Busy: Error {}

/// The holders' process ids the waiting lock reported.
private final class Told: Sendable {
    let pids = Mutex<[Int32?]>([])
}

private func temporaryDirectory() throws -> String {
    let path = NSTemporaryDirectory() + "ivy-system-" + UUID().uuidString
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
    return path
}

private func mode(_ path: String) -> UInt32 {
    var info = stat()
    guard lstat(path, &info) == 0 else { return 0 }
    return UInt32(info.st_mode) & 0o7777
}

extension Array {
    fileprivate func chunked(into size: Int) -> [[Element]] {
        stride(from: 0, to: count, by: size).map { Array(self[$0..<Swift.min($0 + size, count)]) }
    }
}

@Suite("A full or read-only disk, recognised")
struct StorageErrorTests {
    @Test(
        "ENOSPC and EDQUOT are a full disk, EROFS a read-only one, anything else not a storage problem",
        arguments: [(ENOSPC, StorageError.Problem.full), (EDQUOT, .full), (EROFS, .readOnly)])
    func errnos(code: Int32, problem: StorageError.Problem) {
        #expect(StorageError(path: "/x", errno: code)?.problem == problem)
        let cocoa = CocoaError(
            .fileWriteUnknown, userInfo: [NSUnderlyingErrorKey: POSIXError(POSIXErrorCode(rawValue: code)!)])
        #expect(StorageError(path: "/x", error: cocoa)?.problem == problem)
        #expect(
            PrivateFileError(path: "/x/f", errno: code).errorDescription
                == StorageError(path: "/x/f", errno: code)?.errorDescription)
    }

    @Test("other failures are left to their own message")
    func others() {
        for code in [EACCES, ENOENT, EIO, EEXIST] { #expect(StorageError(path: "/x", errno: code) == nil) }
        #expect(StorageError(path: "/x", error: CocoaError(.fileNoSuchFile)) == nil)
        #expect(StorageError(path: "/x", error: CocoaError(.fileWriteOutOfSpace))?.problem == .full)
        #expect(StorageError(path: "/x", error: CocoaError(.fileWriteVolumeReadOnly))?.problem == .readOnly)
    }

    @Test("the messages name the path, the problem and what to do")
    func messages() {
        #expect(
            StorageError(path: "/home/me/ivy/library.db", problem: .full).errorDescription
                == "no space left on device for /home/me/ivy/library.db: free some space on that disk and run the "
                + "command again; nothing was half written")
        #expect(
            StorageError(path: "/home/me/ivy/library.db", problem: .readOnly).errorDescription?.hasPrefix(
                "/home/me/ivy/library.db is on a read-only file system: remount it read-write") == true)
    }

    @Test("probing a writable directory with free space, or a path not yet made in one, finds nothing")
    func probe() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        #expect(StorageError.probe(directory) == nil)
        #expect(StorageError.probe(directory + "/not/yet/made") == nil)
    }

    @Test("a disk is full for a user when no block is available to users, for root only when none is free")
    func fullForWhom() {
        // 5% reserved for root, as ext4 keeps by default: 50 blocks free, none available.
        let reserveLeft = StorageError.Space(
            blocks: 1000, freeBlocks: 50, availableBlocks: 0, files: 100, availableFiles: 90)
        #expect(reserveLeft.isFull(asRoot: false))
        #expect(!reserveLeft.isFull(asRoot: true))
        let empty = StorageError.Space(blocks: 1000, freeBlocks: 0, availableBlocks: 0, files: 100, availableFiles: 90)
        #expect(empty.isFull(asRoot: true))
        #expect(empty.isFull(asRoot: false))
        let roomy = StorageError.Space(
            blocks: 1000, freeBlocks: 500, availableBlocks: 450, files: 100, availableFiles: 90)
        #expect(!roomy.isFull(asRoot: false))
        #expect(!roomy.isFull(asRoot: true))
    }

    @Test("a disk with blocks free but no inode left is full; one that reports no blocks or inodes is not")
    func fullOfFiles() {
        let noInodes = StorageError.Space(
            blocks: 1000, freeBlocks: 500, availableBlocks: 450, files: 100, availableFiles: 0)
        #expect(noInodes.isFull(asRoot: false))
        #expect(noInodes.isFull(asRoot: true))
        let virtual = StorageError.Space(blocks: 0, freeBlocks: 0, availableBlocks: 0, files: 0, availableFiles: 0)
        #expect(!virtual.isFull(asRoot: false))
        #expect(!virtual.isFull(asRoot: true))
    }
}
