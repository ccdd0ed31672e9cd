import IvyCore
import Testing

@Suite("Loopback is never proxied")
struct LoopbackProxyTests {
    @Test(
        "no_proxy gains the loopback names it lacks and keeps what it had",
        arguments: [
            (nil as String?, "localhost,127.0.0.1,::1,127.0.0.0/8"),
            ("", "localhost,127.0.0.1,::1,127.0.0.0/8"),
            ("example.com, .corp.example", "example.com,.corp.example,localhost,127.0.0.1,::1,127.0.0.0/8"),
            ("LOCALHOST,127.0.0.1", "LOCALHOST,127.0.0.1,::1,127.0.0.0/8"),
            ("*", "*"),
        ])
    func noProxy(existing: String?, expected: String) {
        #expect(LoopbackProxy.noProxy(existing) == expected)
    }
}
