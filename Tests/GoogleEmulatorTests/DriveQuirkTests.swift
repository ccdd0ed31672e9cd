import Foundation
import GoogleEmulator
import Testing

/// What real Drive does that a client written against a tidy fake would not expect.
@Suite("Emulated Drive quirks")
struct DriveQuirkTests {
    static let folder = "application/vnd.google-apps.folder"

    @Test("name queries lag behind a create or rename (kopia #90); parent queries and files.get by id do not")
    func nameIndexLag() async throws {
        // A clock that moves only when told: on a loaded machine real seconds pass between
        // the create and the queries, and the window would close before the test looks.
        try await withEmulatorClient(clock: .manual()) { google in
            let token = try await google.signIn().access
            #expect(try await google.json("POST", "/_emulator/config", ["name_index_delay": 30]).status == 200)
            let ivy = try await google.createFolder("Ivy", token: token)
            let byName = "name = 'Ivy' and mimeType = '\(Self.folder)' and trashed = false"
            #expect(try await google.list(byName, token: token).files.isEmpty, "not in the name index yet")
            #expect(try await google.list("name contains 'Iv'", token: token).files.isEmpty)
            let byParent = try await google.list(
                "'root' in parents and mimeType = '\(Self.folder)' and trashed = false", token: token)
            #expect(byParent.names == ["Ivy"], "a parent query sees it at once")
            #expect(
                try await google.request("GET", "/drive/v3/files/\(ivy)?fields=id,name", token: token).json["name"]
                    as? String == "Ivy")
            #expect(
                try await google.list("'root' in parents and name = 'Ivy'", token: token).files.isEmpty,
                "a name term anywhere lags")

            await google.state.advanceClock(by: 31)
            #expect(try await google.list(byName, token: token).names == ["Ivy"], "indexed once the delay has passed")

            let renamed = try await google.json("PATCH", "/drive/v3/files/\(ivy)", token: token, ["name": "Ivy2"])
            #expect(renamed.status == 200)
            #expect(try await google.list("name = 'Ivy2'", token: token).files.isEmpty, "a rename lags too")
            await google.state.advanceClock(by: 31)
            #expect(try await google.list("name = 'Ivy2'", token: token).names == ["Ivy2"])
        }
    }

    @Test(
        "with drop_or_parent, a query ORing two parents leaves out one parent's children; one parent per query is whole"
    )
    func orParentsDrop() async throws {
        try await withEmulatorClient { google in
            let token = try await google.signIn().access
            let books = try await google.createFolder("books", token: token)
            let clips = try await google.createFolder("clips", token: token)
            _ = try await google.upload(name: "book_a.json", parent: books, content: Data("{}".utf8), token: token)
            _ = try await google.upload(name: "clip_c.json", parent: clips, content: Data("{}".utf8), token: token)
            let both = "('\(books)' in parents or '\(clips)' in parents) and trashed = false"
            #expect(Set(try await google.list(both, token: token).names) == ["book_a.json", "clip_c.json"])

            let set = try await google.json("POST", "/_emulator/list-fault", ["kind": "drop_or_parent"])
            #expect(set.status == 200)
            let short = try await google.list(
                both, token: token, fields: "nextPageToken,incompleteSearch,files(id,name)")
            #expect(short.names == ["book_a.json"], "the last parent's children are missing")
            #expect(short.json["incompleteSearch"] as? Bool == false, "with no sign of it")
            #expect(try await google.list("'\(books)' in parents", token: token).names == ["book_a.json"])
            #expect(try await google.list("'\(clips)' in parents", token: token).names == ["clip_c.json"])
            #expect(
                try await google.list("'\(clips)' in parents or name = 'x'", token: token).names == ["clip_c.json"],
                "one parent only")
        }
    }

    @Test("a page token is good for hours, then answers 400; the listing starts again from the first page")
    func pageTokenLifetime() async throws {
        try await withEmulatorClient { google in
            // An access token outlives the hours this test moves the clock on.
            await google.state.setTokenLifetime(seconds: 86_400)
            let token = try await google.signIn().access
            await google.state.setPageSizeCap(2)
            let folder = try await google.createFolder("books", token: token)
            for index in 0..<5 {
                await google.state.putFile(
                    email: "alice@example.com", name: "book_\(index).json", parents: [folder], content: Data("{}".utf8))
            }
            let query = "'\(folder)' in parents"
            let first = try await google.list(query, token: token)
            let next = try #require(first.json["nextPageToken"] as? String)
            await google.state.advanceClock(by: 2 * 3600)
            #expect(
                try await google.list(query, token: token, pageToken: next).status == 200, "still good after two hours")
            await google.state.advanceClock(by: 2 * 3600)
            let stale = try await google.list(query, token: token, pageToken: next)
            #expect(stale.status == 400 && stale.driveReason == "invalid")

            #expect(try await google.json("POST", "/_emulator/config", ["page_token_lifetime": 60]).status == 200)
            var names: [String] = []
            var pageToken: String?
            repeat {
                let page = try await google.list(query, token: token, pageToken: pageToken)
                #expect(page.status == 200)
                names += page.names
                pageToken = page.json["nextPageToken"] as? String
            } while pageToken != nil
            #expect(names.count == 5, "a fresh listing pages to the end")
        }
    }

    @Test(
        """
        reads have a rate limit of their own: 403 userRateLimitExceeded in the body (or 429), \
        refilled with time; writes unaffected
        """
    )
    func readLimit() async throws {
        try await withEmulatorClient { google in
            let token = try await google.signIn().access
            let folder = try await google.createFolder("books", token: token)
            let id = try #require(
                try await google.upload(name: "book_a.json", parent: folder, content: Data("{}".utf8), token: token)
                    .json["id"] as? String)
            // So slow a refill that only the emulator's clock, never a slow machine, brings one.
            let set = try await google.json("POST", "/_emulator/read-limit", ["reads_per_second": 0.001, "burst": 2.0])
            #expect(set.status == 200)
            #expect(try await google.request("GET", "/drive/v3/files/\(id)?alt=media", token: token).status == 200)
            #expect(try await google.list("'\(folder)' in parents", token: token).status == 200)
            let download = try await google.request("GET", "/drive/v3/files/\(id)?alt=media", token: token)
            #expect(
                download.status == 403 && download.driveReason == "userRateLimitExceeded",
                "a download gets Drive's JSON error")
            #expect(
                try await google.list("'\(folder)' in parents", token: token).driveReason == "userRateLimitExceeded")
            #expect(try await google.request("GET", "/drive/v3/files/\(id)?fields=id", token: token).status == 403)
            #expect(
                try await google.createFolder("clips", token: token).isEmpty == false, "writes have their own limit")

            await google.state.advanceClock(by: 1000)
            #expect(
                try await google.request("GET", "/drive/v3/files/\(id)?fields=id", token: token).status == 200,
                "one read refilled")

            #expect(
                try await google.json(
                    "POST", "/_emulator/read-limit", ["reads_per_second": 0.001, "burst": 1.0, "status": 429]
                ).status == 200)
            #expect(try await google.request("GET", "/drive/v3/files/\(id)?fields=id", token: token).status == 200)
            let busy = try await google.request("GET", "/drive/v3/files/\(id)?fields=id", token: token)
            #expect(busy.status == 429 && busy.driveReason == "rateLimitExceeded")
            try await google.request("DELETE", "/_emulator/read-limit")
            #expect(try await google.request("GET", "/drive/v3/files/\(id)?fields=id", token: token).status == 200)
        }
    }
}
