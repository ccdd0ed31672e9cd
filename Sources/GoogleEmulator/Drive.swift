import Foundation

/// Drive API v3: the subset ivy uses, with Drive's shapes, errors and quirks.
extension EmulatorState {
    static let sessionLifetime: TimeInterval = 7 * 24 * 3600

    func fileJSON(_ file: DriveFile) -> [String: Any] {
        var object: [String: Any] = [
            "kind": "drive#file", "id": file.id, "name": file.name, "mimeType": file.mimeType,
            "parents": file.parents.map { $0 == "root" ? rootFolderID(of: file.owner) : $0 },
            "createdTime": RFC3339.string(file.createdTime), "modifiedTime": RFC3339.string(file.modifiedTime),
            "trashed": isTrashed(file), "explicitlyTrashed": file.explicitlyTrashed, "starred": file.starred,
            "ownedByMe": true, "version": String(file.version),
        ]
        // Drive leaves out a field with no value.
        if let description = file.description { object["description"] = description }
        if !file.appProperties.isEmpty { object["appProperties"] = file.appProperties }
        if !file.isFolder {
            // Drive encodes int64 values as JSON strings.
            object["size"] = file.misreport?.size ?? String(file.size)
            object["md5Checksum"] = file.md5
            object["headRevisionId"] = file.headRevisionID
        }
        return object
    }

    /// The file as this request's `fields` asks for it; Drive's default is kind, id, name, mimeType.
    func fileReply(_ file: DriveFile, fields: String?, status: Int = 200) -> EmulatorReply {
        let object = fileJSON(file)
        guard let fields else {
            return .json(status, object.filter { ["kind", "id", "name", "mimeType"].contains($0.key) })
        }
        switch Masking.apply(fields, to: object, schema: .file) {
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

    /// The id of an account's My Drive folder. Drive answers a file created without parents
    /// (or with the alias `root`) with this real id in `parents`, never with "root" (the
    /// File.parents reference: "If not specified as part of a create request, the file is
    /// placed directly in the user's My Drive folder"). The emulator keeps the alias inside
    /// and shows this id; the shape imitates Drive's (`0A…Uk9PVA`).
    func rootFolderID(of email: String) -> String {
        "0A" + String(stableHash(email) % 1_000_000_000_000_000, radix: 36) + "Uk9PVA"
    }

    /// A parent as the emulator keeps it: My Drive's real id is stored as its alias.
    func storedParent(_ id: String, email: String) -> String {
        id == rootFolderID(of: email) ? "root" : id
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
        return overLimit(writeLimit)
    }

    /// A read over the read limit: the same answers as for writes.
    func readRateLimited() -> EmulatorReply? {
        guard !admitRead() else { return nil }
        return overLimit(readLimit)
    }

    func overLimit(_ limit: RateLimit?) -> EmulatorReply {
        if let quota = limit?.quota { return quotaExceeded(quota, status: limit?.status ?? 403) }
        return Self.overLimit(status: limit?.status)
    }

    /// Google's newer answer to an exceeded quota (AIP-193; googleapis'
    /// google/rpc/error_details.proto), as users of other Drive clients reported it in 2026:
    /// no `errors[]`, the reason only in a `google.rpc.ErrorInfo` detail, whose `quota_limit`
    /// says whether one user's share or the whole project's quota ran out.
    func quotaExceeded(_ quota: RateLimit.Quota, status: Int) -> EmulatorReply {
        // A stable number for the project (Google names consumers by project number).
        let project = requestProject ?? EmulatedClient.ivyProject
        let number = project.utf8.reduce(UInt64(17)) { ($0 &* 31 &+ UInt64($1)) % 1_000_000_000_000 }
        let message =
            "Quota exceeded for quota metric 'Queries' and limit '\(quota.limitText)' of service "
            + "'drive.googleapis.com' for consumer 'project_number:\(number)'."
        let info: [String: Any] = [
            "@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "RATE_LIMIT_EXCEEDED",
            "domain": "googleapis.com",
            "metadata": [
                "quota_limit": quota.limitName, "quota_metric": "drive.googleapis.com/default",
                "quota_limit_value": String(quota.units), "quota_location": "global",
                "service": "drive.googleapis.com", "consumer": "projects/\(number)",
            ],
        ]
        let help: [String: Any] = [
            "@type": "type.googleapis.com/google.rpc.Help",
            "links": [
                [
                    "description": "Request a higher quota limit.",
                    "url": "https://cloud.google.com/docs/quotas/help/request_increase",
                ]
            ],
        ]
        return .json(
            status,
            [
                "error": [
                    "code": status, "message": message,
                    "status": status == 429 ? "RESOURCE_EXHAUSTED" : "PERMISSION_DENIED", "details": [info, help],
                ] as [String: Any]
            ])
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
        // about.storageQuota: int64 values as strings, `limit` absent when unlimited (the About
        // resource's reference); the account's files are all its Drive usage here.
        let owned = files.values.filter { $0.owner == email }
        let used = owned.reduce(Int64(0)) { $0 + Int64($1.size) }
        let trashed = owned.filter(\.explicitlyTrashed).reduce(Int64(0)) { $0 + Int64($1.size) }
        var quota: [String: Any] = [
            "usage": String(used), "usageInDrive": String(used), "usageInDriveTrash": String(trashed),
        ]
        if let storageLimit { quota["limit"] = String(storageLimit) }
        let object: [String: Any] = ["kind": "drive#about", "user": user, "storageQuota": quota]
        switch Masking.apply(fields, to: object, schema: .about) {
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
        guard let requested, requested >= 1 else {
            return Self.invalid("Invalid value for pageSize: must be at least 1.")
        }
        // The files.list reference (pageSize): "The maximum value is 1000; values above 1000
        // will be coerced to 1000."
        let pageSize = min(requested, 1000, pageSizeCap)
        let order: [SortKey]
        switch SortKey.parse(request.query["orderBy"]) {
        case .success(let keys): order = keys
        case .failure(let reply): return reply
        }
        // A token carries its listing's query and order: one from another listing is refused.
        let listing = (request.query["q"] ?? "") + (request.query["orderBy"].map { "\n" + $0 } ?? "")
        let fingerprint = String(stableHash(listing) % 1_000_000_007)
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
        let root = rootFolderID(of: email)
        for file in files.values where isVisible(file, to: email) {
            guard !unindexed || isNameIndexed(file), dropped.map({ !file.parents.contains($0) }) ?? true else {
                continue
            }
            if let query {
                // My Drive answers to its alias and to its real id alike.
                let parents = file.parents.contains("root") ? file.parents + [root] : file.parents
                let listed = DriveQuery.Subject(
                    name: file.name, mimeType: file.mimeType, parents: parents, trashed: isTrashed(file),
                    modifiedTime: file.modifiedTime, starred: file.starred,
                    owners: file.owner == email ? [file.owner, "me"] : [file.owner])
                if !query.matches(listed) { continue }
            }
            matching.append((file.createdTime, file.id))
        }
        matching.sort { ($0.createdTime, $0.id) < ($1.createdTime, $1.id) }
        if !order.isEmpty {
            // Stable: files the keys leave tied stay in creation order.
            matching = SortKey.sorted(matching.compactMap { files[$0.id] }, by: order).map {
                (createdTime: $0.createdTime, id: $0.id)
            }
        }
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
        switch Masking.apply(fields, to: object, schema: .fileList) {
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

    func newFile(from metadata: [String: Any]?, email: String) -> Result<NewFile, EmulatorReply> {
        let metadata = metadata ?? [:]
        let parents = (metadata["parents"] as? [String] ?? ["root"]).map { storedParent($0, email: email) }
        guard parents.count <= 1 else {
            return .failure(
                .driveError(
                    403, reason: "cannotAddParent", message: "A shared drive item must have exactly one parent."))
        }
        var new = NewFile(
            id: metadata["id"] as? String, name: metadata["name"] as? String ?? "Untitled",
            mimeType: metadata["mimeType"] as? String, parents: parents)
        // Writable on create (the File reference): kept as given, not replaced by the server's own.
        if let text = metadata["modifiedTime"] as? String {
            guard let time = RFC3339.date(text) else { return .failure(Self.invalid("Invalid value for modifiedTime")) }
            new.modifiedTime = time
        }
        new.description = metadata["description"] as? String
        new.appProperties = (metadata["appProperties"] as? [String: Any] ?? [:]).compactMapValues { $0 as? String }
        new.starred = metadata["starred"] as? Bool ?? false
        return .success(new)
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
        var file = DriveFile(
            id: id, name: new.name, mimeType: new.mimeType ?? mediaType ?? "application/octet-stream",
            parents: new.parents,
            owner: email, createdTime: time, modifiedTime: new.modifiedTime ?? time, content: content,
            explicitlyTrashed: false, project: requestProject)
        file.description = new.description
        file.appProperties = new.appProperties
        file.starred = new.starred
        files[id] = file
        noteChange(file)
        return .success(file)
    }

    func handleCreateMetadata(_ request: EmulatedRequest, email: String) -> EmulatorReply {
        if let limited = rateLimited() { return limited }
        guard request.body.isEmpty || request.jsonBody != nil else {
            return Self.invalid("Invalid JSON payload received.")
        }
        switch newFile(from: request.jsonBody, email: email).flatMap({
            create($0, content: Data(), mediaType: nil, email: email)
        }) {
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
        switch newFile(from: metadata, email: email).flatMap({
            create($0, content: parts.media, mediaType: parts.mediaType, email: email)
        }) {
        case .success(let file): return fileReply(file, fields: request.query["fields"])
        case .failure(let reply): return reply
        }
    }

    /// `uploadType=media`: the body is the content and there is no metadata, so Drive names
    /// the file "Untitled" and takes its type from the Content-Type (manage-uploads guide,
    /// "Perform a simple upload"). Google's Python client sends a create with media alone so.
    func handleMediaCreate(_ request: EmulatedRequest, email: String) -> EmulatorReply {
        if let limited = rateLimited() { return limited }
        let new = NewFile(id: nil, name: "Untitled", mimeType: nil, parents: ["root"])
        return reply(create(new, content: request.body, mediaType: Self.mediaType(of: request), email: email), request)
    }

    static func mediaType(of request: EmulatedRequest) -> String? {
        guard let header = request.headers["content-type"] else { return nil }
        let type = header.split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
        return type.isEmpty ? nil : type
    }

    /// files.update with content: `PATCH /upload/drive/v3/files/{id}` with `uploadType`
    /// media, multipart or resumable (the files.update reference's upload URI; Google's
    /// Python client updates content only so). The file keeps its id; its content, checksum
    /// and modifiedTime change, and a multipart or resumable body's metadata applies as in a
    /// metadata-only update.
    func handleUploadUpdate(_ request: EmulatedRequest, id: String, email: String, baseURL: String) -> EmulatorReply {
        switch request.query["uploadType"] {
        case "media":
            if let limited = rateLimited() { return limited }
            return reply(update(id, email: email, metadata: [:], query: request.query, content: request.body), request)
        case "multipart":
            if let limited = rateLimited() { return limited }
            let parts: MultipartRelated
            do {
                parts = try MultipartRelated.parse(
                    body: request.body, contentType: request.headers["content-type"] ?? "")
            } catch {
                return Self.invalid("Bad multipart request: \(error.message)")
            }
            guard let metadata = (try? JSONSerialization.jsonObject(with: parts.metadata)) as? [String: Any] else {
                return Self.invalid("Invalid JSON payload received in the metadata part.")
            }
            let updated = update(id, email: email, metadata: metadata, query: request.query, content: parts.media)
            return reply(updated, request)
        case "resumable":
            return handleStartResumable(request, email: email, baseURL: baseURL, updating: id)
        default:
            return Self.invalid("uploadType must be media, multipart or resumable here.")
        }
    }

    private func reply(_ result: Result<DriveFile, EmulatorReply>, _ request: EmulatedRequest) -> EmulatorReply {
        switch result {
        case .success(let file): return fileReply(file, fields: request.query["fields"])
        case .failure(let reply): return reply
        }
    }

    // MARK: resumable uploads

    func handleStartResumable(
        _ request: EmulatedRequest, email: String, baseURL: String, updating: String? = nil
    ) -> EmulatorReply {
        if let limited = rateLimited() { return limited }
        guard request.body.isEmpty || request.jsonBody != nil else {
            return Self.invalid("Invalid JSON payload received.")
        }
        let metadata: Result<NewFile, EmulatorReply>
        if let updating {
            guard visibleFile(updating, email: email) != nil else { return Self.notFound(updating) }
            if request.jsonBody?["parents"] != nil { return Self.parentsNotWritable }
            metadata = .success(
                NewFile(id: nil, name: "", mimeType: request.headers["x-upload-content-type"], parents: []))
        } else {
            metadata = newFile(from: request.jsonBody, email: email)
        }
        switch metadata {
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
                received: Data(), createdAt: now(), completedFileID: nil,
                update: updating.map { PendingUpdate(fileID: $0, metadata: request.body, query: request.query) })
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
        case .range(let first, let last, let total)?:
            if let total { session.total = total.asInt }
            let start = Int(first)
            guard start <= session.received.count else {
                return Self.invalid(
                    "Content-Range starts at \(start) but only \(session.received.count) bytes were received.")
            }
            if let reason = Self.chunkRefused(first: first, last: last, total: session.total, body: request) {
                return Self.invalid(reason)
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
            let content = session.received.prefix(total)
            let result: Result<DriveFile, EmulatorReply>
            if let pending = session.update {
                let metadata = (try? JSONSerialization.jsonObject(with: pending.metadata)) as? [String: Any] ?? [:]
                result = update(
                    pending.fileID, email: email, metadata: metadata, query: pending.query, content: content)
            } else {
                result = create(session.metadata, content: content, mediaType: session.metadata.mimeType, email: email)
            }
            switch result {
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

    /// Why a chunk is refused: a body that is not the length its `Content-Range` gives (a
    /// client that sent part of a body again as if it were the whole), or a chunk that does
    /// not complete the upload yet is not a whole number of 256 KiB units (Drive's "Upload
    /// file data" guide, "Upload in chunks": "Create chunks in multiples of 256 KB (256 x 1024
    /// bytes) in size, except for the final chunk that completes the upload"). Nil for one
    /// Drive takes; a body cut short by the connection is judged by what arrived.
    static func chunkRefused(first: Int64, last: Int64, total: Int?, body request: EmulatedRequest) -> String? {
        let length = last - first + 1
        guard !request.truncated else { return nil }
        guard Int64(request.body.count) == length else {
            return "Content-Range gives \(length) bytes but the body has \(request.body.count)."
        }
        let final = total.map { last + 1 >= Int64($0) } ?? false
        guard final || length % (256 << 10) == 0 else {
            return "A chunk that does not end the upload must be a multiple of 262144 bytes; this one has \(length)."
        }
        return nil
    }

    // MARK: read, change, delete

    func handleGet(_ request: EmulatedRequest, id: String, email: String) -> EmulatorReply {
        guard let file = visibleFile(id, email: email) else { return Self.notFound(id) }
        guard request.query["alt"] == "media" else { return fileReply(file, fields: request.query["fields"]) }
        guard !file.isFolder else {
            return .driveError(
                403, reason: "fileNotDownloadable", message: "Only files with binary content can be downloaded.")
        }
        switch request.headers["range"].map({ ByteRange.parse($0, size: file.size) }) {
        case .bytes(let start, let end)?:
            return EmulatorReply(
                status: 206,
                headers: ["Content-Type": file.mimeType, "Content-Range": "bytes \(start)-\(end)/\(file.size)"],
                body: file.content.subdata(in: start..<end + 1), media: true)
        case .unsatisfiable?:
            return EmulatorReply(
                status: 416,
                headers: ["Content-Type": "text/html; charset=UTF-8", "Content-Range": "bytes */\(file.size)"],
                body: Data("Requested range not satisfiable".utf8))
        case .ignored?, nil:
            break
        }
        guard let lie = file.misreport, lie.extraBytes > 0 || lie.endless else {
            return EmulatorReply(status: 200, headers: ["Content-Type": file.mimeType], body: file.content, media: true)
        }
        var body = file.content
        body.append(Data(repeating: 0x55, count: lie.extraBytes))
        return EmulatorReply(status: 200, headers: ["Content-Type": file.mimeType], body: body, endless: lie.endless)
    }

    func handlePatch(_ request: EmulatedRequest, id: String, email: String) -> EmulatorReply {
        if let limited = rateLimited() { return limited }
        return reply(update(id, email: email, metadata: request.jsonBody ?? [:], query: request.query), request)
    }

    /// What Drive answers `parents` in the body of an update.
    static let parentsNotWritable = EmulatorReply.driveError(
        403, reason: "fieldNotWritable",
        message:
            "The parents field is not directly writable in update requests. Use the addParents and removeParents "
            + "parameters instead.")

    /// files.update: patch semantics over the writable metadata, parents moved only by the
    /// `addParents` and `removeParents` parameters (File.parents: "Update requests must use
    /// the addParents and removeParents parameters to modify the parents list"), and the
    /// content replaced when an upload brings one.
    func update(
        _ id: String, email: String, metadata body: [String: Any], query: [String: String], content: Data? = nil
    ) -> Result<DriveFile, EmulatorReply> {
        guard var file = visibleFile(id, email: email) else { return .failure(Self.notFound(id)) }
        if body["parents"] != nil { return .failure(Self.parentsNotWritable) }
        var modifiedTime = now()
        if let text = body["modifiedTime"] as? String {
            guard let time = RFC3339.date(text) else { return .failure(Self.invalid("Invalid value for modifiedTime")) }
            modifiedTime = time
        }
        func ids(_ name: String) -> [String] {
            (query[name] ?? "").split(separator: ",").map { storedParent(String($0), email: email) }
        }
        let removed = ids("removeParents")
        var parents = file.parents.filter { !removed.contains($0) }
        for parent in ids("addParents") where !parents.contains(parent) {
            guard parent == "root" || visibleFile(parent, email: email)?.isFolder == true else {
                return .failure(Self.notFound(parent))
            }
            parents.append(parent)
        }
        guard parents.count <= 1 else {
            return .failure(
                .driveError(403, reason: "cannotAddParent", message: "Increasing the number of parents is not allowed.")
            )
        }
        let wasTrashed = isTrashed(file)
        file.parents = parents
        if let trashed = body["trashed"] as? Bool { file.explicitlyTrashed = trashed }
        if let name = body["name"] as? String, name != file.name {
            file.name = name
            file.nameTime = now()
        }
        if let mimeType = body["mimeType"] as? String { file.mimeType = mimeType }
        // Patch semantics: a JSON null clears a value; appProperties merge key by key, a null
        // removing its key (File.appProperties: "Entries with null values are cleared in
        // update and copy requests").
        if body.keys.contains("description") { file.description = body["description"] as? String }
        if let starred = body["starred"] as? Bool { file.starred = starred }
        if let properties = body["appProperties"] as? [String: Any] {
            for (key, value) in properties { file.appProperties[key] = value as? String }
        }
        if let content { file.content = content }
        file.modifiedTime = modifiedTime
        file.version += 1
        files[id] = file
        if isTrashed(file) != wasTrashed {
            noteChange(file, withDescendantsIn: files)
        } else {
            noteChange(file)
        }
        return .success(file)
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
        let error = envelope?["error"] as? [String: Any]
        let reason =
            (error?["errors"] as? [[String: Any]])?.first?["reason"] as? String
            ?? (error?["details"] as? [[String: Any]])?.first?["reason"] as? String
        let limits = ["userRateLimitExceeded", "rateLimitExceeded", "RATE_LIMIT_EXCEEDED"]
        if reply.status == 403, let reason, limits.contains(reason) { return }
        uploads[uploadID]?.dead = true
    }
}

extension Int64 {
    var asInt: Int { Int(clamping: self) }
}
