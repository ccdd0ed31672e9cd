import Foundation

/// Writes `data` to `path` as a new 0600 file put in place by rename: a reader sees the old
/// file or the whole new one, never a part, and never with wider permissions.
func writePrivately(_ data: Data, to path: String, as what: String) throws {
    let temporary = path + ".\(getpid()).tmp"
    let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
    guard descriptor >= 0 else {
        throw EmulatorFailure("cannot write the \(what) \(path): \(String(cString: strerror(errno)))")
    }
    var failure: Int32 = 0
    var rest = data[...]
    while !rest.isEmpty && failure == 0 {
        let written = rest.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
        if written < 0 {
            if errno != EINTR { failure = errno }
        } else {
            rest = rest.dropFirst(written)
        }
    }
    if failure == 0 && fsync(descriptor) != 0 { failure = errno }
    close(descriptor)
    if failure == 0 && rename(temporary, path) != 0 { failure = errno }
    if failure != 0 {
        unlink(temporary)
        throw EmulatorFailure("cannot write the \(what) \(path): \(String(cString: strerror(failure)))")
    }
}

/// Writes all of `text` to `descriptor`, unbuffered.
func write(_ text: String, to descriptor: Int32) {
    var bytes = Array(text.utf8)[...]
    while !bytes.isEmpty {
        let written = bytes.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
        if written < 0 {
            if errno == EINTR { continue }
            return
        }
        bytes = bytes.dropFirst(written)
    }
}
