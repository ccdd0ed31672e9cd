import IvyCore
import Testing

/// The stamp `scripts/package` appends to a release's binary (issue 31), read back.
@Suite("BuildStamp: what a release's binary says of itself")
struct BuildStampTests {
    /// As scripts/package writes it: the lines, then the marker, their length in 13 digits, a newline.
    static func tail(_ lines: String) -> (payload: [UInt8], trailer: [UInt8]) {
        let payload = Array(lines.utf8)
        let digits = String(payload.count)
        let trailer = BuildStamp.marker + String(repeating: "0", count: 13 - digits.count) + digits + "\n"
        return (payload, Array(trailer.utf8))
    }

    @Test("a stamp's trailer gives its length, and its lines the commit and client")
    func roundTrip() throws {
        let (payload, trailer) = Self.tail(
            "commit=abc1234\ndirty=yes\nclient_id=ivy-emulator.apps.googleusercontent.com\n"
                + "client_secret=emulator-secret\nfuture_key=ignored\n")
        #expect(trailer.count == BuildStamp.trailerLength)
        #expect(BuildStamp.payloadLength(trailer: trailer) == payload.count)
        let stamp = BuildStamp(payload: payload)
        #expect(
            stamp
                == BuildStamp(
                    commit: "abc1234", dirty: true, clientID: "ivy-emulator.apps.googleusercontent.com",
                    clientSecret: "emulator-secret"))
    }

    @Test(
        "the end of a binary without a stamp is no trailer",
        arguments: [
            Array(repeating: UInt8(0), count: BuildStamp.trailerLength),
            Array(("\n#ivy-build-stamp 00000000000x5\n").utf8),
            Array(("\n#ivy-build-stamp 9999999999999\n").utf8),
            Array(("\n#ivy-build-stamp 0000000000005").utf8),
        ])
    func notATrailer(_ bytes: [UInt8]) {
        #expect(BuildStamp.payloadLength(trailer: bytes) == nil)
    }

    @Test("half a client is no client")
    func halfAClient() {
        let stamp = BuildStamp(payload: Array("commit=abc1234\nclient_id=x.apps\n".utf8))
        #expect(stamp.clientID == nil && stamp.clientSecret == nil && stamp.commit == "abc1234")
    }
}
