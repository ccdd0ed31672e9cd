import Foundation
import GoogleEmulator
import IvyCore
import IvyGoogle
import IvyStore
import IvySync
import IvySystem
import IvyTestSupport
import Logging
import Synchronization
import Testing

let alice = "alice@example.com"
let bob = "bob@example.com"
/// Bob's Drive permission id in the emulator's default accounts.
let bobPermissionID = "09998765432109876543"

/// One emulated Google shared by every device of a test, and a temporary directory for
/// their homes and audio. Made only by `withWorld`, which always stops the emulator.
final class World: Sendable {
    let emulator: GoogleEmulator
    /// The libraries' clock: it starts at the real time and moves 1 ms on with every read, so
    /// a write made later in a test is the later write for last-write-wins on any device.
    let clock = TestClock.ticking()
    private let temporary: TemporaryHome

    fileprivate init(emulator: GoogleEmulator, route: EmulatorRoute) throws {
        self.emulator = emulator
        transport = route.transport(to: emulator)
        temporary = try TemporaryHome(prefix: "ivy-sync")
    }

    var directory: String { temporary.path }
    var google: EmulatedGoogle { EmulatedGoogle(emulator, clock: clock.clock, transport: transport) }
    /// In-process unless the test asked `withWorld` for loopback HTTP.
    let transport: any HTTPTransport
    var state: EmulatorState { emulator.state }
    var endpoints: GoogleEndpoints { google.endpoints }

    /// A new device with an empty library, signed in as `email` (like `ivy login`).
    func device(_ name: String, as email: String = alice) async throws -> Device {
        let device = try await Device(name: name, world: self)
        try await device.signIn(as: email)
        return device
    }

    /// The files (folders excluded) in one account's Drive, content included.
    func files(_ email: String = alice) async -> [DriveFile] {
        await state.dump(email: email).filter { !$0.isFolder }
    }

    func names(_ email: String = alice) async -> [String] {
        await files(email).map(\.name).sorted()
    }

    /// The one file called `name` on Drive, failing the test when there is not exactly one.
    func file(_ name: String, _ email: String = alice) async throws -> DriveFile {
        let matches = await files(email).filter { $0.name == name }
        #expect(matches.count == 1, "expected one \(name) on Drive, found \(matches.count)")
        return try #require(matches.first)
    }

    /// The decoded content of a backup JSON on Drive.
    func json(_ name: String, _ email: String = alice) async throws -> [String: Any] {
        let file = try await file(name, email)
        return try #require(try JSONSerialization.jsonObject(with: file.content) as? [String: Any])
    }

    /// The id of ivy's `books` or `clips` folder.
    func folderID(_ name: String, _ email: String = alice) async throws -> String {
        let folders = await state.dump(email: email).filter { $0.isFolder && $0.name == name }
        #expect(folders.count == 1)
        return try #require(folders.first?.id)
    }

    /// Replaces a Drive file's content in place, its modified time moved on.
    func corrupt(_ name: String, content: Data = Data("{not json".utf8), _ email: String = alice) async throws {
        let file = try await file(name, email)
        // Keeps the new modifiedTime strictly after the one recorded in the manifests.
        await state.advanceClock(by: 0.002)
        try await state.corruptFile(id: file.id, content: content)
    }

    /// Requests the emulator logged since the last `clearRequests`, control calls excluded.
    func requests() async -> [LoggedRequest] {
        await state.requests.filter { !$0.path.hasPrefix("/_emulator/") }
    }
}

/// Runs `body` with a fresh emulator and temporary directory; the emulator is stopped and
/// the directory removed whether or not `body` throws. The devices reach the emulator
/// in-process (`EmulatorRoute.standard`): the sync, not HTTP, is what these tests are about.
func withWorld(_ route: EmulatorRoute = .standard, _ body: (World) async throws -> Void) async throws {
    try await withEmulator { emulator in
        await emulator.state.setDeviceCode(interval: 0)
        try await body(try World(emulator: emulator, route: route))
    }
}

/// Everything a device holds that must agree across devices: rows and audio bytes.
struct LibrarySnapshot: Equatable {
    var books: [Book]
    var clips: [Clip]
    var audio: [ClipID: Data]
}

/// One machine running ivy: its own IVY_HOME and library, signed in to the shared emulator.
/// Each `sync` goes through a fresh `SyncDoor`, as one `ivy sync` process does: the token
/// file, the sync lock, the settings and the Drive client's retries are production's.
final class Device: Sendable {
    let name: String
    let world: World
    let paths: IvyPaths
    let library: LibraryDatabase
    private let recordedSleeps = Mutex<[Duration]>([])
    /// The Drive client's pacing clock: it moves only with the waits, as the emulator's does.
    private let waited = Mutex<Duration>(.zero)

    init(name: String, world: World) async throws {
        self.name = name
        self.world = world
        paths = try IvyPaths.resolve(home: world.directory + "/" + name, environment: [:], workingDirectory: "/")
        library = try await LibraryDatabase(paths: paths, clock: world.clock.clock)
    }

    /// The retry and pacing waits the Drive client asked for. None is really waited: each
    /// moves the emulator's clock on instead, so rate limits refill in virtual time.
    var sleeps: [Duration] { recordedSleeps.withLock { $0 } }

    private var retrySleep: @Sendable (Duration) async throws -> Void {
        { [self] duration in
            recordedSleeps.withLock { $0.append(duration) }
            waited.withLock { $0 += duration }
            let seconds = Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
            await world.state.advanceClock(by: seconds)
        }
    }

    /// Signs in as `email` the way `ivy login` does (the person approves at once), binding
    /// the library to the account; returns whether that made it forget another account's sync.
    @discardableResult
    func signIn(as email: String) async throws -> Bool {
        let (_, signedIn) = try await world.google.signIn(as: email, library: library, paths: paths)
        #expect(signedIn.account.email == email)
        return signedIn.forgotOtherAccount
    }

    /// The door `ivy sync` goes through, in this device's home: the token file `signIn` saved,
    /// the emulator's endpoints and client, and retries that wait in the emulator's time;
    /// `deadlineSleep` waits out the sync's deadline (real time unless given).
    func door(deadlineSleep: (@Sendable (Duration) async throws -> Void)? = nil) -> SyncDoor {
        let google = world.google
        let sleep = retrySleep
        return SyncDoor(
            library: library, tokens: TokenStore(path: paths.tokenFile, warn: { _ in }), lockFile: paths.lockFile,
            clock: world.clock.clock, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }),
            setup: google.setup,
            effects: { [self] in google.effects(sleep: sleep, elapsed: { self.waited.withLock { $0 } }) },
            deadlineSleep: deadlineSleep ?? { try await Task.sleep(for: $0) })
    }

    /// One sync through the door; a sync that failed as a whole throws its error.
    func sync(
        _ request: SyncRequest = SyncRequest(), progress: (@Sendable (SyncProgress) -> Void)? = nil,
        deadlineSleep: (@Sendable (Duration) async throws -> Void)? = nil
    ) async throws -> SyncReport {
        var request = request
        if let progress { request.progress = progress }
        let door = door(deadlineSleep: deadlineSleep)
        let name = name
        // Where `ivy sync` runs it (`IvyCommand.main`): its synchronous library calls may wait
        // on SQLite, which must not hold the cooperative threads the in-process emulator needs.
        return try await BlockingExecutor.run {
            switch try await door.sync(request) {
            case .finished(let report, _): return report
            case .failed(let error, _): throw error
            case .signedOut(let error): throw error
            case .notSignedIn: throw DeviceError("\(name) is not signed in")
            case .busy: throw DeviceError("\(name) is already syncing")
            case .skipped(let why): throw DeviceError("\(name) skipped its sync: \(why)")
            }
        }
    }

    /// A sync under a rate limit so tight that one of the concurrent transfers may lose every
    /// race for the bucket's refills and run out of attempts (seen at a load of 20). That one is
    /// left for the next sync, as the report says, and that sync finishes it: only then is a
    /// second sync run, and only for rate-limit failures. Returns the last report and the
    /// books and clips `counted` over both.
    func syncThroughRateLimit(counting counted: KeyPath<SyncReport, SyncReport.Count>) async throws
        -> (report: SyncReport, counts: [Int])
    {
        let first = try await sync()
        guard !first.failures.isEmpty else { return (first, first[keyPath: counted].pair) }
        #expect(first.failures.allSatisfy { $0.reason.contains("rate limiting") }, "\(first.failures)")
        let second = try await sync()
        return (second, zip(first[keyPath: counted].pair, second[keyPath: counted].pair).map { $0 + $1 })
    }

    // MARK: library

    @discardableResult
    func addBook(_ title: String, position: Double = 0) async throws -> Book {
        try await library.addBook(
            id: BookID(UUID().uuidString.lowercased()), title: title, artist: nil, artwork: nil, position: position)
    }

    /// A clip with its own audio: a small file starting with an ID3 tag, unique bytes.
    @discardableResult
    func addClip(to book: Book, note: String? = nil, start: Double = 0) async throws -> Clip {
        let id = UUID().uuidString.lowercased()
        let source = world.directory + "/incoming-\(id).mp3"
        var bytes = Data("ID3".utf8)
        for round in 0..<64 { bytes.append(Data("\(id)-\(round);".utf8)) }
        try FileManager.default.createDirectory(atPath: world.directory, withIntermediateDirectories: true)
        try bytes.write(to: URL(fileURLWithPath: source))
        defer { try? FileManager.default.removeItem(atPath: source) }
        return try await library.addClip(
            id: ClipID(id), bookID: book.id, start: start, duration: 30, note: note, transcription: nil, audio: source)
    }

    func book(_ id: BookID) async throws -> Book? { try await library.book(id: id) }
    func clip(_ id: ClipID) async throws -> Clip? { try await library.clip(id: id) }

    @discardableResult
    func edit(book id: BookID, _ changes: BookChanges) async throws -> Book {
        let result = try await library.updateBook(id: id, changes)
        #expect(result.changed)
        return result.book
    }

    @discardableResult
    func edit(clip id: ClipID, _ changes: ClipChanges) async throws -> Clip {
        let result = try await library.updateClip(id: id, changes)
        #expect(result.changed)
        return result.clip
    }

    func audio(_ clipID: ClipID) -> Data? {
        FileManager.default.contents(atPath: library.audioPath(clipID: clipID))
    }

    func snapshot() async throws -> LibrarySnapshot {
        let clips = try await library.clips().sorted { $0.id < $1.id }
        return try await LibrarySnapshot(
            books: library.books(includeHidden: true).sorted { $0.id < $1.id }, clips: clips,
            audio: Dictionary(uniqueKeysWithValues: clips.map { ($0.id, audio($0.id) ?? Data()) }))
    }
}

/// Why a device's sync did not run.
struct DeviceError: Error, CustomStringConvertible {
    let description: String

    init(_ description: String) { self.description = description }
}

extension SyncReport {
    /// Nothing moved in either direction.
    var transferredNothing: Bool {
        uploaded.total == 0 && downloaded.total == 0 && merged.total == 0 && deletedRemote.total == 0
            && deletedLocal.total == 0
            && bytesUploaded == 0 && bytesDownloaded == 0
    }

    var skippedEntities: Set<String> { Set(skipped.map(\.entity)) }

    func skipReason(_ entity: String) -> String? { skipped.first { $0.entity == entity }?.reason }
}

/// Two devices of alice's sharing one synced library: a book (position 1:30:00) and a clip
/// without a note.
struct SyncedPair {
    let a: Device
    let b: Device
    let book: Book
    let clip: Clip

    init(_ world: World) async throws {
        a = try await world.device("a")
        b = try await world.device("b")
        book = try await a.addBook("Dune", position: 5400)
        clip = try await a.addClip(to: book, start: 120)
        let first = try await a.sync()
        #expect(first.uploaded.pair == [1, 1] && first.failures.isEmpty)
        let second = try await b.sync()
        #expect(second.downloaded.pair == [1, 1] && second.failures.isEmpty)
        #expect(try await a.snapshot() == b.snapshot())
    }
}

extension SyncReport.Count {
    /// `[books, clips]`, for comparisons in expectations.
    var pair: [Int] { [books, clips] }
}
