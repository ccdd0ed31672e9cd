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
                CrashPoints.reach(.driveCreateBeforeSend)
                let response = try await http.execute(request, context: context)
                CrashPoints.reach(.driveCreateAfterAnswer)
                return try http.uploaded(response, context: context)
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

    /// Uploads an MP3 through a resumable session, streamed from disk a chunk at a time
    /// (`ResumableUpload.defaultChunk`): the loop that carries out `ResumableUpload`'s steps
    /// (which say how a dropped connection, an expired session or a 409 is answered). Over the
    /// 50 MB cap it fails before any request. `progress` is told of the file's bytes as they
    /// are sent (a part sent again counts again).
    ///
    /// Nothing is written before Drive has opened a session on the sign-in's own server
    /// (`ResumableUpload.sessionURL`): only then does `beforeSending` run (a clip's JSON goes
    /// up there, so a session Drive will not give leaves no JSON without its MP3 behind) and
    /// are the files `replacing` names deleted, before the first byte of the file is sent.
    ///
    /// With a `journal`, the session outlives the process: it is kept when Drive opens it and
    /// after each chunk's answer, and a later upload of the same bytes asks it what it holds
    /// and sends only the rest (`ResumableUpload.resumable` says when a kept one is not used).
    package func uploadMP3(
        name: String, file: URL, folder: DriveFileID, replacing: [RemoteFile],
        progress: (@Sendable (Int64) -> Void)? = nil, journal: UploadJournal? = nil,
        beforeSending: () async throws -> Void = {}
    ) async throws -> UploadedFile {
        let size = try LocalFile.size(of: file)
        guard AudioRules.allows(size) else {
            let message = "\(file.path) is \(AudioRules.grouped(size)) bytes; \(AudioRules.limitSentence)"
            throw DriveError(.fileTooLarge, message: message)
        }
        let context = "uploading \(name)"
        var machine = ResumableUpload(size: size, maximumStalls: http.policy.maxAttempts, context: context)
        var id: DriveFileID
        var session: URL?
        var step: ResumableUpload.Step
        var record: UploadSessionRecord?
        if let journal, let kept = journal.kept {
            switch ResumableUpload.resumable(
                kept, md5: journal.md5, size: size, now: journal.now(), drive: http.base, context: context)
            {
            case .success(let url):
                id = kept.fileID
                session = url
                record = kept
                step = machine.resume()
            case .failure(let reason):
                try await journal.forget(reason)
                id = try await newFileID()
                step = machine.start()
            }
        } else {
            id = try await newFileID()
            step = machine.start()
        }
        var last: HTTPResponse?
        // Failures of the session PUTs, across sessions: each is followed by a status query.
        var retries = RetryBudget(upload: http.policy, sleep: http.sleep, builtInClient: http.builtInClient)
        var prepared = false
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
                    let url = try await startSession(id: id, name: name, folder: folder, size: size, context: context)
                    session = url
                    if let journal {
                        let opened = UploadSessionRecord(
                            clipID: journal.clipID, uri: url.absoluteString, fileID: id, committed: 0, md5: journal.md5,
                            size: size, startedAt: journal.now())
                        try await journal.save(opened)
                        record = opened
                    }
                    step = machine.next(.sessionStarted)
                } catch let error as DriveError {
                    step = machine.next(.sessionRefused(error))
                }
            case .send, .askStatus:
                guard let session else { throw DriveError(.unexpected, message: "\(context): no upload session") }
                let request = Self.sessionPut(
                    step, session: session, file: file, size: size, chunk: uploadChunk, progress: progress)
                do {
                    CrashPoints.reach(.driveUploadBeforeSend)
                    let response = try await http.attempt(request)
                    CrashPoints.reach(.driveUploadAfterAnswer)
                    last = response
                    let error =
                        [200, 201, 308].contains(response.status) ? nil : DriveError.from(response, context: context)
                    let range = response.headers["range"]
                    step = machine.next(
                        .answered(
                            status: response.status, range: range, error: error, retryAfter: response.retryAfter))
                    // What Drive holds now is what a later run resumes from.
                    if response.status == 308, let journal, var kept = record,
                        let confirmed = ResumableUpload.confirmedBytes(range, size: size), confirmed != kept.committed
                    {
                        kept.committed = confirmed
                        try await journal.save(kept)
                        record = kept
                    }
                } catch let error as DriveError where error.isRetryable {
                    step = machine.next(.dropped(error))
                }
            case .backOff(let error, let retryAfter):
                try await retries.backOff(after: error, retryAfter: retryAfter)
                step = machine.next(.waited)
            case .readExisting:
                do {
                    let existing = try await existing(id, context: context)
                    try await journal?.forget(nil)
                    return existing
                } catch let gone as DriveError where gone.status == 404 {
                    step = machine.next(.existingGone(gone))
                }
            case .finish:
                guard let last else { throw DriveError(.unexpected, message: "\(context): no answer to finish with") }
                http.pacer.succeeded()
                let uploaded = try http.uploaded(last, context: context)
                try await journal?.forget(nil)
                return uploaded
            case .fail(let error):
                // Failed for good: no later run resumes this session.
                try await journal?.forget(nil)
                throw error.escalated
            }
        }
    }

    /// The PUT a `send` or `askStatus` step makes. A chunk is read from the file at its own
    /// offset with its exact length, each time it is sent: a body never goes again as if
    /// whole once part of it was read.
    static func sessionPut(
        _ step: ResumableUpload.Step, session: URL, file: URL, size: Int64, chunk: Int64,
        progress: (@Sendable (Int64) -> Void)?
    ) -> HTTPRequest {
        guard case .send(let offset) = step, size > 0 else {
            return HTTPRequest(
                method: "PUT", url: session, headers: ["Content-Range": "bytes */\(size)", "Content-Length": "0"],
                body: .data(Data()))
        }
        let end = min(size, offset + ResumableUpload.chunk(chunk))
        return HTTPRequest(
            method: "PUT", url: session,
            headers: ["Content-Range": "bytes \(offset)-\(end - 1)/\(size)", "Content-Type": "audio/mpeg"],
            body: .file(file, range: offset..<end), progress: progress)
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
        CrashPoints.reach(.driveSessionBeforeSend)
        let response = try await http.execute(request, context: context)
        CrashPoints.reach(.driveSessionAfterAnswer)
        return try ResumableUpload.sessionURL(response.headers["location"], drive: http.base, context: context)
    }
}

/// Where an MP3 upload keeps its session between runs (the library, in a sync), and what it
/// needs to know whether a kept one may be resumed.
package struct UploadJournal: Sendable {
    package var clipID: ClipID
    /// The session an earlier run kept for this clip, if any.
    package var kept: UploadSessionRecord?
    /// The md5 of the file being uploaded.
    package var md5: String
    /// The time sessions are dated by.
    package var now: @Sendable () -> Milliseconds
    package var save: @Sendable (UploadSessionRecord) async throws -> Void
    /// Forgets the session; with the reason a kept one was not resumed.
    package var forget: @Sendable (ResumableUpload.Abandoned?) async throws -> Void

    package init(
        clipID: ClipID, kept: UploadSessionRecord?, md5: String, now: @escaping @Sendable () -> Milliseconds,
        save: @escaping @Sendable (UploadSessionRecord) async throws -> Void,
        forget: @escaping @Sendable (ResumableUpload.Abandoned?) async throws -> Void
    ) {
        self.clipID = clipID
        self.kept = kept
        self.md5 = md5
        self.now = now
        self.save = save
        self.forget = forget
    }
}
