import Foundation

/// The lock an emulator holds on its --state file while it runs: `flock` on `FILE.lock` beside
/// it (the state file itself is replaced by a rename when saved, which a lock on it would not
/// outlive). The system lets it go however the emulator ends, a kill included, so it is never
/// stale; inside are the holder's process id and, once it listens, its URL, for a second
/// emulator on the same file to name.
final class StateLock {
    private let descriptor: Int32

    private init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    /// Takes the lock of `state`, or says which emulator holds it.
    static func acquire(for state: String) throws -> StateLock {
        let path = state + ".lock"
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard descriptor >= 0 else {
            throw EmulatorFailure("cannot open the lock file \(path): \(String(cString: strerror(errno)))")
        }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            var buffer = [UInt8](repeating: 0, count: 512)
            let count = pread(descriptor, &buffer, buffer.count, 0)
            close(descriptor)
            let words = String(decoding: buffer.prefix(max(0, count)), as: UTF8.self).split(
                whereSeparator: \.isWhitespace)
            let pid = words.first.flatMap { Int32($0) }
            let url = words.dropFirst().first.map(String.init)
            let holder =
                switch (pid, url) {
                case (let pid?, let url?): " (process \(pid), at \(url))"
                case (let pid?, nil): " (process \(pid), still starting)"
                default: ""
                }
            let use = url.map { "use it (`export IVY_OAUTH_URL=\($0) IVY_DRIVE_URL=\($0)`), " } ?? ""
            throw EmulatorFailure(
                "the state file \(state) is in use by another ivy-emulator\(holder); \(use)stop it first"
                    + (pid.map { " (`kill \($0)`: it saves the Drive as it stops)" } ?? "")
                    + ", or give another --state")
        }
        let lock = StateLock(descriptor: descriptor)
        lock.write("\(getpid())\n")
        return lock
    }

    /// Adds the URL the emulator listens at.
    func record(url: String) {
        write("\(getpid()) \(url)\n")
    }

    private func write(_ text: String) {
        ftruncate(descriptor, 0)
        _ = text.withCString { pwrite(descriptor, $0, strlen($0), 0) }
    }

    deinit {
        flock(descriptor, LOCK_UN)
        close(descriptor)
    }
}
