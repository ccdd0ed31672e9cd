import Foundation
import GoogleEmulator
import IvyTestSupport
import Testing

/// ivy waiting on a server that accepted its connection and says nothing: the process must
/// wait in the kernel, not spin. (Under URLSession, `ivy login` waiting so used 69-85 % of a
/// core: libcurl's multi loop woke some 5,000 times a second.) The CPU is the whole life's,
/// as the shell that ran ivy counts it (`times`), over the whole wait to ivy's own end: a
/// figure no scheduling delay of the test's can spoil (a window the test watched once began
/// after ivy's 60 s had all but passed, on a machine at full load).
@Suite("Waiting on a silent server costs no CPU, through the binary")
struct SilentServerCLITests {
    /// How much of a core may go to waiting (and starting, which takes some 0.1 s).
    static let allowed = 0.02
    /// Runs ivy and then the shell's `times`, whose second line is its children's CPU time.
    static let counted = ["/bin/sh", "-c", #""$@"; status=$?; times; exit $status"#, "sh"]

    static func signalled(_ exit: ChildExit) -> Bool {
        if case .signalled = exit { return true }
        return false
    }

    /// The CPU seconds the shell's `times` says its child used (user and system).
    static func childSeconds(_ output: String) -> Double? {
        let line = /(\d+)m([\d.]+)s (\d+)m([\d.]+)s/
        guard let last = output.matches(of: line).last?.output,
            let userMinutes = Double(last.1), let user = Double(last.2),
            let systemMinutes = Double(last.3), let system = Double(last.4)
        else { return nil }
        return (userMinutes + systemMinutes) * 60 + user + system
    }

    /// Runs `command` through the counting shell to its own end (the silence's limit) and
    /// returns the share of a core it used over its life, and how it ended.
    private func lifeShare(_ command: ChildCommand, on silent: SilentServer) async throws -> (Double?, String) {
        let started = ContinuousClock.now
        let result = try await runChild(command, within: .seconds(180))
        let lived = (ContinuousClock.now - started) / .seconds(1)
        #expect(silent.requests > 0, "ivy sent nothing: \(result.stderr)")
        return (Self.childSeconds(result.stdout).map { $0 / lived }, "\(result.exit): \(result.stderr)")
    }

    @Test("ivy login waiting on a server that never answers uses under 2 % of a core, and says so after 60 s")
    func login() async throws {
        let home = try IvyHome()
        let (share, ended) = try await withSilentServer { silent in
            let environment = [
                "IVY_OAUTH_URL": silent.url, "IVY_DRIVE_URL": silent.url, "IVY_CLIENT_ID": "client.example",
                "IVY_CLIENT_SECRET": "not-a-secret",
            ]
            return try await lifeShare(
                home.command(["login"], environment: environment, through: Self.counted), on: silent)
        }
        #expect(ended.contains("sent nothing for 60 s; check the network and try again"), "\(ended)")
        let used = try #require(share, "the shell counted nothing: \(ended)")
        #expect(used < Self.allowed, "ivy login used \(Int(used * 100)) % of a core waiting")
    }

    /// A device signed in with the emulator whose sign-in was moved to `silent`, its access
    /// token still good for an hour, one book queued.
    private func movedToSilence(_ emulator: GoogleEmulator, _ silent: SilentServer) async throws -> SignInHarness {
        let laptop = try await SignInHarness.signedIn(emulator)
        _ = try await laptop.ivy.id("book", "add", "--title", "Dune")
        var token = try laptop.storedToken()
        token["oauth_url"] = silent.url
        token["drive_url"] = silent.url
        try JSONSerialization.data(withJSONObject: token).write(to: URL(fileURLWithPath: laptop.tokenFile))
        laptop.ivy.environment["IVY_OAUTH_URL"] = silent.url
        laptop.ivy.environment["IVY_DRIVE_URL"] = silent.url
        return laptop
    }

    @Test("ivy sync waiting on a silent Drive uses under 2 % of a core, and ends at its silence budget")
    func sync() async throws {
        try await withEmulator { emulator in
            let (share, ended) = try await withSilentServer { silent in
                let laptop = try await movedToSilence(emulator, silent)
                return try await lifeShare(laptop.ivy.command(["sync"], through: Self.counted), on: silent)
            }
            #expect(ended.hasPrefix("exit 1"), "\(ended)")
            let used = try #require(share, "the shell counted nothing: \(ended)")
            #expect(used < Self.allowed, "ivy sync used \(Int(used * 100)) % of a core waiting")
        }
    }

    @Test("SIGTERM to a sync waiting on a silent Drive ends it by its own exit, not by the signal")
    func interrupted() async throws {
        try await withEmulator { emulator in
            try await withSilentServer { silent in
                let laptop = try await movedToSilence(emulator, silent)
                var command = laptop.ivy.command(["sync"])
                command.terminal = [.error]
                command.columns = 200
                try await withChild(command) { child in
                    // The request heard, or ivy gone without sending it (which fails below).
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
                    #expect(heard, "ivy sent nothing: \(child.stderr) \(child.terminal)")
                    child.send(SIGTERM)
                    // A sync lets what is in flight finish at the first signal, and stops at once at the second.
                    _ = try await child.waitUntil("the first signal said") { progress in
                        progress.text(of: .error).contains("interrupt again to stop at once") ? true : nil
                    }
                    child.send(SIGTERM)
                    let exit = try await child.wait()
                    #expect(!Self.signalled(exit), "ivy ends by its own exit on SIGTERM, not by a signal: \(exit)")
                }
            }
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
