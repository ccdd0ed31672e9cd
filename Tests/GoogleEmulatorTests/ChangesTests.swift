import Foundation
import GoogleEmulator
import IvyCore
import IvySystem
import IvyTestSupport
import Testing

/// Drive's change feed as Google documents it: `changes.getStartPageToken`, `changes.list`
/// ("Retrieve changes" guide and the changes reference), with `drive.file` visibility.
@Suite("Emulated change feed: tokens, pages, removals, visibility, expiry")
struct ChangesTests {
    static let mask =
        "nextPageToken,newStartPageToken,changes(removed,fileId,file(id,name,parents,trashed,size,"
        + "md5Checksum,modifiedTime,mimeType))"

    func startToken(_ google: EmulatorClient, token: String) async throws -> String {
        let reply = try await google.request("GET", "/drive/v3/changes/startPageToken", token: token)
        #expect(reply.status == 200 && reply.json["kind"] as? String == "drive#startPageToken")
        return try #require(reply.json["startPageToken"] as? String)
    }

    func changes(
        _ google: EmulatorClient, from pageToken: String, token: String, pageSize: Int? = nil,
        includeRemoved: Bool? = nil, fields: String? = ChangesTests.mask
    ) async throws -> Reply {
        var path = "/drive/v3/changes?spaces=drive&pageToken=\(pageToken)"
        if let pageSize { path += "&pageSize=\(pageSize)" }
        if let includeRemoved { path += "&includeRemoved=\(includeRemoved)" }
        if let fields { path += "&fields=\(fields.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")" }
        return try await google.request("GET", path, token: token)
    }

    /// Every change from `pageToken` to the end, page by page; returns them and the new start token.
    func drain(_ google: EmulatorClient, from pageToken: String, token: String, pageSize: Int? = nil) async throws
        -> (changes: [[String: Any]], pages: Int, newStart: String)
    {
        var all: [[String: Any]] = []
        var next = pageToken
        var pages = 0
        while true {
            let reply = try await changes(google, from: next, token: token, pageSize: pageSize)
            #expect(reply.status == 200)
            pages += 1
            all += reply.changes
            if let newStart = reply.json["newStartPageToken"] as? String {
                #expect(reply.json["nextPageToken"] == nil, "the last page has no nextPageToken")
                return (all, pages, newStart)
            }
            next = try #require(reply.json["nextPageToken"] as? String)
        }
    }

    @Test("create, update, trash, untrash and delete show in one list, oldest first, each file once at its latest")
    func lifecycle() async throws {
        try await withEmulatorClient { google in
            let token = try await google.signIn().access
            let folder = try await google.createFolder("Ivy", token: token)
            let start = try await startToken(google, token: token)

            let kept = try #require(
                try await google.upload(name: "book_a.json", parent: folder, content: Data("{}".utf8), token: token)
                    .json["id"] as? String)
            let trashed = try #require(
                try await google.upload(name: "book_b.json", parent: folder, content: Data("{}".utf8), token: token)
                    .json["id"] as? String)
            let deleted = try #require(
                try await google.upload(name: "book_c.json", parent: folder, content: Data("{}".utf8), token: token)
                    .json["id"] as? String)
            let untrashed = try #require(
                try await google.upload(name: "book_d.json", parent: folder, content: Data("{}".utf8), token: token)
                    .json["id"] as? String)
            #expect(
                try await google.json("PATCH", "/drive/v3/files/\(trashed)", token: token, ["trashed": true]).status
                    == 200)
            #expect(
                try await google.json("PATCH", "/drive/v3/files/\(untrashed)", token: token, ["trashed": true]).status
                    == 200)
            #expect(
                try await google.json("PATCH", "/drive/v3/files/\(untrashed)", token: token, ["trashed": false]).status
                    == 200)
            #expect(
                try await google.json("PATCH", "/drive/v3/files/\(kept)", token: token, ["name": "book_a2.json"]).status
                    == 200)
            #expect(try await google.request("DELETE", "/drive/v3/files/\(deleted)", token: token).status == 204)

            let reply = try await changes(google, from: start, token: token)
            #expect(reply.status == 200)
            #expect(reply.json["nextPageToken"] == nil)
            let newStart = try #require(reply.json["newStartPageToken"] as? String)
            #expect(newStart != start)
            // Latest change of each file decides its place: b trashed, d untrashed, a renamed, c deleted.
            #expect(reply.changes.compactMap { $0["fileId"] as? String } == [trashed, untrashed, kept, deleted])
            let byID = Dictionary(
                uniqueKeysWithValues: reply.changes.map { ($0["fileId"] as? String ?? "", $0) })
            let file = { (id: String) in byID[id]?["file"] as? [String: Any] ?? [:] }
            #expect(byID[trashed]?["removed"] as? Bool == false && file(trashed)["trashed"] as? Bool == true)
            #expect(byID[untrashed]?["removed"] as? Bool == false && file(untrashed)["trashed"] as? Bool == false)
            #expect(file(kept)["name"] as? String == "book_a2.json" && file(kept)["parents"] as? [String] == [folder])
            #expect(file(kept)["size"] as? String == "2" && file(kept)["md5Checksum"] as? String != nil)
            #expect(file(kept)["modifiedTime"] as? String != nil && file(kept)["mimeType"] as? String != nil)
            #expect(byID[deleted]?["removed"] as? Bool == true && byID[deleted]?["file"] == nil)

            let again = try await changes(google, from: newStart, token: token)
            #expect(again.changes.isEmpty && again.json["newStartPageToken"] as? String == newStart)
        }
    }

    @Test("with no change the list is empty and newStartPageToken is the token given")
    func noChange() async throws {
        try await withEmulatorClient { google in
            let token = try await google.signIn().access
            _ = try await google.createFolder("Ivy", token: token)
            let start = try await startToken(google, token: token)
            #expect(try await startToken(google, token: token) == start, "the feed has not moved")
            let reply = try await changes(google, from: start, token: token, fields: nil)
            #expect(reply.status == 200)
            #expect(reply.json["kind"] as? String == "drive#changeList")
            #expect(reply.changes.isEmpty && reply.json["newStartPageToken"] as? String == start)
        }
    }

    @Test("pages follow pageSize, then the short-page cap; nextPageToken before the last page, newStartPageToken on it")
    func paging() async throws {
        try await withEmulatorClient { google in
            let token = try await google.signIn().access
            let folder = try await google.createFolder("Ivy", token: token)
            let start = try await startToken(google, token: token)
            var made: [String] = []
            for index in 0..<7 {
                let reply = try await google.upload(
                    name: "book_\(index).json", parent: folder, content: Data("{}".utf8), token: token)
                made.append(try #require(reply.json["id"] as? String))
            }

            let byThree = try await drain(google, from: start, token: token, pageSize: 3)
            #expect(byThree.pages == 3 && byThree.changes.compactMap { $0["fileId"] as? String } == made)

            await google.state.setChangesPageSize(2)
            let capped = try await drain(google, from: start, token: token, pageSize: 1000)
            #expect(capped.pages == 4 && capped.changes.compactMap { $0["fileId"] as? String } == made)
            #expect(capped.newStart == byThree.newStart)

            #expect(try await google.json("POST", "/_emulator/config", ["changes_page_size": NSNull()]).status == 200)
            let whole = try await drain(google, from: start, token: token)
            #expect(whole.pages == 1 && whole.changes.count == 7)

            #expect(
                try await changes(google, from: start, token: token, pageSize: 5000).changes.count == 7,
                "values above 1000 are coerced to 1000")
            let zero = try await changes(google, from: start, token: token, pageSize: 0)
            #expect(zero.status == 400 && zero.driveReason == "invalid")
        }
    }

    @Test("includeRemoved=false leaves deletions out; trashed files still come, with trashed set")
    func withoutRemovals() async throws {
        try await withEmulatorClient { google in
            let token = try await google.signIn().access
            let folder = try await google.createFolder("Ivy", token: token)
            let gone = try #require(
                try await google.upload(name: "a.json", parent: folder, content: Data("{}".utf8), token: token)
                    .json["id"] as? String)
            let binned = try #require(
                try await google.upload(name: "b.json", parent: folder, content: Data("{}".utf8), token: token)
                    .json["id"] as? String)
            let start = try await startToken(google, token: token)
            #expect(try await google.request("DELETE", "/drive/v3/files/\(gone)", token: token).status == 204)
            #expect(
                try await google.json("PATCH", "/drive/v3/files/\(binned)", token: token, ["trashed": true]).status
                    == 200)

            let without = try await changes(google, from: start, token: token, includeRemoved: false)
            #expect(without.changes.compactMap { $0["fileId"] as? String } == [binned])
            let with = try await changes(google, from: start, token: token)
            #expect(with.changes.compactMap { $0["fileId"] as? String } == [gone, binned])
            #expect(without.json["newStartPageToken"] as? String == with.json["newStartPageToken"] as? String)
        }
    }

    @Test("deleting or trashing a folder reports everything below it")
    func folderCascade() async throws {
        try await withEmulatorClient { google in
            let token = try await google.signIn().access
            let top = try await google.createFolder("Ivy", token: token)
            let inner = try await google.createFolder("audio", parent: top, token: token)
            let clip = try #require(
                try await google.upload(name: "c.mp3", parent: inner, content: Data("x".utf8), token: token)
                    .json["id"] as? String)
            let start = try await startToken(google, token: token)
            #expect(
                try await google.json("PATCH", "/drive/v3/files/\(top)", token: token, ["trashed": true]).status == 200)
            let trashed = try await changes(google, from: start, token: token)
            #expect(trashed.changes.compactMap { $0["fileId"] as? String } == [top, inner, clip])
            #expect(trashed.changes.allSatisfy { ($0["file"] as? [String: Any])?["trashed"] as? Bool == true })

            let next = try #require(trashed.json["newStartPageToken"] as? String)
            #expect(try await google.request("DELETE", "/drive/v3/files/\(top)", token: token).status == 204)
            let deleted = try await changes(google, from: next, token: token)
            #expect(deleted.changes.compactMap { $0["fileId"] as? String } == [top, inner, clip])
            #expect(deleted.changes.allSatisfy { $0["removed"] as? Bool == true && $0["file"] == nil })
        }
    }

    @Test("drive.file: another project's files and a web-page file never appear, nor do their deletions")
    func visibility() async throws {
        try await withEmulatorClient { google in
            let ivy = try await google.signIn().access
            let app = try await google.state.grant(email: "alice@example.com", clientID: GoogleEmulator.appClient.id)
            let other = try await google.state.grant(
                email: "alice@example.com", clientID: GoogleEmulator.otherProjectClient.id)
            let start = try await startToken(google, token: ivy)
            let otherStart = try await startToken(google, token: other.access)

            let mine = try await google.createFolder("Ivy", token: app.access)
            let theirs = try await google.createFolder("Ivy", token: other.access)
            let byHand = await google.state.putFile(
                email: "alice@example.com", name: "notes.txt", parents: ["root"], content: Data("x".utf8), project: nil)
            #expect(try await google.request("DELETE", "/drive/v3/files/\(theirs)", token: other.access).status == 204)
            try await google.state.corruptFile(id: byHand.id, content: Data("y".utf8))

            let seen = try await drain(google, from: start, token: ivy)
            #expect(seen.changes.compactMap { $0["fileId"] as? String } == [mine], "the project's own app's file shows")
            let seenByOther = try await drain(google, from: otherStart, token: other.access)
            #expect(seenByOther.changes.compactMap { $0["fileId"] as? String } == [theirs])
            #expect(seenByOther.changes.first?["removed"] as? Bool == true)

            // Bob's Drive is another feed: his changes never reach Alice's.
            let bob = try await google.state.grant(email: "bob@example.com", clientID: GoogleEmulator.defaultClient.id)
            _ = try await google.createFolder("Ivy", token: bob.access)
            let after = try await changes(google, from: seen.newStart, token: ivy)
            #expect(after.changes.isEmpty && after.json["newStartPageToken"] as? String == seen.newStart)

            // A change Alice's client cannot see still moves her feed on: an empty page with a new
            // token, so a client must not read "a new token" as "something changed for me".
            _ = try await google.createFolder("Elsewhere", token: other.access)
            let unseen = try await changes(google, from: seen.newStart, token: ivy)
            #expect(unseen.changes.isEmpty)
            #expect(unseen.json["newStartPageToken"] as? String != seen.newStart)
        }
    }

    @Test("the fields mask shapes changes and files; without one Drive's default fields come")
    func fieldMasks() async throws {
        try await withEmulatorClient { google in
            let token = try await google.signIn().access
            let start = try await startToken(google, token: token)
            let folder = try await google.createFolder("Ivy", token: token)

            let narrow = try await changes(google, from: start, token: token, fields: "changes(fileId,file/name)")
            #expect(narrow.json.keys.sorted() == ["changes"])
            let change = try #require(narrow.changes.first)
            #expect(change.keys.sorted() == ["file", "fileId"] && change["fileId"] as? String == folder)
            #expect((change["file"] as? [String: Any])?.keys.sorted() == ["name"])

            let plain = try await changes(google, from: start, token: token, fields: nil)
            let full = try #require(plain.changes.first)
            #expect(full["kind"] as? String == "drive#change" && full["changeType"] as? String == "file")
            #expect(full["time"] as? String != nil && full["removed"] as? Bool == false)
            #expect((full["file"] as? [String: Any])?.keys.sorted() == ["id", "kind", "mimeType", "name"])

            let token2 = try await google.request(
                "GET", "/drive/v3/changes/startPageToken?fields=startPageToken", token: token)
            #expect(token2.json.keys.sorted() == ["startPageToken"])
            let broken = try await changes(google, from: start, token: token, fields: "changes(fileId")
            #expect(broken.status == 400)
        }
    }

    @Test("malformed, unknown, missing and expired tokens are refused with 400 invalid on pageToken")
    func rejectedTokens() async throws {
        try await withEmulatorClient(clock: .manual()) { google in
            await google.state.setTokenLifetime(seconds: 10 * 365 * 24 * 3600)
            let token = try await google.signIn().access
            let start = try await startToken(google, token: token)
            for bad in ["abc", "-1", "99999", "1.5", "%20"] {
                let reply = try await changes(google, from: bad, token: token)
                #expect(reply.status == 400 && reply.driveReason == "invalid", "token \(bad)")
                #expect(reply.errorLocation == "pageToken")
            }
            let missing = try await google.request("GET", "/drive/v3/changes", token: token)
            #expect(missing.status == 400 && missing.driveReason == "required" && missing.errorLocation == "pageToken")

            // Drive documents tokens that never expire: by default a year-old one still works.
            await google.state.advanceClock(by: 365 * 24 * 3600)
            #expect(try await changes(google, from: start, token: token).status == 200)

            #expect(try await google.json("POST", "/_emulator/config", ["change_token_lifetime": 3600]).status == 200)
            let fresh = try await startToken(google, token: token)
            await google.state.advanceClock(by: 3000)
            let polled = try await changes(google, from: fresh, token: token)
            #expect(polled.status == 200, "within its lifetime")
            // Handing the same token out again renews it: a client that keeps polling keeps its place.
            await google.state.advanceClock(by: 3000)
            #expect(try await changes(google, from: fresh, token: token).status == 200)
            await google.state.advanceClock(by: 3601)
            let expired = try await changes(google, from: fresh, token: token)
            #expect(expired.status == 400 && expired.driveReason == "invalid" && expired.errorLocation == "pageToken")

            await google.state.setChangeTokenLifetime(seconds: nil)
            #expect(try await changes(google, from: fresh, token: token).status == 200)
        }
    }

    @Test("the change endpoints are logged, faulted and read-limited like any other request")
    func faultsAndLimits() async throws {
        try await withEmulatorClient(clock: .manual()) { google in
            let token = try await google.signIn().access
            let start = try await startToken(google, token: token)
            await google.state.clearRequests()
            await google.state.addFault(FaultRule(pathContains: "/drive/v3/changes?", times: 1, status: 503))
            #expect(try await changes(google, from: start, token: token).status == 503)
            #expect(try await changes(google, from: start, token: token).status == 200)
            #expect(try await google.json("POST", "/_emulator/config", ["changes_page_size": 5]).status == 200)
            // The control API is the test talking and stays out of the log; the feed's requests are in it.
            let logged = await google.state.requests.map { "\($0.method) \($0.path) \($0.status)" }
            #expect(logged == ["GET /drive/v3/changes 503", "GET /drive/v3/changes 200"])

            await google.state.setReadLimit(RateLimit(perSecond: 1, burst: 1))
            #expect(try await changes(google, from: start, token: token).status == 200)
            let limited = try await changes(google, from: start, token: token)
            #expect(limited.status == 403 && limited.driveReason == "userRateLimitExceeded")
        }
    }

    @Test("files.update with media keeps the id; md5, size, modifiedTime, version and headRevisionId change; fed")
    func contentUpdateInPlace() async throws {
        try await withEmulatorClient(clock: .manual()) { google in
            let token = try await google.signIn().access
            let folder = try await google.createFolder("clips", token: token)
            let old = Data("ID3 the first take".utf8)
            let new = Data("ID3 the second, longer take".utf8)
            let id = try #require(
                try await google.upload(name: "clip_c1.mp3", parent: folder, content: old, token: token)
                    .json["id"] as? String)
            let fields = "id,md5Checksum,size,modifiedTime,version,headRevisionId"
            let before = try await google.request("GET", "/drive/v3/files/\(id)?fields=\(fields)", token: token).json
            let start = try await startToken(google, token: token)
            await google.state.advanceClock(by: 60)

            let updated = try await google.request(
                "PATCH", "/upload/drive/v3/files/\(id)?uploadType=media&fields=\(fields)", token: token,
                headers: ["Content-Type": "audio/mpeg"], body: new)
            #expect(updated.status == 200, "\(updated.json)")
            let after = try await google.request("GET", "/drive/v3/files/\(id)?fields=\(fields)", token: token).json
            #expect(updated.json["id"] as? String == id && after["id"] as? String == id, "the same file")
            #expect(after["md5Checksum"] as? String == MD5.hex(new) && before["md5Checksum"] as? String == MD5.hex(old))
            #expect(after["size"] as? String == "\(new.count)")
            let times = [before, after].compactMap { ($0["modifiedTime"] as? String).flatMap(RFC3339Time.milliseconds) }
            #expect(times.count == 2 && times[1] - times[0] == 60_000, "modifiedTime moves with the clock")
            let versions = [before, after].compactMap { ($0["version"] as? String).flatMap { Int($0) } }
            #expect(versions.count == 2 && versions[1] > versions[0], "version grows: \(before) \(after)")
            let revisions = [before, after].compactMap { $0["headRevisionId"] as? String }
            #expect(revisions.count == 2 && revisions[0] != revisions[1], "a new head revision")
            #expect(try await google.request("GET", "/drive/v3/files/\(id)?alt=media", token: token).body == new)
            #expect(try await google.list("'\(folder)' in parents", token: token).files.count == 1, "no new file")

            let feed = try await changes(google, from: start, token: token)
            let change = try #require(feed.changes.first { $0["fileId"] as? String == id }, "\(feed.json)")
            let file = try #require(change["file"] as? [String: Any])
            #expect(file["md5Checksum"] as? String == MD5.hex(new) && file["size"] as? String == "\(new.count)")
            #expect(change["removed"] as? Bool == false)
        }
    }

    @Test("a token from before a restart with --state still works, and sees what changed before it")
    func persistence() async throws {
        let (token, start, made, snapshot) = try await withEmulatorClient { google in
            let token = try await google.signIn().access
            let start = try await startToken(google, token: token)
            let made = try await google.createFolder("Ivy", token: token)
            return (token, start, made, try await google.state.snapshot())
        }
        let state = EmulatorState(accounts: [], clients: [])
        try await state.restore(from: snapshot)
        try await withEmulator(state: state, tls: false) { second in
            let google = EmulatorClient(emulator: second)
            let reply = try await changes(google, from: start, token: token)
            #expect(reply.status == 200 && reply.changes.compactMap { $0["fileId"] as? String } == [made])
            let newStart = try #require(reply.json["newStartPageToken"] as? String)
            let later = try await google.createFolder("More", token: token)
            #expect(try await changes(google, from: newStart, token: token).changes.count == 1)
            _ = later
        }
    }
}

extension Reply {
    var changes: [[String: Any]] { json["changes"] as? [[String: Any]] ?? [] }
    var errorLocation: String? {
        ((json["error"] as? [String: Any])?["errors"] as? [[String: Any]])?.first?["location"] as? String
    }
}
