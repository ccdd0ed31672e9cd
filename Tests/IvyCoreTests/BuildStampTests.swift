import IvyCore
import Testing

/// The stamp `scripts/package` writes into a release's binary (issue 31), read back.
@Suite("BuildStamp: what a release's binary says of itself")
struct BuildStampTests {
    /// The slot after its marker as scripts/package leaves it: the length in 8 digits, the
    /// lines, then NULs to its end.
    static func slot(_ lines: String, size: Int = 4074) -> [UInt8] {
        let payload = Array(lines.utf8)
        let digits = String(payload.count)
        let stamped = Array((String(repeating: "0", count: 8 - digits.count) + digits).utf8) + payload
        return stamped + [UInt8](repeating: 0, count: max(0, size - stamped.count))
    }

    @Test("a stamp's slot gives its length, and its lines the commit and client")
    func roundTrip() throws {
        let stamp = BuildStamp(
            slot: Self.slot(
                "commit=abc1234\ndirty=yes\nclient_id=ivy-emulator.apps.googleusercontent.com\n"
                    + "client_secret=emulator-secret\nfuture_key=ignored\n"))
        #expect(
            stamp
                == BuildStamp(
                    commit: "abc1234", dirty: true, clientID: "ivy-emulator.apps.googleusercontent.com",
                    clientSecret: "emulator-secret"))
    }

    @Test(
        "a slot scripts/package has not stamped, or that holds no stamp, is no stamp",
        arguments: [
            [UInt8](repeating: 0, count: 4074),
            Array("0000000x5commit=abc1234\n".utf8),
            Array("00000999commit=abc1234\n".utf8),
            Array("0000".utf8),
        ])
    func notAStamp(_ bytes: [UInt8]) {
        #expect(BuildStamp(slot: bytes) == .none)
    }

    @Test("half a client is no client")
    func halfAClient() {
        let stamp = BuildStamp(payload: Array("commit=abc1234\nclient_id=x.apps\n".utf8))
        #expect(stamp.clientID == nil && stamp.clientSecret == nil && stamp.commit == "abc1234")
    }
}
