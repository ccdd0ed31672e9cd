import Foundation
import GoogleEmulator
import Testing

/// Tests of the emulator's request parsers: `q`, `fields`, multipart bodies and `Content-Range`.
enum ParsingTests {}

// MARK: - DriveQuery

extension ParsingTests {
    @Suite("Drive query parsing")
    struct DriveQueryParsing {
        typealias Q = DriveQuery

        @Test(
            "each supported term parses",
            arguments: [
                ("name = 'a'", Q.name(.equals, "a")),
                ("name != 'a'", .name(.notEquals, "a")),
                ("name contains 'a'", .name(.contains, "a")),
                ("mimeType = 'audio/mpeg'", .mimeType(.equals, "audio/mpeg")),
                ("mimeType != 'audio/mpeg'", .mimeType(.notEquals, "audio/mpeg")),
                ("mimeType contains 'audio'", .mimeType(.contains, "audio")),
                ("'1AbC-_9' in parents", .inParents("1AbC-_9")),
                ("trashed = true", .trashed(true)),
                ("trashed = false", .trashed(false)),
                ("trashed != true", .trashed(false)),
                ("trashed != false", .trashed(true)),
            ])
        func term(text: String, expected: DriveQuery) throws {
            #expect(try DriveQuery.parse(text) == expected)
        }

        @Test(
            "keywords are case-insensitive and spacing is free",
            arguments: [
                ("name='a'AND trashed=FALSE", Q.and(.name(.equals, "a"), .trashed(false))),
                ("NOT name CONTAINS 'a' Or 'p' IN parents", .or(.not(.name(.contains, "a")), .inParents("p"))),
                ("  ( name = 'a' )  ", .name(.equals, "a")),
            ])
        func caseAndSpacing(text: String, expected: DriveQuery) throws {
            #expect(try DriveQuery.parse(text) == expected)
        }

        @Test("and binds tighter than or; both group to the left")
        func precedence() throws {
            let a = Q.name(.equals, "a")
            let b = Q.name(.equals, "b")
            let c = Q.name(.equals, "c")
            #expect(try Q.parse("name = 'a' or name = 'b' and name = 'c'") == .or(a, .and(b, c)))
            #expect(try Q.parse("name = 'a' and name = 'b' or name = 'c'") == .or(.and(a, b), c))
            #expect(try Q.parse("name = 'a' and name = 'b' and name = 'c'") == .and(.and(a, b), c))
            #expect(try Q.parse("name = 'a' or name = 'b' or name = 'c'") == .or(.or(a, b), c))
        }

        @Test("parentheses override precedence")
        func parentheses() throws {
            let a = Q.name(.equals, "a")
            let b = Q.name(.equals, "b")
            let c = Q.name(.equals, "c")
            #expect(try Q.parse("(name = 'a' or name = 'b') and name = 'c'") == .and(.or(a, b), c))
            #expect(try Q.parse("((name = 'a'))") == a)
        }

        @Test("not is a prefix that binds tighter than and")
        func not() throws {
            let a = Q.name(.equals, "a")
            let b = Q.name(.equals, "b")
            #expect(try Q.parse("not name = 'a' and name = 'b'") == .and(.not(a), b))
            #expect(try Q.parse("not (name = 'a' and name = 'b')") == .not(.and(a, b)))
            #expect(try Q.parse("not not name = 'a'") == .not(.not(a)))
        }

        @Test(
            "strings unescape \\' and \\\\",
            arguments: [
                (#"name = 'it\'s'"#, "it's"),
                (#"name = 'back\\slash'"#, #"back\slash"#),
                (#"name = '\\\''"#, #"\'"#),
                ("name = ''", ""),
                ("name = 'and or not ( ) = !='", "and or not ( ) = !="),
                ("name = 'Ünïcödé 🎧'", "Ünïcödé 🎧"),
            ])
        func escapes(text: String, value: String) throws {
            #expect(try DriveQuery.parse(text) == .name(.equals, value))
        }

        @Test("the query ivy sends to find its folder")
        func ivyFolderQuery() throws {
            let query = try Q.parse(
                "'A' in parents and name = 'Ivy' "
                    + "and mimeType = 'application/vnd.google-apps.folder' and trashed = false"
            )
            #expect(
                query
                    == .and(
                        .and(
                            .and(.inParents("A"), .name(.equals, "Ivy")),
                            .mimeType(.equals, "application/vnd.google-apps.folder")), .trashed(false)))
            let folder = Q.Subject(
                name: "Ivy", mimeType: "application/vnd.google-apps.folder", parents: ["A"], trashed: false)
            #expect(query.matches(folder))
            var other = folder
            other.name = "ivy"
            #expect(!query.matches(other))
            other = folder
            other.trashed = true
            #expect(!query.matches(other))
            other = folder
            other.parents = ["B"]
            #expect(!query.matches(other))
            other = folder
            other.mimeType = "audio/mpeg"
            #expect(!query.matches(other))
        }

        @Test("the query ivy sends to list two folders")
        func ivyListingQuery() throws {
            let query = try Q.parse("('A' in parents or 'B' in parents) and trashed = false")
            #expect(query == .and(.or(.inParents("A"), .inParents("B")), .trashed(false)))
            func subject(_ parents: [String], trashed: Bool = false) -> Q.Subject {
                Q.Subject(name: "x.json", mimeType: "application/json", parents: parents, trashed: trashed)
            }
            #expect(query.matches(subject(["A"])))
            #expect(query.matches(subject(["B"])))
            #expect(query.matches(subject(["C", "B"])))
            #expect(!query.matches(subject(["C"])))
            #expect(!query.matches(subject([])))
            #expect(!query.matches(subject(["A"], trashed: true)))
        }

        @Test(
            "which queries test a name, and which OR parents together",
            arguments: [
                ("'A' in parents and trashed = false", false, [String]()),
                ("'A' in parents and name = 'x'", true, []),
                ("not name contains 'x'", true, []),
                ("('A' in parents or 'B' in parents) and trashed = false", false, ["A", "B"]),
                ("'A' in parents or 'B' in parents or 'C' in parents", false, ["A", "B", "C"]),
                ("'A' in parents or name = 'x'", true, []),
                (
                    "(name = 'Ivy' and 'root' in parents) or ('A' in parents or 'B' in parents)", true,
                    ["root", "A", "B"]
                ),
            ])
        func nameAndOrParents(text: String, name: Bool, parents: [String]) throws {
            let query = try Q.parse(text)
            #expect(query.mentionsName == name)
            #expect(query.orParents == parents)
        }

        @Test(
            "matching each term",
            arguments: [
                ("name = 'Clip.mp3'", true),
                ("name = 'clip.mp3'", false),
                ("name != 'clip.mp3'", true),
                ("name != 'Clip.mp3'", false),
                ("name contains 'CLIP'", true),
                // Drive matches a name term's contains by prefix only (search guide: HelloWorld
                // is found by 'Hello', not by 'World').
                ("name contains 'p.m'", false),
                ("name contains 'cli'", true),
                ("name contains ''", true),
                ("name contains 'book'", false),
                ("mimeType = 'audio/mpeg'", true),
                ("mimeType != 'audio/mpeg'", false),
                ("mimeType contains 'AUDIO'", true),
                ("'p1' in parents", true),
                ("'p2' in parents", true),
                ("'p' in parents", false),
                ("trashed = false", true),
                ("trashed != false", false),
                ("not trashed = true", true),
                ("name = 'x' or trashed = false", true),
                ("name = 'x' and trashed = false", false),
            ])
        func matching(text: String, expected: Bool) throws {
            let subject = Q.Subject(name: "Clip.mp3", mimeType: "audio/mpeg", parents: ["p1", "p2"], trashed: false)
            #expect(try Q.parse(text).matches(subject) == expected)
        }

        @Test(
            "malformed queries are rejected with what and where",
            arguments: [
                ("", "empty"),
                ("   ", "empty"),
                ("name = 'abc", "unterminated string starting at position 7"),
                (#"name = 'abc\'"#, "unterminated string starting at position 7"),
                (#"name = 'a\nb'"#, "unsupported escape"),
                ("size = '3'", "unknown field 'size' at position 0"),
                ("name 'a'", "expected '=', '!=' or 'contains' after 'name', found 'a' at position 5"),
                ("trashed contains true", "expected '=' or '!=' after 'trashed'"),
                ("trashed = 'false'", "expected true or false"),
                ("name = a", "expected a quoted string"),
                ("name = 'a' foo", "unexpected 'foo' at position 11"),
                ("name = 'a' )", "unexpected ')' at position 11"),
                ("name = 'a' and", "found the end of the query at position 14"),
                ("(name = 'a'", "expected ')' to close '(' at position 0"),
                ("'a' in children", "expected 'parents'"),
                ("'a' = name", "expected 'in'"),
                ("not", "expected a search term"),
                ("name < 'a'", "expected '=', '!=' or 'contains' after 'name', found '<' at position 5"),
                ("Name = 'a'", "unknown field 'Name'"),
            ])
        func errors(text: String, fragment: String) {
            #expect {
                try DriveQuery.parse(text)
            } throws: { error in
                guard let error = error as? DriveQueryError else { return false }
                return error.message.hasPrefix("Invalid Value: ") && error.message.contains(fragment)
            }
        }
    }
}

// MARK: - FieldMask

extension ParsingTests {
    @Suite("Field mask")
    struct FieldMaskTests {
        let file: [String: any Sendable] = [
            "id": "f1", "name": "clip_1.mp3", "size": "3", "md5Checksum": "abc",
            "parents": ["p1", "p2"], "kind": "drive#file",
        ]

        func listing() -> [String: any Sendable] {
            [
                "kind": "drive#fileList",
                "nextPageToken": "t2",
                "files": [
                    file,
                    ["id": "f2", "name": "book_2.json", "mimeType": "application/json"] as [String: any Sendable],
                ],
            ]
        }

        /// The keys of an object and of its nested objects, as sorted paths, for comparing results.
        func paths(_ value: Any, prefix: String = "") -> [String] {
            if let object = value as? [String: Any] {
                return object.flatMap { key, child in
                    let path = prefix.isEmpty ? key : "\(prefix).\(key)"
                    let inner = paths(child, prefix: path)
                    return inner.isEmpty ? [path] : inner
                }.sorted()
            }
            if let array = value as? [Any], array.contains(where: { $0 is [String: Any] }) {
                return array.enumerated().flatMap { paths($1, prefix: "\(prefix)[\($0)]") }.sorted()
            }
            return []
        }

        @Test(
            "parsing builds nested selections",
            arguments: [
                ("id", FieldMask(keys: ["id": .all])),
                ("user/emailAddress", FieldMask(keys: ["user": FieldMask(keys: ["emailAddress": .all])])),
                ("a/b/c", FieldMask(keys: ["a": FieldMask(keys: ["b": FieldMask(keys: ["c": .all])])])),
                ("a/b(c,d)", FieldMask(keys: ["a": FieldMask(keys: ["b": FieldMask(keys: ["c": .all, "d": .all])])])),
                (
                    " files ( id , name ) , kind ",
                    FieldMask(keys: ["files": FieldMask(keys: ["id": .all, "name": .all]), "kind": .all])
                ),
                ("files(id),files(name)", FieldMask(keys: ["files": FieldMask(keys: ["id": .all, "name": .all])])),
                ("files(id),files", FieldMask(keys: ["files": .all])),
                ("files(*)", FieldMask(keys: ["files": .all])),
                ("files/*", FieldMask(keys: ["files": .all])),
                ("*", .all),
                ("id,*", .all),
            ])
        func parsing(text: String, expected: FieldMask) throws {
            #expect(try FieldMask.parse(text) == expected)
        }

        @Test("a files.list selection keeps the page token and the chosen keys of every file")
        func nestedArrayOfObjects() throws {
            let mask = try FieldMask.parse(
                "nextPageToken,files(id,name,size,md5Checksum,modifiedTime,createdTime,parents)")
            let result = mask.apply(to: listing())
            #expect(
                paths(result) == [
                    "files[0].id", "files[0].md5Checksum", "files[0].name", "files[0].parents", "files[0].size",
                    "files[1].id", "files[1].name", "nextPageToken",
                ])
            let files = try #require(result["files"] as? [[String: any Sendable]])
            #expect(files[0]["parents"] as? [String] == ["p1", "p2"])
            #expect(result["nextPageToken"] as? String == "t2")
        }

        @Test("a flat selection of one file")
        func flat() throws {
            let result = try FieldMask.parse("id,name,size,md5Checksum,modifiedTime").apply(to: file)
            #expect(paths(result) == ["id", "md5Checksum", "name", "size"])
            #expect(result["size"] as? String == "3")
        }

        @Test("slash shorthand selects inside a nested object and inside arrays")
        func slash() throws {
            let about: [String: any Sendable] = [
                "kind": "drive#about",
                "user": ["emailAddress": "a@example.com", "displayName": "A", "permissionId": "1"] as [String: String],
            ]
            #expect(paths(try FieldMask.parse("user/emailAddress").apply(to: about)) == ["user.emailAddress"])
            #expect(
                paths(try FieldMask.parse("user").apply(to: about)) == [
                    "user.displayName", "user.emailAddress", "user.permissionId",
                ])
            #expect(paths(try FieldMask.parse("files/id").apply(to: listing())) == ["files[0].id", "files[1].id"])
        }

        @Test("star keeps everything, at the top and nested")
        func star() throws {
            #expect(paths(try FieldMask.parse("*").apply(to: listing())) == paths(listing()))
            #expect(
                paths(try FieldMask.parse("files(*)").apply(to: listing()))
                    == paths(listing()).filter { $0.hasPrefix("files") })
        }

        @Test("unknown keys select nothing, and sub-selections leave scalars whole")
        func unknownKeys() throws {
            #expect(try FieldMask.parse("nope").apply(to: file).isEmpty)
            let listed = try FieldMask.parse("id,nope,files(nope)").apply(to: listing())
            #expect(Array(listed.keys) == ["files"])
            #expect((listed["files"] as? [[String: any Sendable]])?.map(\.isEmpty) == [true, true])
            let result = try FieldMask.parse("id(x),parents(y)").apply(to: file)
            #expect(result["id"] as? String == "f1")
            #expect(result["parents"] as? [String] == ["p1", "p2"])
        }

        @Test("the JSONSerialization variant selects the same keys")
        func jsonObject() throws {
            let data = Data(
                #"{"nextPageToken":"t","files":[{"id":"1","name":"a","size":"2"},{"id":"2"}],"kind":"k"}"#.utf8)
            let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
            let result = try FieldMask.parse("nextPageToken,files(id,size)").apply(toJSONObject: object)
            #expect(paths(result) == ["files[0].id", "files[0].size", "files[1].id", "nextPageToken"])
            #expect(JSONSerialization.isValidJSONObject(result))
        }

        @Test(
            "malformed selections are rejected",
            arguments: [
                ("", "empty field name at position 0"),
                ("a,,b", "empty field name at position 2"),
                ("a,", "empty field name at position 2"),
                ("files(id", "missing ')' for '(' at position 5"),
                ("files(id))", "unexpected ')' at position 9"),
                ("id)", "unexpected ')' at position 2"),
                ("files()", "empty field name at position 6"),
                ("a/", "empty field name at position 2"),
                ("a b", "unexpected 'b' at position 2"),
                ("files(id name)", "unexpected 'n' at position 9"),
                ("*/id", "'*' cannot have a sub-selection"),
            ])
        func errors(text: String, fragment: String) {
            #expect {
                try FieldMask.parse(text)
            } throws: { error in
                guard let error = error as? FieldMaskError else { return false }
                return error.message.hasPrefix("Invalid field selection: ") && error.message.contains(fragment)
            }
        }
    }
}

// MARK: - MultipartRelated

extension ParsingTests {
    @Suite("Multipart related bodies")
    struct MultipartTests {
        let metadata = Data(#"{"name":"clip_1.mp3","parents":["p"]}"#.utf8)
        /// Every byte value, plus near-delimiters most likely to confuse a careless splitter. (A real
        /// delimiter, CRLF then `--foo_bar`, cannot occur: senders pick a boundary the media lacks.)
        let media =
            Data((0...255).map { UInt8($0) })
            + Data("\r\n--\r\n\r\nx--foo_bar\r\n--foo_ba\r\n-foo_bar\n--foo_bar--\r\n".utf8) + Data([0, 0xFF])

        func body(
            boundary: String = "foo_bar", parts: [(headers: String, body: Data)], closing: Bool = true,
            trailer: String = "\r\n"
        ) -> Data {
            var data = Data()
            for part in parts {
                data += Data("--\(boundary)\r\n\(part.headers)\r\n".utf8) + part.body + Data("\r\n".utf8)
            }
            if closing { data += Data("--\(boundary)--\(trailer)".utf8) }
            return data
        }

        var standardParts: [(headers: String, body: Data)] {
            [
                ("Content-Type: application/json; charset=UTF-8\r\n", metadata),
                ("Content-Type: audio/mpeg\r\n", media),
            ]
        }

        @Test("binary media with CRLFs, dashes and every byte survives", arguments: ["\r\n", "", "\r\nepilogue"])
        func binary(trailer: String) throws {
            let parsed = try MultipartRelated.parse(
                body: body(parts: standardParts, trailer: trailer), contentType: "multipart/related; boundary=foo_bar")
            #expect(parsed.metadata == metadata)
            #expect(parsed.media == media)
            #expect(parsed.mediaType == "audio/mpeg")
        }

        @Test(
            "the boundary may be quoted, and the type and parameter name are case-insensitive",
            arguments: [
                #"multipart/related; boundary="foo_bar""#,
                "Multipart/Related;boundary=foo_bar",
                "multipart/related; charset=utf-8; BOUNDARY=foo_bar",
            ])
        func contentTypes(contentType: String) throws {
            let parsed = try MultipartRelated.parse(body: body(parts: standardParts), contentType: contentType)
            #expect(parsed.media == media)
        }

        @Test("a quoted boundary may contain characters a token cannot")
        func quotedBoundary() throws {
            let boundary = "==ab cd:ef?=="
            let parsed = try MultipartRelated.parse(
                body: body(boundary: boundary, parts: standardParts),
                contentType: "multipart/related; boundary=\"\(boundary)\"")
            #expect(parsed.metadata == metadata)
            #expect(parsed.media == media)
        }

        @Test("a preamble is skipped, a part without headers has no type, an empty media part is empty")
        func edgeParts() throws {
            let data =
                Data("preamble\r\n".utf8)
                + body(parts: [("Content-Type: application/json\r\n", metadata), ("", Data())])
            let parsed = try MultipartRelated.parse(body: data, contentType: "multipart/related; boundary=foo_bar")
            #expect(parsed.metadata == metadata)
            #expect(parsed.media.isEmpty)
            #expect(parsed.mediaType == nil)
        }

        @Test("a slice of a larger buffer parses like a fresh copy")
        func slicedInput() throws {
            let whole = Data("xx".utf8) + body(parts: standardParts)
            let parsed = try MultipartRelated.parse(
                body: whole.dropFirst(2), contentType: "multipart/related; boundary=foo_bar")
            #expect(parsed.media == media)
        }

        @Test("base64 media is decoded")
        func base64() throws {
            let encoded = Data(media.base64EncodedString(options: .lineLength76Characters).utf8)
            let parts: [(headers: String, body: Data)] = [
                ("Content-Type: application/json\r\n", metadata),
                ("Content-Type: audio/mpeg\r\nContent-Transfer-Encoding: base64\r\n", encoded),
            ]
            let parsed = try MultipartRelated.parse(
                body: body(parts: parts), contentType: "multipart/related; boundary=foo_bar")
            #expect(parsed.media == media)
        }

        @Test(
            "malformed bodies and content types are rejected",
            arguments: [
                ("multipart/related", "standard", "no boundary parameter"),
                ("multipart/related; boundary=", "standard", "no boundary parameter"),
                ("multipart/related; charset=utf-8", "standard", "no boundary parameter"),
                ("multipart/form-data; boundary=foo_bar", "standard", "must be multipart/related"),
                ("application/json", "standard", "must be multipart/related"),
                ("multipart/related; boundary=other", "standard", "does not contain its boundary"),
                ("multipart/related; boundary=foo_bar", "one part", "found 1"),
                ("multipart/related; boundary=foo_bar", "three parts", "found 3"),
                ("multipart/related; boundary=foo_bar", "no closing", "no closing boundary"),
                ("multipart/related; boundary=foo_bar", "no blank line", "Part 1"),
                ("multipart/related; boundary=foo_bar", "unclosed last delimiter", "no closing boundary"),
                ("multipart/related; boundary=foo_bar", "junk after delimiter", "not followed by a line break"),
                ("multipart/related; boundary=foo_bar", "empty", "does not contain its boundary"),
            ])
        func errors(contentType: String, shape: String, fragment: String) {
            let data: Data =
                switch shape {
                case "one part": body(parts: [standardParts[0]])
                case "three parts": body(parts: standardParts + [standardParts[1]])
                case "no closing": body(parts: standardParts, closing: false)
                case "no blank line":
                    Data("--foo_bar\r\nContent-Type: application/json\r\n--foo_bar\r\n\r\nmedia\r\n--foo_bar--".utf8)
                case "unclosed last delimiter": body(parts: standardParts, closing: false) + Data("--foo_bar".utf8)
                case "junk after delimiter": Data("--foo_barx\r\n".utf8) + body(parts: standardParts).dropFirst(11)
                case "empty": Data()
                default: body(parts: standardParts)
                }
            #expect {
                try MultipartRelated.parse(body: data, contentType: contentType)
            } throws: { error in
                (error as? MultipartError)?.message.contains(fragment) ?? false
            }
        }
    }
}

// MARK: - ContentRange

extension ParsingTests {
    @Suite("Content-Range")
    struct ContentRangeTests {
        @Test(
            "well-formed headers",
            arguments: [
                ("bytes */1000", ContentRange.status(total: 1000)),
                ("bytes */*", .status(total: nil)),
                ("bytes */0", .status(total: 0)),
                ("bytes 0-262143/1000000", .range(first: 0, last: 262_143, total: 1_000_000)),
                ("bytes 0-262143/*", .range(first: 0, last: 262_143, total: nil)),
                ("bytes 999-999/1000", .range(first: 999, last: 999, total: 1000)),
                ("Bytes 5-9/10", .range(first: 5, last: 9, total: 10)),
                ("  bytes   0-0/1  ", .range(first: 0, last: 0, total: 1)),
                (
                    "bytes 0-9223372036854775806/9223372036854775807",
                    .range(first: 0, last: Int64.max - 1, total: Int64.max)
                ),
            ])
        func valid(header: String, expected: ContentRange) {
            #expect(ContentRange.parse(header) == expected)
        }

        @Test(
            "malformed headers are nil",
            arguments: [
                "", "bytes", "bytes ", "bytes=0-1/2", "bytes0-1/2", "items 0-1/2",
                "bytes 5-4/10", "bytes 0-10/10", "bytes 0-0/0",
                "bytes -1-5/10", "bytes 0--5/10", "bytes +0-5/10", "bytes 0-+5/10", "bytes 0-5/-10", "bytes */-1",
                "bytes 0-5", "bytes 0-5/", "bytes /10", "bytes 0/10", "bytes 0-/10", "bytes -5/10",
                "bytes 0-5/10/20", "bytes 0 - 5/10", "bytes a-b/c", "bytes */abc", "bytes 0-5/*x", "bytes *-5/10",
                "bytes ０-５/１０", "bytes 0-9223372036854775808/*",
            ])
        func malformed(header: String) {
            #expect(ContentRange.parse(header) == nil)
        }
    }
}
