import IvyCore
import Testing

@Suite("Settings rules")
struct SettingKeyTests {
    @Test(
        "values are stored in one canonical form",
        arguments: [
            (SettingKey.syncEnabled, "yes", "true"), (.syncEnabled, "OFF", "false"), (.syncEnabled, "0", "false"),
            (.autoSyncCooldown, "0", "0"), (.autoSyncCooldown, " 600 ", "600"), (.concurrency, "32", "32"),
            (.concurrency, "1", "1"), (.clientID, "abc.apps.googleusercontent.com", "abc.apps.googleusercontent.com"),
        ])
    func accepted(key: SettingKey, value: String, stored: String) throws {
        #expect(try key.normalize(value).get() == stored)
    }

    @Test(
        "bad values are refused with what is expected",
        arguments: [
            (SettingKey.syncEnabled, "maybe"), (.autoSyncCooldown, "-1"), (.autoSyncCooldown, "5m"),
            (.concurrency, "0"),
            (.concurrency, "33"), (.clientID, ""), (.clientSecret, "a b"), (.lastSyncTime, "1"), (.lastError, "x"),
        ])
    func refused(key: SettingKey, value: String) {
        guard case .failure(let error) = key.normalize(value) else {
            Issue.record("\(key.rawValue)=\(value) was accepted")
            return
        }
        #expect(error.message.contains(key.rawValue))
    }

    @Test("a refused client secret is not echoed back")
    func secretNotEchoed() {
        guard case .failure(let error) = SettingKey.clientSecret.normalize("s3cret value") else {
            Issue.record("accepted")
            return
        }
        #expect(!error.message.contains("s3cret"))
    }

    @Test("defaults: sync on, five-minute cooldown, eight requests in flight")
    func defaults() {
        #expect(SettingKey.syncEnabled.defaultValue == "true")
        #expect(SettingKey.autoSyncCooldown.defaultValue == "300")
        #expect(SettingKey.concurrency.defaultValue == "8")
        #expect(SettingKey.clientSecret.isSecret)
        #expect(SettingKey.lastSyncTime.isReadOnly && SettingKey.lastError.isReadOnly)
    }
}

@Suite("Where ivy keeps its files")
struct IvyPathsTests {
    @Test("IVY_HOME puts everything in one directory")
    func ivyHome() throws {
        let paths = try IvyPaths.resolve(
            home: nil, environment: ["IVY_HOME": "/srv/ivy/", "HOME": "/home/u"], workingDirectory: "/")
        #expect(paths.database == "/srv/ivy/library.db")
        #expect(paths.audioDirectory == "/srv/ivy/audio")
        #expect(paths.tokenFile == "/srv/ivy/token.json")
        #expect(paths.lockFile == "/srv/ivy/ivy.lock")
        #expect(paths.logFile == "/srv/ivy/ivy.log")
    }

    @Test("--home wins over IVY_HOME and may be relative")
    func homeOption() throws {
        let paths = try IvyPaths.resolve(home: "lib", environment: ["IVY_HOME": "/srv/ivy"], workingDirectory: "/work")
        #expect(paths.database == "/work/lib/library.db")
    }

    @Test("XDG base directories split config, data and state")
    func xdg() throws {
        let paths = try IvyPaths.resolve(
            home: nil,
            environment: ["HOME": "/home/u", "XDG_CONFIG_HOME": "/c", "XDG_DATA_HOME": "/d", "XDG_STATE_HOME": "/s"],
            workingDirectory: "/")
        #expect(paths.tokenFile == "/c/ivy/token.json")
        #expect(paths.database == "/d/ivy/library.db")
        #expect(paths.audioDirectory == "/d/ivy/audio")
        #expect(paths.lockFile == "/s/ivy/ivy.lock")
    }

    @Test("without XDG variables the standard fallbacks apply; relative XDG values are ignored")
    func fallbacks() throws {
        let paths = try IvyPaths.resolve(
            home: nil, environment: ["HOME": "/home/u", "XDG_DATA_HOME": "rel"], workingDirectory: "/")
        #expect(paths.configDirectory == "/home/u/.config/ivy")
        #expect(paths.dataDirectory == "/home/u/.local/share/ivy")
        #expect(paths.stateDirectory == "/home/u/.local/state/ivy")
    }

    @Test("no HOME and no ivy home is an error that names the fix")
    func noHome() {
        #expect(throws: IvyPaths.ResolveError.self) {
            try IvyPaths.resolve(home: nil, environment: [:], workingDirectory: "/")
        }
        #expect(throws: IvyPaths.ResolveError.self) {
            try IvyPaths.resolve(home: "", environment: [:], workingDirectory: "/")
        }
    }
}
