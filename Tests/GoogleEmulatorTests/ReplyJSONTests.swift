import Foundation
import GoogleEmulator
import Testing

@Suite("The emulator's reply JSON")
struct ReplyJSONTests {
    @Test("is what JSONSerialization writes with sorted keys, byte for byte, for chosen and for random objects")
    func sameBytesAsJSONSerialization() throws {
        let chosen: [[String: Any]] = [
            [:],
            ["kind": "drive#fileList", "files": [], "incompleteSearch": false, "nextPageToken": "MTA6MTIz/+="],
            [
                "b": 1, "B": 2, "a10": 3, "a9": 4, "a_": 5, "a-": 6, "a": 7, "A": 8, "é": 9, "e": 10,
                "z": NSNull(),
            ],
            ["md5Checksum": "d41d8", "mimeType": "a/b", "modifiedTime": "x", "id": "1", "parents": ["p", "q"]],
            ["text": "quote \" backslash \\ slash / tab \t nl \n cr \r ff \u{0C} bs \u{08}"],
            ["text": "nul \u{00} us \u{1F} del \u{7F} 📖 é"],
            ["nested": ["deeper": [["x": -5, "y": Int.max, "z": Int.min, "t": true]]]],
            // Left to JSONSerialization: an NSNumber, a Double, a UInt64.
            ["seed": NSNumber(value: UInt64.max), "half": 0.5, "big": UInt64.max, "flag": NSNumber(value: true)],
        ]
        for object in chosen { try expectSame(object) }
        var random = SplitMix(seed: 20)
        for _ in 0..<500 { try expectSame(randomObject(&random, depth: 0)) }
    }

    @Test("writes a files.list reply and a file's metadata itself, booleans and numbers too, not by the fallback")
    func fastPathTakesDriveReplies() throws {
        let file: [String: Any] = [
            "kind": "drive#file", "id": "1AbC", "name": "Book 📖.m4b", "mimeType": "audio/mp4", "size": "1048576",
            "md5Checksum": "d41d8cd98f00b204e9800998ecf8427e", "parents": ["0Fold"], "trashed": false,
            "explicitlyTrashed": false, "version": "3", "modifiedTime": "2026-11-24T07:00:00.000Z",
            "capabilities": ["canEdit": true, "canTrash": true], "quotaBytesUsed": 0,
        ]
        let listing: [String: Any] = [
            "kind": "drive#fileList", "incompleteSearch": false, "nextPageToken": "MTA6MTIz",
            "files": [file, file],
        ]
        for object in [file, listing] {
            let written = try #require(ReplyJSON.fastData(object), "fell back to JSONSerialization")
            #expect(written == (try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])))
        }
    }

    private func expectSame(_ object: [String: Any]) throws {
        let expected = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
        let written = ReplyJSON.data(object)
        #expect(
            written == expected,
            "\(String(decoding: written, as: UTF8.self)) != \(String(decoding: expected, as: UTF8.self))")
    }

    private func randomObject(_ random: inout SplitMix, depth: Int) -> [String: Any] {
        var object: [String: Any] = [:]
        for _ in 0..<Int(random.next() % 6) {
            object[randomText(&random)] = randomValue(&random, depth: depth)
        }
        return object
    }

    private func randomValue(_ random: inout SplitMix, depth: Int) -> Any {
        switch random.next() % (depth < 3 ? 6 : 4) {
        case 0: return randomText(&random)
        case 1: return Int(bitPattern: UInt(random.next())) >> Int(random.next() % 64)
        case 2: return random.next() % 2 == 0
        case 3: return NSNull()
        case 4: return (0..<Int(random.next() % 4)).map { _ in randomValue(&random, depth: depth + 1) }
        default: return randomObject(&random, depth: depth + 1)
        }
    }

    /// Short texts from an alphabet with what orders or escapes differently: case, digits,
    /// punctuation, control characters, non-ASCII.
    private func randomText(_ random: inout SplitMix) -> String {
        let alphabet = Array("aAbBzZmM019_-./\\\"\t\n\u{01}\u{7F} éÉ📖ß")
        return String((0..<Int(random.next() % 6)).map { _ in alphabet[Int(random.next() % UInt64(alphabet.count))] })
    }
}

/// A small seeded generator: the same objects every run.
private struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
