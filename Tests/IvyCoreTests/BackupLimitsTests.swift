import Foundation
import IvyCore
import Testing

@Suite("Backup JSON limits")
struct BackupLimitsTests {
    @Test("an entity that cannot be written exactly is an error naming it, never a placeholder")
    func nonFiniteIsAnError() {
        for position in [Double.infinity, -Double.infinity, .nan] {
            let book = BookBackup(id: "b1", title: "Dune", position: position, createdAt: 1, updatedAt: 2)
            #expect(throws: BackupEncodingError.self) { try BackupCodec.encode(book) }
        }
        let clip = ClipBackup(
            id: "c1", bookID: "b1", start: 1, duration: 2, createdAt: 1, updatedAt: 2,
            extras: ["meta": .object(["gain": .number(.infinity)])])
        do {
            _ = try BackupCodec.encode(clip)
            Issue.record("encoded a clip with an infinite number")
        } catch {
            #expect(error.description.contains("clip c1"))
            #expect(error.description.contains("meta"))
        }
    }

    @Test("encoding refuses JSON over the cap that decoding would refuse")
    func oneCapBothWays() throws {
        let note = String(repeating: "n", count: BackupCodec.maximumBytes)
        let clip = ClipBackup(id: "c1", bookID: "b1", start: 1, duration: 2, note: note, createdAt: 1, updatedAt: 2)
        #expect(throws: BackupEncodingError.self) { try BackupCodec.encode(clip) }

        var largest = clip
        largest.note = String(repeating: "n", count: BackupCodec.maximumBytes - 200)
        let data = try BackupCodec.encode(largest)
        #expect(try BackupCodec.decodeClip(data, expectedID: "c1") == largest)

        var tooLarge = data
        tooLarge.append(Data(repeating: UInt8(ascii: " "), count: BackupCodec.maximumBytes - data.count + 1))
        #expect(throws: BackupDecodingError.self) { try BackupCodec.decodeClip(tooLarge, expectedID: "c1") }
    }

    @Test("a deeply nested hostile file under the cap is refused at once")
    func nestingLimit() throws {
        let depth = (BackupCodec.maximumBytes - 200) / 2
        let hostile =
            #"{"id":"b1","title":"x","updated_at":1,"x":"# + String(repeating: "[", count: depth)
            + String(repeating: "]", count: depth) + "}"
        #expect(hostile.utf8.count <= BackupCodec.maximumBytes)
        do {
            _ = try BackupCodec.decodeBook(Data(hostile.utf8), expectedID: "b1")
            Issue.record("decoded a file nested \(depth) levels deep")
        } catch {
            #expect(error.reason.contains("nested more than"))
        }

        let nested =
            #"{"id":"b1","title":"x","updated_at":1,"x":{"a":[1,{"b":"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["}]}}"#
        let book = try BackupCodec.decodeBook(Data(nested.utf8), expectedID: "b1")
        #expect(book.extras["x"] != nil)  // brackets inside strings do not count
    }
}
