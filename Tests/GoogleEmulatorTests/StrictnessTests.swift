import Foundation
import GoogleEmulator
import Testing

/// Answers where the emulator was once kinder than Google, each as Google documents it
/// (issue 28): a client bug the kind answer hid would pass its tests and fail on Drive.
@Suite("Emulated Google as strict as Google")
struct StrictnessTests {
    static let folder = "application/vnd.google-apps.folder"

    private static func encoded(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
    }

    private static func file(_ google: EmulatorClient, _ id: String, fields: String, token: String) async throws
        -> Reply
    {
        try await google.request("GET", "/drive/v3/files/\(id)?fields=\(encoded(fields))", token: token)
    }

    @Test("a field the resource does not have in `fields` answers 400 invalidParameter, not a quiet omission")
    func unknownFields() async throws {
        try await withEmulatorClient { google in
            let token = try await google.signIn().access
            let id = try await google.createFolder("books", token: token)
            let typo = try await Self.file(google, id, fields: "id,nmae", token: token)
            #expect(typo.status == 400 && typo.driveReason == "invalidParameter")
            #expect((typo.json["error"] as? [String: Any])?["message"] as? String == "Invalid field selection nmae")
            let nested = try await google.list("trashed = false", token: token, fields: "files(id,canAddChildren)")
            #expect(nested.status == 400, "the fields guide's own example")
            #expect(try await google.list("trashed = false", token: token, fields: "nextPage").status == 400)
            let about = try await google.request("GET", "/drive/v3/about?fields=user(email)", token: token)
            #expect(about.status == 400)
            #expect(
                try await google.list("trashed = false", token: token, fields: "files(id,capabilities/canEdit)")
                    .status == 200, "a nested field of a known one")
            #expect(try await Self.file(google, id, fields: "*", token: token).status == 200)
        }
    }

    @Test("parents in an update body answer 403 fieldNotWritable; addParents and removeParents move the file")
    func parentsMoveOnlyByParameters() async throws {
        try await withEmulatorClient { google in
            let token = try await google.signIn().access
            let books = try await google.createFolder("books", token: token)
            let clips = try await google.createFolder("clips", token: token)
            let id = try #require(
                try await google.upload(name: "a.json", parent: books, content: Data("{}".utf8), token: token)
                    .json["id"] as? String)
            let refused = try await google.json("PATCH", "/drive/v3/files/\(id)", token: token, ["parents": [clips]])
            #expect(refused.status == 403 && refused.driveReason == "fieldNotWritable")
            #expect(
                try await Self.file(google, id, fields: "parents", token: token).json["parents"] as? [String] == [books]
            )

            let moved = try await google.json(
                "PATCH", "/drive/v3/files/\(id)?addParents=\(clips)&removeParents=\(books)&fields=id,parents",
                token: token, [:])
            #expect(moved.status == 200 && moved.json["parents"] as? [String] == [clips])
            #expect(try await google.list("'\(clips)' in parents", token: token).names == ["a.json"])
            #expect(try await google.list("'\(books)' in parents", token: token).files.isEmpty)
            let second = try await google.json("PATCH", "/drive/v3/files/\(id)?addParents=\(books)", token: token, [:])
            #expect(second.status == 403, "a file has one parent")
        }
    }

    @Test("modifiedTime, description and appProperties are kept on create and update")
    func writableMetadata() async throws {
        try await withEmulatorClient { google in
            let token = try await google.signIn().access
            let fields = "id,modifiedTime,description,appProperties"
            let created = try await google.json(
                "POST", "/drive/v3/files?fields=\(Self.encoded(fields))", token: token,
                [
                    "name": "a.json", "modifiedTime": "2024-05-01T10:00:00.123Z", "description": "book a",
                    "appProperties": ["ivyId": "b1", "kind": "book"],
                ])
            #expect(created.status == 200)
            #expect(created.json["modifiedTime"] as? String == "2024-05-01T10:00:00.123Z")
            #expect(created.json["description"] as? String == "book a")
            #expect(created.json["appProperties"] as? [String: String] == ["ivyId": "b1", "kind": "book"])
            let id = try #require(created.json["id"] as? String)

            let updated = try await google.json(
                "PATCH", "/drive/v3/files/\(id)?fields=\(Self.encoded(fields))", token: token,
                [
                    "modifiedTime": "2025-01-02T03:04:05Z", "description": NSNull(),
                    "appProperties": ["kind": NSNull(), "size": "3"],
                ])
            #expect(updated.status == 200)
            #expect(updated.json["modifiedTime"] as? String == "2025-01-02T03:04:05.000Z")
            #expect(updated.json["description"] == nil, "null clears it")
            #expect(updated.json["appProperties"] as? [String: String] == ["ivyId": "b1", "size": "3"])
        }
    }

    @Test("name contains matches a prefix of the name only, ignoring case")
    func nameContainsIsPrefix() async throws {
        try await withEmulatorClient { google in
            let token = try await google.signIn().access
            _ = try await google.createFolder("HelloWorld", token: token)
            #expect(try await google.list("name contains 'Hello'", token: token).names == ["HelloWorld"])
            #expect(try await google.list("name contains 'hello'", token: token).names == ["HelloWorld"])
            #expect(try await google.list("name contains 'World'", token: token).files.isEmpty)
        }
    }

    @Test("orderBy sorts by its keys, desc reverses, and an unknown key answers 400")
    func orderBy() async throws {
        try await withEmulatorClient { google in
            let token = try await google.signIn().access
            let parent = try await google.createFolder("p", token: token)
            // A second apart, so that createdTime orders them whatever the machine's speed.
            await google.state.freezeClock()
            for name in ["b10", "B2", "a"] {
                await google.state.advanceClock(by: 1)
                _ = try await google.upload(name: name, parent: parent, content: Data(), token: token)
            }
            await google.state.advanceClock(by: 1)
            _ = try await google.createFolder("z", parent: parent, token: token)
            func names(_ order: String) async throws -> Reply {
                try await google.request(
                    "GET", "/drive/v3/files?q=\(Self.encoded("'\(parent)' in parents"))&orderBy=\(Self.encoded(order))",
                    token: token)
            }
            #expect(try await names("name").names == ["a", "b10", "B2", "z"])
            #expect(try await names("name_natural").names == ["a", "B2", "b10", "z"])
            #expect(try await names("name desc").names == ["z", "B2", "b10", "a"])
            #expect(try await names("folder,name").names == ["z", "a", "b10", "B2"])
            #expect(try await names("createdTime desc").names == ["z", "a", "B2", "b10"])
            let bad = try await names("size")
            #expect(bad.status == 400 && bad.driveReason == "invalid")
        }
    }

    @Test("pageSize above 1000 is coerced to 1000; below 1 answers 400")
    func pageSizeCoerced() async throws {
        try await withEmulatorClient { google in
            let token = try await google.signIn().access
            let parent = try await google.createFolder("p", token: token)
            for index in 0..<1001 {
                await google.state.putFile(
                    email: "alice@example.com", name: "f\(index)", parents: [parent], content: Data())
            }
            let page = try await google.list("'\(parent)' in parents", token: token, pageSize: 5000)
            #expect(page.status == 200 && page.files.count == 1000)
            #expect(page.json["nextPageToken"] != nil)
            #expect(try await google.list("'\(parent)' in parents", token: token, pageSize: 0).status == 400)
        }
    }

    @Test("q accepts modifiedTime comparisons, 'me' in owners and starred")
    func moreQueryTerms() async throws {
        try await withEmulatorClient { google in
            let token = try await google.signIn().access
            for (name, time, starred) in [
                ("old", "2020-01-01T00:00:00Z", false), ("new", "2024-06-01T12:00:00Z", true),
            ] {
                let made = try await google.json(
                    "POST", "/drive/v3/files", token: token, ["name": name, "modifiedTime": time, "starred": starred])
                #expect(made.status == 200)
            }
            #expect(try await google.list("modifiedTime > '2023-01-01T00:00:00'", token: token).names == ["new"])
            #expect(try await google.list("modifiedTime <= '2020-01-01T00:00:00Z'", token: token).names == ["old"])
            #expect(try await google.list("'me' in owners and starred = true", token: token).names == ["new"])
            #expect(try await google.list("starred != true", token: token).names == ["old"])
            #expect(try await google.list("'bob@example.com' in owners", token: token).files.isEmpty)
            #expect(try await google.list("modifiedTime > 'yesterday'", token: token).status == 400)
        }
    }

    @Test("a file created without parents lists My Drive's real id, which queries take as well as 'root'")
    func realRootID() async throws {
        try await withEmulatorClient { google in
            let token = try await google.signIn().access
            let made = try await google.json("POST", "/drive/v3/files?fields=id,parents", token: token, ["name": "Ivy"])
            let root = try #require((made.json["parents"] as? [String])?.first)
            #expect(root != "root" && root.hasPrefix("0A"))
            #expect(try await google.list("'root' in parents", token: token).names == ["Ivy"])
            #expect(try await google.list("'\(root)' in parents", token: token).names == ["Ivy"])
            let byID = try await google.json(
                "POST", "/drive/v3/files?fields=parents", token: token, ["name": "x", "parents": [root]])
            #expect(byID.json["parents"] as? [String] == [root])
            let aliased = try await google.json(
                "POST", "/drive/v3/files?fields=parents", token: token, ["name": "y", "parents": ["root"]])
            #expect(aliased.json["parents"] as? [String] == [root])
        }
    }

    @Test("Range bytes=-N answers 206 with the last N bytes; a start past the end answers 416 (RFC 7233)")
    func suffixAndUnsatisfiableRanges() async throws {
        try await withEmulatorClient { google in
            let token = try await google.signIn().access
            let parent = try await google.createFolder("p", token: token)
            let content = Data("0123456789".utf8)
            let id = try #require(
                try await google.upload(name: "f", parent: parent, content: content, token: token).json["id"]
                    as? String)
            func get(_ range: String) async throws -> Reply {
                try await google.request(
                    "GET", "/drive/v3/files/\(id)?alt=media", token: token, headers: ["Range": range])
            }
            let suffix = try await get("bytes=-3")
            #expect(suffix.status == 206 && suffix.body == Data("789".utf8))
            #expect(suffix.header("Content-Range") == "bytes 7-9/10")
            let longer = try await get("bytes=-50")
            #expect(longer.status == 206 && longer.body == content)
            let past = try await get("bytes=10-")
            #expect(past.status == 416 && past.header("Content-Range") == "bytes */10")
            #expect(try await get("bytes=-0").status == 416)
            #expect(try await get("bytes=4-2").status == 200, "an invalid range is ignored")
            #expect(try await get("bytes=2-4").body == Data("234".utf8))
        }
    }

    @Test("a multipart body with LF line endings, as Google's Python client sends it, is accepted")
    func multipartWithLF() async throws {
        try await withEmulatorClient { google in
            let token = try await google.signIn().access
            let boundary = "===============7330845974216740156=="
            var body = Data("--\(boundary)\nContent-Type: application/json\nMIME-Version: 1.0\n\n".utf8)
            body.append(Data(#"{"name": "lf.txt"}"#.utf8))
            body.append(Data("\n--\(boundary)\nContent-Type: text/plain\nMIME-Version: 1.0\n".utf8))
            body.append(Data("Content-Transfer-Encoding: binary\n\nline one\r\nline two\n\n--\(boundary)--".utf8))
            let reply = try await google.request(
                "POST", "/upload/drive/v3/files?uploadType=multipart&fields=id,name,mimeType,size", token: token,
                headers: ["Content-Type": "multipart/related; boundary=\"\(boundary)\""], body: body)
            #expect(reply.status == 200 && reply.json["name"] as? String == "lf.txt")
            #expect(reply.json["mimeType"] as? String == "text/plain")
            let id = try #require(reply.json["id"] as? String)
            let media = try await google.request("GET", "/drive/v3/files/\(id)?alt=media", token: token)
            #expect(media.body == Data("line one\r\nline two\n".utf8))
        }
    }

    @Test("uploadType=media creates an Untitled file of the body's type")
    func mediaCreate() async throws {
        try await withEmulatorClient { google in
            let token = try await google.signIn().access
            let reply = try await google.request(
                "POST", "/upload/drive/v3/files?uploadType=media&fields=id,name,mimeType,size", token: token,
                headers: ["Content-Type": "text/plain"], body: Data("hello".utf8))
            #expect(reply.status == 200)
            #expect(reply.json["name"] as? String == "Untitled" && reply.json["mimeType"] as? String == "text/plain")
            #expect(reply.json["size"] as? String == "5")
        }
    }

    @Test("PATCH /upload/drive/v3/files/{id} replaces the content in place: media, multipart and resumable")
    func contentUpdates() async throws {
        try await withEmulatorClient { google in
            let token = try await google.signIn().access
            let parent = try await google.createFolder("p", token: token)
            let id = try #require(
                try await google.upload(name: "f.txt", parent: parent, content: Data("one".utf8), token: token)
                    .json["id"] as? String)
            func content() async throws -> Data {
                try await google.request("GET", "/drive/v3/files/\(id)?alt=media", token: token).body
            }
            let media = try await google.request(
                "PATCH", "/upload/drive/v3/files/\(id)?uploadType=media&fields=id,size", token: token,
                headers: ["Content-Type": "text/plain"], body: Data("two!".utf8))
            #expect(media.status == 200 && media.json["id"] as? String == id && media.json["size"] as? String == "4")
            #expect(try await content() == Data("two!".utf8))

            let boundary = "b0undary"
            let text =
                "--\(boundary)\r\nContent-Type: application/json\r\n\r\n{\"name\":\"g.txt\"}\r\n"
                + "--\(boundary)\r\n\r\nthree\r\n--\(boundary)--"
            let body = Data(text.utf8)
            let multipart = try await google.request(
                "PATCH", "/upload/drive/v3/files/\(id)?uploadType=multipart&fields=id,name,parents", token: token,
                headers: ["Content-Type": "multipart/related; boundary=\(boundary)"], body: body)
            #expect(multipart.status == 200 && multipart.json["name"] as? String == "g.txt")
            #expect(multipart.json["parents"] as? [String] == [parent], "parents kept")
            #expect(try await content() == Data("three".utf8))

            let start = try await google.request(
                "PATCH", "/upload/drive/v3/files/\(id)?uploadType=resumable", token: token,
                headers: ["X-Upload-Content-Length": "4"])
            #expect(start.status == 200)
            let session = try #require(start.header("Location"))
            let done = try await google.request(
                "PUT", session + "&fields=id,md5Checksum", token: token, body: Data("four".utf8))
            #expect(done.status == 200 && done.json["id"] as? String == id)
            #expect(try await content() == Data("four".utf8))
            #expect(try await google.list("'\(parent)' in parents", token: token).files.count == 1, "no new file")
            // Each of the three updates is a change of the file and a new head revision.
            let file = try await google.request(
                "GET", "/drive/v3/files/\(id)?fields=version,headRevisionId,md5Checksum,size", token: token
            ).json
            #expect(file["version"] as? String == "4" && file["size"] as? String == "4", "\(file)")
            #expect((file["headRevisionId"] as? String)?.hasSuffix("r4") == true, "\(file)")
        }
    }

    @Test("the granted scope uses Google's full names; revoking a revoked token answers 400 invalid_token")
    func oauthAnswers() async throws {
        try await withEmulatorClient { google in
            await google.state.setDeviceCode(interval: 0)
            let code = try await google.deviceCode(
                scope: "openid email profile https://www.googleapis.com/auth/drive.file")
            try await google.state.approve(userCode: nil, email: "alice@example.com")
            let tokens = try await google.poll(try #require(code.json["device_code"] as? String))
            #expect(
                tokens.json["scope"] as? String
                    == "openid https://www.googleapis.com/auth/userinfo.email "
                    + "https://www.googleapis.com/auth/userinfo.profile https://www.googleapis.com/auth/drive.file")
            let refresh = try #require(tokens.json["refresh_token"] as? String)
            #expect(try await google.form("/revoke", ["token": refresh]).status == 200)
            let again = try await google.form("/revoke", ["token": refresh])
            #expect(again.status == 400 && again.oauthError == "invalid_token")
        }
    }
}
