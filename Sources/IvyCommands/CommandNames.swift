import ArgumentParser

/// ivy's command tree by name: what a mistyped command name was meant to be, and a command's
/// usage wherever its error is found.
enum CommandNames {
    /// Global options that take a value, and so are followed by a word that is no command.
    private static let valued: Set<String> = ["--home", "--log-format", "--generate-completion-script"]

    /// The first word that should name a subcommand of a command group and names none, as a
    /// usage error of that group (`unknown command 'updat'; did you mean 'update'?`). Checked
    /// before parsing: ArgumentParser would read the words after it as the group's own and
    /// complain about those instead (`Unknown option '--title'`).
    static func unknown(in arguments: [String]) -> (ValidationError, any ParsableCommand.Type)? {
        var group: any ParsableCommand.Type = IvyCommand.self
        var path = [IvyCommand._commandName]
        var index = arguments.startIndex
        while index < arguments.endIndex {
            let word = arguments[index]
            index += 1
            // `---completion`: a shell completion script asking ArgumentParser for words.
            if word == "--" || word.hasPrefix("---") { return nil }
            if word.hasPrefix("-") {
                if valued.contains(word) { index += 1 }
                continue
            }
            let subcommands = group.configuration.subcommands
            // A command's own words (an id, a key) are its to judge.
            guard !subcommands.isEmpty else { return nil }
            if let next = subcommands.first(where: { $0._commandName == word }) {
                group = next
                path.append(word)
                continue
            }
            // `ivy help COMMAND`: ArgumentParser's own.
            if ObjectIdentifier(group) == ObjectIdentifier(IvyCommand.self) && word == "help" { return nil }
            let names = subcommands.map { $0._commandName }
            let advice =
                closest(to: word, among: names).map { "; did you mean '\($0)'?" }
                ?? "; `\(path.joined(separator: " ")) --help` lists the commands"
            return (ValidationError("unknown command '\(word)'\(advice)"), group)
        }
        return nil
    }

    /// Options given before the command they belong to (`ivy -v sync`), which ArgumentParser
    /// takes as unknown options of `ivy` itself: a usage error of that command that says where
    /// they go. Nil unless the arguments parse once the options follow the command's name.
    static func misplacedOptions(in arguments: [String]) -> (ValidationError, any ParsableCommand.Type)? {
        var group: any ParsableCommand.Type = IvyCommand.self
        var names: [String] = []
        var before: [String] = []
        var index = arguments.startIndex
        while index < arguments.endIndex, !group.configuration.subcommands.isEmpty {
            let word = arguments[index]
            index += 1
            if word == "--" || word.hasPrefix("---") { return nil }
            if valued.contains(word) {
                names += [word] + arguments[index..<min(index + 1, arguments.endIndex)]
                index += 1
            } else if valued.contains(where: { word.hasPrefix($0 + "=") }) {
                names.append(word)
            } else if word.hasPrefix("-") {
                before.append(word)
            } else if let next = group.configuration.subcommands.first(where: { $0._commandName == word }) {
                group = next
                names.append(word)
            } else {
                return nil
            }
        }
        let options = before.filter { !["-h", "--help", "--version"].contains($0) }
        guard !options.isEmpty, options.count == before.count, group.configuration.subcommands.isEmpty else {
            return nil
        }
        let moved = names + options + arguments[index...]
        guard (try? IvyCommand.parseAsRoot(moved)) != nil else { return nil }
        let command = path(to: group).joined(separator: " ")
        let them = options.count == 1 ? "it" : "them"
        let shown = (["ivy"] + moved).joined(separator: " ")
        return (
            ValidationError(
                "\(options.joined(separator: " ")) \(options.count == 1 ? "is an option" : "are options") of "
                    + "`\(command)`: put \(them) after the command's name, as in `\(shown)` (only --home and "
                    + "--log-format go before it)"),
            group
        )
    }

    /// The name `word` was most likely meant to be: within two edits of it (or begun by it),
    /// the nearest first.
    static func closest(to word: String, among names: [String]) -> String? {
        let scored = names.map { name in
            (name, name.hasPrefix(word) && word.count >= 2 ? 1 : distance(Array(word), Array(name)))
        }
        guard let best = scored.min(by: { $0.1 < $1.1 }), best.1 <= min(2, max(1, best.0.count / 2)) else {
            return nil
        }
        return best.0
    }

    /// Levenshtein's edit distance.
    static func distance(_ a: [Character], _ b: [Character]) -> Int {
        var previous = Array(0...b.count)
        for (i, x) in a.enumerated() {
            var current = [i + 1]
            for (j, y) in b.enumerated() {
                current.append(min(previous[j + 1] + 1, current[j] + 1, previous[j] + (x == y ? 0 : 1)))
            }
            previous = current
        }
        return previous[b.count]
    }

    /// `Usage: ivy book show …` and where its help is, as ArgumentParser prints them for a
    /// usage error found while parsing.
    static func usage(of command: any ParsableCommand.Type) -> String {
        let usage = IvyCommand.usageString(for: command).replacing("\n", with: "\n       ")
        return "Usage: \(usage)\n  See '\(path(to: command).joined(separator: " ")) --help' for more information."
    }

    /// The names from `ivy` down to `command`.
    static func path(to command: any ParsableCommand.Type) -> [String] {
        func search(_ node: any ParsableCommand.Type, _ names: [String]) -> [String]? {
            if ObjectIdentifier(node) == ObjectIdentifier(command) { return names }
            for child in node.configuration.subcommands {
                if let found = search(child, names + [child._commandName]) { return found }
            }
            return nil
        }
        return search(IvyCommand.self, [IvyCommand._commandName]) ?? [IvyCommand._commandName]
    }
}
