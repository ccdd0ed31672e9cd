import AsyncHTTPClient
package import Foundation
import IvySystem
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// HTTP through AsyncHTTPClient (swift-nio, swift-nio-ssl's BoringSSL, HTTP/2 by ALPN), ivy's
/// only HTTP stack. Every answer streams: a body is counted as it arrives and cut off at the
/// request's limit, a download goes straight into ivy's own 0600 file, an upload is read from
/// its file as the connection takes it. A request ends when its task is cancelled; one with
/// no byte moving for `WireSettings.idleTimeout` fails. Nothing here blocks a cooperative
/// thread: the transfer runs on `BlockingExecutor`'s threads (its file reads and writes
/// block), and NIO waits in epoll on its own.
package final class HTTPClientTransport: HTTPTransport {
    package let settings: WireSettings

    package init(_ settings: WireSettings = WireSettings()) {
        self.settings = settings
    }

    package func send(_ request: HTTPRequest) async throws -> HTTPResponse {
        try await perform(request, into: nil)
    }

    package func download(_ request: HTTPRequest, to file: URL, from offset: Int64) async throws -> HTTPResponse {
        try Task.checkCancellation()
        return try await BlockingExecutor.run { () async throws -> HTTPResponse in
            let descriptor = try Transfer.openDownload(file, from: offset)
            defer { close(descriptor) }
            return try await perform(request, into: (descriptor, file.path))
        }
    }

    private func perform(_ request: HTTPRequest, into file: (descriptor: Int32, path: String)?) async throws
        -> HTTPResponse
    {
        // A task cancelled before its request starts sends nothing.
        try Task.checkCancellation()
        do {
            return try await BlockingExecutor.run { () async throws -> HTTPResponse in
                try await exchange(request, into: file)
            }
        } catch  where Task.isCancelled {
            throw CancellationError()
        }
    }

    private func exchange(_ request: HTTPRequest, into file: (descriptor: Int32, path: String)?) async throws
        -> HTTPResponse
    {
        let proxy = try settings.proxies.route(for: request.url)
        let failure = WireFailure(url: request.url, proxy: proxy, idleTimeout: settings.idleTimeout)
        let client = try await WireClients.shared.client(
            WireClients.Key(caFile: settings.caFile, idleTimeout: settings.idleTimeout, proxy: proxy))
        let transfer = Transfer(
            limit: max(0, request.responseLimit), file: file, progress: request.progress,
            statusOnly: request.statusOnly)
        var outgoing = HTTPClientRequest(url: request.url.absoluteString)
        outgoing.method = HTTPMethod(rawValue: request.method.uppercased())
        for (name, value) in request.headers { outgoing.headers.replaceOrAdd(name: name, value: value) }
        outgoing.body = OutgoingChunks.body(request.body, transfer: transfer)

        let response: HTTPClientResponse
        do {
            response = try await client.execute(outgoing, deadline: .distantFuture)
        } catch {
            throw failure.reason(error)
        }
        let status = Int(response.status.code)
        var headers: [String: String] = [:]
        for (name, value) in response.headers {
            let key = name.lowercased()
            headers[key] = headers[key].map { $0 + ", " + value } ?? value
        }
        // Only the status wanted: answered now; the response dropped unread cancels the rest
        // (HTTP/1.1 closes the connection, HTTP/2 resets the stream).
        guard transfer.responded(status: status, headers: headers) else {
            return HTTPResponse(status: status, headers: headers)
        }
        do {
            for try await chunk in response.body {
                // False: past the limit, or the file write failed; reading stops here and the
                // rest of the answer is cancelled as the body is dropped.
                guard transfer.receive(Data(chunk.readableBytesView), status: status) else { break }
            }
        } catch {
            if Task.isCancelled { throw CancellationError() }
            if let stopped = transfer.stopReason(status: status) { throw stopped }
            let expected = headers["content-length"].flatMap { Int64($0) }
            throw failure.reason(error, unread: expected.map { $0 - transfer.received })
        }
        try Task.checkCancellation()
        return try transfer.result(status: status, headers: headers)
    }
}

/// A request's body handed to AsyncHTTPClient a chunk at a time, as the connection takes
/// them: a file's range is read from disk as it goes, never whole into memory, on ivy's own
/// threads; each chunk counts as sent for the request's progress.
struct OutgoingChunks: AsyncSequence, Sendable {
    typealias Element = ByteBuffer
    static let chunk = 256 << 10

    let body: HTTPRequest.Body
    let transfer: Transfer

    static func body(_ body: HTTPRequest.Body, transfer: Transfer) -> HTTPClientRequest.Body? {
        let length: Int64
        switch body {
        case .none: return nil
        case .data(let data): length = Int64(data.count)
        case .file(_, let range): length = Swift.max(0, range.upperBound - range.lowerBound)
        }
        return .stream(OutgoingChunks(body: body, transfer: transfer), length: .known(length))
    }

    func makeAsyncIterator() -> Iterator {
        switch body {
        case .none: Iterator(data: Data(), file: nil, transfer: transfer)
        case .data(let data): Iterator(data: data, file: nil, transfer: transfer)
        case .file(let url, let range):
            Iterator(data: nil, file: FileReader(url.path, range: range), transfer: transfer)
        }
    }

    struct Iterator: AsyncIteratorProtocol {
        var data: Data?
        let file: FileReader?
        let transfer: Transfer

        mutating func next() async throws -> ByteBuffer? {
            let buffer: ByteBuffer?
            if let file {
                buffer = try await file.next()
            } else if let rest = data, !rest.isEmpty {
                let part = rest.prefix(OutgoingChunks.chunk)
                data = rest.dropFirst(part.count)
                buffer = ByteBuffer(bytes: part)
            } else {
                buffer = nil
            }
            if let buffer { transfer.sent(Int64(buffer.readableBytes)) }
            return buffer
        }
    }
}

/// Reads bytes `range` of a file a chunk at a time, opening it at the first read and closing
/// it at the end, or when the upload is dropped. (`@unchecked`: one task reads at a time.)
final class FileReader: @unchecked Sendable {
    private let path: String
    private var descriptor: Int32 = -1
    private var offset: Int64
    private let end: Int64

    init(_ path: String, range: Range<Int64>) {
        self.path = path
        offset = max(0, range.lowerBound)
        end = range.upperBound
    }

    deinit {
        if descriptor >= 0 { close(descriptor) }
    }

    func next() async throws -> ByteBuffer? {
        guard offset < end else { return nil }
        return try await BlockingExecutor.blocking { try read() }
    }

    private func read() throws -> ByteBuffer {
        if descriptor < 0 {
            descriptor = open(path, O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else { throw Self.error(errno, path) }
        }
        let count = Int(min(Int64(OutgoingChunks.chunk), end - offset))
        var buffer = ByteBufferAllocator().buffer(capacity: count)
        let read = try buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: count) { bytes in
            while true {
                let got = pread(descriptor, bytes.baseAddress, count, off_t(offset))
                if got < 0, errno == EINTR { continue }
                guard got >= 0 else { throw Self.error(errno, path) }
                return got
            }
        }
        // The file is shorter than the range asked for: it changed while it was sent.
        guard read > 0 else { throw CocoaError(.fileReadCorruptFile, userInfo: [NSFilePathErrorKey: path]) }
        offset += Int64(read)
        return buffer
    }

    private static func error(_ code: Int32, _ path: String) -> any Error {
        if code == ENOENT { return CocoaError(.fileReadNoSuchFile, userInfo: [NSFilePathErrorKey: path]) }
        var info: [String: Any] = [NSUnderlyingErrorKey: POSIXError(POSIXErrorCode(rawValue: code) ?? .EIO)]
        info[NSFilePathErrorKey] = path
        return CocoaError(.fileReadUnknown, userInfo: info)
    }
}

/// What an AsyncHTTPClient, NIO or TLS error means for the request to `url`, said as
/// `TransportError` (see its kinds), naming the server and any proxy but never a password.
struct WireFailure {
    let url: URL
    let proxy: ProxyServer?
    let idleTimeout: Duration

    /// `host:port` of the server asked.
    var server: String { TransportError.server(of: url) }

    var seconds: String {
        let whole = idleTimeout / .seconds(1)
        return whole == whole.rounded() ? String(Int(whole)) : String(format: "%.1f", whole)
    }

    /// " through the proxy P (from VARIABLE)", or nothing.
    var through: String { proxy.map { " through the proxy \($0.shown) (from \($0.variable))" } ?? "" }

    /// The error to throw for `error`; `unread` is how much of the answer's body never came,
    /// when it failed partway.
    func reason(_ error: any Error, unread: Int64? = nil) -> any Error {
        switch error {
        case is CancellationError, is TransportError, is StorageError, is CocoaError: return error
        case let error as HTTPClientError: return reason(error, unread: unread)
        case let error as NIOConnectionError: return connectFailure(error)
        case let error as IOError where Self.noConnection.contains(error.errnoCode):
            return noConnection("(\(Self.words(errno: error.errnoCode)))")
        case let error as IOError: return lost(Self.words(errno: error.errnoCode), unread: unread)
        case ChannelError.connectTimeout: return noConnection("within \(seconds) s")
        case let error as NIOSSLError: return tls("\(error)")
        case let error as NIOSSLExtraError: return tls("\(error)")
        case let error as BoringSSLError: return tls("\(error)")
        default: return lost(String(describing: error), unread: unread)
        }
    }

    private func reason(_ error: HTTPClientError, unread: Int64?) -> any Error {
        switch error {
        case .cancelled: return CancellationError()
        case .connectTimeout, .tlsHandshakeTimeout, .httpProxyHandshakeTimeout, .socksHandshakeTimeout:
            return noConnection("within \(seconds) s")
        case .readTimeout: return TransportError(.timedOut, "\(server) sent nothing for \(seconds) s\(through)")
        case .writeTimeout:
            return TransportError(.timedOut, "\(server) took none of the request for \(seconds) s\(through)")
        case .remoteConnectionClosed: return lost(nil, unread: unread)
        case .proxyAuthenticationRequired:
            guard let proxy else { return lost("\(error)", unread: unread) }
            return TransportError(
                .proxy,
                "the proxy \(proxy.shown) (from \(proxy.variable)) wants a user name and password it was not given; "
                    + "put them in \(proxy.variable) as http://USER:PASSWORD@HOST:PORT")
        case .invalidProxyResponse:
            guard let proxy else { return lost("\(error)", unread: unread) }
            return TransportError(
                .proxy, "the proxy \(proxy.shown) (from \(proxy.variable)) refused the tunnel to \(server)")
        default: return lost("\(error)", unread: unread)
        }
    }

    private func connectFailure(_ error: NIOConnectionError) -> TransportError {
        if let failure = error.connectionErrors.first {
            if let io = failure.error as? IOError { return noConnection("(\(Self.words(errno: io.errnoCode)))") }
            return noConnection("(\(failure.error))")
        }
        if error.dnsAError != nil || error.dnsAAAAError != nil {
            let host = proxy?.host ?? url.host ?? "?"
            return TransportError(.cannotConnect, "cannot find the address of \(host)\(through)")
        }
        return noConnection("")
    }

    private func noConnection(_ why: String) -> TransportError {
        let what = why.isEmpty ? "" : " \(why)"
        if let proxy {
            return TransportError(
                .cannotConnect,
                "no connection to the proxy \(proxy.shown) (from \(proxy.variable))\(what), for \(server)")
        }
        return TransportError(.cannotConnect, "no connection to \(server)\(what)")
    }

    private func lost(_ why: String?, unread: Int64?) -> TransportError {
        if let unread, unread > 0 { return TransportError.cutOff(url, unread: unread) }
        let cause = why.map { " (\($0))" } ?? ""
        return TransportError(.connectionLost, "the connection to \(server) was lost\(cause)\(through)")
    }

    private func tls(_ detail: String) -> TransportError {
        let host = url.host ?? "?"
        if detail.contains("CERTIFICATE_VERIFY_FAILED") || detail.contains("certificate verify failed") {
            return TransportError(
                .tls,
                "\(server) showed a certificate no trusted authority signed; for an emulator, sign in with "
                    + "IVY_CA_FILE naming its certificate authority; otherwise check the system's certificates "
                    + "(Debian: the ca-certificates package) and any proxy that looks inside TLS")
        }
        if detail.contains("failedToValidateHostname") {
            return TransportError(.tls, "\(server) showed a certificate that is not for \(host)")
        }
        return TransportError(.tls, "TLS with \(server) failed (\(detail))\(through)")
    }

    /// The errnos of a connection never made.
    static let noConnection: Set<Int32> = [ECONNREFUSED, EHOSTUNREACH, ENETUNREACH, EADDRNOTAVAIL, ETIMEDOUT]

    /// An errno as words: `connection refused`.
    static func words(errno code: Int32) -> String {
        String(cString: strerror(code)).lowercased()
    }
}
