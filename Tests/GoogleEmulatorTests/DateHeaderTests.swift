import Foundation
import GoogleEmulator
import IvyTestSupport
import Testing

/// Google's `Date` header as the emulator serves it: real time, or off it by the `date_offset`
/// knob, over live HTTP (`ivy doctor` compares this machine's clock with it).
@Suite("The emulator's Date header")
struct DateHeaderTests {
    /// Seconds from now to an answer's `Date` header.
    static func offset(_ header: String?) throws -> TimeInterval {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        let text = try #require(header)
        let date = try #require(formatter.date(from: text), "\(text)")
        return date.timeIntervalSinceNow
    }

    @Test("every answer is dated by real time, then off it by date_offset; a fault rule's own Date stays")
    func knob() async throws {
        try await withEmulatorClient(clock: .manual()) { google in
            let about = "/drive/v3/about?fields=user"
            let token = try await google.signIn().access
            // The emulator's manual clock (2026-01-01) does not date answers.
            #expect(abs(try Self.offset(try await google.request("GET", about, token: token).header("Date"))) < 3)

            #expect(try await google.json("POST", "/_emulator/config", ["date_offset": -600]).status == 200)
            for answer in [
                try await google.request("GET", about, token: token),
                try await google.request("GET", "/drive/v3/files/nothing", token: token),
                try await google.request("GET", "/_emulator/seed"),
            ] {
                let off = try Self.offset(answer.header("Date"))
                #expect(off > -603 && off < -597, "\(off)")
            }
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
