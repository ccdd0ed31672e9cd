import Foundation
import IvyCore
import Testing

@Suite("Typed ids read and write as plain strings")
struct IdentifierTests {
    @Test("JSON holds the bare string, as it did when the ids were String")
    func json() throws {
        let folders = DriveFolders(ivy: ["1AbC-_x"], books: ["b1", "b2"], clips: [])
        let typed = try JSONEncoder().encode(folders.books)
        #expect(typed == (try JSONEncoder().encode(["b1", "b2"])))
        #expect(try JSONDecoder().decode([DriveFileID].self, from: Data(#"["b1","b2"]"#.utf8)) == folders.books)
        let book = try JSONEncoder().encode(BookID("0f0e-12"))
        #expect(String(decoding: book, as: UTF8.self) == #""0f0e-12""#)
        #expect(try JSONDecoder().decode(ClipID.self, from: Data(#""c1""#.utf8)) == ClipID("c1"))
    }

    @Test("printed and interpolated as the bare string; ordered as the strings are")
    func text() {
        let id = DriveFileID("1AbC")
        #expect("\(id)" == "1AbC" && id.description == "1AbC" && String(describing: id) == "1AbC")
        #expect([DriveFileID("b"), "a", "c"].sorted() == ["a", "b", "c"])
    }

    @Test("an entity key made from a typed id is the one the tables' kind and id make, and gives it back typed")
    func entityKey() {
        let book = EntityKey(BookID("0a"))
        let clip = EntityKey(ClipID("0a"))
        #expect(book == EntityKey(.book, "0a") && clip == EntityKey(.clip, "0a") && book != clip)
        #expect(book.kind == .book && book.id == "0a" && book.bookID == "0a" && book.clipID == nil)
        #expect(clip.kind == .clip && clip.clipID == "0a" && clip.bookID == nil)
        #expect("\(clip)" == "clip 0a" && clip.jsonFileName == "clip_0a.json")
        #expect([clip, EntityKey(.book, "0b"), book].sorted() == [book, EntityKey(.book, "0b"), clip])
    }
}
