package import Foundation
package import IvyCore
import IvySystem
import Synchronization

/// Everything in the books and clips folders, and whether every page was read.
package struct DriveListing: Sendable {
    package var folders: DriveFolders
    package var files: [RemoteFile]
    /// Why the listing stopped before its end; nil when every page was read. An incomplete
    /// listing never causes a local deletion.
    package var incompleteReason: String?
    /// `files` with their parents and MIME types: what the mirror of the listing keeps.
    package var mirrored: [MirroredFile]
    package var isComplete: Bool { incompleteReason == nil }

    package init(
        folders: DriveFolders, files: [RemoteFile], incompleteReason: String? = nil, mirrored: [MirroredFile] = []
    ) {
        self.folders = folders
        self.files = files
        self.incompleteReason = incompleteReason
        self.mirrored = mirrored
    }
}

/// Google Drive v3 as ivy uses it, one file per job: folders (`DriveClient+Folders`),
/// listing (`+Listing`), delete-then-create uploads (`+Uploads`) and downloads
/// (`+Downloads`), all sent by one `DriveRequester`: one retry policy, one pacer, one
/// concurrency limit.
package final class DriveClient: Sendable {
    package static let folderType = "application/vnd.google-apps.folder"
    static let fileFields = "id,name,mimeType,size,md5Checksum,modifiedTime,createdTime,parents"
    /// What a create (or the look-up after a 409) asks Drive to answer: an `UploadedFile`.
    static let createdFields = "id,name,size,md5Checksum,modifiedTime"

    /// The most of an MP3 one download request asks for. A larger file comes in Range
    /// requests of this size, one after another: 13 requests for a 50 MB MP3 instead of 1,
    /// none more for anything up to this size. It bounded what could wait in memory behind a
    /// slow disk when ivy's HTTP was URLSession, which read the socket with no backpressure
    /// (8 MiB left the peak of a 50 MB download onto a slow disk at 64.7 MB); AsyncHTTPClient
    /// reads only as ivy writes, and the window still bounds what a dropped connection costs.
    package static let defaultDownloadWindow: Int64 = 4 << 20

    let http: DriveRequester
    /// How long the server has kept this client's requests waiting without a word, when
    /// its transport reports to it (`SilenceTracking`, as every sync's does).
    package let silence: Silence
    let ids: IDPool
    let folderCache: FolderCache
    let downloadWindow: Int64
    /// The most of an MP3 one upload PUT carries (`ResumableUpload.defaultChunk`).
    package let uploadChunk: Int64

    package init(
        drive: URL, authorized: AuthorizedTransport, concurrency: Int = 8, policy: RetryPolicy = RetryPolicy(),
        sleep: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) },
        now: @escaping @Sendable () -> Duration = Pacer.monotonic(),
        downloadWindow: Int64 = DriveClient.defaultDownloadWindow, uploadChunk: Int64 = ResumableUpload.defaultChunk,
        unitsPerMinute: Int = QuotaBudget.perUserPerMinute, builtInClient: Bool = false, silence: Silence = Silence()
    ) {
        self.silence = silence
        self.downloadWindow = max(1, downloadWindow)
        self.uploadChunk = ResumableUpload.chunk(uploadChunk)
        let http = DriveRequester(
            base: drive, authorized: authorized, concurrency: concurrency, policy: policy, sleep: sleep, now: now,
            unitsPerMinute: unitsPerMinute, builtInClient: builtInClient)
        self.http = http
        ids = IDPool { count in try await http.generateIDs(count) }
        folderCache = FolderCache()
    }

    /// Requests sent (retries included), for the sync report and benchmarks.
    package var requestCount: Int { http.requests.withLock { $0 } }
    package var rateLimitCount: Int { http.rateLimitedAnswers.withLock { $0 } }
    /// Rate limits that named the whole Cloud project's quota rather than this user's.
    package var sharedQuotaCount: Int { http.sharedQuotaAnswers.withLock { $0 } }
    /// Google's quota units the requests sent cost (`QuotaUnits`), retries included.
    package var quotaUnits: Int { http.units.withLock { $0 } }

    /// An id from `files.generateIds` for a file or folder about to be created.
    func newFileID() async throws -> DriveFileID { DriveFileID(try await ids.next()) }

    /// Deletes a file for good; a file already gone (404) counts as deleted.
    package func delete(_ id: DriveFileID) async throws {
        CrashPoints.reach(.driveDeleteBeforeSend)
        _ = try await http.execute(
            HTTPRequest(method: "DELETE", url: http.url("drive/v3/files/\(id)")), accept: [204, 200, 404],
            context: "deleting \(id)")
        CrashPoints.reach(.driveDeleteAfterAnswer)
    }

    /// A file as Drive holds it now (`files.get`), or nil when it is gone (404) or in the
    /// trash: what an upload checks just before it replaces a file it listed earlier, as
    /// Drive may have replaced that file's content in place since (same id, other md5).
    package func current(_ id: DriveFileID) async throws -> RemoteFile? {
        let response = try await http.execute(
            HTTPRequest(method: "GET", url: http.url("drive/v3/files/\(id)", ["fields": "\(Self.fileFields),trashed"])),
            accept: [200, 404], context: "reading \(id)")
        guard response.status == 200 else { return nil }
        guard let object = response.decoded(WireFile.self), let file = object.remote else {
            throw DriveError(.unexpected, message: "reading \(id): Drive's answer is not a file")
        }
        return object.trashed == true ? nil : file
    }

    /// After a create answered 409, the file with our id exists: read what Drive made.
    func existing(_ id: DriveFileID, context: String) async throws -> UploadedFile {
        let response = try await http.execute(
            HTTPRequest(
                method: "GET",
                url: http.url("drive/v3/files/\(id)", ["fields": Self.createdFields])),
            context: context)
        return try http.uploaded(response, context: context)
    }
}

/// Drive's RFC 3339 times with milliseconds.
package enum DriveTime {
    package static func milliseconds(_ text: String) -> Milliseconds? { RFC3339Time.milliseconds(text) }
}
