import Foundation

/// A listening socket on 127.0.0.1 whose own thread takes each connection and hands it to
/// `handle`, which closes it: for the tests' servers that only need to be reached (one that
/// eavesdrops, a proxy that hangs up). Its thread blocks in `accept`, off the cooperative pool.
package final class LoopbackListener: Sendable {
    package let port: Int
    private let descriptor: Int32
    private let ended = DispatchSemaphore(value: 0)

    package init(handle: @escaping @Sendable (_ connection: Int32) -> Void) throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.descriptor = descriptor
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                bind(descriptor, address, length) == 0 && listen(descriptor, 16) == 0
                    && getsockname(descriptor, address, &length) == 0
            }
        }
        guard bound else {
            close(descriptor)
            throw POSIXError(.EADDRNOTAVAIL)
        }
        port = Int(UInt16(bigEndian: address.sin_port))
        Thread.detachNewThread { [descriptor, ended] in
            while true {
                let connection = accept(descriptor, nil, nil)
                guard connection >= 0 else { break }
                handle(connection)
            }
            ended.signal()
        }
    }

    /// Ends the accepting thread (`accept` on a shut-down socket fails at once), then frees the
    /// port: closed any sooner, the descriptor's number could go to another test's listening
    /// socket, and the thread would take that server's connections.
    package func stop() {
        shutdown(descriptor, Int32(SHUT_RDWR))
        ended.wait()
        close(descriptor)
    }
}
