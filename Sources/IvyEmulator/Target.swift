import ArgumentParser
import AsyncHTTPClient
import Foundation
import GoogleEmulator
import IvyCore
import NIOCore
import NIOHTTP1
import NIOSSL

/// Options shared by the commands that talk to a running emulator.
struct Target: ParsableArguments {
    @Option(help: ArgumentHelp("The emulator's URL, as it printed it (default: $IVY_OAUTH_URL).", valueName: "URL"))
    var url: String?

    /// AsyncHTTPClient, which keeps nothing on disk and takes no proxy from the environment
    /// (the emulator is on this machine). An emulator serving TLS is trusted through the CA
    /// file its export line names (`IVY_CA_FILE`), besides the system's roots.
    private func client() throws -> HTTPClient {
        var configuration = HTTPClient.Configuration()
        if let caFile = ProcessInfo.processInfo.environment["IVY_CA_FILE"], !caFile.isEmpty {
            var tls = TLSConfiguration.makeClientConfiguration()
            do {
                tls.additionalTrustRoots = [.certificates(try NIOSSLCertificate.fromPEMFile(caFile))]
            } catch {
                throw EmulatorFailure(
                    "cannot read IVY_CA_FILE \(caFile) (\(error)): set it to the file the emulator's export line names")
            }
            configuration.tlsConfiguration = tls
        }
        // A failed connection fails at once: the emulator is on this machine or not running.
        configuration.connectionPool.retryConnectionEstablishment = false
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }

    func resolvedURL() throws -> String {
        guard let url = url ?? ProcessInfo.processInfo.environment["IVY_OAUTH_URL"], !url.isEmpty else {
            throw ValidationError(
                "which emulator? Give --url URL, or set IVY_OAUTH_URL, as `eval \"$(ivy-emulator --background)\"` "
                    + "or the export line ivy-emulator prints does")
        }
        return url
    }

    /// The control API's secret, from the environment: never an option, which every user of
    /// the machine could read in the process list.
    func controlSecret() throws -> String {
        guard let secret = ProcessInfo.processInfo.environment["IVY_EMULATOR_SECRET"], !secret.isEmpty else {
            throw ValidationError(
                "the emulator's control API needs its secret: set IVY_EMULATOR_SECRET, as "
                    + "`eval \"$(ivy-emulator --background)\"` or the export line ivy-emulator prints does")
        }
        return secret
    }

    /// The answer of the control API at `path`, as a JSON object.
    func call(_ method: String, _ path: String, _ body: [String: String]? = nil) async throws -> [String: Any] {
        let url = try resolvedURL()
        let secret = try controlSecret()
        guard let endpoint = URL(string: url + path) else { throw ValidationError("not a URL: \(url)") }
        var request = HTTPClientRequest(url: endpoint.absoluteString)
        request.method = HTTPMethod(rawValue: method)
        request.headers.add(name: EmulatorState.controlSecretHeader, value: secret)
        if let body {
            request.body = .bytes(ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: body)))
            request.headers.add(name: "Content-Type", value: "application/json")
        }
        let client = try client()
        let data: Data
        let status: Int
        do {
            // Generous: an emulator in a busy test process can take a while to answer; one
            // that is not running at all is refused at once.
            let response = try await client.execute(request, timeout: .seconds(60))
            status = Int(response.status.code)
            data = Data((try await response.body.collect(upTo: 16 << 20)).readableBytesView)
            try? await client.shutdown()
        } catch {
            try? await client.shutdown()
            if error is NIOSSLError {
                throw EmulatorFailure(
                    "the emulator at \(url) is not vouched for by IVY_CA_FILE (\(error)): set IVY_CA_FILE to the "
                        + "file its export line names")
            }
            if let error = error as? HTTPClientError, error == .deadlineExceeded {
                throw EmulatorFailure("the emulator at \(url) did not answer within a minute")
            }
            throw NoEmulator(url: url)
        }
        let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
        if status == 401 || status == 403 {
            throw EmulatorFailure(
                "the emulator at \(url) refused IVY_EMULATOR_SECRET: it is not the secret that emulator printed; "
                    + "take it from its export line (an emulator makes a new one each time it starts)")
        }
        guard status == 200, let object else {
            throw EmulatorFailure(object?["error"] as? String ?? "the emulator refused the request")
        }
        return object
    }

    /// The sign-in to act on: `code` when given; else the newest one asked for or polled since
    /// this command first looked, waiting up to `wait` seconds for one. Also answers the other
    /// sign-ins left waiting.
    func chooseSignIn(code: String?, wait: Int) async throws -> (code: String, others: [String], allOlder: Bool) {
        if let code { return (code, [], true) }
        let deadline = Date().addingTimeInterval(TimeInterval(max(0, wait)))
        var told = false
        var mark: Int?
        while true {
            let answer = try await call("GET", "/_emulator/pending")
            let signIns = (answer["sign_ins"] as? [[String: Any]] ?? []).compactMap(PendingSignIn.init)
            // A live `ivy login` polls every few seconds; a stopped one never again, yet its
            // sign-in looks fresh for a minute. Only a sign-in asked for or polled after the
            // first look is surely someone's, so a login killed just before this one started
            // is never approved in its place.
            let first = mark ?? (answer["events"] as? Int ?? 0)
            mark = first
            if let newest = signIns.filter({ $0.lastEvent > first }).max(by: { $0.order < $1.order }) {
                let others = signIns.filter { $0.order != newest.order }
                return (newest.code, others.map(\.code), others.allSatisfy { $0.order < newest.order })
            }
            guard Date() < deadline else {
                var message = "no sign-in is waiting at \(try resolvedURL()); start `ivy login` first"
                if !signIns.isEmpty {
                    let codes = signIns.map(\.code).joined(separator: ", ")
                    message +=
                        " (\(codes) \(signIns.count == 1 ? "was" : "were") left by a login that stopped "
                        + "polling; name one with --code to act on it anyway)"
                }
                throw EmulatorFailure(message)
            }
            if !told && isatty(STDERR_FILENO) == 1 {
                write("waiting up to \(wait) s for a sign-in (start `ivy login`)…\n", to: STDERR_FILENO)
                told = true
            }
            // A person waiting on a server, not a test: a short poll interval is responsive
            // and costs the loopback emulator nothing.
            try await Task.sleep(for: .milliseconds(200))
        }
    }

    /// Tells what else is still waiting, so the right code can be picked next time.
    func reportOthers(_ others: [String], allOlder: Bool) {
        guard !others.isEmpty else { return }
        print(
            "left pending: \(others.joined(separator: ", ")) (\(allOlder ? "older" : "other") "
                + "sign-in\(others.count == 1 ? "" : "s"); pick one with --code)")
    }
}
