import ArgumentParser
import Foundation
import GoogleEmulator

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@main
struct EmulatorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ivy-emulator",
        abstract: "A fake Google (OAuth device sign-in and Drive v3) on 127.0.0.1, for trying and testing ivy.",
        subcommands: [Serve.self, Approve.self, Deny.self],
        defaultSubcommand: Serve.self
    )
}

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the emulator; the first line printed is its URL.",
        discussion: """
            Point ivy at it with IVY_OAUTH_URL and IVY_DRIVE_URL set to that URL, and give ivy the client id \
            and secret it prints. Accounts alice@example.com and bob@example.com exist. Stops cleanly on \
            SIGINT or SIGTERM, saving the Drive to --state when given.
            """)

    @Option(help: "The port to listen on; 0 picks a free one.") var port = 0
    @Option(help: ArgumentHelp("Keep the emulated Drive and tokens in FILE across restarts.", valueName: "FILE"))
    var state: String?
    @Option(help: "Delay every Google request by this many milliseconds.") var latency = 0
    @Option(help: "Seconds an access token lives.") var tokenLifetime = 3599
    @Option(help: ArgumentHelp("Add an account (repeatable).", valueName: "EMAIL")) var account: [String] = []
    @Option(help: "The seed of the emulator's random choices (ids, codes, tokens, faults); default: a new one.")
    var seed: UInt64?

    func run() async throws {
        // A fresh seed unless given: a state file holds ids that a reused seed would make again.
        let seed = seed ?? UInt64.random(in: .min ... .max)
        let emulatorState = EmulatorState(
            accounts: GoogleEmulator.defaultAccounts, clients: GoogleEmulator.defaultClients, clock: .system,
            seed: seed)
        if let state, FileManager.default.fileExists(atPath: state) {
            do {
                try await emulatorState.restore(from: Data(contentsOf: URL(fileURLWithPath: state)))
            } catch {
                throw ValidationError(
                    "cannot read the state file \(state): \(error.localizedDescription); move it aside to start empty")
            }
        }
        for email in account { await emulatorState.addAccount(EmulatedAccount(email: email)) }
        await emulatorState.setLatency(milliseconds: latency)
        await emulatorState.setTokenLifetime(seconds: tokenLifetime)

        let stop = SignalWaiter(signals: [SIGINT, SIGTERM])
        let emulator = try await GoogleEmulator.start(port: port, state: emulatorState)
        // Unbuffered: a script reading the first line must get it now, not at exit.
        let accounts = await emulatorState.accounts.map(\.email).joined(separator: ", ")
        FileHandle.standardOutput.write(
            Data(
                """
                \(emulator.baseURL.absoluteString)
                client id:     \(GoogleEmulator.defaultClient.id)
                client secret: \(GoogleEmulator.defaultClient.secret)
                accounts:      \(accounts)
                seed:          \(seed)
                approve a sign-in with: ivy-emulator approve --url \(emulator.baseURL.absoluteString)

                """.utf8))

        await stop.wait()
        await emulator.stop()
        if let state {
            let data = try await emulatorState.snapshot()
            try data.write(to: URL(fileURLWithPath: state), options: .atomic)
        }
    }
}

/// Waits for one of `signals`, which are otherwise ignored so the process can shut down in order.
final class SignalWaiter {
    private let sources: [any DispatchSourceSignal]
    private let stream: AsyncStream<Void>

    init(signals: [Int32]) {
        let (stream, continuation) = AsyncStream<Void>.makeStream()
        self.stream = stream
        sources = signals.map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { continuation.yield() }
            source.resume()
            return source
        }
    }

    func wait() async {
        for await _ in stream { return }
    }
}

/// Options shared by the commands that talk to a running emulator.
struct Target: ParsableArguments {
    @Option(help: "The emulator's URL, as it printed it.") var url =
        ProcessInfo.processInfo.environment["IVY_OAUTH_URL"] ?? "http://127.0.0.1:8765"

    func post(_ path: String, _ body: [String: String]) async throws {
        guard let endpoint = URL(string: url + path) else { throw ValidationError("not a URL: \(url)") }
        var request = URLRequest(url: endpoint)
        request.httpMethod = "POST"
        request.httpBody = try JSONSerialization.data(withJSONObject: body)
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        let data: Data
        let response: URLResponse
        do {
            (data, response) = try await URLSession.shared.data(for: request)
        } catch {
            throw NoEmulator(url: url)
        }
        guard (response as? HTTPURLResponse)?.statusCode == 200 else {
            let reason = (try? JSONSerialization.jsonObject(with: data) as? [String: Any])?["error"] as? String
            throw ValidationError(reason ?? "the emulator refused the request")
        }
    }
}

/// Nothing answered at the emulator's address: one line that says so, and how to start one.
struct NoEmulator: Error, CustomStringConvertible {
    let url: String
    var description: String {
        "no emulator answers at \(url); start one with `ivy-emulator --state FILE` and pass the URL it prints (--url)"
    }
}

struct Approve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Approve a waiting sign-in, as the person at the browser would.")

    @OptionGroup var target: Target
    @Option(help: "The user code ivy printed; optional when only one sign-in waits.") var code: String?
    @Option(help: ArgumentHelp("The account to sign in as (default: the first).", valueName: "EMAIL")) var account:
        String?

    func run() async throws {
        var body: [String: String] = [:]
        body["user_code"] = code
        body["email"] = account
        try await target.post("/_emulator/approve", body)
        print("approved")
    }
}

struct Deny: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Deny a waiting sign-in.")

    @OptionGroup var target: Target
    @Option(help: "The user code ivy printed; optional when only one sign-in waits.") var code: String?

    func run() async throws {
        var body: [String: String] = [:]
        body["user_code"] = code
        try await target.post("/_emulator/deny", body)
        print("denied")
    }
}
