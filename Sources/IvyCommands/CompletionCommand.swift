import ArgumentParser

/// `ivy completion SHELL`: the completion script a release and `scripts/install.sh` put in the
/// shell's place, printed for someone who installed ivy another way.
struct CompletionCommand: ContextCommand {
    static let configuration = CommandConfiguration(
        commandName: "completion",
        abstract: "Print the tab-completion script for bash, zsh or fish.",
        discussion: """
            A release and scripts/install.sh install these already. Otherwise: bash, `ivy completion bash > \
            ~/.local/share/bash-completion/completions/ivy`; zsh, `ivy completion zsh > ~/.zfunc/_ivy` with \
            ~/.zfunc in fpath; fish, `ivy completion fish > ~/.config/fish/completions/ivy.fish`. A new shell \
            then completes ivy's commands and options.
            """)

    @Argument(help: ArgumentHelp("bash, zsh or fish.", valueName: "SHELL")) var shell: String

    func validate() throws {
        guard CompletionShell(rawValue: shell) != nil else {
            throw ValidationError("no completion for '\(shell)'; give bash, zsh or fish")
        }
    }

    func run(_ context: Context) async throws {
        guard let shell = CompletionShell(rawValue: shell) else { return }
        let script = IvyCommand.completionScript(for: shell)
        context.streams.output(script.hasSuffix("\n") ? script : script + "\n")
    }
}
