import Foundation
package import IvyCore

extension DriveClient {
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
        var ids: Set<DriveFileID> = []
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
                response = try await http.execute(
                    HTTPRequest(method: "GET", url: http.url("drive/v3/files", parameters)), context: "listing Drive")
            } catch let error as DriveError where pageToken != nil && error.status == 400 {
                guard !restarted else {
                    let reason = "Drive rejected a page token again after the listing started over"
                    return (entries, "\(reason) (\(error.localizedDescription))")
                }
                restarted = true
                (entries, ids, tokens, pages, pageToken) = ([], [], [], 0, nil)
                continue
            } catch let error as DriveError where !entries.isEmpty && error.isRetryable {
                return (entries, "a page could not be read (\(error.localizedDescription))")
            }
            let page = try http.decode(WireFilePage.self, response, context: "listing Drive")
            pages += 1
            for object in page.files {
                // A file listed twice (results shift while paging) is still one file.
                guard let file = object.remote, ids.insert(file.id).inserted else { continue }
                entries.append((file, object.mimeType ?? "", object.parentIDs))
            }
            pageToken = page.nextPageToken
            guard let token = pageToken else { return (entries, nil) }
            guard tokens.insert(token).inserted else {
                return (entries, "Drive gave the same page token twice, so the listing would never end")
            }
            guard pages <= ids.count + Self.spareListPages else {
                return (entries, "Drive kept sending pages after \(pages) pages with \(ids.count) files")
            }
        }
    }

    typealias ListedFile = (file: RemoteFile, mimeType: String, parents: [DriveFileID])
    /// What one query listed, and why it stopped early (nil when it read every page).
    typealias FolderListing = (files: [ListedFile], incomplete: String?)

    /// The whole library on Drive: the folders looked up (every twin, remembered ids checked),
    /// then each books and clips folder listed with a query of its own. Drive's queries that
    /// OR several parents can silently leave out one parent's files (rclone's
    /// `--drive-fast-list-bug-fix`, rclone issues #3114 and #4289), so no query names two.
    /// The remembered folders are listed while the folders are looked up: a no-op sync of up
    /// to 1,000 books costs three requests, in one round trip.
    /// With `createFolders` false (a dry run) missing folders are not created: the listing
    /// covers what exists.
    ///
    /// `ready` is awaited before any folder's files are listed and before any folder is made
    /// (a sync waits there for Drive's change token, asked for beside the folder lookup: every
    /// change to a file after the listing starts is then in the feed that follows the token).
    package func listLibrary(
        remembered: DriveFolders?, createFolders: Bool = true, ready: @escaping @Sendable () async -> Void = {}
    ) async throws -> DriveListing {
        async let early = { () async -> [DriveFileID: Result<FolderListing, any Error>] in
            let folders = (remembered?.books ?? []) + (remembered?.clips ?? [])
            guard !folders.isEmpty else { return [:] }
            await ready()
            return await listEach(folders)
        }()
        let folders: DriveFolders
        if createFolders {
            // Looked up afresh, whatever an earlier call of this client found.
            await folderCache.forget()
            folders = try await folderCache.folders { [self] in
                try await self.resolveFolders(remembered: remembered, create: true, beforeCreating: ready)
            }
        } else {
            folders = try await resolveFolders(remembered: remembered, create: false)
        }
        await ready()
        var listings = await early
        let wanted = folders.books + folders.clips
        for (id, listing) in await listEach(wanted.filter { listings[$0] == nil }) { listings[id] = listing }
        var entries: [ListedFile] = []
        var incomplete: String?
        for id in wanted {
            guard let listing = try listings[id]?.get() else { continue }
            entries += listing.files.filter { $0.mimeType != Self.folderType }
            incomplete = incomplete ?? listing.incomplete
        }
        return DriveListing(
            folders: folders, files: entries.map(\.file), incompleteReason: incomplete,
            mirrored: entries.map { MirroredFile(file: $0.file, parents: $0.parents, mimeType: $0.mimeType) })
    }

    /// Each folder's files, one query per folder, the folders at the same time (each folder's
    /// pages in turn, as its page tokens require).
    private func listEach(_ folders: [DriveFileID]) async -> [DriveFileID: Result<FolderListing, any Error>] {
        await withTaskGroup(of: (DriveFileID, Result<FolderListing, any Error>).self) { group in
            for id in Set(folders) {
                group.addTask {
                    do {
                        return (
                            id,
                            .success(
                                try await self.list(query: "'\(Self.quoted(id: id))' in parents and trashed = false"))
                        )
                    } catch {
                        return (id, .failure(error))
                    }
                }
            }
            var results: [DriveFileID: Result<FolderListing, any Error>] = [:]
            for await (id, result) in group { results[id] = result }
            return results
        }
    }
}
