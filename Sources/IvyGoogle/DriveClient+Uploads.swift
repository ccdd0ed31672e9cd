import Foundation
import IvyCore
import IvySystem

extension DriveClient {
    // MARK: uploads

    /// Delete-then-create: removes the files of that name seen in this sync's listing
    /// (404 counts as gone), then creates the new one with a pre-generated id.
    package func uploadJSON(name: String, data: Data, folder: String, replacing: [RemoteFile]) async throws
        -> UploadedFile
    {
        for file in replacing { try await delete(file.id) }
        let context = "uploading \(name)"
        var id = try await ids.next()
        for round in 1...2 {
            let boundary = "ivy-\(UUID().uuidString)"
            let metadata = try NewFile(id: id, name: name, parents: [folder], mimeType: "application/json").json()
            var body = Data("--\(boundary)\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n".utf8)
            body.append(metadata)
            body.append(Data("\r\n--\(boundary)\r\nContent-Type: application/json\r\n\r\n".utf8))
            body.append(data)
            body.append(Data("\r\n--\(boundary)--\r\n".utf8))
            let request = HTTPRequest(
                method: "POST",
                url: http.url(
                    "upload/drive/v3/files",
                    ["uploadType": "multipart", "fields": Self.createdFields]),
                headers: ["Content-Type": "multipart/related; boundary=\(boundary)"], body: .data(body))
            do {
                return try http.uploaded(try await http.execute(request, context: context), context: context)
            } catch let error as DriveError where error.status == 409 {
                // Drive documents 409 for a retried create whose first attempt made the file.
                do {
                    return try await existing(id, context: context)
                } catch let gone as DriveError where gone.status == 404 && round == 1 {
                    // Made, then deleted since (another device replaced it): create it again.
                    id = try await ids.next()
                }
            } catch let error as DriveError where Self.idNotUsable(error) && round == 1 {
                id = try await ids.next()
            }
        }
        throw DriveError(.unexpected, message: "\(context): Drive refused two pre-generated file ids")
    }

    /// `400 fileIdNotUsable`: Drive will not create a file with that pre-generated id; a fresh
    /// one works.
    static func idNotUsable(_ error: DriveError) -> Bool {
        error.status == 400 && error.reason == "fileIdNotUsable"
    }

    /// Uploads an MP3 through a resumable session, streamed from disk. After a dropped
    /// connection, a 5xx or a rate limit it asks the session what arrived and sends only the
    /// rest; a session that expired or answered another 4xx starts over (Google: "For any 4xx
    /// errors (including 403) during a resumable upload, restart the upload"), at most three
    /// sessions in all. Over the 50 MB cap it fails before any request. `progress` is told of
    /// the file's bytes as they are sent (a part sent again counts again).
    package func uploadMP3(
        name: String, file: URL, folder: String, replacing: [RemoteFile],
        progress: (@Sendable (Int64) -> Void)? = nil
    ) async throws -> UploadedFile {
        let size = try LocalFile.size(of: file)
        guard AudioRules.allows(size) else {
            let message = "\(file.path) is \(AudioRules.grouped(size)) bytes; \(AudioRules.limitSentence)"
            throw DriveError(.fileTooLarge, message: message)
        }
        for old in replacing { try await delete(old.id) }
        var id = try await ids.next()
        let context = "uploading \(name)"
        var sessions = 0
        // Failures of the session PUTs, across sessions: each is followed by a status query.
        var retries = RetryBudget(upload: http.policy, sleep: http.sleep)
        var ended = "the upload session expired"
        while true {
            sessions += 1
            let session: URL
            do {
                do {
                    session = try await startSession(id: id, name: name, folder: folder, size: size, context: context)
                } catch let error as DriveError where Self.idNotUsable(error) && sessions == 1 {
                    id = try await ids.next()
                    session = try await startSession(id: id, name: name, folder: folder, size: size, context: context)
                }
            } catch let error as DriveError where error.status == 409 {
                // A file with this upload's own id exists: an earlier session finished though
                // its answer was lost. Read what Drive made, as the multipart path does.
                do {
                    return try await existing(id, context: context)
                } catch let gone as DriveError where gone.status == 404 && sessions < 3 {
                    // Made, then deleted since (another device replaced it): upload it again.
                    id = try await ids.next()
                    continue
                }
            }
            var offset: Int64 = 0
            var needsStatus = false
            var stalls = 0
            sessionLoop: while true {
                let response: HTTPResponse
                do {
                    if needsStatus {
                        response = try await http.attempt(
                            HTTPRequest(
                                method: "PUT", url: session,
                                headers: ["Content-Range": "bytes */\(size)", "Content-Length": "0"],
                                body: .data(Data())))
                    } else {
                        let range = size == 0 ? "bytes */0" : "bytes \(offset)-\(size - 1)/\(size)"
                        response = try await http.attempt(
                            HTTPRequest(
                                method: "PUT", url: session,
                                headers: ["Content-Range": range, "Content-Type": "audio/mpeg"],
                                body: .file(file, range: offset..<size), progress: progress))
                    }
                } catch let error as DriveError where error.isRetryable {
                    try await retries.backOff(after: error, retryAfter: nil)
                    needsStatus = true
                    continue
                }
                switch response.status {
                case 200, 201:
                    await http.pacer.succeeded()
                    return try http.uploaded(response, context: context)
                case 308:
                    // No Range means nothing stored; one that is not `bytes=0-N` within the
                    // file is an answer ivy cannot resume from.
                    guard let confirmed = Self.confirmedBytes(response.headers["range"], size: size) else {
                        throw DriveError(
                            .server, status: 308,
                            message: "\(context): Drive confirmed \(Self.quoted(response.headers["range"])) "
                                + "of a \(size)-byte upload, which cannot be; the upload was stopped "
                                + "and the next sync tries again")
                    }
                    // A 308 that does not move the confirmed part forward is a stall; a few
                    // are normal (the status query after a dropped connection), an answer that
                    // never moves forward must not keep ivy sending for ever.
                    if confirmed > offset {
                        stalls = 0
                    } else {
                        stalls += 1
                        guard stalls <= http.policy.maxAttempts else {
                            throw DriveError(
                                .server, status: 308,
                                message:
                                    "\(context): Drive stopped confirming the upload at byte \(confirmed) of \(size); "
                                    + "the next sync tries again")
                        }
                    }
                    offset = confirmed
                    // Everything arrived yet the upload is not finished: ask for its result.
                    needsStatus = offset == size
                case 404, 410:
                    ended = "the upload session expired"
                    break sessionLoop
                case 409:
                    return try await existing(id, context: context)
                default:
                    let error = DriveError.from(response, context: context)
                    if Self.endsSession(response.status, error) {
                        ended =
                            "Drive ended the upload session (\(response.status)\(error.reason.map { " \($0)" } ?? ""))"
                        break sessionLoop
                    }
                    guard error.isRetryable else { throw error }
                    try await retries.backOff(after: error, retryAfter: response.retryAfter)
                    needsStatus = true
                }
            }
            guard sessions < 3 else {
                throw DriveError(
                    .server, message: "\(context): \(ended), three sessions in a row; the next sync tries again")
            }
        }
    }

    /// A 4xx that means this session is dead and a new one may succeed. Not a rate limit
    /// (wait, then ask the same session), not an expired token (refreshed already), and not
    /// what no new session can fix (a full Drive, a project or sign-in not set up for Drive).
    static func endsSession(_ status: Int, _ error: DriveError) -> Bool {
        (400..<500).contains(status) && status != 401 && ![.rateLimited, .driveFull, .setup].contains(error.kind)
    }

    private func startSession(id: String, name: String, folder: String, size: Int64, context: String) async throws
        -> URL
    {
        let metadata = try NewFile(id: id, name: name, parents: [folder], mimeType: "audio/mpeg").json()
        let request = HTTPRequest(
            method: "POST",
            url: http.url(
                "upload/drive/v3/files", ["uploadType": "resumable", "fields": Self.createdFields]),
            headers: [
                "Content-Type": "application/json; charset=UTF-8", "X-Upload-Content-Type": "audio/mpeg",
                "X-Upload-Content-Length": String(size),
            ],
            body: .data(metadata))
        let response = try await http.execute(request, context: context)
        guard let location = response.headers["location"], let url = URL(string: location) else {
            throw DriveError(.unexpected, message: "\(context): the upload session has no Location")
        }
        return url
    }

    /// How many bytes a 308's `Range` confirms: `bytes=0-42` means 43 arrived, no header means
    /// none. Nil for anything else: not that form, not starting at 0, past `size`, or a
    /// number too long for Int64.
    static func confirmedBytes(_ header: String?, size: Int64) -> Int64? {
        guard let header else { return 0 }
        let text = header.trimmingCharacters(in: .whitespaces)
        guard text.lowercased().hasPrefix("bytes=0-") else { return nil }
        let digits = text.dropFirst("bytes=0-".count)
        guard !digits.isEmpty, digits.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }), let last = Int64(digits), last < size
        else { return nil }
        return last + 1
    }

    /// A server's header, quoted and cut short for a message.
    static func quoted(_ header: String?) -> String {
        guard let header else { return "nothing" }
        return "\"" + String(header.prefix(60)) + (header.count > 60 ? "…" : "") + "\""
    }
}
