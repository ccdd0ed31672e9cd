import ArgumentParser

@main
struct EmulatorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ivy-emulator",
        abstract: "A fake Google (OAuth device sign-in and Drive v3) on 127.0.0.1, for trying and testing ivy.",
        discussion: """
            Try ivy with it:
              eval "$(ivy-emulator --state ~/emulated-drive.json --background)"
              ivy-emulator approve > /dev/null &
              echo emulator-secret | ivy login \\
                --client-id ivy-emulator.apps.googleusercontent.com --client-secret-file -
              kill $IVY_EMULATOR_PID
            `ivy-emulator serve --help` lists the options of the server.
            """,
        subcommands: [Serve.self, Approve.self, Deny.self],
        defaultSubcommand: Serve.self
    )
}
