import Foundation
package import IvyCore

/// A file as Drive's change feed reports it: the listing's fields plus where it lives and
/// whether it is in the trash.
package struct ChangedFile: Sendable, Equatable {
    package var file: RemoteFile
    package var mimeType: String
    package var parents: [DriveFileID]
    package var trashed: Bool

    package init(file: RemoteFile, mimeType: String, parents: [DriveFileID], trashed: Bool) {
        self.file = file
        self.mimeType = mimeType
        self.parents = parents
        self.trashed = trashed
    }
}

/// One entry of `changes.list`: a file id and either the file's state now, or nil when it is
/// gone (deleted, or no longer visible to ivy: `removed`).
package struct DriveChange: Sendable, Equatable {
    package var fileID: DriveFileID
    package var file: ChangedFile?

    package init(fileID: DriveFileID, file: ChangedFile?) {
        self.fileID = fileID
        self.file = file
    }
}

/// One page of `changes.list` that reads as Drive documents it.
package struct DriveChangePage: Sendable, Equatable {
    package var changes: [DriveChange]
    /// The token to read from next: the next page's, or on the last page the start of the
    /// changes still to come (`newStartPageToken`), the one to save.
    package var nextToken: String
    /// Whether this page is the last of the feed for now.
    package var isLast: Bool

    package init(changes: [DriveChange], nextToken: String, isLast: Bool) {
        self.changes = changes
        self.nextToken = nextToken
        self.isLast = isLast
    }
}

/// How reading the change feed from a saved token ended.
package enum ChangeFeedEnd: Sendable, Equatable {
    /// Every page was read and handed over; `token` is where the next sync starts.
    case caughtUp(token: String)
    /// Drive refused the token (expired or invalid): it must be discarded, and the listing
    /// taken afresh.
    case rejected(reason: String)
    /// An answer that does not read as a change feed (wrong types, no token to go on with, a
    /// token given twice, pages without end): what was handed over is right, but the rest is
    /// unknown.
    case broken(reason: String)
}

extension DriveClient {
    /// The fields ivy reads of each change: enough to keep a mirror of the listing.
    static let changeFields =
        "nextPageToken,newStartPageToken,changes(changeType,removed,fileId,"
        + "file(id,name,parents,trashed,size,md5Checksum,modifiedTime,createdTime,mimeType))"

    /// Statuses with which Drive refuses a change token. The Drive reference says a rejected
    /// token "should be discarded, and pagination should be restarted from the first page";
    /// it does not say with which status, so each of these counts.
    static let rejectedTokenStatuses: Set<Int> = [400, 404, 410]

    /// Where the change feed stands now (`changes.getStartPageToken`): taken before a full
    /// listing, it makes the changes made during that listing come again, never be missed.
    package func startPageToken() async throws -> String {
        let context = "reading Drive's change token"
        let response = try await http.execute(
            HTTPRequest(method: "GET", url: http.url("drive/v3/changes/startPageToken")), context: context)
        guard let token = try http.decode(StartPageTokenAnswer.self, response, context: context).startPageToken,
            !token.isEmpty
        else {
            throw DriveError(.unexpected, status: response.status, message: "\(context): the answer has no token")
        }
        return token
    }

    /// Every page of the change feed since `token`, each handed to `apply` as it is read
    /// (which saves it with its `nextToken`, so a run stopped between pages goes on from the
    /// last page applied). Throws what the requests throw (network failures after the
    /// retries, a sign-in that stopped working) and what `apply` throws.
    package func changes(
        since token: String, apply: (DriveChangePage) async throws -> Void
    ) async throws -> ChangeFeedEnd {
        var current = token
        var tokens: Set<String> = [token]
        var pages = 0
        var changes = 0
        while true {
            let page: DriveChangePage
            switch try await changesPage(current) {
            case .page(let read): page = read
            case .rejected(let reason): return .rejected(reason: reason)
            case .broken(let reason): return .broken(reason: reason)
            }
            pages += 1
            changes += page.changes.count
            try await apply(page)
            if page.isLast { return .caughtUp(token: page.nextToken) }
            guard tokens.insert(page.nextToken).inserted else {
                return .broken(reason: "Drive gave the same change token twice, so the feed would never end")
            }
            guard pages <= changes + Self.spareListPages else {
                return .broken(reason: "Drive kept sending change pages after \(pages) pages with \(changes) changes")
            }
            current = page.nextToken
        }
    }

    /// What one request for a page of the feed came to.
    enum ChangesRead {
        case page(DriveChangePage)
        case rejected(String)
        case broken(String)
    }

    func changesPage(_ token: String) async throws -> ChangesRead {
        let context = "reading Drive's changes"
        let parameters = [
            "pageToken": token, "pageSize": "1000", "includeRemoved": "true", "spaces": "drive",
            "fields": Self.changeFields,
        ]
        let response: HTTPResponse
        do {
            response = try await http.execute(
                HTTPRequest(method: "GET", url: http.url("drive/v3/changes", parameters)), context: context)
        } catch let error as DriveError where error.status.map(Self.rejectedTokenStatuses.contains) == true {
            return .rejected(error.localizedDescription)
        }
        guard let answer = response.decoded(WireChangePage.self) else {
            return .broken("\(context): the answer is not a JSON object")
        }
        guard let entries = answer.changes else {
            return .broken("\(context): the answer has no list of changes")
        }
        let nextToken: String
        let isLast: Bool
        switch (answer.nextPageToken, answer.newStartPageToken) {
        case (let next?, nil) where !next.isEmpty: (nextToken, isLast) = (next, false)
        case (nil, let start?) where !start.isEmpty: (nextToken, isLast) = (start, true)
        case (nil, nil): return .broken("\(context): a page with neither a next nor a new start token")
        default: return .broken("\(context): a page with both a next and a new start token, or an empty one")
        }
        var changes: [DriveChange] = []
        // A shared drive's own change (`changeType` drive) has no file id; ivy keeps nothing
        // in shared drives.
        for entry in entries where entry.changeType != "drive" {
            guard let change = entry.change else {
                return .broken("\(context): a change without a file id, or whose file cannot be read")
            }
            changes.append(change)
        }
        return .page(DriveChangePage(changes: changes, nextToken: nextToken, isLast: isLast))
    }
}
