import Foundation
import GRDB
import Testing

@Suite("ivy book")
struct BookCommandTests {
    let ivy: IvyHome
    init() throws { ivy = try IvyHome() }

    @Test("add prints a lowercase id; list and show find the book")
    func addListShow() async throws {
        let id = try await ivy.id(
            "book", "add", "--title", "Dune", "--artist", "Frank Herbert", "--position", "1:02:03.5")
        #expect(id.range(of: "^[a-f0-9-]{36}$", options: .regularExpression) != nil)
        let list = try await ivy.run("book", "list")
        #expect(list.status == 0)
        #expect(list.lines.count == 2)
        #expect(list.lines[0].hasPrefix("ID"))
        #expect(
            list.lines[1].contains("Dune") && list.lines[1].contains("Frank Herbert")
                && list.lines[1].contains("1:02:03.5"))
        let show = try await ivy.run("book", "show", id)
        #expect(show.stdout.contains("title     Dune"))
        #expect(show.stdout.contains("position  1:02:03.5"))
    }

    @Test("JSON shows every key, seconds for the position and null for absent values")
    func json() async throws {
        let id = try await ivy.id("book", "add", "--title", "Dune", "--position", "2700.5")
        let object = try #require(try await ivy.run("book", "show", id, "--json").json() as? [String: Any])
        #expect(
            Set(object.keys) == [
                "id", "title", "artist", "artwork", "position", "hidden", "uri", "created_at", "updated_at",
                "created_at_ms", "updated_at_ms",
            ])
        #expect(object["position"] as? Double == 2700.5)
        #expect(object["hidden"] as? Bool == false)
        #expect(object["artist"] is NSNull)
        #expect((object["created_at_ms"] as? Int ?? 0) > 1_600_000_000_000)
        #expect((object["created_at"] as? String)?.wholeMatch(of: /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ/) != nil)
        let array = try #require(try await ivy.run("book", "list", "--json").json() as? [[String: Any]])
        #expect(array.count == 1 && array[0]["id"] as? String == id)
        let empty = try IvyHome()
        #expect((try await empty.run("book", "list", "--json").json() as? [Any])?.isEmpty == true)
    }

    @Test("update changes only what it is given; an empty artist clears it")
    func update() async throws {
        let id = try await ivy.id("book", "add", "--title", "Dune", "--artist", "F. H.")
        #expect(
            try await ivy.run("book", "update", id, "--position", "45:00", "--artist", "").stdout == "updated \(id)\n")
        let object = try #require(try await ivy.run("book", "show", id, "--json").json() as? [String: Any])
        #expect(object["position"] as? Double == 2700)
        #expect(object["artist"] is NSNull)
        #expect(object["title"] as? String == "Dune")
        #expect(try await ivy.run("book", "update", id, "--position", "2700").stdout == "unchanged \(id)\n")
    }

    @Test("archive and delete hide a book; only --all lists it; delete clears the uri")
    func archiveAndDelete() async throws {
        let kept = try await ivy.id("book", "add", "--title", "Kept")
        let archived = try await ivy.id("book", "add", "--title", "Archived")
        let deleted = try await ivy.id("book", "add", "--title", "Deleted")
        try ivy.execute("UPDATE books SET uri = '/m/x.m4b'")
        #expect(try await ivy.run("book", "archive", archived).status == 0)
        let delete = try await ivy.run("book", "delete", deleted)
        #expect(delete.status == 0)
        #expect(
            delete.stdout
                == "deleted \(deleted): archived on every device and its local file forgotten; "
                + "`ivy book unarchive \(deleted)` brings it back\n", "\(delete.stdout)")
        #expect(try await ivy.run("book", "list").stdout.contains("Kept"))
        #expect(!(try await ivy.run("book", "list").stdout.contains("Archived")))
        let all = try await ivy.run("book", "list", "--all").stdout
        #expect(all.contains("Archived") && all.contains("Deleted") && all.contains("ARCHIVED"))
        let rows = try ivy.sql("SELECT id, hidden, uri FROM books ORDER BY title")
        let state = Dictionary(
            uniqueKeysWithValues: rows.map { row in
                (row["id"] as String, "\(row["hidden"] as Int) \((row["uri"] as String?) ?? "nil")")
            })
        #expect(state[archived] == "1 /m/x.m4b")
        #expect(state[deleted] == "1 nil")
        #expect(state[kept] == "0 /m/x.m4b")
        #expect(try ivy.count("SELECT count(*) FROM books") == 3)
        #expect(try await ivy.run("book", "unarchive", archived).status == 0)
        #expect(try await ivy.run("book", "list").stdout.contains("Archived"))
    }

    @Test("every change is queued for the next sync")
    func queued() async throws {
        let id = try await ivy.id("book", "add", "--title", "Dune")
        try await ivy.run("book", "update", id, "--title", "Dune Messiah")
        let rows = try ivy.sql("SELECT entity_type, entity_id, operation FROM sync_queue")
            .map { "\($0["entity_type"] as String) \($0["entity_id"] as String) \($0["operation"] as String)" }
        #expect(rows == ["book \(id) upsert"])
        let status = try #require(try await ivy.run("status", "--json").json() as? [String: Any])
        #expect(status["pending"] as? Int == 1)
    }

    @Test(
        "bad input is refused with a message that names the fix, and nothing is written",
        arguments: [
            (["book", "add", "--title", ""], "title", 64),
            (["book", "add", "--title", "   "], "title", 64),
            (["book", "add", "--title", "X", "--position", "-5"], "--position", 64),
            (["book", "add", "--title", "X", "--position=-5"], "--position", 64),
            (["book", "add", "--title", "X", "--position", "1:75"], "--position", 64),
            (["book", "add", "--title", "X", "--position", "soon"], "H:MM:SS", 64),
            (["book", "add"], "--title", 64),
            (["book", "show", "0000-dead-beef"], "ivy book list --all", 1),
            (["book", "show", "NOT-AN-ID"], "ivy book list", 64),
            (["book", "update", "0000-dead-beef", "--title", "T"], "ivy book list --all", 1),
            (["book", "update", "0000-dead-beef"], "nothing to change", 64),
            (["book", "archive", "0000-dead-beef"], "no book with id", 1),
            (["book", "delete", "0000-dead-beef"], "no book with id", 1),
        ] as [([String], String, Int32)])
    func badInput(arguments: [String], message: String, status: Int32) async throws {
        let result = try await ivy.run(arguments)
        #expect(result.status == status)
        #expect(result.stderr.contains(message), "stderr: \(result.stderr)")
        #expect(result.stdout.isEmpty)
        if FileManager.default.fileExists(atPath: ivy.home + "/library.db") {
            #expect(try ivy.count("SELECT count(*) FROM books") == 0)
            #expect(try ivy.count("SELECT count(*) FROM sync_queue") == 0)
        }
    }
}
