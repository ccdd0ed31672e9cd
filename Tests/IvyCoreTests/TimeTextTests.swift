import IvyCore
import Testing

@Suite("Times as people type them")
struct TimeTextTests {
    @Test(
        "accepted forms read as seconds",
        arguments: [
            ("2700", 2700.0), ("2700.5", 2700.5), ("0", 0), (".5", 0.5), ("45:00", 2700), ("1:02:03", 3723),
            ("1:02:03.5", 3723.5), ("0:00:00", 0), ("100:00", 6000), (" 90 ", 90), ("10:00:00", 36000),
        ])
    func accepted(text: String, expected: Double) throws {
        #expect(try TimeText.seconds(from: text) == expected)
    }

    @Test(
        "negative, malformed and non-finite times are errors",
        arguments: [
            "", "-1", "-0:30", "abc", "1e3", "inf", "nan", "1:2:3:4", "1:60", "1:60:00", "1::00", ":30", "12:",
            "1.5:00",
            "2700.5.1", "+5", "0x10", "1:30:60",
        ])
    func rejected(text: String) {
        #expect(throws: TimeText.ParseError.self) { try TimeText.seconds(from: text) }
    }

    @Test(
        "tables show H:MM:SS, with a fraction only when there is one",
        arguments: [
            (0.0, "0:00:00"), (2700, "0:45:00"), (3723.5, "1:02:03.5"), (36000, "10:00:00"), (59.999, "0:00:59.999"),
            (0.25, "0:00:00.25"),
        ])
    func clock(seconds: Double, expected: String) {
        #expect(TimeText.clock(seconds) == expected)
    }

    @Test("what the clock shows reads back as the same time")
    func roundTrip() throws {
        for seconds in [0.0, 1, 59.5, 61, 3599, 3600, 86_399.125, 360_000] {
            #expect(try TimeText.seconds(from: TimeText.clock(seconds)) == seconds)
        }
    }
}

@Suite("Entity ids")
struct EntityIDTests {
    @Test(
        "only lowercase hex and hyphens are ids other devices accept",
        arguments: [
            ("3f2a9c1e-0b4d-4e8f-9a7b-1c2d3e4f5a6b", true), ("abc", true), ("0-1", true),
            ("", false), ("3F2A9C1E", false), ("g123", false), ("a b", false), ("a_b", false), ("../x", false),
            ("é", false),
        ])
    func validity(id: String, valid: Bool) {
        #expect(EntityID.isValid(id) == valid)
    }

    @Test("new ids are lowercase version-4 UUIDs and do not repeat")
    func generated() {
        let ids = (0..<500).map { _ in (IDGenerator.uuid.next() as BookID).rawValue }
        #expect(Set(ids).count == ids.count)
        for id in ids {
            #expect(EntityID.isValid(id))
            #expect(id.count == 36)
            #expect(Array(id)[14] == "4")
        }
    }

    @Test("seeded ids (IVY_TEST_IDS) are the same for a seed, in turn, and version-4 UUIDs; another seed's differ")
    func seeded() {
        let ids = { (seed: String) in
            let generator = IDGenerator.seeded(seed)
            return (0..<200).map { _ in (generator.next() as ClipID).rawValue }
        }
        let first = ids("crash-check-1-7")
        #expect(first == ids("crash-check-1-7"))
        #expect(Set(first).count == first.count)
        #expect(Set(first).isDisjoint(with: ids("crash-check-1-8")))
        for id in first {
            #expect(EntityID.isValid(id) && id.count == 36 && Array(id)[14] == "4", "\(id)")
        }
    }

    @Test("a write after a clock step back still moves updated_at forward")
    func timestamps() {
        #expect(Timestamp.next(now: 1000, previous: nil) == 1000)
        #expect(Timestamp.next(now: 1000, previous: 400) == 1000)
        #expect(Timestamp.next(now: 1000, previous: 5000) == 5001)
        #expect(Timestamp.next(now: 1000, previous: 1000) == 1001)
    }
}

@Suite("MP3 recognition")
struct AudioRulesTests {
    @Test(
        "ID3 tags and MPEG frame headers are MP3; other files are not",
        arguments: [
            ([0x49, 0x44, 0x33, 0x04], true),  // "ID3"
            ([0xFF, 0xFB, 0x90, 0x64], true),  // MPEG-1 Layer III
            ([0xFF, 0xF3, 0x90, 0x64], true),  // MPEG-2 Layer III
            ([0xFF, 0xE3, 0x90, 0x64], true),  // MPEG-2.5 Layer III
            ([0xFF, 0xEB, 0x90, 0x64], false),  // reserved version
            ([0xFF, 0xF9, 0x90, 0x64], false),  // reserved layer (AAC ADTS looks like this)
            ([0x4F, 0x67, 0x67, 0x53], false),  // "OggS"
            ([0x52, 0x49, 0x46, 0x46], false),  // "RIFF" (WAV)
            ([0x66, 0x4C, 0x61, 0x43], false),  // "fLaC"
            ([], false), ([0xFF], false),
        ] as [([UInt8], Bool)])
    func sniff(bytes: [UInt8], isMP3: Bool) {
        #expect(AudioRules.looksLikeMP3(bytes) == isMP3)
    }

    @Test("byte counts read with separators")
    func grouping() {
        #expect(AudioRules.grouped(52_428_800) == "52,428,800")
        #expect(AudioRules.grouped(999) == "999")
        #expect(AudioRules.grouped(1000) == "1,000")
    }
}

@Suite("RFC 3339 times from Drive")
struct RFC3339Tests {
    @Test(
        "Drive's times read as epoch milliseconds",
        arguments: [
            ("1970-01-01T00:00:00.000Z", Milliseconds(0)), ("2026-11-22T06:46:09.123Z", 1_795_329_969_123),
            ("2026-11-22T06:46:09Z", 1_795_329_969_000), ("2026-11-22T07:46:09.5+01:00", 1_795_329_969_500),
            ("2000-02-29T23:59:59.999Z", 951_868_799_999), ("2026-11-22T06:46:09.123456Z", 1_795_329_969_123),
        ])
    func parse(text: String, expected: Milliseconds) {
        #expect(RFC3339Time.milliseconds(text) == expected)
    }

    @Test(
        "malformed times are nil",
        arguments: [
            "", "2026-11-22", "2026-13-01T00:00:00Z", "2026-11-22T06:46:09", "2026-11-22T06:46:09.Z",
            "x026-11-22T06:46:09Z",
        ])
    func malformed(text: String) {
        #expect(RFC3339Time.milliseconds(text) == nil)
    }
}
