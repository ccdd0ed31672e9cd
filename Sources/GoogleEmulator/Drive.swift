import Foundation

/// Drive API v3: the subset ivy uses, with Drive's shapes, errors and quirks.
extension EmulatorState {
    static let sessionLifetime: TimeInterval = 7 * 24 * 3600

    func fileJSON(_ file: DriveFile) -> [String: Any] {
        var object: [String: Any] = [
            "kind": "drive#file", "id": file.id, "name": file.name, "mimeType": file.mimeType, "parents": file.parents,
            "createdTime": RFC3339.string(file.createdTime), "modifiedTime": RFC3339.string(file.modifiedTime),
            "trashed": isTrashed(file), "explicitlyTrashed": file.explicitlyTrashed,
        ]
        if !file.isFolder {
            // Drive encodes int64 values as JSON strings.
            object["size"] = file.misreport?.size ?? String(file.size)
            object["md5Checksum"] = file.md5
        }
        return object
    }

    /// The file as this request's `fields` asks for it; Drive's default is kind, id, name, mimeType.
    func fileReply(_ file: DriveFile, fields: String?, status: Int = 200) -> EmulatorReply {
        let object = fileJSON(file)
        guard let fields else {
            return .json(status, object.filter { ["kind", "id", "name", "mimeType"].contains($0.key) })
        }
        switch Masking.apply(fields, to: object) {
        case .success(let masked): return .json(status, masked)
        case .failure(let reply): return reply
        }
    }

    /// `drive.file`: a client sees the files of its account that an app of its own Cloud
    /// project created; one made in Drive's web page or by another project's app is not
    /// there for it (absent from lists, 404 by id).
    func isVisible(_ file: DriveFile, to email: String) -> Bool {
        file.owner == email && file.project != nil && file.project == requestProject
    }

    func visibleFile(_ id: String, email: String) -> DriveFile? {
        guard let file = files[id], isVisible(file, to: email) else { return nil }
        return file
    }

    static func notFound(_ id: String) -> EmulatorReply {
        .driveError(404, reason: "notFound", message: "File not found: \(id).")
    }

    static func invalid(_ message: String) -> EmulatorReply {
        .driveError(400, reason: "invalid", message: message)
    }

    func rateLimited() -> EmulatorReply? {
        guard !admitWrite() else { return nil }
        return Self.overLimit(status: writeLimit?.status)
    }

    /// A read over the read limit: the same answers as for writes.
    func readRateLimited() -> EmulatorReply? {
        guard !admitRead() else { return nil }
        return Self.overLimit(status: readLimit?.status)
    }

    static func overLimit(status: Int?) -> EmulatorReply {
        if status == 429 {
            return .driveError(429, reason: "rateLimitExceeded", message: "Rate Limit Exceeded")
        }
        return .driveError(403, reason: "userRateLimitExceeded", message: "User rate limit exceeded.")
    }

    // MARK: about

    func handleAbout(_ request: EmulatedRequest, email: String) -> EmulatorReply {
        guard let fields = request.query["fields"] else {
            return .driveError(400, reason: "required", message: "The 'fields' parameter is required for this method.")
        }
        let account = accounts.first { $0.email == email } ?? EmulatedAccount(email: email)
        var user: [String: Any] = [
            "kind": "drive#user", "displayName": account.displayName, "me": true, "permissionId": account.permissionID,
        ]
        if !aboutOmitsEmail { user["emailAddress"] = account.email }
        let object: [String: Any] = ["kind": "drive#about", "user": user]
        switch Masking.apply(fields, to: object) {
        case .success(let masked): return .json(200, masked)
        case .failure(let reply): return reply
        }
    }

    // MARK: list

    func handleList(_ request: EmulatedRequest, email: String) -> EmulatorReply {
        var query: DriveQuery?
        if let text = request.query["q"] {
            do {
                query = try DriveQuery.parse(text)
            } catch {
                return Self.invalid("Invalid Value: q (\(error.message))")
            }
        }
        let requested = request.query["pageSize"].map { Int($0) } ?? 100
        guard let requested, (1...1000).contains(requested) else {
            return Self.invalid("Invalid value for pageSize: must be between 1 and 1000.")
        }
        let pageSize = min(requested, pageSizeCap)
        let fingerprint = String(stableHash(request.query["q"] ?? "") % 1_000_000_007)
        let time = now()
        // offset:fingerprint:issued (ms):serial, the serial counting the empty pages of a list fault.
        func pageToken(offset: Int, serial: Int = 0) -> String {
            Data("\(offset):\(fingerprint):\(Int64(time.timeIntervalSince1970 * 1000)):\(serial)".utf8)
                .base64EncodedString()
        }
        var offset = 0
        var serial = 0
        if let token = request.query["pageToken"] {
            let parts = String(decoding: Data(base64Encoded: token) ?? Data(), as: UTF8.self).split(separator: ":")
            guard parts.count == 4, let start = Int(parts[0]), start >= 0, parts[1] == fingerprint,
                let issued = Int64(parts[2]),
                let number = Int(parts[3])
            else {
                return Self.invalid("Invalid Value: pageToken")
            }
            // Drive's tokens are "typically valid for several hours", then rejected.
            guard time.timeIntervalSince1970 - Double(issued) / 1000 <= pageTokenLifetime else {
                return Self.invalid("Invalid Value: pageToken")
            }
            offset = start
            serial = number
        }
        let fault = listFault.flatMap { fault in
            fault.queryContains.map { (request.query["q"] ?? "").contains($0) } ?? true ? fault : nil
        }
        // A name term is answered from Drive's name index, which lags behind creates and renames.
        let unindexed = query?.mentionsName == true
        // Children of the last folder of an OR of parents go missing (see ListFault.dropOrParent).
        let dropped: String? = {
            guard fault?.kind == .dropOrParent, let parents = query?.orParents, parents.count >= 2 else { return nil }
            return parents.last
        }()
        // One pass keeping only what orders the matches; whole files are copied for the page
        // alone (copying every file through a chain of filters was most of a listing's cost).
        var matching: [(createdTime: Date, id: String)] = []
        for file in files.values where isVisible(file, to: email) {
            guard !unindexed || isNameIndexed(file), dropped.map({ !file.parents.contains($0) }) ?? true else {
                continue
            }
            let listed = DriveQuery.Subject(
                name: file.name, mimeType: file.mimeType, parents: file.parents, trashed: isTrashed(file))
            if let query, !query.matches(listed) { continue }
            matching.append((file.createdTime, file.id))
        }
        matching.sort { ($0.createdTime, $0.id) < ($1.createdTime, $1.id) }
        let page = matching.dropFirst(offset).prefix(pageSize).compactMap { files[$0.id] }
        var object: [String: Any] = ["kind": "drive#fileList", "incompleteSearch": false, "files": page.map(fileJSON)]
        if offset + page.count < matching.count {
            object["nextPageToken"] = pageToken(offset: offset + page.count)
        }
        if let fault {
            switch fault.kind {
            case .repeatToken:
                if let token = request.query["pageToken"] { object["nextPageToken"] = token }
            case .emptyPages:
                // `count` empty pages follow the last file; `serial` is 0 for a real page.
                if object["nextPageToken"] == nil, serial < fault.count ?? Int.max {
                    object["nextPageToken"] = pageToken(offset: offset + page.count, serial: serial + 1)
                }
            case .dropOrParent:
                break
            }
        }
        let fields = request.query["fields"] ?? "kind,nextPageToken,incompleteSearch,files(kind,id,name,mimeType)"
        switch Masking.apply(fields, to: object) {
        case .success(let masked): return .json(200, masked)
        case .failure(let reply): return reply
        }
    }

    // MARK: ids and creation

    func handleGenerateIDs(_ request: EmulatedRequest) -> EmulatorReply {
        let count = request.query["count"].map { Int($0) } ?? 10
        guard let count, (1...1000).contains(count) else {
            return Self.invalid("Invalid value for count: must be between 1 and 1000.")
        }
        let ids = (0..<count).map { _ in newFileID() }
        reservedIDs.formUnion(ids)
        return .json(200, ["kind": "drive#generatedIds", "space": request.query["space"] ?? "drive", "ids": ids])
    }

    func newFile(from metadata: [String: Any]?) -> Result<NewFile, EmulatorReply> {
        let metadata = metadata ?? [:]
        let parents = metadata["parents"] as? [String] ?? ["root"]
        guard parents.count <= 1 else {
            return .failure(
                .driveError(
                    403, reason: "cannotAddParent", message: "A shared drive item must have exactly one parent."))
        }
        return .success(
            NewFile(
                id: metadata["id"] as? String, name: metadata["name"] as? String ?? "Untitled",
                mimeType: metadata["mimeType"] as? String, parents: parents))
    }

    /// Creates a file; a pre-generated id used twice answers 409 and creates nothing.
    func create(_ new: NewFile, content: Data, mediaType: String?, email: String) -> Result<DriveFile, EmulatorReply> {
        if let id = new.id {
            if files[id] != nil {
                return .failure(
                    .driveError(409, reason: "duplicate", message: "A file already exists with the provided ID."))
            }
            guard reservedIDs.contains(id) else {
                return .failure(Self.invalid("The provided file ID is not usable."))
            }
        }
        for parent in new.parents where parent != "root" {
            guard let folder = visibleFile(parent, email: email), folder.isFolder else {
                return .failure(Self.notFound(parent))
            }
        }
        let time = now()
        let id = new.id ?? newFileID()
        reservedIDs.remove(id)
        let file = DriveFile(
            id: id, name: new.name, mimeType: new.mimeType ?? mediaType ?? "application/octet-stream",
            parents: new.parents,
            owner: email, createdTime: time, modifiedTime: time, content: content, explicitlyTrashed: false,
            project: requestProject)
        files[id] = file
        noteChange(file)
        return .success(file)
    }

    func handleCreateMetadata(_ request: EmulatedRequest, email: String) -> EmulatorReply {
        if let limited = rateLimited() { return limited }
        guard request.body.isEmpty || request.jsonBody != nil else {
            return Self.invalid("Invalid JSON payload received.")
        }
        switch newFile(from: request.jsonBody).flatMap({ create($0, content: Data(), mediaType: nil, email: email) }) {
        case .success(let file): return fileReply(file, fields: request.query["fields"])
        case .failure(let reply): return reply
        }
    }

    func handleMultipart(_ request: EmulatedRequest, email: String) -> EmulatorReply {
        if let limited = rateLimited() { return limited }
        let parts: MultipartRelated
        do {
            parts = try MultipartRelated.parse(body: request.body, contentType: request.headers["content-type"] ?? "")
        } catch {
            return Self.invalid("Bad multipart request: \(error.message)")
        }
        let metadata = (try? JSONSerialization.jsonObject(with: parts.metadata)) as? [String: Any]
        guard let metadata else { return Self.invalid("Invalid JSON payload received in the metadata part.") }
        switch newFile(from: metadata).flatMap({
            create($0, content: parts.media, mediaType: parts.mediaType, email: email)
        }) {
        case .success(let file): return fileReply(file, fields: request.query["fields"])
        case .failure(let reply): return reply
        }
    }

    // MARK: resumable uploads

    func handleStartResumable(_ request: EmulatedRequest, email: String, baseURL: String) -> EmulatorReply {
        if let limited = rateLimited() { return limited }
        guard request.body.isEmpty || request.jsonBody != nil else {
            return Self.invalid("Invalid JSON payload received.")
        }
        switch newFile(from: request.jsonBody) {
        case .failure(let reply):
            return reply
        case .success(var metadata):
            // A pre-generated id already used answers 409 as soon as the session is asked for.
            if let id = metadata.id, files[id] != nil {
                return .driveError(409, reason: "duplicate", message: "A file already exists with the provided ID.")
            }
            if metadata.mimeType == nil { metadata.mimeType = request.headers["x-upload-content-type"] }
            let uploadID = token("ADPycd", length: 40)
            uploads[uploadID] = UploadSession(
                email: email, metadata: metadata, total: request.headers["x-upload-content-length"].flatMap { Int($0) },
                received: Data(), createdAt: now(), completedFileID: nil)
            var location = "\(baseURL)/upload/drive/v3/files?uploadType=resumable&upload_id=\(uploadID)"
            if let fields = request.query["fields"]?.addingPercentEncoding(withAllowedCharacters: .alphanumerics) {
                location += "&fields=\(fields)"
            }
            return EmulatorReply(status: 200, headers: ["Location": location, "X-GUploader-UploadID": uploadID])
        }
    }

    func handleResumablePut(_ request: EmulatedRequest, email: String) -> EmulatorReply {
        guard let uploadID = request.query["upload_id"], var session = uploads[uploadID], session.email == email,
            now().timeIntervalSince(session.createdAt) < Self.sessionLifetime
        else {
            return .driveError(404, reason: "notFound", message: "No active upload session with this id.")
        }
        if let done = session.completedFileID, let file = files[done] {
            return fileReply(file, fields: request.query["fields"])
        }
        if session.dead {
            return .driveError(404, reason: "notFound", message: "No active upload session with this id.")
        }
        let range = request.headers["content-range"].flatMap(ContentRange.parse)
        if request.headers["content-range"] != nil, range == nil {
            return Self.invalid("Invalid Content-Range header.")
        }
        switch range {
        case .status(let total)?:
            if let total { session.total = total.asInt }
        case .range(let first, _, let total)?:
            if let total { session.total = total.asInt }
            let start = Int(first)
            guard start <= session.received.count else {
                return Self.invalid(
                    "Content-Range starts at \(start) but only \(session.received.count) bytes were received.")
            }
            session.received = session.received.prefix(start) + request.body
        case nil:
            session.received = request.body
            if !request.truncated { session.total = request.body.count }
        }
        uploads[uploadID] = session
        if request.truncated {
            return EmulatorReply(status: 500, dropAfterBytes: 0)
        }
        if let total = session.total, session.received.count >= total {
            switch create(
                session.metadata, content: session.received.prefix(total), mediaType: session.metadata.mimeType,
                email: email)
            {
            case .success(let file):
                uploads[uploadID]?.completedFileID = file.id
                return fileReply(file, fields: request.query["fields"])
            case .failure(let reply):
                return reply
            }
        }
        var headers: [String: String] = [:]
        if !session.received.isEmpty { headers["Range"] = "bytes=0-\(session.received.count - 1)" }
        return EmulatorReply(status: 308, headers: headers)
    }

    // MARK: read, change, delete

    func handleGet(_ request: EmulatedRequest, id: String, email: String) -> EmulatorReply {
        guard let file = visibleFile(id, email: email) else { return Self.notFound(id) }
        guard request.query["alt"] == "media" else { return fileReply(file, fields: request.query["fields"]) }
        guard !file.isFolder else {
            return .driveError(
                403, reason: "fileNotDownloadable", message: "Only files with binary content can be downloaded.")
        }
        if let header = request.headers["range"], let (start, end) = Self.byteRange(header, size: file.size) {
            return EmulatorReply(
                status: 206,
                headers: ["Content-Type": file.mimeType, "Content-Range": "bytes \(start)-\(end)/\(file.size)"],
                body: file.content.subdata(in: start..<end + 1))
        }
        guard let lie = file.misreport, lie.extraBytes > 0 || lie.endless else {
            return EmulatorReply(status: 200, headers: ["Content-Type": file.mimeType], body: file.content)
        }
        var body = file.content
        body.append(Data(repeating: 0x55, count: lie.extraBytes))
        return EmulatorReply(status: 200, headers: ["Content-Type": file.mimeType], body: body, endless: lie.endless)
    }

    static func byteRange(_ header: String, size: Int) -> (Int, Int)? {
        guard header.hasPrefix("bytes="), size > 0 else { return nil }
        let bounds = header.dropFirst("bytes=".count).split(separator: "-", omittingEmptySubsequences: false)
        guard bounds.count == 2, let start = Int(bounds[0]), start < size else { return nil }
        let end = bounds[1].isEmpty ? size - 1 : min(Int(bounds[1]) ?? size - 1, size - 1)
        return end >= start ? (start, end) : nil
    }

    func handlePatch(_ request: EmulatedRequest, id: String, email: String) -> EmulatorReply {
        if let limited = rateLimited() { return limited }
        guard var file = visibleFile(id, email: email) else { return Self.notFound(id) }
        let body = request.jsonBody ?? [:]
        let wasTrashed = isTrashed(file)
        if let trashed = body["trashed"] as? Bool { file.explicitlyTrashed = trashed }
        if let name = body["name"] as? String, name != file.name {
            file.name = name
            file.nameTime = now()
        }
        file.modifiedTime = now()
        files[id] = file
        if isTrashed(file) != wasTrashed {
            noteChange(file, withDescendantsIn: files)
        } else {
            noteChange(file)
        }
        return fileReply(file, fields: request.query["fields"])
    }

    /// Permanent delete; a folder takes everything below it along.
    func handleDelete(id: String, email: String) -> EmulatorReply {
        if let limited = rateLimited() { return limited }
        guard visibleFile(id, email: email) != nil else { return Self.notFound(id) }
        var doomed: Set<String> = [id]
        var grew = true
        while grew {
            let children = files.values.filter { file in
                file.parents.contains { doomed.contains($0) } && !doomed.contains(file.id)
            }
            grew = !children.isEmpty
            doomed.formUnion(children.map(\.id))
        }
        if let file = files[id] { noteChange(file, withDescendantsIn: files) }
        for id in doomed { files[id] = nil }
        return EmulatorReply(status: 204)
    }
}

extension EmulatorState {
    /// Google: "For any 4xx errors (including 403) during a resumable upload, restart the
    /// upload" (Drive's manage-uploads guide). A session that answered a 4xx other than a
    /// rate limit (or an expired token, refreshed before the session matters) is dead: it
    /// answers 404 from then on, so only a new session finishes the upload.
    func sessionAnswered(_ reply: EmulatorReply, uploadID: String) {
        guard (400..<500).contains(reply.status), reply.status != 401, reply.status != 429, uploads[uploadID] != nil
        else { return }
        let envelope = (try? JSONSerialization.jsonObject(with: reply.body)) as? [String: Any]
        let reason =
            ((envelope?["error"] as? [String: Any])?["errors"] as? [[String: Any]])?.first?["reason"] as? String
        if reply.status == 403, let reason, ["userRateLimitExceeded", "rateLimitExceeded"].contains(reason) { return }
        uploads[uploadID]?.dead = true
    }
}

extension Int64 {
    var asInt: Int { Int(clamping: self) }
}
