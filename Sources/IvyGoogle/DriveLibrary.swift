import Foundation
import IvyCore
import IvySystem

/// Concurrent callers of "ensure the folders" await one in-flight lookup-or-creation,
/// so two parts of one sync never create twin folders.
actor FolderCache {
    private var task: Task<DriveFolders, any Error>?

    func folders(_ resolve: @escaping @Sendable () async throws -> DriveFolders) async throws -> DriveFolders {
        let current = task ?? Task { try await resolve() }
        task = current
        do {
            return try await current.valueCancellingWithCaller()
        } catch {
            task = nil
            throw error
        }
    }

    func forget() { task = nil }
}

extension Task where Failure == any Error {
    /// The shared in-flight task's value; a caller that is cancelled (a sync stopped at its
    /// deadline) cancels it too, since an unstructured task never inherits cancellation.
    func valueCancellingWithCaller() async throws -> Success {
        try await withTaskCancellationHandler { try await value } onCancel: { cancel() }
    }
}

extension DriveClient {
    /// Every folder ivy can see, in one query with no name term. Drive answers name terms from
    /// an index that lags behind creates: kopia issue #90 found `files.list` "not
    /// read-after-write consistent when it comes to file names", while "look up by parent
    /// folders or mime types" and `files.get` by id were. A `name = 'Ivy'` query can so miss
    /// the folder another device made seconds ago, and ivy would make a twin. Under
    /// `drive.file` only folders made by clients of ivy's Cloud project are visible: a few.
    static let folderQuery = "mimeType = '\(folderType)' and trashed = false"

    /// `My Drive/Ivy/books` and `My Drive/Ivy/clips`, created when missing. One list request
    /// finds every twin; concurrent callers share it.
    package func folders() async throws -> DriveFolders {
        try await folderCache.folders { [self] in try await self.resolveFolders(remembered: nil, create: true) }
    }

    /// The folders as Drive lists them; with `create`, the missing ones are made and the
    /// folders listed again, so a twin another device made at the same moment is seen and the
    /// oldest of each is used by both.
    private func resolveFolders(remembered: DriveFolders?, create: Bool) async throws -> DriveFolders {
        var (folders, alive) = try await lookUpFolders(known: remembered.map { $0.ivy + $0.books + $0.clips } ?? [])
        guard create, folders.ivy.isEmpty || folders.books.isEmpty || folders.clips.isEmpty else { return folders }
        var made: [String] = []
        let ivy: String
        if let existing = folders.ivy.first {
            ivy = existing
        } else {
            ivy = try await createFolder("Ivy", parent: nil)
            made.append(ivy)
        }
        if folders.books.isEmpty { made.append(try await createFolder("books", parent: ivy)) }
        if folders.clips.isEmpty { made.append(try await createFolder("clips", parent: ivy)) }
        (folders, _) = try await lookUpFolders(known: alive + made)
        guard !folders.ivy.isEmpty, !folders.books.isEmpty, !folders.clips.isEmpty else {
            throw DriveError(.unexpected, message: "Drive does not list the Ivy folders ivy has just created; the next sync tries again")
        }
        return folders
    }

    /// ivy's folders among every folder Drive lists, and which of the `known` ones (remembered,
    /// or just made) exist. One the listing leaves out is asked for by id before ivy believes
    /// it gone, so ivy never makes a twin of a folder it knows.
    private func lookUpFolders(known: [String]) async throws -> (folders: DriveFolders, alive: [String]) {
        let found = try await list(query: Self.folderQuery)
        if let reason = found.incomplete {
            throw DriveError(
                .server, message: "looking up the Ivy folders: the listing stopped early: \(reason); the next sync tries again")
        }
        var entries = found.files
        for id in known where !entries.contains(where: { $0.file.id == id }) {
            if let folder = try await liveFolder(id) { entries.append(folder) }
        }
        let ids = Set(entries.map(\.file.id))
        return (Self.structure(entries), known.filter { ids.contains($0) })
    }

    /// An id as a query string: Drive's ids have no quotes, but one that did must not break the query.
    static func quoted(id: String) -> String {
        id.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "'", with: "\\'")
    }

    /// A folder by id, or nil when it is gone (404) or in the trash.
    private func liveFolder(_ id: String) async throws -> ListedFile? {
        let response = try await http.execute(
            HTTPRequest(method: "GET", url: http.url("drive/v3/files/\(id)", ["fields": "\(Self.fileFields),trashed"])),
            accept: [200, 404], context: "checking an Ivy folder")
        guard response.status == 200, let object = response.json, object["trashed"] as? Bool == false,
            let file = Self.remoteFile(object)
        else { return nil }
        return (file, object["mimeType"] as? String ?? "", object["parents"] as? [String] ?? [])
    }

    /// Which listed folders form ivy's tree; twins are kept, oldest first. The Ivy folder is
    /// one whose parent is not among them: My Drive's own id is unknown to ivy ('root' is
    /// only an alias, and under `drive.file` `files.get('root')` may answer 404).
    static func structure(_ entries: [ListedFile]) -> DriveFolders {
        func oldestFirst(_ list: [ListedFile]) -> [String] {
            list.sorted { ($0.file.createdTime ?? 0, $0.file.id) < ($1.file.createdTime ?? 0, $1.file.id) }.map(\.file.id)
        }
        let folders = entries.filter { $0.mimeType == folderType }
        let all = Set(folders.map(\.file.id))
        let ivy = oldestFirst(folders.filter { $0.file.name == "Ivy" && !$0.parents.contains { all.contains($0) } })
        let ivySet = Set(ivy)
        let inside = folders.filter { $0.parents.contains { ivySet.contains($0) } }
        return DriveFolders(
            ivy: ivy, books: oldestFirst(inside.filter { $0.file.name == "books" }),
            clips: oldestFirst(inside.filter { $0.file.name == "clips" }))
    }

    private func createFolder(_ name: String, parent: String?) async throws -> String {
        let id = try await ids.next()
        var metadata: [String: Any] = ["id": id, "name": name, "mimeType": Self.folderType]
        if let parent { metadata["parents"] = [parent] }
        let request = HTTPRequest(
            method: "POST", url: http.url("drive/v3/files", ["fields": "id"]),
            headers: ["Content-Type": "application/json; charset=UTF-8"],
            body: .data(try JSONSerialization.data(withJSONObject: metadata)))
        do {
            _ = try await http.execute(request, context: "creating the \(name) folder")
        } catch let error as DriveError where error.status == 409 {
            // A retried create whose first answer was lost: the folder is there.
        }
        return id
    }

    // MARK: listing

    /// Pages a listing may take beyond one per file it found. Google documents short and even
    /// empty pages that still carry a `nextPageToken`, so a few are normal; a listing that has
    /// found n files and still asks for more after n + 20 pages never ends, and is cut short.
    static let spareListPages = 20

    /// Every page of a query, each file once. `incomplete` says why the listing stopped early:
    /// a page that could not be read, a page token Drive had already given, or more pages
    /// than the files could fill (see `spareListPages`). A page token Drive rejects (400)
    /// starts the listing again from the first page, once: the Drive reference says a
    /// rejected `nextPageToken` "should be discarded, and pagination should be restarted
    /// from the first page of results" (tokens are "typically valid for several hours").
    func list(query: String) async throws -> FolderListing {
        var entries: [ListedFile] = []
        var ids: Set<String> = []
        var tokens: Set<String> = []
        var pages = 0
        var pageToken: String?
        var restarted = false
        while true {
            var parameters = [
                "q": query, "pageSize": "1000", "fields": "nextPageToken,files(\(Self.fileFields))",
            ]
            parameters["pageToken"] = pageToken
            let response: HTTPResponse
            do {
                response = try await http.execute(HTTPRequest(method: "GET", url: http.url("drive/v3/files", parameters)), context: "listing Drive")
            } catch let error as DriveError where pageToken != nil && error.status == 400 {
                guard !restarted else {
                    return (entries, "Drive rejected a page token again after the listing started over (\(error.localizedDescription))")
                }
                restarted = true
                (entries, ids, tokens, pages, pageToken) = ([], [], [], 0, nil)
                continue
            } catch let error as DriveError where !entries.isEmpty && error.isRetryable {
                return (entries, "a page could not be read (\(error.localizedDescription))")
            }
            let page = try http.json(response, context: "listing Drive")
            pages += 1
            for object in page["files"] as? [[String: Any]] ?? [] {
                // A file listed twice (results shift while paging) is still one file.
                guard let file = Self.remoteFile(object), ids.insert(file.id).inserted else { continue }
                entries.append((file, object["mimeType"] as? String ?? "", object["parents"] as? [String] ?? []))
            }
            pageToken = page["nextPageToken"] as? String
            guard let token = pageToken else { return (entries, nil) }
            guard tokens.insert(token).inserted else {
                return (entries, "Drive gave the same page token twice, so the listing would never end")
            }
            guard pages <= ids.count + Self.spareListPages else {
                return (entries, "Drive kept sending pages after \(pages) pages with \(ids.count) files")
            }
        }
    }

    typealias ListedFile = (file: RemoteFile, mimeType: String, parents: [String])
    /// What one query listed, and why it stopped early (nil when it read every page).
    typealias FolderListing = (files: [ListedFile], incomplete: String?)

    static func remoteFile(_ object: [String: Any]) -> RemoteFile? { DriveRequester.remoteFile(object) }

    /// The whole library on Drive: the folders looked up (every twin, remembered ids checked),
    /// then each books and clips folder listed with a query of its own. Drive's queries that
    /// OR several parents can silently leave out one parent's files (rclone's
    /// `--drive-fast-list-bug-fix`, rclone issues #3114 and #4289), so no query names two.
    /// The remembered folders are listed while the folders are looked up: a no-op sync of up
    /// to 1,000 books costs three requests, in one round trip.
    /// With `createFolders` false (a dry run) missing folders are not created: the listing
    /// covers what exists.
    package func listLibrary(remembered: DriveFolders?, createFolders: Bool = true) async throws -> DriveListing {
        async let early = listEach((remembered?.books ?? []) + (remembered?.clips ?? []))
        let folders: DriveFolders
        if createFolders {
            // Looked up afresh, whatever an earlier call of this client found.
            await folderCache.forget()
            folders = try await folderCache.folders { [self] in try await self.resolveFolders(remembered: remembered, create: true) }
        } else {
            folders = try await resolveFolders(remembered: remembered, create: false)
        }
        var listings = await early
        let wanted = folders.books + folders.clips
        for (id, listing) in await listEach(wanted.filter { listings[$0] == nil }) { listings[id] = listing }
        var files: [RemoteFile] = []
        var incomplete: String?
        for id in wanted {
            guard let listing = try listings[id]?.get() else { continue }
            files += listing.files.filter { $0.mimeType != Self.folderType }.map(\.file)
            incomplete = incomplete ?? listing.incomplete
        }
        return DriveListing(folders: folders, files: files, incompleteReason: incomplete)
    }

    /// Each folder's files, one query per folder, the folders at the same time (each folder's
    /// pages in turn, as its page tokens require).
    private func listEach(_ folders: [String]) async -> [String: Result<FolderListing, any Error>] {
        await withTaskGroup(of: (String, Result<FolderListing, any Error>).self) { group in
            for id in Set(folders) {
                group.addTask {
                    do {
                        return (id, .success(try await self.list(query: "'\(Self.quoted(id: id))' in parents and trashed = false")))
                    } catch {
                        return (id, .failure(error))
                    }
                }
            }
            var results: [String: Result<FolderListing, any Error>] = [:]
            for await (id, result) in group { results[id] = result }
            return results
        }
    }

    // MARK: uploads

    /// Delete-then-create: removes the files of that name seen in this sync's listing
    /// (404 counts as gone), then creates the new one with a pre-generated id.
    package func uploadJSON(name: String, data: Data, folder: String, replacing: [RemoteFile]) async throws -> UploadedFile {
        for file in replacing { try await delete(file.id) }
        let context = "uploading \(name)"
        var id = try await ids.next()
        for round in 1...2 {
            let boundary = "ivy-\(UUID().uuidString)"
            let metadata = try JSONSerialization.data(
                withJSONObject: ["id": id, "name": name, "parents": [folder], "mimeType": "application/json"])
            var body = Data("--\(boundary)\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n".utf8)
            body.append(metadata)
            body.append(Data("\r\n--\(boundary)\r\nContent-Type: application/json\r\n\r\n".utf8))
            body.append(data)
            body.append(Data("\r\n--\(boundary)--\r\n".utf8))
            let request = HTTPRequest(
                method: "POST",
                url: http.url(
                    "upload/drive/v3/files", ["uploadType": "multipart", "fields": "id,name,size,md5Checksum,modifiedTime"]),
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
    /// sessions in all. Over the 50 MB cap it fails before any request.
    package func uploadMP3(name: String, file: URL, folder: String, replacing: [RemoteFile]) async throws -> UploadedFile {
        let size = try LocalFile.size(of: file)
        guard AudioRules.allows(size) else {
            let message = "\(file.path) is \(AudioRules.grouped(size)) bytes; \(AudioRules.limitSentence)"
            throw DriveError(.fileTooLarge, message: message)
        }
        for old in replacing { try await delete(old.id) }
        var id = try await ids.next()
        let context = "uploading \(name)"
        var sessions = 0
        var failures = 0
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
                        response = try await http.attempt(HTTPRequest(
                            method: "PUT", url: session, headers: ["Content-Range": "bytes */\(size)", "Content-Length": "0"], body: .data(Data())))
                    } else {
                        let range = size == 0 ? "bytes */0" : "bytes \(offset)-\(size - 1)/\(size)"
                        response = try await http.attempt(HTTPRequest(
                            method: "PUT", url: session, headers: ["Content-Range": range, "Content-Type": "audio/mpeg"],
                            body: .file(file, range: offset..<size)))
                    }
                } catch let error as DriveError where error.isRetryable {
                    failures += 1
                    guard failures <= http.policy.maxAttempts else { throw error }
                    try await http.sleep(http.policy.delay(attempt: failures, retryAfter: nil, random: Double.random(in: 0...1)))
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
                                + "of a \(size)-byte upload, which cannot be; the upload was stopped and the next sync tries again")
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
                                message: "\(context): Drive stopped confirming the upload at byte \(confirmed) of \(size); "
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
                        ended = "Drive ended the upload session (\(response.status)\(error.reason.map { " \($0)" } ?? ""))"
                        break sessionLoop
                    }
                    failures += 1
                    guard error.isRetryable, failures <= http.policy.maxAttempts else { throw error }
                    try await http.sleep(http.policy.delay(attempt: failures, retryAfter: response.retryAfter, random: Double.random(in: 0...1)))
                    needsStatus = true
                }
            }
            guard sessions < 3 else {
                throw DriveError(.server, message: "\(context): \(ended), three sessions in a row; the next sync tries again")
            }
        }
    }

    /// A 4xx that means this session is dead and a new one may succeed. Not a rate limit
    /// (wait, then ask the same session), not an expired token (refreshed already), and not
    /// what no new session can fix (a full Drive, a project or sign-in not set up for Drive).
    static func endsSession(_ status: Int, _ error: DriveError) -> Bool {
        (400..<500).contains(status) && status != 401 && ![.rateLimited, .driveFull, .setup].contains(error.kind)
    }

    private func startSession(id: String, name: String, folder: String, size: Int64, context: String) async throws -> URL {
        let metadata = try JSONSerialization.data(withJSONObject: ["id": id, "name": name, "parents": [folder], "mimeType": "audio/mpeg"])
        let request = HTTPRequest(
            method: "POST", url: http.url("upload/drive/v3/files", ["uploadType": "resumable", "fields": "id,name,size,md5Checksum,modifiedTime"]),
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

    // MARK: downloads

    /// A small file (backup JSON) into memory, refusing anything over `limit` bytes, and
    /// more than Drive listed: reading stops there, however much the server sends.
    package func downloadData(_ file: RemoteFile, limit: Int = 1 << 20) async throws -> Data {
        if let size = file.size, size > limit {
            throw DriveError(.fileTooLarge, message: "\(file.name) is \(AudioRules.grouped(size)) bytes, more than a backup file can be")
        }
        let context = "downloading \(file.name)"
        let request = HTTPRequest(
            method: "GET", url: http.url("drive/v3/files/\(file.id)", ["alt": "media"]),
            responseLimit: min(file.size ?? Int64(limit), Int64(limit)))
        do {
            return try await http.execute(request, context: context).body
        } catch let error as DriveError where error.kind == .fileTooLarge {
            throw Self.longer(file, than: request.responseLimit, context: context)
        }
    }

    /// An MP3 streamed to a temporary file beside `destination`, its size and md5 checked,
    /// then renamed into place. Over the 50 MB cap it is refused before downloading; a body
    /// longer than Drive listed (or than the cap) is cut off as it streams, never kept.
    package func downloadFile(_ file: RemoteFile, to destination: URL) async throws {
        if let size = file.size, let excess = AudioRules.overLimit(size) {
            throw DriveError(.fileTooLarge, message: "\(file.name) on Drive is \(excess); it was not downloaded")
        }
        let context = "downloading \(file.name)"
        let temporary = destination.deletingLastPathComponent()
            .appendingPathComponent(TransferFiles.downloadPrefix + UUID().uuidString)
        defer { try? FileManager.default.removeItem(at: temporary) }
        let request = HTTPRequest(
            method: "GET", url: http.url("drive/v3/files/\(file.id)", ["alt": "media"]),
            responseLimit: min(file.size ?? AudioRules.maximumBytes, AudioRules.maximumBytes))
        do {
            _ = try await http.execute(request, context: context, download: temporary)
        } catch let error as DriveError where error.kind == .fileTooLarge {
            throw Self.longer(file, than: request.responseLimit, context: context)
        }
        let size = try LocalFile.size(of: temporary)
        if let expected = file.size, expected != size {
            throw DriveError(.integrity, message: "downloading \(file.name): got \(size) bytes, Drive listed \(expected)")
        }
        if let md5 = file.md5, try LocalFile.md5(of: temporary) != md5 {
            throw DriveError(.integrity, message: "downloading \(file.name): the content does not match Drive's checksum")
        }
        guard rename(temporary.path, destination.path) == 0 else {
            throw DriveError(.unexpected, message: "cannot move the download to \(destination.path): \(String(cString: strerror(errno)))")
        }
    }

    /// A download that kept coming past what Drive listed (or past the cap).
    static func longer(_ file: RemoteFile, than limit: Int64, context: String) -> DriveError {
        let listed = file.size.map { "the \(AudioRules.grouped($0)) bytes Drive listed" }
            ?? "\(AudioRules.grouped(limit)) bytes"
        return DriveError(
            .fileTooLarge,
            message: "\(context): Drive sent more than \(listed), so the download was stopped and nothing was kept; "
                + "the next sync lists it afresh")
    }
}
