import ArgumentParser

struct Deny: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Deny a waiting sign-in, as the person at the browser would.",
        discussion: """
            Without --code, denies the newest sign-in whose `ivy login` is still waiting, as approve does; \
            like approve, it sends the emulator the secret in $IVY_EMULATOR_SECRET.
            """)

    @OptionGroup var target: Target
    @Option(help: ArgumentHelp("The user code ivy printed (default: the newest waiting sign-in).", valueName: "CODE"))
    var code: String?
    @Option(help: ArgumentHelp("How long to wait for a sign-in to be asked for.", valueName: "SECONDS"))
    var wait = 30

    func run() async throws {
        let chosen = try await target.chooseSignIn(code: code, wait: wait)
        _ = try await target.call("POST", "/_emulator/deny", ["user_code": chosen.code])
        print("denied \(chosen.code)")
        target.reportOthers(chosen.others, allOlder: chosen.allOlder)
    }
}
