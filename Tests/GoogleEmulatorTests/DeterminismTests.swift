import Foundation
import GoogleEmulator
import Testing

/// What one emulator made while signing in and creating files: every random choice a client sees.
private struct Choices: Equatable {
    var deviceCode: String
    var userCode: String
    var access: String
    var refresh: String
    var fileIDs: [String]
    var generated: [String]
    var faultStatuses: [Int]
}

/// Signs in, creates files, asks for ids and sends requests a coin-flip fault rule answers.
private func choices(_ google: EmulatorClient) async throws -> Choices {
    await google.state.setDeviceCode(interval: 0)
    let code = try await google.deviceCode()
    let deviceCode = try #require(code.json["device_code"] as? String)
    let userCode = try #require(code.json["user_code"] as? String)
    try await google.state.approve(userCode: userCode, email: "alice@example.com")
    let tokens = try await google.poll(deviceCode)
    let access = try #require(tokens.json["access_token"] as? String)
    var fileIDs: [String] = []
    for index in 0..<3 { fileIDs.append(try await google.createFolder("folder \(index)", token: access)) }
    let ids = try await google.request("GET", "/drive/v3/files/generateIds?count=3", token: access)
    await google.state.addFault(FaultRule(pathContains: "/about", probability: 0.5, status: 503))
    var faultStatuses: [Int] = []
    for _ in 0..<24 {
        faultStatuses.append(try await google.request("GET", "/drive/v3/about?fields=user", token: access).status)
    }
    return Choices(
        deviceCode: deviceCode, userCode: userCode, access: access,
        refresh: try #require(tokens.json["refresh_token"] as? String), fileIDs: fileIDs,
        generated: try #require(ids.json["ids"] as? [String]), faultStatuses: faultStatuses)
}

@Suite("The emulator's seeded randomness and injected clock")
struct DeterminismTests {
    @Test("the same seed makes the same ids, codes, tokens and fault draws; another seed makes others")
    func seeded() async throws {
        var first: Choices?
        var again: Choices?
        var other: Choices?
        try await withEmulatorClient(clock: .manual(), seed: 7) { first = try await choices($0) }
        try await withEmulatorClient(clock: .manual(), seed: 7) { again = try await choices($0) }
        try await withEmulatorClient(clock: .manual(), seed: 8) { other = try await choices($0) }
        let one = try #require(first)
        let two = try #require(other)
        #expect(one == again)
        #expect(one.deviceCode != two.deviceCode && one.userCode != two.userCode)
        #expect(one.access != two.access && one.refresh != two.refresh)
        #expect(Set(one.fileIDs).isDisjoint(with: two.fileIDs) && Set(one.generated).isDisjoint(with: two.generated))
        #expect(one.faultStatuses != two.faultStatuses)
        // A fair coin over 24 requests: both answers happen (fixed by the seed, so not flaky).
        #expect(Set(one.faultStatuses) == [200, 503])
    }

    @Test("the control API reads and sets the seed; a new emulator has a fixed default one")
    func seedControl() async throws {
        var reseeded: Choices?
        var started: Choices?
        try await withEmulatorClient(clock: .manual()) { google in
            let seed = try await google.request("GET", "/_emulator/seed")
            #expect((seed.json["seed"] as? NSNumber)?.uint64Value == EmulatorState.defaultSeed)
            #expect(try await google.json("POST", "/_emulator/seed", ["seed": 99]).status == 200)
            #expect(await google.state.seed == 99)
            #expect(try await google.json("POST", "/_emulator/seed", [:]).status == 400)
            reseeded = try await choices(google)
        }
        try await withEmulatorClient(clock: .manual(), seed: 99) { started = try await choices($0) }
        #expect(reseeded == started)
    }

    @Test("an access token works until the clock reaches its expiry, and not from then on")
    func tokenExpiry() async throws {
        try await withEmulatorClient(clock: .manual()) { google in
            await google.state.setTokenLifetime(seconds: 10)
            let start = await google.state.now()
            #expect(start == EmulatorClock.epoch)
            let token = try await google.signIn().access
            // The clock stands still while requests come and go.
            #expect(await google.state.now() == start)
            await google.state.advanceClock(by: 9.5)
            #expect(try await google.request("GET", "/drive/v3/about?fields=user", token: token).status == 200)
            await google.state.advanceClock(by: 0.375)
            #expect(try await google.request("GET", "/drive/v3/about?fields=user", token: token).status == 200)
            await google.state.advanceClock(by: 0.125)
            #expect(await google.state.now() == start.addingTimeInterval(10))
            #expect(try await google.request("GET", "/drive/v3/about?fields=user", token: token).status == 401)
        }
    }

    @Test("a device code lives exactly its lifetime; polling sooner than the interval is slow_down")
    func deviceCodeTimes() async throws {
        try await withEmulatorClient(clock: .manual()) { google in
            await google.state.setDeviceCode(lifetime: 60, interval: 5)
            let deviceCode = try #require(try await google.deviceCode().json["device_code"] as? String)
            #expect(try await google.poll(deviceCode).oauthError == "authorization_pending")
            await google.state.advanceClock(by: 4.5)
            #expect(try await google.poll(deviceCode).oauthError == "slow_down")
            // slow_down adds 5 s to the interval, counted from that poll.
            await google.state.advanceClock(by: 10)
            #expect(try await google.poll(deviceCode).oauthError == "authorization_pending")
            await google.state.advanceClock(by: 60 - 14.5 - 0.5)
            #expect(try await google.poll(deviceCode).oauthError == "authorization_pending")
            await google.state.advanceClock(by: 0.5)
            #expect(try await google.poll(deviceCode).oauthError == "invalid_grant")
        }
    }

    @Test("the write bucket refills by the clock alone, up to its burst")
    func writeBucketRefillsByClock() async throws {
        try await withEmulatorClient(clock: .manual()) { google in
            let token = try await google.signIn().access
            await google.state.setWriteLimit(RateLimit(perSecond: 2, burst: 2))
            func write() async throws -> Int {
                try await google.json("POST", "/drive/v3/files", token: token, ["name": "f"]).status
            }
            var statuses: [Int] = []
            for _ in 0..<6 { statuses.append(try await write()) }
            // However long the requests took in real time, the bucket got nothing back.
            #expect(statuses == [200, 200, 403, 403, 403, 403])
            await google.state.advanceClock(by: 0.25)
            #expect(try await write() == 403, "half a token is not a write")
            await google.state.advanceClock(by: 0.25)
            #expect(try await write() == 200)
            #expect(try await write() == 403)
            await google.state.advanceClock(by: 60)
            statuses = []
            for _ in 0..<3 { statuses.append(try await write()) }
            #expect(statuses == [200, 200, 403], "a minute refills no more than the burst")
        }
    }

    @Test("the read limit is the same bucket over GETs, set through the control API")
    func readBucketRefillsByClock() async throws {
        try await withEmulatorClient(clock: .manual()) { google in
            let token = try await google.signIn().access
            let set = try await google.json("POST", "/_emulator/read-limit", ["reads_per_second": 1, "burst": 1])
            #expect(set.status == 200)
            #expect(await google.state.readLimit == RateLimit(perSecond: 1, burst: 1))
            #expect(try await google.request("GET", "/drive/v3/files", token: token).status == 200)
            #expect(try await google.request("GET", "/drive/v3/files", token: token).status == 403)
            let write = try await google.json("POST", "/drive/v3/files", token: token, ["name": "w"])
            #expect(write.status == 200, "writes are not reads")
            #expect(try await google.json("POST", "/_emulator/clock", ["advance_seconds": 1]).status == 200)
            #expect(try await google.request("GET", "/drive/v3/files", token: token).status == 200)
        }
    }

    @Test("freezing a real clock through the control API stops it where it reads")
    func freeze() async throws {
        try await withEmulatorClient { google in
            #expect(try await google.request("GET", "/_emulator/clock").json["manual"] as? Bool == false)
            #expect(try await google.json("POST", "/_emulator/clock", ["freeze": true]).status == 200)
            let clock = try await google.request("GET", "/_emulator/clock")
            #expect(clock.json["manual"] as? Bool == true)
            let frozen = await google.state.now()
            #expect(clock.json["now"] as? String == RFC3339.string(frozen))
            _ = try await google.request("GET", "/drive/v3/about")
            #expect(await google.state.now() == frozen)
            await google.state.advanceClock(by: 2)
            #expect(await google.state.now() == frozen.addingTimeInterval(2))
        }
    }
}

@Suite("RateLimit")
struct RateLimitTests {
    let start = EmulatorClock.epoch

    @Test("a full bucket lets the burst through at one instant, then nothing")
    func burst() {
        let limit = RateLimit(perSecond: 10, burst: 3)
        var bucket = limit.fullBucket(at: start)
        let taken = (0..<5).map { _ in limit.take(from: &bucket, at: start) }
        #expect(taken == [true, true, true, false, false])
    }

    @Test("tokens come back at the rate, in fractions, never past the burst")
    func refill() {
        let limit = RateLimit(perSecond: 4, burst: 2)
        var bucket = limit.fullBucket(at: start)
        #expect(limit.take(from: &bucket, at: start) && limit.take(from: &bucket, at: start))
        #expect(!limit.take(from: &bucket, at: start.addingTimeInterval(0.125)), "half a token")
        #expect(limit.take(from: &bucket, at: start.addingTimeInterval(0.25)), "the half from before counts")
        #expect(!limit.take(from: &bucket, at: start.addingTimeInterval(0.25)))
        let later = start.addingTimeInterval(1000)
        #expect((0..<3).map { _ in limit.take(from: &bucket, at: later) } == [true, true, false])
    }

    @Test("a clock read out of order takes nothing back")
    func backwards() {
        let limit = RateLimit(perSecond: 1, burst: 1)
        var bucket = limit.fullBucket(at: start)
        #expect(limit.take(from: &bucket, at: start))
        #expect(!limit.take(from: &bucket, at: start.addingTimeInterval(-5)))
        #expect(limit.take(from: &bucket, at: start.addingTimeInterval(1)))
    }

    @Test("the bucket of a zero burst never admits")
    func zeroBurst() {
        let limit = RateLimit(perSecond: 1000, burst: 0, status: 429)
        var bucket = limit.fullBucket(at: start)
        #expect(!limit.take(from: &bucket, at: start.addingTimeInterval(10)))
    }
}
