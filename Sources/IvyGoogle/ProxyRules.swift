package import Foundation
import IvyCore

#if canImport(Glibc)
    import Glibc
#endif

/// A proxy as an environment variable names it: `[scheme://][user:password@]host[:port]`.
package struct ProxyServer: Sendable, Hashable {
    package enum Kind: Sendable, Hashable {
        /// An HTTP proxy, asked to tunnel each connection with CONNECT.
        case http
        /// A SOCKS5 proxy (`socks5://` and `socks5h://` alike: the proxy resolves the name).
        case socks5
    }

    package var kind: Kind
    package var host: String
    package var port: Int
    package var user: String?
    package var password: String?
    /// The variable that named it (`https_proxy`), for messages.
    package var variable: String

    /// What a message shows: the scheme, host and port, and `***@` for credentials, never
    /// the credentials themselves.
    package var shown: String {
        let scheme = kind == .http ? "http" : "socks5"
        let credentials = user == nil && password == nil ? "" : "***@"
        let name = host.contains(":") ? "[\(host)]" : host
        return "\(scheme)://\(credentials)\(name):\(port)"
    }
}

/// Which requests go through a proxy, read from the environment as curl (and so ivy's
/// URLSession before issue 49) read it (libcurl-env(3), CURLOPT_PROXY(3), CURLOPT_NOPROXY(3),
/// curl's lib/url.c `detect_proxy` and lib/noproxy.c):
/// - an https:// URL takes `https_proxy`, else `HTTPS_PROXY`; an http:// URL takes
///   `http_proxy`, lower case only (a CGI program's environment has `HTTP_PROXY` from a
///   request's `Proxy:` header); either falls back to `all_proxy`, then `ALL_PROXY`. A variable
///   set to nothing counts as set: no proxy, and the next is not read.
/// - `no_proxy` (else `NO_PROXY`) lists hosts that go direct: `*` alone for all; a name, which
///   also covers every name under it (`example.com` and `.example.com` both cover
///   `www.example.com`, never `notexample.com`); an IPv4 or IPv6 address (without brackets),
///   or a CIDR range of them (`10.0.0.0/8`, `fd00::/8`). The URL's port plays no part.
/// - a proxy with no scheme is `http://`; with no port, port 1080.
/// And one rule of ivy's own: this machine (`localhost`, 127.0.0.0/8, ::1) is never proxied,
/// so an emulator's requests, with their bearer token, and a health ping to a local monitor
/// never reach a proxy.
package struct ProxyRules: Sendable, Hashable {
    /// A variable and its value, as the environment had them.
    struct Setting: Sendable, Hashable {
        var variable: String
        var value: String
    }

    var https: Setting?
    var http: Setting?
    var noProxy: String?

    /// No proxy for anything.
    package init() {}

    package init(environment: [String: String]) {
        func first(_ names: [String]) -> Setting? {
            names.lazy.compactMap { name in environment[name].map { Setting(variable: name, value: $0) } }.first
        }
        https = first(["https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"])
        http = first(["http_proxy", "all_proxy", "ALL_PROXY"])
        noProxy = environment["no_proxy"] ?? environment["NO_PROXY"]
    }

    /// Whether any proxy is named at all.
    package var isEmpty: Bool {
        [https, http].allSatisfy { ($0?.value ?? "").isEmpty }
    }

    /// The proxy a request to `url` goes through, or nil for straight there. A proxy variable
    /// ivy cannot use (an https:// or SOCKS4 proxy, a port that is no port) fails the request
    /// with the reason, rather than sending it past the proxy the user named.
    package func route(for url: URL) throws(TransportError) -> ProxyServer? {
        let setting: Setting?
        switch url.scheme?.lowercased() {
        case "https": setting = https
        case "http": setting = http
        default: return nil
        }
        guard let setting, !setting.value.isEmpty else { return nil }
        guard var host = url.host?.lowercased(), !host.isEmpty else { return nil }
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        if GoogleEndpoints.isLoopback(host) || NoProxy.matches(host, noProxy) { return nil }
        return try Self.server(setting)
    }

    /// The proxy `setting` names.
    static func server(_ setting: Setting) throws(TransportError) -> ProxyServer {
        var rest = Substring(setting.value.trimmingCharacters(in: .whitespaces))
        var scheme = "http"
        if let separator = rest.range(of: "://") {
            scheme = rest[..<separator.lowerBound].lowercased()
            rest = rest[separator.upperBound...]
        }
        // The path, if any, means nothing to a proxy.
        rest = rest.prefix { !"/?#".contains($0) }
        var user: String?
        var password: String?
        if let at = rest.lastIndex(of: "@") {
            let userinfo = rest[..<at]
            rest = rest[rest.index(after: at)...]
            if let colon = userinfo.firstIndex(of: ":") {
                user = String(userinfo[..<colon]).removingPercentEncoding ?? String(userinfo[..<colon])
                let secret = userinfo[userinfo.index(after: colon)...]
                password = String(secret).removingPercentEncoding ?? String(secret)
            } else {
                user = String(userinfo).removingPercentEncoding ?? String(userinfo)
            }
        }
        var host: Substring
        var portText: Substring?
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else {
                throw unusable(setting, scheme: scheme, "its IPv6 address has no closing ]")
            }
            host = rest[rest.index(after: rest.startIndex)..<close]
            let after = rest[rest.index(after: close)...]
            if after.hasPrefix(":") { portText = after.dropFirst() }
        } else if let colon = rest.lastIndex(of: ":") {
            host = rest[..<colon]
            portText = rest[rest.index(after: colon)...]
        } else {
            host = rest
        }
        guard !host.isEmpty else { throw unusable(setting, scheme: scheme, "it names no host") }
        var port = 1080
        if let portText, !portText.isEmpty {
            guard let number = Int(portText), (1...65535).contains(number) else {
                throw unusable(setting, scheme: scheme, "its port is not a number from 1 to 65535")
            }
            port = number
        }
        let kind: ProxyServer.Kind
        switch scheme {
        case "http": kind = .http
        case "socks5", "socks5h": kind = .socks5
        default:
            throw unusable(
                setting, scheme: scheme,
                "ivy speaks to an http:// or socks5:// proxy only (not \(scheme)://)")
        }
        let server = ProxyServer(
            kind: kind, host: host.lowercased(), port: port, user: user, password: password,
            variable: setting.variable)
        if kind == .socks5, user != nil || password != nil {
            throw TransportError(
                .proxy,
                "\(setting.variable) names \(server.shown), a SOCKS5 proxy with a user name, which ivy cannot "
                    + "sign in to; use an http:// proxy, or one that needs no user name")
        }
        return server
    }

    /// The error for a proxy variable ivy cannot use; its value is never shown whole, as it
    /// may hold a password.
    private static func unusable(_ setting: Setting, scheme: String, _ why: String) -> TransportError {
        let masked = URLText.masked(setting.value.contains("://") ? setting.value : "\(scheme)://\(setting.value)")
        return TransportError(
            .proxy, "\(setting.variable)=\(masked) cannot be used: \(why); correct or unset \(setting.variable)")
    }
}

/// curl's `no_proxy` matching (lib/noproxy.c `Curl_check_noproxy`).
enum NoProxy {
    /// Whether `host` (lower case, an IPv6 address without brackets) is one `list` exempts.
    static func matches(_ host: String, _ list: String?) -> Bool {
        guard let list, !list.isEmpty, !host.isEmpty else { return false }
        if list == "*" { return true }
        let name: Name
        if host.contains(":") {
            name = .ipv6(host)
        } else if IPAddress.v4(host) != nil {
            name = .ipv4(host)
        } else {
            name = .host(host.hasSuffix(".") ? String(host.dropLast()) : host)
        }
        return tokens(list).contains { name.matches($0) }
    }

    enum Name {
        case host(String)
        case ipv4(String)
        case ipv6(String)

        func matches(_ token: Substring) -> Bool {
            switch self {
            case .host(let name):
                var pattern = token.lowercased()[...]
                if pattern.hasSuffix(".") { pattern = pattern.dropLast() }
                if pattern.hasPrefix(".") { pattern = pattern.dropFirst() }
                guard !pattern.isEmpty else { return false }
                return name == pattern || name.hasSuffix("." + pattern)
            case .ipv4(let address), .ipv6(let address):
                let parts = token.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
                // A number curl's atoi reads as 0 (none, or not a number) compares the whole address.
                let bits = parts.count == 2 ? Int(parts[1].prefix { $0.isNumber }) ?? 0 : 0
                let network = String(parts[0])
                if case .ipv4 = self {
                    return IPAddress.matches(IPAddress.v4(address), IPAddress.v4(network), bits: bits, width: 32)
                }
                return IPAddress.matches(IPAddress.v6(address), IPAddress.v6(network), bits: bits, width: 128)
            }
        }
    }

    /// The list's entries as curl reads them: blanks (spaces and tabs) around an entry are
    /// skipped, entries are separated by commas, and a blank inside an entry ends the list.
    static func tokens(_ list: String) -> [Substring] {
        var result: [Substring] = []
        var rest = Substring(list)
        func isBlank(_ character: Character) -> Bool { character == " " || character == "\t" }
        while !rest.isEmpty {
            rest = rest.drop(while: isBlank)
            let token = rest.prefix { !isBlank($0) && $0 != "," }
            if !token.isEmpty { result.append(token) }
            rest = rest.dropFirst(token.count).drop(while: isBlank)
            guard rest.first == "," else { break }
            rest = rest.drop { $0 == "," }
        }
        return result
    }
}

/// IP addresses as bytes, parsed with `inet_pton` (which takes only the plain forms).
enum IPAddress {
    static func v4(_ text: String) -> [UInt8]? {
        var address = in_addr()
        guard inet_pton(AF_INET, text, &address) == 1 else { return nil }
        return withUnsafeBytes(of: &address) { Array($0) }
    }

    static func v6(_ text: String) -> [UInt8]? {
        var address = in6_addr()
        guard inet_pton(AF_INET6, text, &address) == 1 else { return nil }
        return withUnsafeBytes(of: &address) { Array($0) }
    }

    /// Whether `address` is in `network/bits`: the first `bits` bits the same; 0 bits for an
    /// IPv4 network (curl's reading of a missing or unreadable count) means the whole address.
    static func matches(_ address: [UInt8]?, _ network: [UInt8]?, bits: Int, width: Int) -> Bool {
        guard let address, let network, address.count == network.count, bits >= 0, bits <= width else {
            return false
        }
        let counted = bits == 0 ? width : bits
        let whole = counted / 8
        let rest = counted % 8
        guard address.prefix(whole) == network.prefix(whole) else { return false }
        guard rest > 0 else { return true }
        let mask = UInt8(truncatingIfNeeded: 0xFF << (8 - rest))
        return (address[whole] ^ network[whole]) & mask == 0
    }
}
