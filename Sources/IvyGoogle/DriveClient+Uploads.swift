package import Foundation
package import IvyCore
import IvySystem

extension DriveClient {
    // MARK: uploads

    /// Delete-then-create: removes the files of that name seen in this sync's listing
    /// (404 counts as gone), then creates the new one with a pre-generated id.
    package func uploadJSON(name: String, data: Data, folder: DriveFileID, replacing: [RemoteFile]) async throws
        -> UploadedFile
    {
        for file in replacing { try await delete(file.id) }
        let context = "uploading \(name)"
        var id = try await newFileID()
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
                    id = try await newFileID()
                }
            } catch let error as DriveError where Self.idNotUsable(error) && round == 1 {
                id = try await newFileID()
            }
        }
        throw DriveError(.unexpected, message: "\(context): Drive refused two pre-generated file ids")
    }

    /// `400 fileIdNotUsable`: Drive will not create a file with that pre-generated id; a fresh
    /// one works.
    static func idNotUsable(_ error: DriveError) -> Bool {
        error.status == 400 && error.reason == "fileIdNotUsable"
    }

    /// Uploads an MP3 through a resumable session, streamed from disk: the loop that carries
    /// out `ResumableUpload`'s steps (which say how a dropped connection, an expired session or
    /// a 409 is answered). Over the 50 MB cap it fails before any request. `progress` is told
    /// of the file's bytes as they are sent (a part sent again counts again).
    ///
    /// Nothing is written before Drive has opened a session on the sign-in's own server
    /// (`ResumableUpload.sessionURL`): only then does `beforeSending` run (a clip's JSON goes
    /// up there, so a session Drive will not give leaves no JSON without its MP3 behind) and
    /// are the files `replacing` names deleted, before the first byte of the file is sent.
    package func uploadMP3(
        name: String, file: URL, folder: DriveFileID, replacing: [RemoteFile],
        progress: (@Sendable (Int64) -> Void)? = nil, beforeSending: () async throws -> Void = {}
    ) async throws -> UploadedFile {
        let size = try LocalFile.size(of: file)
        guard AudioRules.allows(size) else {
            let message = "\(file.path) is \(AudioRules.grouped(size)) bytes; \(AudioRules.limitSentence)"
            throw DriveError(.fileTooLarge, message: message)
        }
        let context = "uploading \(name)"
        var machine = ResumableUpload(size: size, maximumStalls: http.policy.maxAttempts, context: context)
        var id = try await newFileID()
        var session: URL?
        var last: HTTPResponse?
        // Failures of the session PUTs, across sessions: each is followed by a status query.
        var retries = RetryBudget(upload: http.policy, sleep: http.sleep, builtInClient: http.builtInClient)
        var prepared = false
        var step = machine.start()
        while true {
            // A session is open (or a 409 says the file exists): what must come first goes first.
            switch step {
            case .startSession, .fail: break
            default:
                guard !prepared else { break }
                prepared = true
                try await beforeSending()
                for old in replacing { try await delete(old.id) }
            }
            switch step {
            case .startSession(let newID):
                if newID { id = try await newFileID() }
                do {
                    session = try await startSession(id: id, name: name, folder: folder, size: size, context: context)
                    step = machine.next(.sessionStarted)
                } catch let error as DriveError {
                    step = machine.next(.sessionRefused(error))
                }
            case .send, .askStatus:
                guard let session else { throw DriveError(.unexpected, message: "\(context): no upload session") }
                var request = HTTPRequest(
                    method: "PUT", url: session, headers: ["Content-Range": "bytes */\(size)", "Content-Length": "0"],
                    body: .data(Data()))
                if case .send(let offset) = step {
                    let range = size == 0 ? "bytes */0" : "bytes \(offset)-\(size - 1)/\(size)"
                    request = HTTPRequest(
                        method: "PUT", url: session, headers: ["Content-Range": range, "Content-Type": "audio/mpeg"],
                        body: .file(file, range: offset..<size), progress: progress)
                }
                do {
                    let response = try await http.attempt(request)
                    last = response
                    let error =
                        [200, 201, 308].contains(response.status) ? nil : DriveError.from(response, context: context)
                    step = machine.next(
                        .answered(
                            status: response.status, range: response.headers["range"], error: error,
                            retryAfter: response.retryAfter))
                } catch let error as DriveError where error.isRetryable {
                    step = machine.next(.dropped(error))
                }
            case .backOff(let error, let retryAfter):
                try await retries.backOff(after: error, retryAfter: retryAfter)
                step = machine.next(.waited)
            case .readExisting:
                do {
                    return try await existing(id, context: context)
                } catch let gone as DriveError where gone.status == 404 {
                    step = machine.next(.existingGone(gone))
                }
            case .finish:
                guard let last else { throw DriveError(.unexpected, message: "\(context): no answer to finish with") }
                http.pacer.succeeded()
                return try http.uploaded(last, context: context)
            case .fail(let error):
                throw error.escalated
            }
        }
    }

    private func startSession(id: DriveFileID, name: String, folder: DriveFileID, size: Int64, context: String)
        async throws
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
        return try ResumableUpload.sessionURL(response.headers["location"], drive: http.base, context: context)
    }
}
