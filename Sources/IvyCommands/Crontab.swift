import Foundation

/// A crontab as cron reads it, and a job's command as cron's shell runs it: enough of `sh` to
/// find the program a `… sync --auto` line runs, for `ivy doctor`'s schedule check.
///
/// Cron (Vixie's, which Debian and its descendants ship) runs a job in HOME with HOME and
/// LOGNAME from the user's passwd entry, SHELL=/bin/sh and PATH=/usr/bin:/bin, overridden by
/// the crontab's own `NAME=value` lines above it (taken literally: cron expands nothing), as
/// `$SHELL -c COMMAND`, COMMAND cut at its first `%` that no backslash escapes. The shell then
/// expands `$NAME`, `${NAME}` and `~`, applies a command's leading `NAME=value` words to it
/// alone, and runs `cd DIR &&` or `cd DIR;` before the program.
package enum Crontab {
    /// What one job line running `sync --auto` runs.
    package struct Job: Equatable, Sendable {
        /// The line as written.
        package var line: String
        /// The program's word as written (`$HOME/.local/bin/ivy`).
        package var written = ""
        /// That word as the shell expands it (`/home/me/.local/bin/ivy`).
        package var expanded = ""
        /// The file it runs, when it is found and can be run.
        package var runs: String?
        /// The words after the program, expanded.
        package var arguments: [String] = []
        /// The PATH the program is looked up in.
        package var path = ""
        /// Variables the program's word uses that are set nowhere (the shell makes them empty).
        package var unset: [String] = []
        /// What doctor does not follow (a `$(…)`, a subshell, …); nil when it followed the line.
        package var unfollowed: String?
    }

    /// Cron's environment for the user whose passwd entry says `home` and `user`.
    package static func environment(home: String, user: String) -> [String: String] {
        ["HOME": home, "LOGNAME": user, "SHELL": "/bin/sh", "PATH": "/usr/bin:/bin"]
    }

    /// Every job of `text` (`crontab -l`'s output) whose command runs `… sync --auto`, in order,
    /// run as cron would with `environment` (`environment(home:user:)`). `isExecutable` says
    /// whether a path is a file that can be run; `homeOf` is a user's home, for `~user`.
    package static func jobs(
        in text: String, environment: [String: String], isExecutable: @escaping (String) -> Bool,
        homeOf: @escaping (String) -> String?
    ) -> [Job] {
        var variables = environment
        var jobs: [Job] = []
        for whole in text.split(separator: "\n", omittingEmptySubsequences: true) {
            let line = whole.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") { continue }
            if let (name, value) = assignment(line) {
                variables[name] = value
                continue
            }
            guard let command = command(of: line), command.contains("sync"), command.contains("--auto") else {
                continue
            }
            var shell = Shell(variables: variables, isExecutable: isExecutable, homeOf: homeOf)
            if let job = shell.run(command, line: line) { jobs.append(job) }
        }
        return jobs
    }

    /// A crontab's `NAME = value` line (spaces around `=` allowed, one pair of quotes around the
    /// value taken off), or nil for any other line: the name is what comes before `=` and may hold
    /// no space, so a job line, whose schedule does, is never one.
    static func assignment(_ line: String) -> (String, String)? {
        guard let equals = line.firstIndex(of: "=") else { return nil }
        let name = line[..<equals].trimmingCharacters(in: .whitespaces)
        guard !name.isEmpty, !name.contains(where: \.isWhitespace) else { return nil }
        var value = line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces)
        if value.count >= 2, let first = value.first, first == "'" || first == "\"", value.last == first {
            value = String(value.dropFirst().dropLast())
        }
        return (name, value)
    }

    /// A job line's command: after `@hourly` (or any `@` word) or the five time fields, cut at
    /// the first `%` no backslash escapes (the rest is the command's standard input), `\%` read
    /// as `%`.
    static func command(of line: String) -> String? {
        var rest = Substring(line)
        let fields = line.hasPrefix("@") ? 1 : 5
        for _ in 0..<fields {
            rest = rest.drop { $0.isWhitespace }
            guard !rest.isEmpty else { return nil }
            rest = rest.drop { !$0.isWhitespace }
        }
        rest = rest.drop { $0.isWhitespace }
        guard !rest.isEmpty else { return nil }
        var command = ""
        var escaped = false
        for character in rest {
            if escaped {
                if character != "%" { command.append("\\") }
                command.append(character)
                escaped = false
            } else if character == "\\" {
                escaped = true
            } else if character == "%" {
                break
            } else {
                command.append(character)
            }
        }
        if escaped { command.append("\\") }
        return command
    }
}

/// One word as the shell reads it, before expansion.
private struct Word {
    enum Part {
        /// Text that is what it says (quoted or not, backslashes already taken off).
        case text(String, quoted: Bool)
        case variable(String)
        /// `~` (nil) or `~user`.
        case tilde(String?)
    }

    var parts: [Part] = []

    /// `NAME=…` with the name unquoted: an assignment, as the shell takes it before a command.
    var assignment: (name: String, value: Word)? {
        guard case .text(let text, quoted: false)? = parts.first, let equals = text.firstIndex(of: "=") else {
            return nil
        }
        let name = String(text[..<equals])
        guard let first = name.first, first == "_" || first.isLetter,
            name.allSatisfy({ $0 == "_" || ($0.isASCII && ($0.isLetter || $0.isNumber)) })
        else { return nil }
        var value = Word()
        let rest = String(text[text.index(after: equals)...])
        if !rest.isEmpty { value.parts.append(.text(rest, quoted: false)) }
        value.parts += parts.dropFirst()
        return (name, value)
    }

    /// Whether the word so far is one an unquoted `~` starts an expansion in: empty, or an
    /// assignment's `NAME=` alone.
    var tildePosition: Bool {
        if parts.isEmpty { return true }
        guard parts.count == 1, case .text(let text, quoted: false) = parts[0], text.hasSuffix("=") else {
            return false
        }
        return Word(parts: parts).assignment?.value.parts.isEmpty == true
    }
}

/// What the lexer makes of a command: words and operators.
private enum Token {
    case word(Word)
    /// `&&`, `||`, `;`, `|`, `&` or a newline: one simple command ends.
    case separator
    /// `>`, `>>`, `2>&1`'s `>&`, `<`, …: the next word is where it points, not an argument.
    case redirection
}

/// Not followed: what it was.
private struct Unfollowed: Error {
    let what: String
}

/// The part of `sh` a crontab line needs: reading words, expanding them, and following simple
/// commands joined by `&&`, `;` and the like up to the one that runs `sync --auto`.
private struct Shell {
    var variables: [String: String]
    let isExecutable: (String) -> Bool
    let homeOf: (String) -> String?
    /// Unset variables met while expanding the last word.
    private var unset: [String] = []

    init(
        variables: [String: String], isExecutable: @escaping (String) -> Bool,
        homeOf: @escaping (String) -> String?
    ) {
        self.variables = variables
        self.isExecutable = isExecutable
        self.homeOf = homeOf
    }

    /// The job `command` runs `sync --auto` in, or nil when no simple command of it does.
    mutating func run(_ command: String, line: String) -> Crontab.Job? {
        let tokens: [Token]
        do {
            tokens = try Self.lex(command)
        } catch {
            return Crontab.Job(line: line, unfollowed: error.what)
        }
        // Cron starts the shell in HOME.
        var directory = variables["HOME"] ?? "/"
        for simple in Self.simpleCommands(tokens) {
            var words = simple
            var assignments: [(String, Word)] = []
            while let first = words.first, let assignment = first.assignment {
                assignments.append(assignment)
                words.removeFirst()
            }
            // The shell's own variables; ones the environment has (PATH) change it too.
            guard !words.isEmpty else {
                for (name, value) in assignments { variables[name] = expand(value) }
                continue
            }
            var environment = variables
            for (name, value) in assignments { environment[name] = expand(value) }
            var expanded: [String] = []
            for word in words { expanded.append(expand(word)) }
            var written = words
            // `exec`, `command`, `nice` and `env NAME=value …` run the program after them.
            while let first = expanded.first, ["exec", "command", "nice", "env"].contains(first) {
                expanded.removeFirst()
                written.removeFirst()
                if first == "nice", let option = expanded.first, option.hasPrefix("-") {
                    let count = option == "-n" ? 2 : 1
                    expanded.removeFirst(min(count, expanded.count))
                    written.removeFirst(min(count, written.count))
                }
                if first == "env", expanded.first?.hasPrefix("-") == true {
                    return Crontab.Job(line: line, unfollowed: "`env` with options")
                }
                while first == "env", let next = expanded.first, let equals = next.firstIndex(of: "=") {
                    environment[String(next[..<equals])] = String(next[next.index(after: equals)...])
                    expanded.removeFirst()
                    written.removeFirst()
                }
            }
            guard let program = expanded.first, let programWord = written.first else { continue }
            let arguments = Array(expanded.dropFirst())
            switch program {
            case "cd":
                directory = Self.absolute(arguments.first ?? variables["HOME"] ?? "/", in: directory)
                continue
            case "export":
                for argument in arguments {
                    guard let equals = argument.firstIndex(of: "=") else { continue }
                    variables[String(argument[..<equals])] = String(argument[argument.index(after: equals)...])
                }
                continue
            case "if", "then", "for", "while", "until", "case", "{", "!", "[[", "function":
                return Crontab.Job(line: line, unfollowed: "`\(program)`")
            default:
                break
            }
            guard arguments.contains("sync"), arguments.contains("--auto") else { continue }
            unset = []
            _ = expand(programWord)
            let path = environment["PATH"] ?? ""
            return Crontab.Job(
                line: line, written: Self.text(of: programWord), expanded: program,
                runs: find(program, path: path, in: directory), arguments: arguments, path: path, unset: unset)
        }
        return nil
    }

    /// The file `program` names, as `execvp` finds it: a path (relative ones from `directory`),
    /// or a name looked up in `path` (an empty entry is `directory`).
    private func find(_ program: String, path: String, in directory: String) -> String? {
        guard !program.isEmpty else { return nil }
        if program.contains("/") {
            let file = Self.absolute(program, in: directory)
            return isExecutable(file) ? file : nil
        }
        for entry in path.split(separator: ":", omittingEmptySubsequences: false) {
            let file = Self.absolute(entry.isEmpty ? program : "\(entry)/\(program)", in: directory)
            if isExecutable(file) { return file }
        }
        return nil
    }

    /// `path` made absolute from `directory`, with `.` and `..` taken out.
    private static func absolute(_ path: String, in directory: String) -> String {
        let whole = path.hasPrefix("/") ? path : directory + "/" + path
        var parts: [Substring] = []
        for part in whole.split(separator: "/") {
            if part == "." { continue }
            if part == ".." {
                _ = parts.popLast()
                continue
            }
            parts.append(part)
        }
        return "/" + parts.joined(separator: "/")
    }

    /// A word expanded: variables (an unset one is empty, and noted), `~`, text as it is.
    private mutating func expand(_ word: Word) -> String {
        var text = ""
        for part in word.parts {
            switch part {
            case .text(let value, _): text += value
            case .variable(let name):
                if let value = variables[name] { text += value } else { unset.append(name) }
            case .tilde(nil): text += variables["HOME"] ?? ""
            case .tilde(let user?): text += homeOf(user) ?? "~\(user)"
            }
        }
        return text
    }

    /// The word as it was written, near enough to name it in a message.
    private static func text(of word: Word) -> String {
        word.parts.map { part in
            switch part {
            case .text(let value, _): value
            case .variable(let name): "$" + name
            case .tilde(let user): "~" + (user ?? "")
            }
        }.joined()
    }

    /// The words of each simple command, redirections and their targets left out.
    private static func simpleCommands(_ tokens: [Token]) -> [[Word]] {
        var commands: [[Word]] = [[]]
        var target = false
        for token in tokens {
            switch token {
            case .separator:
                commands.append([])
                target = false
            case .redirection:
                target = true
            case .word(let word):
                if target {
                    target = false
                } else {
                    commands[commands.count - 1].append(word)
                }
            }
        }
        return commands.filter { !$0.isEmpty }
    }

    /// Reads `command` into words and operators as `sh` does: quotes, backslashes, `$NAME`,
    /// `${NAME}`, `~`, comments; throws for what doctor does not follow.
    private static func lex(_ command: String) throws(Unfollowed) -> [Token] {
        let characters = Array(command)
        var tokens: [Token] = []
        var word: Word?
        var index = 0

        func appendText(_ text: String, quoted: Bool) {
            var current = word ?? Word()
            if case .text(let previous, quoted: quoted)? = current.parts.last {
                current.parts[current.parts.count - 1] = .text(previous + text, quoted: quoted)
            } else {
                current.parts.append(.text(text, quoted: quoted))
            }
            word = current
        }
        func append(_ part: Word.Part) {
            var current = word ?? Word()
            current.parts.append(part)
            word = current
        }
        func endWord() {
            if let finished = word { tokens.append(.word(finished)) }
            word = nil
        }
        func name(from start: Int) -> Int {
            var end = start
            while end < characters.count,
                characters[end] == "_"
                    || (characters[end].isASCII && (characters[end].isLetter || characters[end].isNumber))
            {
                end += 1
            }
            return end
        }
        /// `$…` at `index`; answers where it ends.
        func dollar(at index: Int) throws(Unfollowed) -> Int {
            let next = index + 1
            guard next < characters.count else {
                appendText("$", quoted: false)
                return next
            }
            switch characters[next] {
            case "(": throw Unfollowed(what: "`$(…)`")
            case "{":
                guard let close = characters[next...].firstIndex(of: "}") else { throw Unfollowed(what: "`${`") }
                let inside = String(characters[(next + 1)..<close])
                guard !inside.isEmpty, name(from: next + 1) == close, !(inside.first?.isNumber ?? true) else {
                    throw Unfollowed(what: "`${\(inside)}`")
                }
                append(.variable(inside))
                return close + 1
            case let character where character == "_" || (character.isASCII && character.isLetter):
                let end = name(from: next)
                append(.variable(String(characters[next..<end])))
                return end
            case let character where character.isNumber || "?$!#@*-".contains(character):
                throw Unfollowed(what: "`$\(character)`")
            default:
                appendText("$", quoted: false)
                return next
            }
        }

        while index < characters.count {
            let character = characters[index]
            switch character {
            case " ", "\t":
                endWord()
                index += 1
            case "\n", ";":
                endWord()
                tokens.append(.separator)
                index += 1
            case "&", "|":
                endWord()
                if character == "&", index + 1 < characters.count, characters[index + 1] == ">" {
                    tokens.append(.redirection)
                    index += 2
                    if index < characters.count, characters[index] == ">" { index += 1 }
                } else {
                    tokens.append(.separator)
                    index += index + 1 < characters.count && characters[index + 1] == character ? 2 : 1
                }
            case "<", ">":
                // `2>`: the digits before it name a descriptor, not a word.
                if let current = word, current.parts.count == 1, case .text(let text, quoted: false) = current.parts[0],
                    text.allSatisfy(\.isNumber)
                {
                    word = nil
                } else {
                    endWord()
                }
                if character == "<", index + 1 < characters.count, characters[index + 1] == "<" {
                    throw Unfollowed(what: "a here-document (`<<`)")
                }
                index += 1
                if index < characters.count, ["&", ">", "|"].contains(characters[index]) { index += 1 }
                tokens.append(.redirection)
            case "(", ")":
                throw Unfollowed(what: "a subshell (`(…)`)")
            case "`":
                throw Unfollowed(what: "a command substitution (`` `…` ``)")
            case "#" where word == nil:
                index = characters.count
            case "\\":
                if index + 1 < characters.count {
                    if characters[index + 1] != "\n" { appendText(String(characters[index + 1]), quoted: true) }
                    index += 2
                } else {
                    index += 1
                }
            case "'":
                guard let close = characters[(index + 1)...].firstIndex(of: "'") else {
                    throw Unfollowed(what: "an unclosed quote")
                }
                appendText(String(characters[(index + 1)..<close]), quoted: true)
                index = close + 1
            case "\"":
                index += 1
                // An empty "" is still a word.
                appendText("", quoted: true)
                while true {
                    guard index < characters.count else { throw Unfollowed(what: "an unclosed quote") }
                    let inside = characters[index]
                    if inside == "\"" {
                        index += 1
                        break
                    }
                    if inside == "`" { throw Unfollowed(what: "a command substitution (`` `…` ``)") }
                    if inside == "$" {
                        index = try dollar(at: index)
                        continue
                    }
                    if inside == "\\", index + 1 < characters.count, "$`\"\\\n".contains(characters[index + 1]) {
                        if characters[index + 1] != "\n" { appendText(String(characters[index + 1]), quoted: true) }
                        index += 2
                        continue
                    }
                    appendText(String(inside), quoted: true)
                    index += 1
                }
            case "$":
                index = try dollar(at: index)
            case "~" where word?.tildePosition ?? true:
                var end = index + 1
                while end < characters.count, !" \t\n;&|<>()/'\"`$\\".contains(characters[end]) { end += 1 }
                let user = String(characters[(index + 1)..<end])
                append(.tilde(user.isEmpty ? nil : user))
                index = end
            default:
                appendText(String(character), quoted: false)
                index += 1
            }
        }
        endWord()
        return tokens
    }
}
