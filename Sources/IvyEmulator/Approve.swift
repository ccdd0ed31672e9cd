import ArgumentParser

struct Approve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Approve a waiting sign-in, as the person at the browser would.",
        discussion: """
            Without --code, approves the newest sign-in whose `ivy login` is still waiting: one asked for \
            or polled after approve started (a waiting login polls every few seconds), waiting for one \
            when none is yet. Sign-ins nobody polls any more (their `ivy login` was stopped) are left alone. \
            The emulator's control API takes only its secret, read from $IVY_EMULATOR_SECRET, which the export \
            line it prints sets.
            """)

    @OptionGroup var target: Target
    @Option(help: ArgumentHelp("The user code ivy printed (default: the newest waiting sign-in).", valueName: "CODE"))
    var code: String?
    @Option(help: ArgumentHelp("The account to sign in as (default: the first).", valueName: "EMAIL")) var account:
        String?
    @Option(help: ArgumentHelp("How long to wait for a sign-in to be asked for.", valueName: "SECONDS"))
    var wait = 30

    func run() async throws {
        let chosen = try await target.chooseSignIn(code: code, wait: wait)
        var body = ["user_code": chosen.code]
        body["email"] = account
        let answer = try await target.call("POST", "/_emulator/approve", body)
        print("approved \(chosen.code) for \(answer["email"] as? String ?? account ?? "the first account")")
        target.reportOthers(chosen.others, allOlder: chosen.allOlder)
    }
}
