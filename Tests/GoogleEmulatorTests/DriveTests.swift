import Foundation
import GoogleEmulator
import IvyCore
import IvySystem
import Testing

@Suite("Emulated Drive v3")
struct DriveTests {
    @Test("requests without a valid bearer token get Google's 401 body")
    func bearer() async throws {
        try await withEmulatorClient { google in
            let missing = try await google.request("GET", "/drive/v3/files")
            #expect(missing.status == 401 && missing.driveReason == "authError")
            let error = missing.json["error"] as? [String: Any]
            #expect(error?["code"] as? Int == 401 && error?["status"] as? String == "UNAUTHENTICATED")
            #expect(try await google.request("GET", "/drive/v3/files", token: "made-up").status == 401)
        }
    }

    @Test("about requires fields")
    func aboutFields() async throws {
        try await withEmulatorClient { google in
            let token = try await google.signIn().access
            #expect(try await google.request("GET", "/drive/v3/about", token: token).status == 400)
            let narrow = try await google.request("GET", "/drive/v3/about?fields=user/emailAddress", token: token)
            #expect((narrow.json["user"] as? [String: Any])?.keys.sorted() == ["emailAddress"])
        }
    }

    @Test("folders: create, find by name, MIME type, parent and trash state; many may share a name")
    func folders() async throws {
        try await withEmulatorClient { google in
            let token = try await google.signIn().access
            let ivy = try await google.createFolder("Ivy", token: token)
            let twin = try await google.createFolder("Ivy", token: token)
            let books = try await google.createFolder("books", parent: ivy, token: token)
            let query = "name = 'Ivy' and mimeType = 'application/vnd.google-apps.folder' and trashed = false"
            #expect(
                Set(try await google.list(query, token: token).files.compactMap { $0["id"] as? String }) == [ivy, twin])
            let children = try await google.list("'\(ivy)' in parents and trashed = false", token: token)
            #expect(children.files.compactMap { $0["id"] as? String } == [books])
            try await google.state.trash(id: ivy)
            #expect(try await google.list(query, token: token).files.compactMap { $0["id"] as? String } == [twin])
            let child = try await google.request("GET", "/drive/v3/files/\(books)?fields=id,trashed", token: token)
            #expect(child.json["trashed"] as? Bool == true, "a file in a trashed folder is trashed")
            let all = try await google.list("'\(ivy)' in parents", token: token)
            #expect(all.files.count == 1, "without trashed = false, trashed files are listed")
            #expect(try await google.list("name = 'Ivy' and", token: token).status == 400)
        }
    }

    @Test("listing follows pageSize, the page cap and nextPageToken to the last file")
    func pagination() async throws {
        try await withEmulatorClient { google in
            let token = try await google.signIn().access
            await google.state.setPageSizeCap(10)
            let folder = try await google.createFolder("clips", token: token)
            for index in 0..<35 {
                await google.state.putFile(
                    email: "alice@example.com", name: "clip_\(index).json", parents: [folder],
                    content: Data("\(index)".utf8))
            }
            var names: [String] = []
            var pageToken: String?
            var pages = 0
            repeat {
                let page = try await google.list(
                    "'\(folder)' in parents", token: token, pageSize: 1000, pageToken: pageToken)
                #expect(page.status == 200)
                names += page.names
                pageToken = page.json["nextPageToken"] as? String
                pages += 1
            } while pageToken != nil
            #expect(pages == 4)
            #expect(Set(names).count == 35)
            #expect(try await google.list("'\(folder)' in parents", token: token, pageSize: 0).status == 400)
            #expect(try await google.list("'\(folder)' in parents", token: token, pageToken: "garbage").status == 400)
        }
    }

    @Test(
        "md5Checksum is RFC 1321's MD5, from the emulator's own library, agreeing with ivy's",
        arguments: [
            ("", "d41d8cd98f00b204e9800998ecf8427e"),
            ("The quick brown fox jumps over the lazy dog", "9e107d9d372bb6826bd81d3542a419d6"),
            (String(repeating: "a", count: 1_000_000), "7707d6ae4e027c70eea2a935c2296f21"),
        ])
    func md5Vectors(text: String, expected: String) async throws {
        let state = EmulatorState(accounts: GoogleEmulator.defaultAccounts, clients: GoogleEmulator.defaultClients)
        let file = await state.putFile(email: "alice@example.com", name: "x.mp3", parents: [], content: Data(text.utf8))
        #expect(file.md5 == expected)
        #expect(MD5.hex(Data(text.utf8)) == expected)
    }

    @Test("multipart upload; metadata with size and md5 as strings; media whole or by range")
    func multipartAndDownload() async throws {
        try await withEmulatorClient { google in
            let token = try await google.signIn().access
            let folder = try await google.createFolder("books", token: token)
            let content = Data((0..<1000).map { UInt8($0 % 251) })
            let created = try await google.upload(name: "book_b1.json", parent: folder, content: content, token: token)
            #expect(created.status == 200)
            let id = try #require(created.json["id"] as? String)
            #expect(created.json["size"] as? String == "1000")
            #expect(created.json["md5Checksum"] as? String == MD5.hex(content))
            let modified = try #require(created.json["modifiedTime"] as? String)
            #expect(
                modified.range(of: #"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$"#, options: .regularExpression) != nil)
            #expect(try await google.request("GET", "/drive/v3/files/\(id)?alt=media", token: token).body == content)
            let part = try await google.request(
                "GET", "/drive/v3/files/\(id)?alt=media", token: token, headers: ["Range": "bytes=10-19"])
            #expect(part.status == 206 && part.body == content.subdata(in: 10..<20))
            let plain = try await google.request("GET", "/drive/v3/files/\(id)", token: token)
            #expect(plain.json.keys.sorted() == ["id", "kind", "mimeType", "name"], "Drive's default fields")
        }
    }

    @Test("only the signed-in account's files are visible")
    func visibility() async throws {
        try await withEmulatorClient { google in
            let alice = try await google.signIn(as: "alice@example.com").access
            let bob = try await google.signIn(as: "bob@example.com").access
            let folder = try await google.createFolder("Ivy", token: alice)
            #expect(try await google.list("name = 'Ivy'", token: bob).files.isEmpty)
            let other = try await google.request("GET", "/drive/v3/files/\(folder)", token: bob)
            #expect(other.status == 404 && other.driveReason == "notFound")
            #expect(try await google.request("DELETE", "/drive/v3/files/\(folder)", token: bob).status == 404)
        }
    }

    @Test("pre-generated ids: a create carrying one succeeds once, then answers 409; an unknown id is refused")
    func generatedIDs() async throws {
        try await withEmulatorClient { google in
            let token = try await google.signIn().access
            let folder = try await google.createFolder("clips", token: token)
            let generated = try await google.request(
                "GET", "/drive/v3/files/generateIds?count=3&space=drive&type=files", token: token)
            let ids = try #require(generated.json["ids"] as? [String])
            #expect(ids.count == 3 && Set(ids).count == 3)
            let first = try await google.upload(
                name: "clip_c1.json", parent: folder, content: Data("{}".utf8), id: ids[0], token: token)
            #expect(first.status == 200 && first.json["id"] as? String == ids[0])
            let again = try await google.upload(
                name: "clip_c1.json", parent: folder, content: Data("{}".utf8), id: ids[0], token: token)
            #expect(again.status == 409)
            #expect(try await google.list("name = 'clip_c1.json'", token: token).files.count == 1)
            let invented = try await google.upload(
                name: "x.json", parent: folder, content: Data(), id: "1invented", token: token)
            #expect(invented.status == 400)
        }
    }

    @Test("delete answers 204, then 404; deleting a folder deletes what is in it")
    func delete() async throws {
        try await withEmulatorClient { google in
            let token = try await google.signIn().access
            let folder = try await google.createFolder("Ivy", token: token)
            let inner = try await google.createFolder("books", parent: folder, token: token)
            let file = try #require(
                try await google.upload(name: "book_b.json", parent: inner, content: Data("{}".utf8), token: token)
                    .json["id"] as? String)
            #expect(try await google.request("DELETE", "/drive/v3/files/\(folder)", token: token).status == 204)
            #expect(try await google.request("GET", "/drive/v3/files/\(file)", token: token).status == 404)
            let twice = try await google.request("DELETE", "/drive/v3/files/\(folder)", token: token)
            #expect(twice.status == 404 && twice.driveReason == "notFound")
            #expect(await google.state.dump(email: "alice@example.com").isEmpty)
        }
    }
}
