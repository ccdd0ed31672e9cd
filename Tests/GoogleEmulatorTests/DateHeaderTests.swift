import Foundation
import GoogleEmulator
import IvyTestSupport
import Testing

/// Google's `Date` header as the emulator serves it: the clock it dates files by, off real time
/// by the `date_offset` knob, over live HTTP (`ivy doctor` compares this machine's clock with
/// it, and ivy records Google's time from it).
@Suite("The emulator's Date header")
struct DateHeaderTests {
    /// An answer's `Date` header.
    static func date(_ header: String?) throws -> Date {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        let text = try #require(header)
        return try #require(formatter.date(from: text), "\(text)")
    }

    /// Whether the answer `asking` got was dated `offset` seconds off the real time at which it
    /// was answered, somewhere between the request and the answer (whole seconds, cut down).
    static func dated(
        offset: TimeInterval, _ asking: () async throws -> String?, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let before = Date()
        let header = try await asking()
        let after = Date()
        let real = try date(header).addingTimeInterval(-offset)
        #expect(
            real > before.addingTimeInterval(-1) && real <= after, "\(real) not in \(before)...\(after)",
            sourceLocation: sourceLocation)
    }

    @Test("every answer is dated by the emulator's clock, then off it by date_offset; a fault rule's own Date stays")
    func knob() async throws {
        try await withEmulatorClient(clock: .manual()) { google in
            let token = try await google.signIn().access
            // A manual clock (2026-01-01) dates answers as it dates files: Google has one clock.
            let answer = try await google.request("GET", "/drive/v3/about?fields=user", token: token)
            let date = try Self.date(answer.header("Date"))
            #expect(abs(date.timeIntervalSince(EmulatorClock.epoch)) < 3600, "\(date)")
        }
        try await withEmulatorClient { google in
            let about = "/drive/v3/about?fields=user"
            let token = try await google.signIn().access
            try await Self.dated(offset: 0) { try await google.request("GET", about, token: token).header("Date") }

            #expect(try await google.json("POST", "/_emulator/config", ["date_offset": -600]).status == 200)
            try await Self.dated(offset: -600) { try await google.request("GET", about, token: token).header("Date") }
            try await Self.dated(offset: -600) {
                try await google.request("GET", "/drive/v3/files/nothing", token: token).header("Date")
            }
            try await Self.dated(offset: -600) { try await google.request("GET", "/_emulator/seed").header("Date") }
            let fixed = "Tue, 03 Nov 2026 10:00:00 GMT"
            await google.state.addFault(FaultRule(method: "GET", pathContains: "/about", headers: ["date": fixed]))
            #expect(try await google.request("GET", about, token: token).header("Date") == fixed)
        }
    }

    @Test(
        "HTTPDate writes RFC 9110's IMF-fixdate",
        arguments: [
            (0.0, "Thu, 01 Jan 1970 00:00:00 GMT"),
            (1_793_700_000.9, "Tue, 03 Nov 2026 10:00:00 GMT"),
            (951_782_400, "Tue, 29 Feb 2000 00:00:00 GMT"),
        ])
    func format(seconds: TimeInterval, text: String) {
        #expect(HTTPDate.string(Date(timeIntervalSince1970: seconds)) == text)
    }
}
