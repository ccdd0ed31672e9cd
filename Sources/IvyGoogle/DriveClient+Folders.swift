import Foundation
package import IvyCore
import IvySystem

/// Concurrent callers of "ensure the folders" await one in-flight lookup-or-creation,
/// so two parts of one sync never create twin folders.
actor FolderCache {
    private var task: Task<DriveFolders, any Error>?

    func folders(_ resolve: @escaping @Sendable () async throws -> DriveFolders) async throws -> DriveFolders {
        let current = task ?? Task(executorPreference: BlockingExecutor.shared) { try await resolve() }
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
        try await withTaskCancellationHandler {
            try await value
        } onCancel: {
            cancel()
        }
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

    /// ivy's folders as Drive lists them now, twins included, oldest first; nothing is created
    /// (`ivy doctor`). A `remembered` folder the listing leaves out is asked for by id.
    package func existingFolders(remembered: DriveFolders?) async throws -> DriveFolders {
        try await resolveFolders(remembered: remembered, create: false)
    }

    /// The folders as Drive lists them; with `create`, the missing ones are made and the
    /// folders listed again, so a twin another device made at the same moment is seen and the
    /// oldest of each is used by both.
    /// `beforeCreating` is awaited before the first folder is made (`listLibrary`'s `ready`).
    func resolveFolders(
        remembered: DriveFolders?, create: Bool, beforeCreating: @Sendable () async -> Void = {}
    ) async throws -> DriveFolders {
        var (folders, alive) = try await lookUpFolders(known: remembered.map { $0.ivy + $0.books + $0.clips } ?? [])
        guard create, folders.ivy.isEmpty || folders.books.isEmpty || folders.clips.isEmpty else { return folders }
        await beforeCreating()
        var made: [DriveFileID] = []
        let ivy: DriveFileID
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
            throw DriveError(
                .unexpected,
                message: "Drive does not list the Ivy folders ivy has just created; the next sync tries again")
        }
        return folders
    }

    /// ivy's folders among every folder Drive lists, and which of the `known` ones (remembered,
    /// or just made) exist. One the listing leaves out is asked for by id before ivy believes
    /// it gone, so ivy never makes a twin of a folder it knows.
    private func lookUpFolders(known: [DriveFileID]) async throws -> (folders: DriveFolders, alive: [DriveFileID]) {
        let found = try await list(query: Self.folderQuery)
        if let reason = found.incomplete {
            throw DriveError(
                .server,
                message: "looking up the Ivy folders: the listing stopped early: \(reason); the next sync tries again")
        }
        var entries = found.files
        for id in known where !entries.contains(where: { $0.file.id == id }) {
            if let folder = try await liveFolder(id) { entries.append(folder) }
        }
        let ids = Set(entries.map(\.file.id))
        return (Self.structure(entries), known.filter { ids.contains($0) })
    }

    /// An id as a query string: Drive's ids have no quotes, but one that did must not break the query.
    static func quoted(id: DriveFileID) -> String {
        id.rawValue.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "'", with: "\\'")
    }

    /// A folder by id, or nil when it is gone (404) or in the trash.
    private func liveFolder(_ id: DriveFileID) async throws -> ListedFile? {
        let response = try await http.execute(
            HTTPRequest(method: "GET", url: http.url("drive/v3/files/\(id)", ["fields": "\(Self.fileFields),trashed"])),
            accept: [200, 404], context: "checking an Ivy folder")
        guard response.status == 200, let object = response.decoded(WireFile.self), object.trashed == false,
            let file = object.remote
        else { return nil }
        return (file, object.mimeType ?? "", object.parentIDs)
    }

    /// Which listed folders form ivy's tree; twins are kept, oldest first. The Ivy folder is
    /// one whose parent is not among them: My Drive's own id is unknown to ivy ('root' is
    /// only an alias, and under `drive.file` `files.get('root')` may answer 404).
    static func structure(_ entries: [ListedFile]) -> DriveFolders {
        func oldestFirst(_ list: [ListedFile]) -> [DriveFileID] {
            list.sorted { ($0.file.createdTime ?? 0, $0.file.id) < ($1.file.createdTime ?? 0, $1.file.id) }.map(
                \.file.id)
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

    private func createFolder(_ name: String, parent: DriveFileID?) async throws -> DriveFileID {
        let id = try await newFileID()
        let metadata = NewFile(id: id, name: name, parents: parent.map { [$0] }, mimeType: Self.folderType)
        let request = HTTPRequest(
            method: "POST", url: http.url("drive/v3/files", ["fields": "id"]),
            headers: ["Content-Type": "application/json; charset=UTF-8"],
            body: .data(try metadata.json()))
        CrashPoints.reach(.driveFolderBeforeSend)
        do {
            _ = try await http.execute(request, context: "creating the \(name) folder")
        } catch let error as DriveError where error.status == 409 {
            // A retried create whose first answer was lost: the folder is there.
        }
        CrashPoints.reach(.driveFolderAfterAnswer)
        return id
    }
}
