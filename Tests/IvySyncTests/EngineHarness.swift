import Foundation
import GoogleEmulator
import IvyCore
import IvyGoogle
import IvyStore
import IvySync
import IvySystem
import Logging
import Synchronization
import Testing

/// One device: its own library and sign-in, syncing through the shared in-process emulator.
final class EngineDevice: Sendable {
    let name: String
    let home: String
    let library: LibraryDatabase
    let drive: DriveClient
    let emulator: GoogleEmulator

    static func signIn(_ emulator: GoogleEmulator, name: String, as email: String = "alice@example.com") async throws
        -> EngineDevice
    {
        let home = FileManager.default.temporaryDirectory.appendingPathComponent(
            "ivy-engine-\(name)-\(UUID().uuidString)"
        ).path
        let paths = try IvyPaths.resolve(home: home, environment: [:], workingDirectory: "/")
        let clock = WallClock { Milliseconds((Date().timeIntervalSince1970 * 1000).rounded()) }
        let library = try LibraryDatabase(paths: paths, clock: clock)
        let transport = URLSessionTransport()
        let endpoints = GoogleEndpoints(oauth: emulator.baseURL, drive: emulator.baseURL)
        let credentials = ClientCredentials(
            id: GoogleEmulator.defaultClient.id, secret: GoogleEmulator.defaultClient.secret)
        let noWait: @Sendable (Duration) async throws -> Void = { _ in }
        await emulator.state.setDeviceCode(interval: 0)
        let approve: @Sendable (Duration) async throws -> Void = { _ in
            try? await emulator.state.approve(userCode: nil, email: email)
        }
        let flow = DeviceFlow(
            endpoints: endpoints, credentials: credentials,
            effects: GoogleEffects(transport: transport, clock: clock, sleep: approve))
        let tokens = try await flow.waitForApproval(try await flow.start())
        let account = try await DriveAccount.fetch(
            drive: emulator.baseURL, accessToken: tokens.accessToken, transport: transport)
        let token = StoredToken(
            accessToken: tokens.accessToken, refreshToken: tokens.refreshToken, expiresAt: tokens.expiresAt,
            scope: tokens.scope,
            clientID: credentials.id, email: account.email, permissionID: account.permissionID)
        let store = TokenStore(path: paths.tokenFile, warn: { _ in })
        try store.save(token)
        try library.bindAccount(permissionID: account.permissionID, email: account.email)
        let provider = TokenProvider(
            token: token, store: store, endpoints: endpoints, credentials: credentials,
            effects: GoogleEffects(transport: transport, clock: clock, sleep: noWait))
        let drive = DriveClient(
            drive: emulator.baseURL, authorized: AuthorizedTransport(tokens: provider, transport: transport),
            sleep: noWait)
        return EngineDevice(name: name, home: home, library: library, drive: drive, emulator: emulator)
    }

    private init(name: String, home: String, library: LibraryDatabase, drive: DriveClient, emulator: GoogleEmulator) {
        self.name = name
        self.home = home
        self.library = library
        self.drive = drive
        self.emulator = emulator
    }

    deinit { try? FileManager.default.removeItem(atPath: home) }

    @discardableResult
    func sync(_ options: SyncOptions = SyncOptions()) async throws -> SyncReport {
        let engine = SyncEngine(
            library: library, drive: drive,
            clock: WallClock { Milliseconds((Date().timeIntervalSince1970 * 1000).rounded()) },
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        return try await engine.run(options)
    }

    func addBook(_ title: String, position: Double = 0) throws -> String {
        try library.addBook(id: IDGenerator.uuid.next(), title: title, artist: nil, artwork: nil, position: position).id
    }

    func addClip(book: String, note: String? = nil, bytes: Int = 512) throws -> String {
        let audio = home + "/in-\(UUID().uuidString).mp3"
        try Data("ID3\u{4}\0".utf8 + Data((0..<bytes).map { UInt8(truncatingIfNeeded: $0) })).write(
            to: URL(fileURLWithPath: audio))
        return try library.addClip(
            id: IDGenerator.uuid.next(), bookID: book, start: 1, duration: 2, note: note, transcription: nil,
            audio: audio
        ).id
    }

    /// Every synced field, for comparing devices.
    func snapshot() throws -> String {
        let books = try library.books(includeHidden: true).map {
            "\($0.id) \($0.title) \($0.position) \($0.hidden) \($0.updatedAt)"
        }
        let clips = try library.clips().map { clip in
            let audio =
                FileManager.default.contents(atPath: library.audioPath(clipID: clip.id)).map { MD5.hex($0) } ?? "none"
            return "\(clip.id) \(clip.bookID) \(clip.start) \(clip.note ?? "-") \(clip.updatedAt) \(audio)"
        }
        return (books + clips).joined(separator: "\n")
    }
}

func withEngineDrive(_ body: (GoogleEmulator) async throws -> Void) async throws {
    let emulator = try await GoogleEmulator.start()
    do {
        try await body(emulator)
    } catch {
        await emulator.stop()
        throw error
    }
    await emulator.stop()
}

extension GoogleEmulator {
    /// Names of every file in alice's Drive, duplicates included.
    func engineNames(_ email: String = "alice@example.com") async -> [String] {
        await state.dump(email: email).map(\.name).filter { $0.hasPrefix("book_") || $0.hasPrefix("clip_") }.sorted()
    }
}
