import Foundation
import Testing

@testable import IvyGoogle

/// The proxy rules as curl reads them (libcurl-env(3), CURLOPT_PROXY(3), CURLOPT_NOPROXY(3),
/// curl's lib/url.c and lib/noproxy.c), plus ivy's own: loopback is never proxied.
@Suite("Proxies from the environment, as curl reads them")
struct ProxyRulesTests {
    private func route(_ url: String, _ environment: [String: String]) throws -> ProxyServer? {
        try ProxyRules(environment: environment).route(for: try #require(URL(string: url)))
    }

    private func proxied(_ url: String, _ environment: [String: String]) throws -> String? {
        try route(url, environment).map { "\($0.host):\($0.port) \($0.variable)" }
    }

    @Test("https:// takes https_proxy, then HTTPS_PROXY, then all_proxy, then ALL_PROXY")
    func httpsVariables() throws {
        let all = [
            "https_proxy": "a.example:1", "HTTPS_PROXY": "b.example:2", "all_proxy": "c.example:3",
            "ALL_PROXY": "d.example:4",
        ]
        let google = "https://www.googleapis.com/drive/v3/files"
        #expect(try proxied(google, all) == "a.example:1 https_proxy")
        #expect(try proxied(google, all.filter { $0.key != "https_proxy" }) == "b.example:2 HTTPS_PROXY")
        #expect(
            try proxied(google, ["all_proxy": "c.example:3", "ALL_PROXY": "d.example:4"]) == "c.example:3 all_proxy")
        #expect(try proxied(google, ["ALL_PROXY": "d.example:4"]) == "d.example:4 ALL_PROXY")
        #expect(try proxied(google, [:]) == nil)
        // Set to nothing is set: no proxy, and the next variable is not read.
        #expect(try proxied(google, ["https_proxy": "", "HTTPS_PROXY": "b.example:2"]) == nil)
    }

    @Test("http:// takes http_proxy in lower case only, then all_proxy: HTTP_PROXY is a CGI request's header")
    func httpVariables() throws {
        let url = "http://example.com/check"
        #expect(
            try proxied(url, ["http_proxy": "a.example:1", "ALL_PROXY": "d.example:4"]) == "a.example:1 http_proxy")
        #expect(try proxied(url, ["HTTP_PROXY": "a.example:1"]) == nil)
        #expect(try proxied(url, ["HTTP_PROXY": "a.example:1", "ALL_PROXY": "d.example:4"]) == "d.example:4 ALL_PROXY")
        #expect(try proxied(url, ["https_proxy": "a.example:1"]) == nil, "https_proxy is for https:// alone")
    }

    @Test(
        "no_proxy: *, names and every name under them (with or without a leading dot), IPv4 and IPv6 and CIDR",
        arguments: [
            ("*", "www.googleapis.com", true),
            ("googleapis.com", "www.googleapis.com", true),
            ("googleapis.com", "googleapis.com", true),
            (".googleapis.com", "www.googleapis.com", true),
            (".googleapis.com", "googleapis.com", true),
            ("googleapis.com.", "www.googleapis.com", true),
            ("apis.com", "www.googleapis.com", false),
            ("googleapis.com", "googleapis.com.evil.example", false),
            ("GoogleAPIs.COM", "www.googleapis.com", true),
            ("example.org, googleapis.com", "www.googleapis.com", true),
            ("example.org,,googleapis.com", "www.googleapis.com", true),
            // A blank inside an entry ends the list, as in curl.
            ("example.org googleapis.com", "www.googleapis.com", false),
            ("*, example.org", "www.googleapis.com", false),
            // A port in an entry matches nothing (curl compares names); the URL's port plays no part.
            ("googleapis.com:443", "www.googleapis.com", false),
            ("10.1.2.3", "10.1.2.3", true),
            ("10.0.0.0/8", "10.1.2.3", true),
            ("10.0.0.0/16", "10.1.2.3", false),
            ("192.168.0.0/17", "192.168.127.1", true),
            ("192.168.0.0/17", "192.168.128.1", false),
            ("10.1.2.0", "10.1.2.3", false),
            ("1.2.3", "10.1.2.3", false),
            ("fd00::/8", "fd12::1", true),
            ("fd00::/8", "fe80::1", false),
            ("2001:db8::/33", "2001:db8:7fff::1", true),
            ("2001:db8::/33", "2001:db8:8000::1", false),
            ("2001:db8::1", "2001:db8::1", true),
            ("[2001:db8::1]", "2001:db8::1", false),
        ])
    func noProxy(list: String, host: String, exempt: Bool) throws {
        let url = host.contains(":") ? "https://[\(host)]:8443/x" : "https://\(host):8443/x"
        let environment = ["https_proxy": "proxy.example:3128", "no_proxy": list]
        #expect(try route(url, environment) == nil ? exempt : !exempt, "\(list) for \(host)")
    }

    @Test("no_proxy before NO_PROXY, and NO_PROXY alone")
    func noProxyVariables() throws {
        let url = "https://www.googleapis.com/"
        let proxy = ["https_proxy": "proxy.example:3128"]
        #expect(try route(url, proxy.merging(["NO_PROXY": "googleapis.com"]) { $1 }) == nil)
        #expect(try route(url, proxy.merging(["no_proxy": "example.org", "NO_PROXY": "googleapis.com"]) { $1 }) != nil)
    }

    @Test("this machine is never proxied: localhost, 127.0.0.0/8 and ::1, whatever no_proxy says")
    func loopback() throws {
        let every = [
            "http_proxy": "proxy.example:3128", "https_proxy": "proxy.example:3128", "all_proxy": "proxy.example:3128",
            "no_proxy": "",
        ]
        for url in ["http://127.0.0.1:4000/", "https://127.9.8.7/", "http://localhost:80/", "https://[::1]:4443/"] {
            #expect(try route(url, every) == nil, "\(url)")
        }
        #expect(try route("https://127.0.0.1.example.com/", every) != nil, "a name that only looks local is not")
    }

    @Test("a proxy: no scheme is http://, no port is 1080; credentials decoded, never shown")
    func server() throws {
        let plain = try #require(try route("https://x.example/", ["https_proxy": "proxy.example"]))
        #expect(plain.kind == .http && plain.host == "proxy.example" && plain.port == 1080)
        #expect(plain.shown == "http://proxy.example:1080")
        let signed = try #require(
            try route("https://x.example/", ["https_proxy": "http://al%40ice:p%3Ass@[fd00::5]:3128/path"]))
        #expect(signed.user == "al@ice" && signed.password == "p:ss" && signed.host == "fd00::5" && signed.port == 3128)
        #expect(signed.shown == "http://***@[fd00::5]:3128")
        #expect(!signed.shown.contains("p:ss") && !signed.shown.contains("ice"))
        let socks = try #require(try route("https://x.example/", ["ALL_PROXY": "socks5h://127.0.0.1:9050"]))
        #expect(socks.kind == .socks5 && socks.port == 9050)
    }

    @Test(
        "a proxy ivy cannot use fails the request with the variable's name and the fix, never its password",
        arguments: [
            "https://user:hunter2@proxy.example:3128", "socks4://user:hunter2@proxy.example",
            "http://user:hunter2@proxy.example:99999", "socks5://user:hunter2@proxy.example:1080",
        ])
    func unusable(value: String) throws {
        #expect {
            _ = try route("https://www.googleapis.com/", ["https_proxy": value])
        } throws: { error in
            let text = error.localizedDescription
            return (error as? TransportError)?.kind == .proxy && text.contains("https_proxy")
                && !text.contains("hunter2")
        }
    }

    @Test("no proxy variable at all: nothing is proxied, and the rules are empty")
    func none() throws {
        #expect(ProxyRules(environment: ["PATH": "/bin"]).isEmpty)
        #expect(!ProxyRules(environment: ["ALL_PROXY": "p.example"]).isEmpty)
        #expect(try route("https://www.googleapis.com/", ["no_proxy": "*"]) == nil)
    }
}
