package import Foundation
import IvySystem
import Synchronization

/// A request as it reaches the emulator, before its body is read: what the HTTP server and
/// an in-process transport both hand to `EmulatorPipeline`.
package struct IncomingRequest: Sendable {
    package var method: String
    /// The path as sent, percent-encoding and all.
    package var path: String
    /// The query as sent, without the `?`; empty when there is none.
    package var rawQuery: String
    /// Header names in lower case.
    package var headers: [String: String]
    /// `http://host:port` (or `https://`) of the server the client reached: the URLs in
    /// answers name it.
    package var baseURL: String
    /// The connection it came on and the HTTP version, for the request log; nil in-process.
    package var connection: Int?
    package var http: String?

    package init(
        method: String, path: String, rawQuery: String, headers: [String: String], baseURL: String,
        connection: Int? = nil, http: String? = nil
    ) {
        self.method = method
        self.path = path
        self.rawQuery = rawQuery
        self.headers = headers
        self.baseURL = baseURL
        self.connection = connection
        self.http = http
    }
}

/// A request's body as it arrives, read at most once, by one of the two.
package protocol IncomingBody {
    /// The whole body; fails when it runs past `limit` bytes.
    func collect(upTo limit: Int) async throws -> Data
    /// The body as far as `count` bytes (or all of it, when shorter); the rest is never read.
    func prefix(_ count: Int) async throws -> Data
    /// The whole body, telling `arrived` of each part as it comes in, before the rest: a
    /// client that dies mid-body has had what the server read counted.
    func collect(upTo limit: Int, arrived: @Sendable (Int) async -> Void) async throws -> Data
}

extension IncomingBody {
    package func collect(upTo limit: Int, arrived: @Sendable (Int) async -> Void) async throws -> Data {
        let data = try await collect(upTo: limit)
        await arrived(data.count)
        return data
    }
}

/// What the emulator answers one request, before any framework turns it into bytes.
package struct EmulatorAnswer: Sendable {
    /// Status, headers and body; `reply.endless` means filler follows the body until the
    /// client hangs up (see `EmulatorPipeline.endlessChunk`).
    package var reply: EmulatorReply
    /// The connection closes after this many bytes of the body, which promised more: a
    /// client sees a connection lost. Nil when the whole answer is sent.
    package var dropAfter: Int?
    /// A fault cut the upload short: the server read only part of the body, then hangs up
    /// (`dropAfter` is 0).
    package var uploadCutShort: Bool
    /// The drop resets the whole connection, not only this request (fault `resetConnection`).
    package var resetsConnection = false
    /// The connection is told to go away after this answer (fault `goAway`).
    package var goAway = false
}

/// Everything the emulator does with a request apart from the socket: latency, faults
/// (status, delay, hold, drop, afterHandling, headers, JSON fields), reading the body, the
/// handlers, resumable-session bookkeeping and the request log. The Hummingbird responder and
/// in-process transports both run it, so a test's faults mean the same either way.
package struct EmulatorPipeline: Sendable {
    package let state: EmulatorState

    package init(state: EmulatorState) { self.state = state }

    /// More than any body ivy sends (MP3s are capped at 50 MB).
    package static let bodyLimit = 128 * 1024 * 1024

    /// How much filler an endless download sends at most, should a client never hang up: far
    /// more than a client that does hang up can take first (see `OverlongDownloadTests`).
    package static let endlessLimit = 8 << 30
    /// The filler of an endless download goes out this much at a time.
    package static let endlessChunk = 1 << 16
    /// The byte an endless download's filler repeats.
    package static let endlessFiller: UInt8 = 0x55

    package func answer(_ request: IncomingRequest, body source: some IncomingBody) async throws -> EmulatorAnswer {
        let started = await state.now()
        let method = request.method
        let path = request.path
        let rawQuery = request.rawQuery
        let headers = request.headers
        let isControl = path.hasPrefix("/_emulator/")

        if !isControl {
            let latency = await state.latencyMilliseconds
            if latency > 0 { try await Task.sleep(for: .milliseconds(latency)) }
        }
        let fault =
            isControl ? nil : await state.fault(method: method, target: rawQuery.isEmpty ? path : path + "?" + rawQuery)
        if let delay = fault?.delayMilliseconds, delay > 0 { try await Task.sleep(for: .milliseconds(delay)) }
        if fault?.hold == true {
            // An in-process request the stopping emulator cancelled is not parked again.
            try Task.checkCancellation()
            await state.hold()
        }

        // A drop on a request with a body cuts the upload short: keep what arrived, then hang up.
        let expectsBody = Int(headers["content-length"] ?? "0").map { $0 > 0 } ?? true
        var body = Data()
        var truncated = false
        let sessionPut = method == "PUT" && path == "/upload/drive/v3/files" && rawQuery.contains("upload_id=")
        // Until its answer is logged (or its client is found gone), a session PUT is in flight:
        // a test waits for none before it reads what a killed client left.
        if sessionPut { await state.uploadStarted() }
        do {
            if let limit = fault?.dropAfterBytes, expectsBody, ["PUT", "POST", "PATCH"].contains(method) {
                body = try await source.prefix(limit)
                truncated = body.count >= limit
                if sessionPut { await state.countUploadBytes(body.count) }
            } else if sessionPut, fault?.status == nil || fault?.afterHandling == true {
                // Counted as it arrives, so a test can stop the client at a share of the file.
                let state = state
                body = try await source.collect(upTo: Self.bodyLimit) { await state.countUploadBytes($0) }
                // A client that died mid-body (an HTTP/2 stream reset may end the body early):
                // what arrived is kept, as a drop fault keeps it, and nobody is left to answer.
                if let declared = headers["content-length"].flatMap({ Int($0) }), body.count < declared {
                    truncated = true
                }
            } else if fault?.status == nil || fault?.afterHandling == true {
                body = try await source.collect(upTo: Self.bodyLimit)
            }
        } catch {
            if sessionPut { await state.uploadEnded() }
            throw error
        }

        var reply: EmulatorReply
        var account: String?
        let query = Self.queryItems(rawQuery)
        if let fault, fault.status != nil, fault.afterHandling != true, !truncated {
            reply = Self.faultReply(fault, path: path)
        } else {
            var emulated = EmulatedRequest(method: method, path: path, query: query, headers: headers, body: body)
            emulated.truncated = truncated
            (reply, account) = await state.handle(emulated, baseURL: request.baseURL)
            if let fault {
                let replaced = fault.afterHandling == true && fault.status != nil && !truncated
                reply = replaced ? Self.faultReply(fault, path: path) : Self.patched(reply, by: fault)
            }
        }
        if fault?.endless == true { reply.endless = true }
        if fault?.holdBody == true { reply.stalls = true }
        if method == "PUT", path == "/upload/drive/v3/files", let uploadID = query["upload_id"] {
            await state.sessionAnswered(reply, uploadID: uploadID)
        }
        // Google dates every answer by the clock it dates files by (ivy takes its time from
        // these): the emulator's, put off by the `dateOffset` knob; a fault rule's own `Date` stays.
        if !reply.headers.keys.contains(where: { $0.lowercased() == "date" }) {
            reply.headers["Date"] = HTTPDate.string(await state.now())
        }
        let drop = truncated ? 0 : fault?.dropAfterBytes
        // The control API is the test talking, not ivy: it stays out of the log.
        if !isControl {
            await state.log(
                LoggedRequest(
                    method: method, path: path, query: rawQuery, status: drop == nil ? reply.status : 0,
                    account: account,
                    start: started, end: await state.now(), bytes: body.count, connection: request.connection,
                    http: request.http))
        }
        if sessionPut { await state.uploadEnded() }
        return EmulatorAnswer(
            reply: reply, dropAfter: drop, uploadCutShort: truncated,
            resetsConnection: drop != nil && fault?.resetConnection == true, goAway: fault?.goAway == true)
    }

    /// Counts `bytes` of an endless download's filler as sent. Called before they go out: a
    /// client that has read some bytes always finds them counted.
    package func countEndless(_ bytes: Int) async { await state.countEndless(bytes) }

    /// Marks an endless download's writing as stopped: the client stopped taking it.
    package func endlessAnswerEnded() async { await state.endlessAnswerEnded() }

    /// OAuth's endpoints answer errors in their own flat shape; the rest is Drive's envelope.
    static let oauthPaths: Set<String> = ["/device/code", "/token", "/revoke"]

    /// A fault rule's answer. Below 400 it is just the status and the rule's headers (a 308
    /// with a bad Range); an error has Google's body for the endpoint, with Retry-After when
    /// the rule gives one.
    static func faultReply(_ fault: FaultRule, path: String) -> EmulatorReply {
        let status = fault.status ?? 500
        guard status >= 400 else { return EmulatorReply(status: status, headers: fault.headers ?? [:]) }
        var extra = fault.headers ?? [:]
        if let seconds = fault.retryAfterSeconds { extra["Retry-After"] = String(seconds) }
        guard !oauthPaths.contains(path) else {
            // Google's token endpoint names a server-side failure `internal_failure` (what
            // google-auth-library-python retries on).
            var reply = EmulatorReply.oauthError(
                status, fault.reason ?? (status >= 500 ? "internal_failure" : "invalid_request"), "Injected fault.")
            reply.headers.merge(extra) { $1 }
            return reply
        }
        return .driveError(
            status, reason: fault.reason ?? defaultReason(status), message: "Injected fault.", headers: extra)
    }

    static func defaultReason(_ status: Int) -> String {
        switch status {
        case 403: "userRateLimitExceeded"
        case 429: "rateLimitExceeded"
        case 401: "authError"
        case 404: "notFound"
        case 500...599: "backendError"
        default: "invalid"
        }
    }

    static func queryItems(_ raw: String) -> [String: String] {
        var items: [String: String] = [:]
        for pair in raw.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
            guard let key = parts.first?.formDecoded else { continue }
            items[key] = (parts.count > 1 ? parts[1] : "").formDecoded ?? ""
        }
        return items
    }

    /// A handled answer with a rule's headers and raw JSON fields put in, and its `Location`
    /// moved to the rule's `sessionLocation`.
    static func patched(_ reply: EmulatorReply, by fault: FaultRule) -> EmulatorReply {
        var patched = reply
        if let origin = fault.sessionLocation,
            let name = patched.headers.keys.first(where: { $0.lowercased() == "location" }),
            let location = patched.headers[name].flatMap({ URLComponents(string: $0) })
        {
            let query = location.percentEncodedQuery.map { "?" + $0 } ?? ""
            patched.headers[name] = origin + location.percentEncodedPath + query
        }
        for (name, value) in fault.headers ?? [:] {
            patched.headers = patched.headers.filter { $0.key.lowercased() != name.lowercased() }
            patched.headers[name] = value
        }
        guard let fields = fault.jsonFields, !fields.isEmpty,
            var object = (try? JSONSerialization.jsonObject(with: reply.body)) as? [String: Any]
        else { return patched }
        for key in fields.keys { object[key] = nil }
        // Spliced in as text: a number no Double can hold survives only that way.
        var text = String(
            decoding: (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8),
            as: UTF8.self)
        text.removeLast()
        let spliced = fields.sorted { $0.key < $1.key }.map { key, raw in
            let quoted = String(
                decoding: (try? JSONSerialization.data(withJSONObject: [key])) ?? Data("[\"\"]".utf8), as: UTF8.self)
            return "\(quoted.dropFirst().dropLast()):\(raw)"
        }
        text += (object.isEmpty ? "" : ",") + spliced.joined(separator: ",") + "}"
        patched.body = Data(text.utf8)
        return patched
    }
}

/// Requests answered without a socket, so that `GoogleEmulator.stop` ends them as closing
/// the server ends its connections: cancelled, then waited for.
final class InProcessExchanges: Sendable {
    private struct Book {
        var next = 0
        var running: [Int: Task<Void, Never>] = [:]
        var stopped = false
    }

    private let book = Mutex(Book())

    /// Starts `work` unless the emulator has stopped; false when it has.
    func start(_ work: @escaping @Sendable () async -> Void) -> Bool {
        book.withLock { book in
            guard !book.stopped else { return false }
            let key = book.next
            book.next += 1
            book.running[key] = Task(executorPreference: GoogleEmulator.executor) { [self] in
                await work()
                _ = self.book.withLock { $0.running.removeValue(forKey: key) }
            }
            return true
        }
    }

    /// Refuses new work, cancels what runs, lets held requests go (`release`), and returns
    /// once every one has ended.
    func stop(release: () async -> Void) async {
        let running = book.withLock { book in
            book.stopped = true
            return Array(book.running.values)
        }
        for task in running { task.cancel() }
        await release()
        for task in running { await task.value }
    }
}

extension GoogleEmulator {
    /// The pipeline every request to this emulator goes through.
    package var pipeline: EmulatorPipeline { EmulatorPipeline(state: state) }

    /// Runs `work` (one request answered in-process) on its own task, which `stop` cancels and
    /// waits for; false, and nothing run, once the emulator has stopped, as a stopped server
    /// refuses connections.
    package func exchange(_ work: @escaping @Sendable () async -> Void) -> Bool {
        inProcess.start(work)
    }
}

/// The `Date` header's format (RFC 9110's IMF-fixdate): `Tue, 03 Nov 2026 10:00:00 GMT`.
package enum HTTPDate {
    private static let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    package static func string(_ date: Date) -> String {
        var seconds = time_t(date.timeIntervalSince1970.rounded(.down))
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(days[Int(parts.tm_wday)]), \(two(parts.tm_mday)) \(months[Int(parts.tm_mon)]) "
            + "\(parts.tm_year + 1900) \(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
    }
}
