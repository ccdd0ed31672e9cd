import ArgumentParser
import Foundation
import IvyCore
import IvyGoogle
import IvyStore

struct ConfigCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "config",
        abstract: "Read and change settings.",
        discussion: """
            Keys: \(SettingKey.allCases.map { "\($0.rawValue) — \($0.summary)" }.joined(separator: "; ")).
            """,
        subcommands: [List.self, Get.self, Set.self, Unset.self]
    )
}

/// Validates a key name: one mistyped is named as the key it is closest to, and the known ones
/// are listed.
func settingKey(_ name: String) throws -> SettingKey {
    guard let key = SettingKey(rawValue: name) else {
        let names = SettingKey.allCases.map(\.rawValue)
        let guess = CommandNames.closest(to: name.lowercased(), among: names).map { "; did you mean '\($0)'?" } ?? "."
        throw ValidationError("unknown key '\(name)'\(guess) The known keys: \(names.joined(separator: ", "))")
    }
    return key
}

/// The client secret is a credential: only whether it is set is ever shown, and so are a user
/// name and password in the health URL (`***`). Values are escaped: another program may have
/// written anything into the settings table.
func shown(_ key: SettingKey, _ value: String?) -> String {
    guard let value else { return "" }
    return key.shown(value).map(Display.safe) ?? "(set)"
}

extension ConfigCommand {
    struct List: ContextCommand {
        static let configuration = CommandConfiguration(abstract: "Show every setting and its value.")

        @OptionGroup var global: GlobalOptions
        @Flag(help: "Print one JSON array.") var json = false

        /// One setting as `ivy config list --json` prints it; a secret's value is always null.
        struct Item: Encodable {
            let key: String
            @Null var value: String?
            let source: String
        }

        func run(_ context: Context) async throws {
            let home = try global.home(context)
            let settings = try await home.library(readOnly: true).settings()
            if json {
                return try home.output.json(
                    settings.map { entry in
                        Item(
                            key: entry.key.rawValue, value: entry.value.flatMap(entry.key.shown),
                            source: entry.isDefault ? "default" : "set")
                    })
            }
            let rows = settings.map { entry in
                [
                    entry.key.rawValue, entry.value.map { shown(entry.key, $0) } ?? "-",
                    entry.isDefault ? "default" : "set",
                ]
            }
            home.output.table(["KEY", "VALUE", "SOURCE"], rows)
        }
    }

    struct Get: ContextCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print one setting's value (nothing when it has none).")

        @OptionGroup var global: GlobalOptions
        @Argument(help: "The key.") var key: String

        func validate() throws { _ = try settingKey(key) }

        func run(_ context: Context) async throws {
            let home = try global.home(context)
            let key = try settingKey(key)
            if let value = try await home.library(readOnly: true).setting(key) {
                home.output.line(shown(key, value))
            }
        }
    }

    struct Set: ContextCommand {
        static let configuration = CommandConfiguration(abstract: "Change a setting.")

        @OptionGroup var global: GlobalOptions
        @Argument(help: "The key.") var key: String
        @Argument(help: "The new value (or --from-file).") var value: String?
        @Option(
            help: ArgumentHelp(
                "Read the value from this file's first line (- for standard input), so a secret such as "
                    + "client_secret stays out of the process list.",
                valueName: "FILE"))
        var fromFile: String?

        func validate() throws {
            let key = try settingKey(key)
            switch (value, fromFile) {
            case (nil, nil): throw ValidationError("give the new value, or --from-file FILE (- for standard input)")
            case (.some, .some): throw ValidationError("give the value once: as an argument or with --from-file")
            case (.some(let value), nil): try Self.check(key, value)
            case (nil, .some): break
            }
        }

        private static func check(_ key: SettingKey, _ value: String) throws {
            if case .failure(let error) = key.normalize(value) { throw ValidationError(error.message) }
            if key == .healthURL {
                // Pings go by the rule Google's own endpoints keep: plain http to loopback only.
                do {
                    _ = try GoogleEndpoints.checkedURL(value, named: key.rawValue)
                } catch {
                    throw ValidationError(error.localizedDescription)
                }
            }
        }

        func run(_ context: Context) async throws {
            let home = try global.home(context)
            let key = try settingKey(key)
            var value = value ?? ""
            if let fromFile {
                value = try SecretInput.firstLine(of: fromFile, context)
                try Self.check(key, value)
            }
            let stored = try await home.library().setSetting(key, to: value)
            home.output.line("\(key.rawValue) = \(shown(key, stored))")
            if key.isSecret, fromFile == nil {
                // Stored all the same: the argument has been seen already, and refusing it would
                // only make the person type it again.
                home.output.error(
                    "warning: a \(key.rawValue) given as an argument shows in the process list and your shell's "
                        + "history; `ivy config set \(key.rawValue) --from-file FILE` (or - for standard input) "
                        + "keeps it out")
            }
        }
    }

    struct Unset: ContextCommand {
        static let configuration = CommandConfiguration(abstract: "Forget a setting's value, so its default applies.")

        @OptionGroup var global: GlobalOptions
        @Argument(help: "The key.") var key: String

        func validate() throws {
            let key = try settingKey(key)
            if key.isReadOnly { throw ValidationError("\(key.rawValue) is recorded by ivy and cannot be changed") }
        }

        func run(_ context: Context) async throws {
            let home = try global.home(context)
            let key = try settingKey(key)
            try await home.library().unsetSetting(key)
            home.output.line(key.defaultValue.map { "\(key.rawValue) = \($0) (default)" } ?? "\(key.rawValue) unset")
        }
    }
}
