import Foundation
import GoogleEmulator
import IvyProcesses
import IvyTestSupport
import Synchronization
import Testing

/// What reached an `Eavesdropper`.
private final class Heard: Sendable {
    private let state = Mutex<(connections: Int, bytes: [UInt8])>((0, []))
    func withLock<T>(_ body: (inout (connections: Int, bytes: [UInt8])) -> T) -> T { state.withLock { body(&$0) } }
}

/// A listener on 127.0.0.1 that takes every connection, keeps whatever arrives on it for a
/// moment, and hangs up: whatever reaches it was sent there. Nothing is answered.
final class Eavesdropper: Sendable {
    private let listener: LoopbackListener
    private let heard: Heard

    init() throws {
        let heard = Heard()
        self.heard = heard
        listener = try LoopbackListener { connection in
            heard.withLock { $0.connections += 1 }
            // What the client sends first (its request line and headers, a token among
            // them), read for up to half a second.
            var wait = timeval(tv_sec: 0, tv_usec: 500_000)
            setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &wait, socklen_t(MemoryLayout<timeval>.size))
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while true {
                let count = recv(connection, &buffer, buffer.count, 0)
                guard count > 0 else { break }
                heard.withLock { $0.bytes += buffer[0..<count] }
            }
            close(connection)
        }
    }

    var port: Int { listener.port }
    var connections: Int { heard.withLock { $0.connections } }
    var text: String { String(decoding: heard.withLock { $0.bytes }, as: UTF8.self) }

    /// Ends the accepting thread, then frees the port (`LoopbackListener.stop`).
    func stop() { listener.stop() }
}

/// Issue 49, item 5 (every instruction in an answer is checked) and item 2's deadlines: what
/// ivy does when an answer tells it to send the upload elsewhere, to wait, or nothing at all.
@Suite("Every instruction in an answer is checked")
struct AnswerChecksTests {
    /// A signed-in device with a book and a clip new to Drive, not yet synced.
    static func deviceWithClip(_ emulator: GoogleEmulator) async throws -> (SignInHarness, book: String, clip: String) {
        let device = try await SignInHarness.signedIn(emulator)
        let book = try await device.ivy.id("book", "add", "--title", "Dune")
        let audio = try device.ivy.mp3("take.mp3", size: 4000)
        let clip = try await device.ivy.id(
            "clip", "add", "--book", book, "--start", "0", "--duration", "5", "--audio", audio)
        return (device, book, clip)
    }

    /// The names of alice's files on the emulated Drive.
    static func names(_ emulator: GoogleEmulator) async -> [String] {
        await emulator.state.dump(email: "alice@example.com").map(\.name)
    }

    /// `ivy arguments` through the binary, and how long it took; past `limit` it is killed and
    /// the test fails (a guard against the hang some of these tests are about).
    static func timed(
        _ ivy: IvyHome, _ arguments: [String], environment: [String: String] = [:], limit: Duration = .seconds(60)
    ) async throws -> (RunResult, Duration) {
        let started = ContinuousClock.now
        let result = try await runChild(ivy.command(arguments, environment: environment), within: limit)
        return (RunResult(result), ContinuousClock.now - started)
    }

    // MARK: an upload session's Location

    /// Where a hostile session's `Location` points, given the eavesdropper's port, and the
    /// environment that routes it there.
    struct Elsewhere: CustomTestStringConvertible, Sendable {
        let testDescription: String
        let location: @Sendable (Int) -> String
        let environment: @Sendable (Int) -> [String: String]
    }

    static let elsewhere: [Elsewhere] = [
        Elsewhere(
            testDescription: "another port on 127.0.0.1", location: { "http://127.0.0.1:\($0)" },
            environment: { _ in [:] }
        ),
        // An outside host over plain http, which http_proxy (here, the eavesdropper) would carry.
        Elsewhere(
            testDescription: "plain http to an outside host, through http_proxy",
            location: { _ in "http://drive.example.com" }, environment: { ["http_proxy": "http://127.0.0.1:\($0)"] }),
        Elsewhere(
            testDescription: "https to another host, through https_proxy",
            location: { _ in "https://upload.example.com" },
            environment: { ["https_proxy": "http://127.0.0.1:\($0)"] }),
        Elsewhere(
            testDescription: "another scheme", location: { "ftp://127.0.0.1:\($0)" }, environment: { _ in [:] }),
    ]

    @Test(
        """
        through the binary: an upload session whose Location is not the sign-in's own server gets nothing, not a \
        byte nor the token; the clip fails, stays queued with no JSON left on Drive, and goes up once Drive behaves
        """,
        arguments: elsewhere)
    func sessionElsewhere(_ elsewhere: Elsewhere) async throws {
        try await withEmulator { emulator in
            let listener = try Eavesdropper()
            defer { listener.stop() }
            let (device, book, clip) = try await Self.deviceWithClip(emulator)
            let origin = elsewhere.location(listener.port)
            await emulator.state.addFault(
                FaultRule(method: "POST", pathContains: "uploadType=resumable", sessionLocation: origin))
            let (sync, _) = try await Self.timed(
                device.ivy, ["sync"], environment: elsewhere.environment(listener.port))
            #expect(sync.status == 5, "\(sync.stdout)\(sync.stderr)")
            #expect(
                sync.stderr.contains(
                    "failed: clip \(clip): uploading clip_\(clip).mp3: Drive's answer sends the file to "),
                "\(sync.stderr)")
            #expect(
                sync.stderr.contains("not to this sign-in's server \(emulator.baseURL.absoluteString)"),
                "\(sync.stderr)")
            #expect(listener.connections == 0, "reached \(origin): \(listener.text)")
            #expect(!listener.text.contains("Bearer"))
            let names = await Self.names(emulator)
            #expect(names.contains("book_\(book).json"), "\(names)")
            #expect(!names.contains("clip_\(clip).json") && !names.contains("clip_\(clip).mp3"), "\(names)")
            #expect(try device.ivy.count("SELECT count(*) FROM sync_queue WHERE entity_id = '\(clip)'") == 1)

            await emulator.state.clearFaults()
            let again = try await device.ivy.runBinaryAsync("sync")
            #expect(again.status == 0, "\(again.stderr)")
            #expect(await Self.names(emulator).contains("clip_\(clip).mp3"))
            #expect(listener.connections == 0)
        }
    }

    @Test("through the binary: a redirect never carries the token anywhere, to another port on 127.0.0.1 least of all")
    func redirectNotFollowed() async throws {
        try await withEmulator { emulator in
            let listener = try Eavesdropper()
            defer { listener.stop() }
            let device = try await SignInHarness.signedIn(emulator)
            _ = try await device.ivy.id("book", "add", "--title", "Dune")
            for status in [302, 307, 308] {
                await emulator.state.clearFaults()
                await emulator.state.addFault(
                    FaultRule(
                        method: "POST", pathContains: "/upload", status: status,
                        headers: ["Location": "http://127.0.0.1:\(listener.port)/upload/drive/v3/files"]))
                let sync = try await device.ivy.runBinaryAsync("sync")
                #expect(sync.status != 0, "\(status): \(sync.stdout)")
                #expect(listener.connections == 0, "\(status) was followed: \(listener.text)")
            }
        }
    }

    // MARK: Retry-After

    @Test(
        """
        through the binary: a Retry-After ivy will not wait (huge, past any clock, a date years away) on an MP3's \
        upload ends the sync at once, with no signal, a message, the lock free, the clip queued and no JSON on Drive
        """,
        arguments: [
            "9223372036854775807", "1000000000", "99999999999999999999999999999", "61",
            "Fri, 31 Dec 9999 23:59:59 GMT",
        ])
    func retryAfterTooLong(_ header: String) async throws {
        try await withEmulator { emulator in
            let (device, _, clip) = try await Self.deviceWithClip(emulator)
            await emulator.state.addFault(
                FaultRule(method: "PUT", pathContains: "upload_id", status: 429, headers: ["Retry-After": header]))
            let (sync, took) = try await Self.timed(device.ivy, ["sync"], limit: .seconds(60))
            #expect(sync.status == 1, "\(sync.status): \(sync.stdout)\(sync.stderr)")
            #expect(took < .seconds(20), "\(took)")
            #expect(
                sync.stderr.hasPrefix(
                    "Error: Google asked ivy to wait more than 60 s before trying again (Retry-After)"),
                "\(sync.stderr)")
            #expect(sync.stderr.contains("every change here stays queued"))
            #expect(!(await Self.names(emulator)).contains("clip_\(clip).json"), "the clip's JSON left without its MP3")
            #expect(try device.ivy.count("SELECT count(*) FROM sync_queue WHERE entity_id = '\(clip)'") == 1)
            #expect(try device.ivy.count("SELECT count(*) FROM sync_queue WHERE attempts > 0") == 0)

            await emulator.state.clearFaults()
            let again = try await device.ivy.runBinaryAsync("sync")
            #expect(again.status == 0, "the lock is free and the clip goes up: \(again.stderr)")
            #expect(await Self.names(emulator).contains("clip_\(clip).mp3"))
        }
    }

    @Test(
        """
        through the binary: a wait that would run past the sync's deadline (sync_timeout) is not waited: the sync \
        ends at once, the lock free, the clip queued
        """)
    func waitPastTheDeadline() async throws {
        try await withEmulator { emulator in
            let (device, _, clip) = try await Self.deviceWithClip(emulator)
            #expect(try await device.ivy.run("config", "set", "sync_timeout", "20").status == 0)
            await emulator.state.addFault(
                FaultRule(method: "PUT", pathContains: "upload_id", status: 503, retryAfterSeconds: 30))
            let (sync, took) = try await Self.timed(device.ivy, ["sync"], limit: .seconds(60))
            #expect(sync.status == 1, "\(sync.stdout)\(sync.stderr)")
            #expect(took < .seconds(15), "\(took)")
            #expect(
                sync.stderr.hasPrefix(
                    "Error: the wait Google asked for before the next try would run past this sync's deadline"),
                "\(sync.stderr)")
            #expect(!(await Self.names(emulator)).contains("clip_\(clip).json"))
            #expect(try device.ivy.count("SELECT count(*) FROM sync_queue WHERE attempts > 0") == 0)
            await emulator.state.clearFaults()
            #expect(try await device.ivy.runBinaryAsync("sync").status == 0)
        }
    }

    @Test("through the binary: a Retry-After given as an HTTP-date is waited until, as one in seconds is waited")
    func retryAfterDate() async throws {
        try await withEmulator { emulator in
            let (device, _, clip) = try await Self.deviceWithClip(emulator)
            // The session's start is held, so the date is set just before the MP3 is sent,
            // however long the machine takes to get there.
            await emulator.state.addFault(
                FaultRule(method: "POST", pathContains: "uploadType=resumable", times: 1, hold: true))
            async let sync = device.ivy.runBinaryAsync("sync")
            await emulator.state.waitForHeld(count: 1)
            let until = HTTPDate.string(Date().addingTimeInterval(3))
            await emulator.state.addFault(
                FaultRule(
                    method: "PUT", pathContains: "upload_id", times: 1, status: 503, headers: ["Retry-After": until]))
            await emulator.state.releaseHeld()
            let result = try await sync
            #expect(result.status == 0, "\(result.stderr)")
            #expect(await Self.names(emulator).contains("clip_\(clip).mp3"))
            let puts = await emulator.state.requests.filter { $0.method == "PUT" && $0.query.contains("upload_id") }
            try #require(puts.count >= 2, "\(puts)")
            // The date is in whole seconds, as the answer's own Date is: 2 or 3 s after it.
            let gap = puts[1].start.timeIntervalSince(puts[0].end)
            #expect(gap >= 1.5, "the retry came \(gap) s after the answer that asked to wait until \(until)")
        }
    }

    @Test(
        "through the binary: a Retry-After that is no wait ivy can read (negative, 1e30, text) is a plain backoff",
        arguments: ["-5", "1e30", "soon", "0x10", "+3", "1.5"])
    func retryAfterUnreadable(_ header: String) async throws {
        try await withEmulator { emulator in
            let (device, _, clip) = try await Self.deviceWithClip(emulator)
            await emulator.state.addFault(
                FaultRule(
                    method: "PUT", pathContains: "upload_id", times: 1, status: 429, headers: ["Retry-After": header]))
            let (sync, took) = try await Self.timed(device.ivy, ["sync"], limit: .seconds(60))
            #expect(sync.status == 0, "\(sync.status): \(sync.stderr)")
            #expect(took < .seconds(20), "\(took)")
            #expect(await Self.names(emulator).contains("clip_\(clip).mp3"))
        }
    }

    @Test("through the binary: --auto hears once of a Retry-After it will not wait, then stays silent while it lasts")
    func retryAfterHeardOnce() async throws {
        try await withEmulator { emulator in
            let (device, _, _) = try await Self.deviceWithClip(emulator)
            #expect(try await device.ivy.run("config", "set", "auto_sync_cooldown", "0").status == 0)
            await emulator.state.addFault(
                FaultRule(method: "PUT", pathContains: "upload_id", status: 503, retryAfterSeconds: Int.max))
            var heard: [String] = []
            for _ in 1...3 {
                let (auto, _) = try await Self.timed(device.ivy, ["sync", "--auto"])
                heard.append(auto.stdout + auto.stderr)
            }
            #expect(heard[0].hasPrefix("ivy sync: Google asked ivy to wait more than 60 s"), "\(heard)")
            #expect(heard[1].isEmpty && heard[2].isEmpty, "\(heard)")
        }
    }

    // MARK: a server that answers nothing

    @Test(
        """
        through the binary: a server that takes every request and answers none costs a sync its silence budget, \
        not three timeouts; the lock is free, every change queued, and the message says what happened
        """)
    func silentServer() async throws {
        try await withEmulator { emulator in
            let (device, book, clip) = try await Self.deviceWithClip(emulator)
            // An expired access token: the sync's first request is the token refresh, as cron's often is.
            var token = try device.storedToken()
            token["expires_at"] = 0
            try JSONSerialization.data(withJSONObject: token).write(to: URL(fileURLWithPath: device.tokenFile))
            await emulator.state.addFault(FaultRule(hold: true))
            let wait = ["IVY_TEST_WAIT_SECONDS": "2"]
            let (sync, took) = try await Self.timed(device.ivy, ["sync"], environment: wait, limit: .seconds(90))
            #expect(sync.status == 1, "\(sync.stdout)\(sync.stderr)")
            #expect(took < .seconds(15), "\(took)")
            #expect(
                sync.stderr.hasPrefix("Error: the server took ivy's requests but answered none for 2 s, so this sync "),
                "\(sync.stderr)")
            for id in [book, clip] {
                #expect(try device.ivy.count("SELECT count(*) FROM sync_queue WHERE entity_id = '\(id)'") == 1)
            }
            #expect(try device.ivy.count("SELECT count(*) FROM sync_queue WHERE attempts > 0") == 0)
            let status = try #require(try await device.ivy.run("status", "--json").json() as? [String: Any])
            #expect(status["sync_running"] as? Bool == false)
            #expect((status["last_error"] as? String)?.contains("answered none") == true, "\(status)")

            // Cron hears it once, then nothing while it lasts.
            #expect(try await device.ivy.run("config", "set", "auto_sync_cooldown", "0").status == 0)
            var heard: [String] = []
            for _ in 1...2 {
                let (auto, _) = try await Self.timed(
                    device.ivy, ["sync", "--auto"], environment: wait, limit: .seconds(90))
                heard.append(auto.stdout + auto.stderr)
            }
            #expect(heard[0].hasPrefix("ivy sync: the server took ivy's requests but answered none"), "\(heard)")
            #expect(heard[1].isEmpty, "\(heard)")

            await emulator.state.clearFaults()
            await emulator.state.releaseHeld()
            let again = try await device.ivy.runBinaryAsync("sync")
            #expect(again.status == 0, "\(again.stderr)")
        }
    }

    @Test("through the binary: doctor against a token endpoint that never answers says so in words, with the fix")
    func doctorOnSilence() async throws {
        try await withEmulator { emulator in
            let device = try await SignInHarness.signedIn(emulator)
            await emulator.state.addFault(FaultRule(method: "POST", pathContains: "/token", hold: true))
            let (doctor, took) = try await Self.timed(
                device.ivy, ["doctor"], environment: ["IVY_TEST_WAIT_SECONDS": "1"], limit: .seconds(60))
            await emulator.state.clearFaults()
            await emulator.state.releaseHeld()
            #expect(doctor.status == 1)
            #expect(took < .seconds(15), "\(took)")
            #expect(!doctor.stdout.contains("CancellationError"), "\(doctor.stdout)")
            #expect(!doctor.stdout.contains("could not be completed"), "\(doctor.stdout)")
            let server = emulator.baseURL.absoluteString
            let signIn = doctor.lines.first { $0.contains("sign-in:") } ?? ""
            #expect(
                signIn.contains(
                    "alice@example.com: the server this sign-in was made at, \(server), did not answer within 1 s"),
                "\(doctor.stdout)")
            #expect(doctor.stdout.contains("check the network, then run `ivy doctor` again"), "\(doctor.stdout)")
        }
    }
}
