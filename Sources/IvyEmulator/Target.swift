import ArgumentParser
import Foundation
import GoogleEmulator
import IvyCore

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Options shared by the commands that talk to a running emulator.
struct Target: ParsableArguments {
    @Option(help: ArgumentHelp("The emulator's URL, as it printed it (default: $IVY_OAUTH_URL).", valueName: "URL"))
    var url: String?

    /// A session that keeps nothing on disk. URLSessionConfiguration.default alone would
    /// create ~/.cache/org.swift.foundation.URLCache/ivy-emulator and, for cookies,
    /// ~/.local/share/<this program's directory>: a command that only asks the emulator
    /// something must leave no trace in the user's home.
    private static let session: URLSession = {
        // Foundation's cookie store finds its directory under the XDG data home, which
        // nothing else here reads.
        setenv("XDG_DATA_HOME", "/dev/null", 1)
        // The emulator is on this machine: its control requests never go through a proxy.
        let noProxy = ProcessInfo.processInfo.environment["no_proxy"] ?? ProcessInfo.processInfo.environment["NO_PROXY"]
        setenv("no_proxy", LoopbackProxy.noProxy(noProxy), 1)
        URLCache.shared = URLCache(memoryCapacity: 0, diskCapacity: 0, diskPath: "/dev/null")
        let configuration = URLSessionConfiguration.default
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.httpCookieStorage = nil
        configuration.httpShouldSetCookies = false
        configuration.urlCredentialStorage = nil
        // Generous: an emulator in a busy test process can take a while to answer; one that is
        // not running at all is refused at once.
        configuration.timeoutIntervalForRequest = 60
        return URLSession(configuration: configuration)
    }()

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
        var request = URLRequest(url: endpoint)
        request.httpMethod = method
        request.setValue(secret, forHTTPHeaderField: EmulatorState.controlSecretHeader)
        if let body {
            request.httpBody = try JSONSerialization.data(withJSONObject: body)
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        let data: Data
        let response: URLResponse
        do {
            (data, response) = try await Self.session.data(for: request)
        } catch let error as URLError where error.code == .timedOut {
            throw EmulatorFailure("the emulator at \(url) did not answer within a minute")
        } catch {
            throw NoEmulator(url: url)
        }
        let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
        let status = (response as? HTTPURLResponse)?.statusCode
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
