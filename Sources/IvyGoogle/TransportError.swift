package import Foundation

/// Why a request got no answer, in words that read after "cannot reach Google: " or a
/// request's method and path, naming the server (never a token, never a proxy's password).
/// Every transport, the tests' in-process one too, fails with these, so ivy takes each of
/// them for the network (a retry, then "cannot reach Google"), whichever way it was sent.
package struct TransportError: Error, Sendable, Equatable, CustomStringConvertible {
    package enum Kind: Sendable, Equatable {
        /// No connection: refused, no such host, nothing within the connect timeout.
        case cannotConnect
        /// The connection ended before an answer came, or while the request was still going.
        case connectionLost
        /// The connection ended partway through the answer's body.
        case cutOff
        /// No byte moved for the idle timeout.
        case timedOut
        /// TLS failed: a certificate not trusted, or no handshake.
        case tls
        /// The proxy the environment names could not be used, or refused the tunnel.
        case proxy
        /// The extra certificate authorities (`IVY_CA_FILE`) could not be read.
        case certificateFile
    }

    package var kind: Kind
    package var message: String

    package init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    package var description: String { message }

    /// `host:port` of the server `url` names, as these messages name it.
    package static func server(of url: URL) -> String {
        let host = url.host ?? "?"
        let port = url.port ?? (url.scheme?.lowercased() == "https" ? 443 : 80)
        return (host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host) + ":\(port)"
    }

    /// No connection to `url`'s server: nothing listens there.
    package static func refused(_ url: URL) -> TransportError {
        TransportError(.cannotConnect, "no connection to \(server(of: url)) (connection refused)")
    }

    /// The connection to `url`'s server ended before the answer did.
    package static func lost(_ url: URL) -> TransportError {
        TransportError(.connectionLost, "the connection to \(server(of: url)) was lost")
    }

    /// The connection to `url`'s server ended `unread` bytes before the answer's end.
    package static func cutOff(_ url: URL, unread: Int64) -> TransportError {
        TransportError(.cutOff, "the connection to \(server(of: url)) closed with \(unread) bytes of the answer unread")
    }
}

extension TransportError: LocalizedError {
    package var errorDescription: String? { message }
}
