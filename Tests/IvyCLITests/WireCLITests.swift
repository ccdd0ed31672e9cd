import Foundation
import GoogleEmulator
import IvyTestSupport
import Testing

/// ivy waiting on a server that accepted its connection and says nothing: the process must
/// wait in the kernel, not spin. (Under URLSession, `ivy login` waiting so used 69-85 % of a
/// core: libcurl's multi loop woke some 5,000 times a second.)
@Suite("Waiting on a silent server costs no CPU, through the binary")
struct SilentServerCLITests {
    /// How much of a core may go to waiting.
    static let allowed = 0.02
    /// How long the waiting is watched: long enough for 2 % to be 6 clock ticks.
    static let window = Duration.seconds(3)

    static func signalled(_ exit: ChildExit) -> Bool {
        if case .signalled = exit { return true }
        return false
    }

    /// Runs `command`, waits until `silent` has heard its request, and returns the share of a
    /// core the process used while it waited for the answer; then stops it with SIGTERM (twice
    /// for a sync on a terminal, whose first lets the request in flight go on).
    private func waitingShare(_ command: ChildCommand, on silent: SilentServer) async throws -> (
        Double?, String
    ) {
        try await withChild(command) { child in
            // The request heard, or ivy gone without sending it (which fails below, its output shown).
            let heard = await withTaskGroup(of: Bool.self) { group in
                group.addTask {
                    await silent.waitForRequests(count: 1)
                    return !Task.isCancelled
                }
                group.addTask {
                    _ = try? await child.wait(within: .seconds(120))
                    return false
                }
                let first = await group.next() ?? false
                group.cancelAll()
                return first
            }
            #expect(heard, "ivy sent nothing: \(child.stderr) \(child.stdout)")
            let share = try await ProcessCPU.share(of: child.pid, over: Self.window)
            child.send(SIGTERM)
            if command.terminal.contains(.error) {
                // A sync lets what is in flight finish at the first signal, and stops at once at the second.
                _ = try await child.waitUntil("the first signal said") { progress in
                    progress.text(of: .error).contains("interrupt again to stop at once") ? true : nil
                }
                child.send(SIGTERM)
            }
            let exit = try await child.wait()
            #expect(!Self.signalled(exit), "ivy ends by its own exit on SIGTERM, not by a signal: \(exit)")
            return (share, "\(exit): \(child.stderr)")
        }
    }

    @Test("ivy login waiting on a server that never answers uses under 2 % of a core")
    func login() async throws {
        let home = try IvyHome()
        let (share, ended) = try await withSilentServer { silent in
            let environment = [
                "IVY_OAUTH_URL": silent.url, "IVY_DRIVE_URL": silent.url, "IVY_CLIENT_ID": "client.example",
                "IVY_CLIENT_SECRET": "not-a-secret",
            ]
            return try await waitingShare(home.command(["login"], environment: environment), on: silent)
        }
        let used = try #require(share, "ivy ended before it could be watched: \(ended)")
        #expect(used < Self.allowed, "ivy login used \(Int(used * 100)) % of a core waiting")
    }

    @Test("ivy sync waiting on a silent Drive uses under 2 % of a core")
    func sync() async throws {
        try await withEmulator { emulator in
            let laptop = try await SignInHarness.signedIn(emulator)
            _ = try await laptop.ivy.id("book", "add", "--title", "Dune")
            let (share, ended) = try await withSilentServer { silent in
                // The sign-in moved to the silent server (its access token still good for an hour).
                var token = try laptop.storedToken()
                token["oauth_url"] = silent.url
                token["drive_url"] = silent.url
                try JSONSerialization.data(withJSONObject: token).write(to: URL(fileURLWithPath: laptop.tokenFile))
                var command = laptop.ivy.command(
                    ["sync"], environment: ["IVY_OAUTH_URL": silent.url, "IVY_DRIVE_URL": silent.url])
                command.terminal = [.error]
                command.columns = 200
                return try await waitingShare(command, on: silent)
            }
            let used = try #require(share, "ivy ended before it could be watched: \(ended)")
            #expect(used < Self.allowed, "ivy sync used \(Int(used * 100)) % of a core waiting")
        }
    }
}

/// Proxies as curl reads them (`ProxyRules`), through the binary, against a CONNECT proxy the
/// test starts. The emulator speaks plain http on loopback, which is never proxied (so those
/// tests prove only that nothing goes to the proxy); here ivy is pointed at https:// servers
/// that only look remote, `0.0.0.0` (which Linux answers at once, refusing the connection) and
/// a `.invalid` name (which no resolver knows), so which way each request went is plain:
/// through the proxy, a CONNECT it counted; straight, refused or unknown without one.
/// (`ProxiedTransportTests` carries a whole exchange through the proxy to the emulator.)
@Suite("Proxies, through the binary")
struct ProxyCLITests {
    static let credentials = "ivy-user:hunter2-proxy"

    @Test("login through https_proxy: a CONNECT to the sign-in's server with the proxy's credentials, never shown")
    func throughProxy() async throws {
        let home = try IvyHome()
        try await withConnectProxy(route: ConnectProxy.nowhere) { proxy in
            let shown = proxy.url.replacingOccurrences(of: "http://", with: "http://\(Self.credentials)@")
            let result = try await home.runBinaryAsync(
                ["login"],
                environment: [
                    "IVY_OAUTH_URL": "https://oauth.ivy-test.invalid",
                    "IVY_DRIVE_URL": "https://oauth.ivy-test.invalid",
                    "IVY_CLIENT_ID": "client.example", "IVY_CLIENT_SECRET": "not-a-secret", "https_proxy": shown,
                ])
            #expect(result.status != 0)
            let tunnels = proxy.tunnels
            #expect(!tunnels.isEmpty && tunnels.allSatisfy { $0.target == "oauth.ivy-test.invalid:443" }, "\(tunnels)")
            let basic = "Basic " + Data(Self.credentials.utf8).base64EncodedString()
            #expect(tunnels.allSatisfy { $0.authorization == basic }, "\(tunnels)")
            #expect(
                result.stderr.contains(
                    "the proxy http://***@127.0.0.1:\(proxy.port) (from https_proxy) refused the tunnel"),
                "\(result.stderr)")
            #expect(!(result.stdout + result.stderr).contains("hunter2"))
        }
    }

    @Test(
        "no_proxy sends a host straight, by name or address; HTTPS_PROXY and ALL_PROXY are read; HTTP_PROXY is not",
        arguments: [
            (["https_proxy": "PROXY"], "0.0.0.0", true),
            (["HTTPS_PROXY": "PROXY"], "0.0.0.0", true),
            (["ALL_PROXY": "PROXY"], "0.0.0.0", true),
            (["HTTP_PROXY": "PROXY", "http_proxy": "PROXY"], "0.0.0.0", false),
            (["https_proxy": "PROXY", "no_proxy": "0.0.0.0"], "0.0.0.0", false),
            (["https_proxy": "PROXY", "NO_PROXY": "0.0.0.0/8"], "0.0.0.0", false),
            (["https_proxy": "PROXY", "no_proxy": "*"], "0.0.0.0", false),
        ])
    func route(variables: [String: String], host: String, proxied: Bool) async throws {
        let home = try IvyHome()
        try await withConnectProxy(route: ConnectProxy.nowhere) { proxy in
            var environment = variables.mapValues { $0.replacingOccurrences(of: "PROXY", with: proxy.url) }
            environment.merge([
                "IVY_OAUTH_URL": "https://\(host):1", "IVY_DRIVE_URL": "https://\(host):1",
                "IVY_CLIENT_ID": "client.example", "IVY_CLIENT_SECRET": "not-a-secret",
            ]) { $1 }
            let result = try await home.runBinaryAsync(["login"], environment: environment)
            #expect(result.status != 0)
            if proxied {
                #expect(!proxy.tunnels.isEmpty && proxy.tunnels.allSatisfy { $0.target == "\(host):1" })
                #expect(result.stderr.contains("refused the tunnel to \(host):1"), "\(result.stderr)")
            } else {
                #expect(proxy.tunnels.isEmpty, "\(proxy.tunnels)")
                #expect(result.stderr.contains("no connection to \(host):1 (connection refused)"), "\(result.stderr)")
            }
        }
    }

    @Test("the health URL goes by the same rules: an https:// one through https_proxy, one in no_proxy straight")
    func healthPings() async throws {
        try await withEmulator { emulator in
            try await withConnectProxy(route: ConnectProxy.nowhere) { proxy in
                let device = try await SignInHarness.signedIn(emulator)
                #expect(try await device.ivy.run("config", "set", "health_url", "https://0.0.0.0:1/check").status == 0)
                _ = try await device.ivy.id("book", "add", "--title", "Dune")
                let sync = try await device.ivy.runBinaryAsync(["sync"], environment: ["https_proxy": proxy.url])
                #expect(sync.status == 0, "\(sync.stderr)")
                // The start ping and the success ping; Google's emulator on loopback went straight.
                #expect(proxy.tunnels.map(\.target) == ["0.0.0.0:1", "0.0.0.0:1"], "\(proxy.tunnels)")
                let straight = try await device.ivy.runBinaryAsync(
                    ["sync"], environment: ["https_proxy": proxy.url, "no_proxy": "0.0.0.0"])
                #expect(straight.status == 0, "\(straight.stderr)")
                #expect(proxy.tunnels.count == 2, "\(proxy.tunnels)")
            }
        }
    }
}

/// `IVY_CA_FILE` through the binary: given at `ivy login`, recorded with the sign-in, trusted by
/// every later run, and never changed by one.
@Suite("IVY_CA_FILE is recorded with the sign-in, through the binary")
struct CertificateAuthorityCLITests {
    @Test("login records it; a sync may name it again or not at all, and is refused naming another, with the fix")
    func recorded() async throws {
        // Plain http: the file's authority is not the emulator's; what is tested is its record.
        try await withEmulator(tls: false) { emulator in
            let harness = try SignInHarness(emulator: emulator)
            let authority = try TestAuthority.write(in: harness.ivy.path)
            harness.ivy.environment["IVY_CA_FILE"] = authority
            #expect(try await harness.login().status == 0)
            #expect(try harness.storedToken()["ca_file"] as? String == authority)
            _ = try await harness.ivy.id("book", "add", "--title", "Dune")

            let again = try await harness.ivy.runBinaryAsync(["sync"])
            #expect(again.status == 0, "\(again.stderr)")
            harness.ivy.environment["IVY_CA_FILE"] = nil
            let recorded = try await harness.ivy.runBinaryAsync(["sync"])
            #expect(recorded.status == 0, "\(recorded.stderr)")

            let other = try TestAuthority.write(in: harness.ivy.path, name: "other.pem")
            let refused = try await harness.ivy.runBinaryAsync(["sync"], environment: ["IVY_CA_FILE": other])
            #expect(refused.status != 0)
            #expect(
                refused.stderr.contains(
                    "IVY_CA_FILE=\(other), but this sign-in was made trusting \(authority), and it trusts only that; "
                        + "unset IVY_CA_FILE to use it, or run `ivy login` to sign in trusting \(other)"),
                "\(refused.stderr)")
        }
    }
}
