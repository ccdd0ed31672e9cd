/// Requests to this machine never go through a proxy. libcurl, under URLSession on Linux, sends
/// plain-http requests wherever `http_proxy` (or `all_proxy`) points, 127.0.0.1 included: an
/// emulator's requests with their bearer token, or a health ping to a local monitor, would
/// reach the proxy. libcurl reads `no_proxy` for every transfer, so the loopback names are
/// added to it once, at start, before any thread runs.
package enum LoopbackProxy {
    /// The hosts that are always this machine: every 127.x.x.x address is loopback, as ivy's
    /// URL check takes it, and libcurl (7.86 on) reads a CIDR range in `no_proxy`.
    package static let hosts = ["localhost", "127.0.0.1", "::1", "127.0.0.0/8"]

    /// `no_proxy` with the loopback hosts added to what it already names (kept as it was).
    package static func noProxy(_ existing: String?) -> String {
        let named = (existing ?? "").split(separator: ",").map { $0.trimmingSpaces() }.filter { !$0.isEmpty }
        let missing = hosts.filter { host in !named.contains { $0.lowercased() == host || $0 == "*" } }
        return (named + missing).joined(separator: ",")
    }
}

extension Substring {
    fileprivate func trimmingSpaces() -> String {
        String(drop { $0 == " " }.reversed().drop { $0 == " " }.reversed())
    }
}
