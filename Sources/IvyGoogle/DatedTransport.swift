package import Foundation
package import IvyCore

/// A transport that tells `time` what Google's clock said: every answer's `Date` header, with
/// the boot clock's readings before the request and after its answer (`GoogleTime.learn`).
/// Only Google's own answers go through it (the health URL's pings have their own transport),
/// so no other server's clock is ever taken for Google's.
package struct DatedTransport: HTTPTransport {
    let base: any HTTPTransport
    let time: GoogleTime

    package init(_ base: any HTTPTransport, time: GoogleTime) {
        self.base = base
        self.time = time
    }

    package func send(_ request: HTTPRequest) async throws -> HTTPResponse {
        let sent = time.bootClock()
        let response = try await base.send(request)
        learn(from: response, sent: sent)
        return response
    }

    package func download(_ request: HTTPRequest, to file: URL, from offset: Int64) async throws -> HTTPResponse {
        let sent = time.bootClock()
        let response = try await base.download(request, to: file, from: offset)
        learn(from: response, sent: sent)
        return response
    }

    private func learn(from response: HTTPResponse, sent: Milliseconds) {
        guard let date = response.headers["date"].flatMap(HTTPDateHeader.milliseconds) else { return }
        time.learn(date: date, sent: sent, received: time.bootClock())
    }
}
