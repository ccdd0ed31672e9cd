import Foundation
import GoogleEmulator
import IvyTestSupport
import Testing

// Plain http: some of these tests ping the emulator as a health service, which trusts the
// system's certificate authorities alone.
@Suite("ivy keeps its files to itself")
struct PrivateFilesTests {
    @Test("a sync removes the transfer files a killed run left, and nothing is written under ~/.cache")
    func leftoversAndCache() async throws {
        try await withEmulator(tls: false) { emulator in
            let laptop = try await SignInHarness.signedIn(emulator)
            try await laptop.addLibrary(books: 1, clips: 1)
            let audio = laptop.ivy.home + "/audio"
            let leftovers = [".download-0F8A2C1E", ".upload-5B7D9E3F"]
            for name in leftovers {
                #expect(FileManager.default.createFile(atPath: audio + "/" + name, contents: Data(count: 4096)))
            }
            let first = try await laptop.ivy.run("sync")
            #expect(first.status == 0, "\(first.stderr)")
            let remaining = try FileManager.default.contentsOfDirectory(atPath: audio)
            #expect(remaining.count == 1 && remaining.allSatisfy { $0.hasSuffix(".mp3") }, "\(remaining)")

            let desktop = try await SignInHarness.signedIn(emulator)
            let second = try await desktop.ivy.run("sync")
            #expect(
                second.status == 0 && second.stdout.hasPrefix("Synced: 2 downloaded"),
                "\(second.stdout) \(second.stderr)")
            for device in [laptop, desktop] {
                #expect(
                    !FileManager.default.fileExists(atPath: device.ivy.path + "/.cache"), "HOME is \(device.ivy.path)")
            }
        }
    }

    @Test("ivy given its own home creates nothing else in $HOME: no ~/.local/share/<binary dir>, no ~/.cache")
    func nothingOutsideTheHome() async throws {
        try await withEmulator(tls: false) { emulator in
            let laptop = try await SignInHarness.signedIn(emulator)
            try await laptop.addLibrary(books: 1, clips: 1)
            for arguments in [["sync"], ["status"], ["check"], ["sync", "--full"]] {
                let result = try await laptop.ivy.runBinaryAsync(arguments)
                #expect(result.status == 0, "ivy \(arguments): \(result.stderr)")
            }
            // The test's own clip audio is the one other thing there.
            let made = try FileManager.default.contentsOfDirectory(atPath: laptop.ivy.path).filter { $0 != "clip0.mp3" }
            #expect(made == ["home"], "HOME holds \(made)")
        }
    }

    /// Issue 40 item 9: under `umask 000` the directories above ivy's were made 0777; another
    /// user could then rename `~/.local/share/ivy` away and put a symlink of theirs in its place.
    @Test("under umask 000 the directories ivy makes above its own are 0755")
    func parentsUnderUmask000() async throws {
        let ivy = try IvyHome()
        ivy.environment = ["HOME": ivy.path, "PATH": "/usr/bin:/bin"]
        let added = try await ivy.runBinaryAsync(
            ["book", "add", "--title", "Dune"], through: ["/bin/sh", "-c", "umask 000; exec \"$0\" \"$@\""])
        #expect(added.status == 0, "\(added.stderr)")
        for parent in [".local", ".local/share"] {
            let mode = try #require(
                try FileManager.default.attributesOfItem(atPath: ivy.path + "/" + parent)[.posixPermissions] as? Int)
            #expect(mode == 0o755, "\(parent): \(String(mode, radix: 8))")
        }
    }

    @Test("a home inside a directory others can write to is refused, and doctor says how to fix it")
    func homeThroughAWritableDirectory() async throws {
        let ivy = try IvyHome()
        ivy.environment = ["HOME": ivy.path, "PATH": "/usr/bin:/bin"]
        let local = ivy.path + "/.local"
        try FileManager.default.createDirectory(atPath: local, withIntermediateDirectories: false)
        #expect(chmod(local, 0o777) == 0)
        let added = try await ivy.runBinaryAsync("book", "add", "--title", "Dune")
        #expect(added.status != 0)
        #expect(
            added.stderr.contains("it is inside \(local), and others can write to it (mode 777)")
                && added.stderr.contains("chmod go-w \(local)"), "\(added.stderr)")
        #expect(!FileManager.default.fileExists(atPath: local + "/share/ivy/library.db"))

        let doctor = try await ivy.runBinaryAsync("doctor", "--json")
        #expect(doctor.status == 1)
        let home = try #require(try doctor.json() as? [[String: Any]]).filter { $0["check"] as? String == "home" }
        #expect(
            home.contains { $0["level"] as? String == "problem" && $0["fix"] as? String == "chmod go-w \(local)" },
            "\(doctor.stdout)")

        #expect(chmod(local, 0o1777) == 0, "sticky: no one may rename another's entries")
        #expect(try await ivy.runBinaryAsync("book", "add", "--title", "Dune").status == 0)
    }

    /// Second review of issue 40, item 9 (c, d): a directory that did not exist yet passed the
    /// check, so `book add` made `~/.local/share` inside a `~/.local` others can write to before
    /// refusing, and `login` ran the whole sign-in before refusing to save it.
    @Test("under a directory others can write to, a command makes nothing and login asks Google nothing")
    func refusedBeforeAnything() async throws {
        try await withEmulator(tls: false) { emulator in
            let ivy = try SignInEndpointTests.cronHome()
            let local = ivy.path + "/.local"
            #expect(mkdir(local, 0o700) == 0 && chmod(local, 0o777) == 0)
            let added = try await ivy.run("book", "add", "--title", "Dune")
            #expect(added.status == 1 && added.stderr.contains("chmod go-w \(local)"), "\(added.stderr)")
            #expect(try FileManager.default.contentsOfDirectory(atPath: local).isEmpty, "nothing made in it")

            #expect(chmod(local, 0o755) == 0)
            let config = ivy.path + "/.config"
            #expect(mkdir(config, 0o700) == 0 && chmod(config, 0o777) == 0)
            await emulator.state.clearRequests()
            let login = try await SignInEndpointTests.login(ivy, emulator)
            #expect(login.status == 1 && login.stderr.contains("chmod go-w \(config)"), "\(login.stderr)")
            #expect(!login.stdout.contains("enter the code"), "\(login.stdout)")
            let requests = await emulator.state.requests
            #expect(requests.isEmpty, "\(requests.map(\.path))")
            #expect(try FileManager.default.contentsOfDirectory(atPath: config).isEmpty)
        }
    }

    /// Second review of issue 40, item 9 (b): doctor looked above the directories that existed
    /// only, and status not at all, so a `~/.config` others can write to went unnamed until login.
    @Test("doctor and status name a directory others can write to above any of ivy's three, made yet or not")
    func doctorAndStatusNameIt() async throws {
        let ivy = try SignInEndpointTests.cronHome()
        _ = try await ivy.id("book", "add", "--title", "Dune")
        #expect(try await ivy.run("doctor", "--json").stdout.contains("and its files are private"))
        let config = ivy.path + "/.config"
        #expect(mkdir(config, 0o700) == 0 && chmod(config, 0o777) == 0)
        let doctor = try await ivy.run("doctor", "--json")
        #expect(doctor.status == 1)
        var home = try #require(try doctor.json() as? [[String: Any]]).filter { $0["check"] as? String == "home" }
        #expect(
            home.map { $0["fix"] as? String } == ["chmod go-w \(config)"]
                && home.allSatisfy { $0["level"] as? String == "problem" }, "\(doctor.stdout)")
        let status = try await ivy.run("status")
        #expect(status.status == 1, "\(status.stdout)")
        #expect(
            status.stderr.contains("ivy will not use \(config)/ivy: it is inside \(config)")
                && status.stderr.contains("chmod go-w \(config)"), "\(status.stderr)")

        // Each directory at fault once, with its fix, by the rule every command refuses by.
        let local = ivy.path + "/.local"
        #expect(chmod(local, 0o757) == 0)
        home = try #require(try await ivy.run("doctor", "--json").json() as? [[String: Any]]).filter {
            $0["check"] as? String == "home"
        }
        #expect(
            Set(home.compactMap { $0["fix"] as? String }) == ["chmod go-w \(config)", "chmod go-w \(local)"]
                && home.count == 2, "\(home)")
    }

    /// Second review of issue 40, item 9 (a): cron's `--auto` in a refused home exited 1 every
    /// run with the error and pinged nothing, unlike every other sync that cannot start.
    @Test("--auto in a refused home: cron hears it once, the health check every run, and it ends with the fix")
    func cronHearsTheRefusalOnce() async throws {
        try await withEmulator(tls: false) { emulator in
            let device = try await SignInHarness.signedIn(emulator)
            let ivy = device.ivy
            let url = emulator.baseURL.absoluteString + "/health/check"
            #expect(try await ivy.run("config", "set", "health_url", url).status == 0)
            #expect(try await ivy.run("config", "set", "auto_sync_cooldown", "0").status == 0)
            _ = try await ivy.id("book", "add", "--title", "Dune")
            #expect(chmod(ivy.path, 0o777) == 0)
            defer { chmod(ivy.path, 0o700) }
            let first = try await ivy.run("sync", "--auto")
            #expect(first.status == 1 && first.stdout.isEmpty, "\(first.stderr)")
            #expect(
                first.stderr.hasPrefix("ivy sync: ivy will not use \(ivy.home): it is inside \(ivy.path)")
                    && first.stderr.hasSuffix("run `chmod go-w \(ivy.path)`\n"), "\(first.stderr)")
            for run in 1...2 {
                if run == 2 {
                    let again = try await ivy.run("sync", "--auto")
                    #expect(again.status == 0 && again.stdout.isEmpty && again.stderr.isEmpty, "\(again.stderr)")
                }
                let pings = await emulator.state.healthPings
                #expect(pings.map(\.path) == Array(repeating: "/health/check/fail", count: run), "\(pings)")
                #expect(pings.last?.body.hasPrefix("ivy refuses its home") == true, "\(pings)")
                #expect(pings.last?.body.contains(ivy.path) == false, "never a path: \(pings)")
            }
            // Nothing of the home was used: no sync ran, nothing went to Drive.
            #expect(try ivy.sql("SELECT entity_id FROM sync_queue").count == 1)

            #expect(chmod(ivy.path, 0o700) == 0)
            let fixed = try await ivy.run("sync", "--auto")
            #expect(fixed.status == 0 && fixed.stderr.isEmpty, "\(fixed.stderr)")
            #expect(await emulator.state.healthPings.last?.path == "/health/check")
            #expect(!FileManager.default.fileExists(atPath: ivy.home + "/cron-refusal"), "what cron heard is over")
        }
    }
}
