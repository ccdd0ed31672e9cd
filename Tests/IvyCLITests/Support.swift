import Foundation
import GRDB
import Testing

/// What one run of the `ivy` binary printed and how it ended.
struct RunResult {
    let status: Int32
    let stdout: String
    let stderr: String

    var lines: [String] { stdout.split(separator: "\n").map(String.init) }

    func json() throws -> Any {
        try JSONSerialization.jsonObject(with: Data(stdout.utf8), options: [.fragmentsAllowed])
    }
}

/// The built `ivy` binary run in a fresh home, as a user would run it.
/// (`@unchecked`: its environment is set up before any concurrent use.)
final class IvyHome: @unchecked Sendable {
    let path: String
    var environment: [String: String]

    init() throws {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("ivy-cli-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        environment = ["IVY_HOME": path + "/home", "HOME": path, "PATH": "/usr/bin:/bin", "NO_COLOR": "1"]
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    var home: String { path + "/home" }

    /// The `ivy` binary beside this test bundle's executable in the build directory.
    static let binary: URL = {
        if let override = ProcessInfo.processInfo.environment["IVY_BINARY"] { return URL(fileURLWithPath: override) }
        let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        return executable.deletingLastPathComponent().appendingPathComponent("ivy")
    }()

    /// Runs `ivy` with `arguments`; output goes through files so large output cannot block.
    @discardableResult
    func run(_ arguments: String..., environment extra: [String: String] = [:]) throws -> RunResult {
        try run(arguments, environment: extra)
    }

    /// Runs `ivy` with `arguments`, started through `wrapper` when given (`["/bin/sh", "-c",
    /// "umask 002; exec \"$0\" \"$@\""]`, `setpriv …`): the wrapper's arguments, then the
    /// binary, then `arguments`.
    @discardableResult
    func run(
        _ arguments: [String], environment extra: [String: String] = [:], through wrapper: [String] = []
    ) throws -> RunResult {
        let process = Process()
        if let first = wrapper.first {
            process.executableURL = URL(fileURLWithPath: first)
            process.arguments = Array(wrapper.dropFirst()) + [Self.binary.path] + arguments
        } else {
            process.executableURL = Self.binary
            process.arguments = arguments
        }
        process.environment = environment.merging(extra) { $1 }
        process.currentDirectoryURL = URL(fileURLWithPath: path)
        let out = path + "/.stdout-\(UUID().uuidString)"
        let err = path + "/.stderr-\(UUID().uuidString)"
        _ = FileManager.default.createFile(atPath: out, contents: nil)
        _ = FileManager.default.createFile(atPath: err, contents: nil)
        let outHandle = try FileHandle(forWritingTo: URL(fileURLWithPath: out))
        let errHandle = try FileHandle(forWritingTo: URL(fileURLWithPath: err))
        process.standardOutput = outHandle
        process.standardError = errHandle
        process.standardInput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        try outHandle.close()
        try errHandle.close()
        defer {
            try? FileManager.default.removeItem(atPath: out)
            try? FileManager.default.removeItem(atPath: err)
        }
        return RunResult(
            status: process.terminationStatus,
            stdout: String(decoding: FileManager.default.contents(atPath: out) ?? Data(), as: UTF8.self),
            stderr: String(decoding: FileManager.default.contents(atPath: err) ?? Data(), as: UTF8.self))
    }

    /// Runs `ivy` on a GCD thread: waiting on a subprocess must not block Swift's few
    /// cooperative threads, which an in-process emulator needs to answer that subprocess.
    @discardableResult
    func runAsync(_ arguments: String..., environment extra: [String: String] = [:]) async throws -> RunResult {
        try await runAsync(arguments, environment: extra)
    }

    @discardableResult
    func runAsync(_ arguments: [String], environment extra: [String: String] = [:]) async throws -> RunResult {
        try await offCooperativePool { try self.run(arguments, environment: extra) }
    }

    /// Runs a command that must succeed and returns its output's first line.
    func id(_ arguments: String...) throws -> String {
        let result = try run(arguments)
        #expect(result.status == 0, "ivy \(arguments.joined(separator: " ")): \(result.stderr)")
        return result.lines.first ?? ""
    }

    /// An MP3-looking file (ID3 header) of `size` bytes, sparse beyond the header.
    func mp3(_ name: String, size: Int = 64, header: [UInt8] = Array("ID3\u{4}\0".utf8)) throws -> String {
        let target = path + "/" + name
        _ = FileManager.default.createFile(atPath: target, contents: Data(header))
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: target))
        try handle.truncate(atOffset: UInt64(max(size, header.count)))
        try handle.close()
        return target
    }

    /// Reads the library with plain SQL through a connection of its own.
    func sql(_ query: String) throws -> [Row] {
        try DatabaseQueue(path: home + "/library.db").read { db in try Row.fetchAll(db, sql: query) }
    }

    /// Writes with plain SQL, as another program would.
    func execute(_ statement: String) throws {
        try DatabaseQueue(path: home + "/library.db").write { db in try db.execute(sql: statement) }
    }

    func count(_ query: String) throws -> Int {
        try DatabaseQueue(path: home + "/library.db").read { db in try Int.fetchOne(db, sql: query) ?? -1 }
    }
}

/// Runs blocking work (subprocess waits, pipe reads) on a GCD thread and awaits it.
func offCooperativePool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        DispatchQueue.global().async { continuation.resume(with: Result { try work() }) }
    }
}
