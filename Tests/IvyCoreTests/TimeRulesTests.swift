import Foundation
import IvyCore
import Testing

@Suite("Times of play stay within 0…10,000,000 seconds")
struct TimeRulesTests {
    @Test(
        "formatting never traps, whatever an old database holds",
        arguments: [
            (1e300, "1e+300 s"), (-1, "-0:00:01"), (Double.nan, "nan s"), (Double.infinity, "inf s"),
            (-Double.infinity, "-inf s"), (Double.greatestFiniteMagnitude, "1.7976931348623157e+308 s"),
            (-1e300, "-1e+300 s"), (10_000_000, "2777:46:40"), (9.2e12, "2555555555:33:20"),
        ])
    func clockNeverTraps(seconds: Double, expected: String) {
        #expect(TimeText.clock(seconds) == expected)
    }

    @Test(
        "the limit itself is accepted; beyond it is too large, whatever the form",
        arguments: [
            ("10000000", TimeText.ParseError.Problem?.none), ("2777:46:40", nil), ("10000000.001", .tooLarge),
            ("2777:46:41", .tooLarge), ("999999999:00:00", .tooLarge), ("-5", .negative), ("-1:00", .negative),
            ("-x", .malformed), ("soon", .malformed),
        ])
    func parsingRange(text: String, problem: TimeText.ParseError.Problem?) {
        do {
            let seconds = try TimeText.seconds(from: text)
            #expect(problem == nil)
            #expect(TimeRules.isValid(seconds))
        } catch {
            #expect(error.problem == problem, "\(text)")
        }
    }

    @Test(
        "the rule: finite, 0 or more, at most the maximum",
        arguments: [
            (0.0, true), (10_000_000, true), (10_000_000.001, false), (-0.001, false), (.nan, false),
            (.infinity, false),
        ])
    func rule(seconds: Double, valid: Bool) {
        #expect(TimeRules.isValid(seconds) == valid)
        #expect(TimeRules.maximumSeconds == 10_000_000)
    }

    static let id = "3f2a9c1e-0b4d-4e8f-9a7b-1c2d3e4f5a6b"

    @Test(
        "a Drive book's position or clip's start or duration out of range is unreadable, so it is skipped, not applied",
        arguments: [
            (EntityKind.book, #""position":10000000.5"#, "position"), (.book, #""position":1e300"#, "position"),
            (.book, #""position":-1"#, "position"), (.book, #""position":1e20"#, "position"),
            (.clip, #""start":10000001,"duration":1"#, "start"), (.clip, #""start":1,"duration":10000001"#, "duration"),
            (.clip, #""start":1e300,"duration":1"#, "start"), (.clip, #""start":1,"duration":-0.5"#, "duration"),
        ])
    func remoteTimes(kind: EntityKind, times: String, key: String) {
        #expect {
            switch kind {
            case .book:
                let json = #"{"id":"\#(Self.id)","title":"T",\#(times),"updated_at":1700000000000}"#
                _ = try BackupCodec.decodeBook(Data(json.utf8), expectedID: BookID(Self.id))
            case .clip:
                let json = #"{"id":"\#(Self.id)","book_id":"\#(Self.id)",\#(times),"updated_at":1700000000000}"#
                _ = try BackupCodec.decodeClip(Data(json.utf8), expectedID: ClipID(Self.id))
            }
        } throws: { error in
            let reason = (error as? BackupDecodingError)?.reason ?? ""
            return reason.contains("\"\(key)\"") && reason.contains("10,000,000")
        }
    }

    @Test("times at the limit come down from Drive")
    func remoteAtTheLimit() throws {
        let json = #"{"id":"\#(Self.id)","book_id":"\#(Self.id)","start":10000000,"duration":0,"updated_at":1}"#
        let clip = try BackupCodec.decodeClip(Data(json.utf8), expectedID: ClipID(Self.id))
        #expect(clip.start == 10_000_000)
    }
}
