import Foundation
import GoogleEmulator
import IvyCore
import IvyTestSupport
import Testing

@testable import IvyGoogle

/// Everything the feed handed over from `token`, and how it ended.
private func readFeed(_ drive: DriveClient, since token: String) async throws -> (
    pages: [DriveChangePage], end: ChangeFeedEnd
) {
    var pages: [DriveChangePage] = []
    let end = try await drive.changes(since: token) { pages.append($0) }
    return (pages, end)
}

@Suite("Drive's change feed")
struct ChangeFeedTests {
    @Test("a start token, then the changes made after it, then nothing more from the token saved")
    func startThenChanges() async throws {
        try await withGoogle { google in
            let drive = try await google.drive()
            let folders = try await drive.folders()
            let token = try await drive.startPageToken()
            let made = try await drive.uploadJSON(
                name: "book_a.json", data: Data("{}".utf8), folder: folders.books[0], replacing: [])
            await google.state.clearRequests()
            let (pages, end) = try await readFeed(drive, since: token)
            let changes = pages.flatMap(\.changes)
            let file = try #require(changes.first { $0.fileID == made.id }?.file)
            #expect(file.file.name == "book_a.json" && file.parents == folders.books && !file.trashed)
            #expect(file.file.md5 == made.md5 && file.file.modifiedTime == made.modifiedTime)
            guard case .caughtUp(let next) = end else {
                Issue.record("\(end)")
                return
            }
            let request = try #require(await google.state.requests.first)
            #expect(request.path == "/drive/v3/changes")
            for part in ["includeRemoved=true", "spaces=drive", "pageSize=1000", "newStartPageToken"] {
                #expect(request.query.contains(part), "\(request.query)")
            }

            let again = try await readFeed(drive, since: next)
            #expect(again.pages.count == 1 && again.pages.flatMap(\.changes).isEmpty)
            guard case .caughtUp = again.end else {
                Issue.record("\(again.end)")
                return
            }
        }
    }

    @Test("pages shorter than asked for are each read, in turn, until the new start token")
    func shortPages() async throws {
        try await withGoogle { google in
            let drive = try await google.drive()
            let folders = try await drive.folders()
            let token = try await drive.startPageToken()
            for index in 0..<5 {
                _ = try await drive.uploadJSON(
                    name: "book_\(index).json", data: Data("{}".utf8), folder: folders.books[0], replacing: [])
            }
            await google.state.setChangesPageSize(2)
            await google.state.clearRequests()
            let (pages, end) = try await readFeed(drive, since: token)
            #expect(pages.count == 3 && pages.map(\.isLast) == [false, false, true])
            #expect(Set(pages.flatMap(\.changes).compactMap(\.file?.file.name)).count == 5)
            guard case .caughtUp = end else {
                Issue.record("\(end)")
                return
            }
            #expect(await google.state.requests.count == 3)
        }
    }

    @Test("a deleted file is reported removed, a trashed one as trashed")
    func removedAndTrashed() async throws {
        try await withGoogle { google in
            let drive = try await google.drive()
            let folders = try await drive.folders()
            let gone = try await drive.uploadJSON(
                name: "book_a.json", data: Data("{}".utf8), folder: folders.books[0], replacing: [])
            let binned = try await drive.uploadJSON(
                name: "book_b.json", data: Data("{}".utf8), folder: folders.books[0], replacing: [])
            let token = try await drive.startPageToken()
            try await drive.delete(gone.id)
            try await google.state.trash(id: binned.id.rawValue)
            let changes = try await readFeed(drive, since: token).pages.flatMap(\.changes)
            #expect(changes.contains(DriveChange(fileID: gone.id, file: nil)))
            #expect(changes.first { $0.fileID == binned.id }?.file?.trashed == true)
        }
    }

    @Test("a token Drive refuses is its own answer, not a failure: an unknown one, or one that expired")
    func rejectedTokens() async throws {
        try await withGoogle { google in
            let drive = try await google.drive()
            let unknown = try await readFeed(drive, since: "not-a-token")
            guard case .rejected = unknown.end else {
                Issue.record("\(unknown.end)")
                return
            }
            #expect(unknown.pages.isEmpty)

            let token = try await drive.startPageToken()
            await google.state.setChangeTokenLifetime(seconds: 60)
            await google.state.advanceClock(by: 3600)
            let expired = try await readFeed(drive, since: token)
            guard case .rejected = expired.end else {
                Issue.record("\(expired.end)")
                return
            }
        }
    }

    @Test(
        "an answer that is not a change feed breaks the chain, never crashes",
        arguments: [
            ["changes": #""many""#], ["changes": "[1, 2]"], ["changes": "null"],
            ["changes": #"[{"fileId": 7, "removed": true}]"#],
            ["changes": #"[{"fileId": "f1", "file": "a file"}]"#],
            ["changes": #"[{"fileId": "f1", "file": {"id": "f1"}}]"#],
            [
                "changes":
                    #"[{"fileId": "f1", "file": {"id": "f2", "name": "x", "modifiedTime": "2026-01-01T00:00:00Z"}}]"#
            ],
            ["changes": #"[{"fileId": "f1"}]"#],
            ["nextPageToken": "null", "newStartPageToken": "null"],
            ["nextPageToken": "42", "newStartPageToken": "null"],
            ["nextPageToken": #""""#, "newStartPageToken": "null"],
            ["nextPageToken": #""7""#, "newStartPageToken": #""8""#],
        ])
    func hostilePages(fields: [String: String]) async throws {
        try await withGoogle { google in
            let drive = try await google.drive()
            let token = try await drive.startPageToken()
            await google.state.addFault(
                FaultRule(method: "GET", pathContains: "/drive/v3/changes?", jsonFields: fields))
            let (pages, end) = try await readFeed(drive, since: token)
            guard case .broken = end else {
                Issue.record("\(fields): \(end)")
                return
            }
            #expect(pages.isEmpty, "nothing of a broken page is handed over")
        }
    }

    @Test("a shared drive's own change is passed over; the files' changes around it are read")
    func sharedDriveChange() async throws {
        try await withGoogle { google in
            let drive = try await google.drive()
            let token = try await drive.startPageToken()
            await google.state.addFault(
                FaultRule(
                    method: "GET", pathContains: "/drive/v3/changes?", times: 1,
                    jsonFields: [
                        "changes": #"[{"changeType": "drive", "driveId": "d1"}, {"fileId": "f1", "removed": true}]"#
                    ]))
            let (pages, end) = try await readFeed(drive, since: token)
            guard case .caughtUp = end else {
                Issue.record("\(end)")
                return
            }
            #expect(pages.flatMap(\.changes) == [DriveChange(fileID: "f1", file: nil)])
        }
    }

    @Test("a next page token given before breaks the chain after the pages already handed over")
    func repeatedToken() async throws {
        try await withGoogle { google in
            let drive = try await google.drive()
            let token = try await drive.startPageToken()
            // The first page sends the reader back to where it started: a feed that never ends.
            await google.state.addFault(
                FaultRule(
                    method: "GET", pathContains: "/drive/v3/changes?", times: 1,
                    jsonFields: ["nextPageToken": "\"\(token)\"", "newStartPageToken": "null"]))
            let (pages, end) = try await readFeed(drive, since: token)
            guard case .broken(let reason) = end else {
                Issue.record("\(end)")
                return
            }
            #expect(reason.contains("same change token twice"))
            #expect(pages.count == 1)
            #expect(await google.state.requests.filter { $0.path == "/drive/v3/changes" }.count == 1)
        }
    }

    @Test("a start token answer without a token is a clear error")
    func startTokenMissing() async throws {
        try await withGoogle { google in
            let drive = try await google.drive()
            await google.state.addFault(
                FaultRule(pathContains: "changes/startPageToken", jsonFields: ["startPageToken": "12"]))
            await #expect {
                _ = try await drive.startPageToken()
            } throws: { error in
                (error as? DriveError)?.kind == .unexpected && error.localizedDescription.contains("no token")
            }
        }
    }
}
