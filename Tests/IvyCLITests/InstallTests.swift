import Foundation
import IvyTestSupport
import Testing

@Suite("scripts/install.sh")
struct InstallTests {
    @Test(
        """
        installs ivy, ivy-emulator (the one beside IVY_BINARY), the man page, completions and the ivy-watch unit; \
        again idempotently; then uninstalls
        """)
    func installAndUninstall() async throws {
        let installer = try Installer()
        let unit = installer.home + "/.config/systemd/user/ivy-watch.service"
        let files =
            [
                "bin/ivy", "bin/ivy-emulator", "share/man/man1/ivy.1", "share/bash-completion/completions/ivy",
                "share/zsh/site-functions/_ivy",
                "share/fish/vendor_completions.d/ivy.fish",
            ].map { installer.prefix + "/" + $0 } + [unit]
        for _ in 0..<2 {
            let (status, output) = try await installer.run([])
            #expect(status == 0, "\(output)")
            for file in files { #expect(FileManager.default.fileExists(atPath: file), "\(file)") }
            #expect(output.contains("installed \(unit)\n"), "\(output)")
            #expect(output.contains("systemctl --user enable --now ivy-watch"), "\(output)")
        }
        let emulator = try await runProcess(URL(fileURLWithPath: files[1]), ["--help"], [:])
        #expect(emulator.0 == 0 && emulator.1.contains("ivy-emulator approve"), "\(emulator.1)")
        let bash = try String(contentsOfFile: files[3], encoding: .utf8)
        #expect(bash.contains("reset-manifest") && bash.contains("retry-failed"))
        let mode = try FileManager.default.attributesOfItem(atPath: unit)[.posixPermissions] as? Int
        #expect(mode == 0o644)
        let sections = try UnitFile(contentsOfFile: unit).sections
        #expect(sections["Service"]?["ExecStart"] == [installer.prefix + "/bin/ivy sync --watch"])
        try await installer.expectVerified(unit)

        let (status, output) = try await installer.run(["--uninstall"])
        #expect(status == 0, "\(output)")
        #expect(output.contains("systemctl --user stop ivy-watch"), "\(output)")
        for file in files { #expect(!FileManager.default.fileExists(atPath: file), "\(file)") }
    }

    @Test("IVY_EMULATOR_BINARY installs that ivy-emulator; --help lists it and the variable")
    func prebuiltEmulator() async throws {
        let installer = try Installer()
        let prebuilt = installer.directory.file("my-emulator")
        let script = "#!/bin/sh\necho prebuilt emulator\n"
        _ = FileManager.default.createFile(
            atPath: prebuilt, contents: Data(script.utf8), attributes: [.posixPermissions: 0o755])
        let (status, output) = try await installer.run([], environment: ["IVY_EMULATOR_BINARY": prebuilt])
        #expect(status == 0, "\(output)")
        let installed = installer.prefix + "/bin/ivy-emulator"
        #expect(output.contains("installed \(installed)\n"), "\(output)")
        #expect(FileManager.default.contents(atPath: installed) == Data(script.utf8))
        let mode = try FileManager.default.attributesOfItem(atPath: installed)[.posixPermissions] as? Int
        #expect(mode == 0o755)

        let (missing, complaint) = try await installer.run(
            [], environment: ["IVY_EMULATOR_BINARY": installer.directory.file("none")])
        #expect(missing == 1 && complaint.contains("no ivy-emulator program at"), "\(complaint)")

        let (helped, help) = try await installer.run(["--help"])
        #expect(helped == 0)
        #expect(help.contains("$PREFIX/bin/ivy-emulator") && help.contains("IVY_EMULATOR_BINARY"), "\(help)")
    }

    @Test(
        """
        IVY_EMULATOR_BINARY=none (the release tarball's installer) installs no ivy-emulator without a note, \
        and its --uninstall leaves one installed before alone
        """)
    func withoutEmulator() async throws {
        let installer = try Installer()
        let (status, output) = try await installer.run([], environment: ["IVY_EMULATOR_BINARY": "none"])
        #expect(status == 0, "\(output)")
        let emulator = installer.prefix + "/bin/ivy-emulator"
        #expect(!FileManager.default.fileExists(atPath: emulator))
        #expect(!output.contains("ivy-emulator"), "\(output)")

        // One installed from source earlier, then the tarball's uninstall.
        _ = FileManager.default.createFile(
            atPath: emulator, contents: Data("#!/bin/sh\n".utf8), attributes: [.posixPermissions: 0o755])
        let (removed, removal) = try await installer.run(
            ["--uninstall"], environment: ["IVY_EMULATOR_BINARY": "none"])
        #expect(removed == 0 && removal.contains("removed \(installer.prefix)/bin/ivy\n"), "\(removal)")
        #expect(FileManager.default.fileExists(atPath: emulator), "\(removal)")
    }

    @Test("the unit restarts slowly on failure, stops with SIGTERM and waits for the operations in flight")
    func unitSettings() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let sections = try UnitFile(
            contentsOfFile: root.appendingPathComponent("contrib/systemd/ivy-watch.service").path
        )
        .sections
        #expect(sections["Unit"]?["Documentation"] == ["man:ivy(1)"])
        #expect(sections["Unit"]?["Description"]?.count == 1)
        #expect(sections["Service"]?["ExecStart"] == ["%h/.local/bin/ivy sync --watch"])
        #expect(sections["Service"]?["Restart"] == ["on-failure"])
        #expect(sections["Service"]?["RestartSec"] == ["60"])
        #expect(sections["Service"]?["KillSignal"] == ["SIGTERM"])
        #expect(sections["Service"]?["TimeoutStopSec"] == ["120"])
        #expect(sections["Install"]?["WantedBy"] == ["default.target"])
    }

    @Test(
        "the unit goes to XDG_CONFIG_HOME when it is absolute, and names an installed ivy whose path has spaces",
        arguments: [
            (xdg: "xdg", prefix: "prefix", execStart: "PREFIX/bin/ivy sync --watch"),
            (xdg: "relative", prefix: "my prefix%1", execStart: "\"PREFIX/bin/ivy\" sync --watch"),
        ])
    func unitPlacement(xdg: String, prefix: String, execStart: String) async throws {
        let installer = try Installer(prefix: prefix)
        // An absolute XDG_CONFIG_HOME is used; a relative one is ignored, as the XDG spec says.
        let configHome = xdg == "relative" ? installer.home + "/.config" : installer.directory.file(xdg)
        let unit = configHome + "/systemd/user/ivy-watch.service"
        let (status, output) = try await installer.run(
            [], environment: ["XDG_CONFIG_HOME": xdg == "relative" ? "relative" : configHome])
        #expect(status == 0, "\(output)")
        let sections = try UnitFile(contentsOfFile: unit).sections
        let escaped = installer.prefix.replacingOccurrences(of: "%", with: "%%")
        #expect(
            sections["Service"]?["ExecStart"] == [execStart.replacingOccurrences(of: "PREFIX", with: escaped)])
        try await installer.expectVerified(unit)
    }

    @Test("with ivy-watch enabled, an upgrade says to restart it, and uninstalling is refused and removes nothing")
    func uninstallWhileEnabled() async throws {
        let installer = try Installer()
        let (installed, installOutput) = try await installer.run([])
        #expect(installed == 0, "\(installOutput)")
        let units = installer.home + "/.config/systemd/user"
        // What `systemctl --user enable ivy-watch` makes.
        try FileManager.default.createDirectory(
            atPath: units + "/default.target.wants", withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(
            atPath: units + "/default.target.wants/ivy-watch.service", withDestinationPath: "../ivy-watch.service")
        // Installed again (an upgrade): the running watch must be restarted to run the new ivy.
        let (again, upgradeOutput) = try await installer.run([])
        #expect(again == 0 && upgradeOutput.contains("systemctl --user restart ivy-watch"), "\(upgradeOutput)")
        let (status, output) = try await installer.run(["--uninstall"])
        #expect(status == 1)
        #expect(output.contains("`systemctl --user disable --now ivy-watch` first"), "\(output)")
        #expect(FileManager.default.fileExists(atPath: units + "/ivy-watch.service"))
        #expect(FileManager.default.fileExists(atPath: installer.prefix + "/bin/ivy"))
    }
}

@Suite("scripts/package")
struct PackageScriptTests {
    @Test(
        """
        without SQLite's headers, scripts/package names them and prints the apt-get line before it builds \
        anything; libcurl's development files are no longer wanted
        """)
    func missingBuildDependencies() async throws {
        let directory = try TemporaryHome(prefix: "ivy-package")
        let bin = directory.file("bin")
        try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
        // A machine whose pkg-config finds neither library, and a swift that would say it was asked to build.
        for (name, script) in [("pkg-config", "exit 1"), ("swift", #"echo "swift was run: $*"; exit 1"#)] {
            _ = FileManager.default.createFile(
                atPath: bin + "/" + name, contents: Data("#!/bin/sh\n\(script)\n".utf8),
                attributes: [.posixPermissions: 0o755])
        }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let dist = directory.file("dist")
        let (status, output) = try await runProcess(
            root.appendingPathComponent("scripts/package"), ["--deb"],
            ["PATH": bin + ":/usr/bin:/bin", "HOME": directory.path, "IVY_DIST": dist])
        #expect(status == 1, "\(output)")
        #expect(
            output.hasPrefix("package: this machine lacks what the build needs: SQLite's headers (libsqlite3-dev)"),
            "\(output)")
        #expect(output.contains("apt-get install libsqlite3-dev"), "\(output)")
        #expect(!output.contains("libcurl"), "\(output)")
        #expect(!output.contains("swift was run") && !output.contains("building:"), "\(output)")
        #expect(!FileManager.default.fileExists(atPath: dist))
    }
}

/// A prefix and a `HOME` of their own to run scripts/install.sh with, installing the built ivy.
private struct Installer {
    let directory: TemporaryHome
    let prefix: String
    let home: String

    init(prefix name: String = "prefix") throws {
        directory = try TemporaryHome(prefix: "ivy-prefix")
        // Both are made by the installer.
        prefix = directory.file(name)
        home = directory.file("home")
    }

    func run(_ arguments: [String], environment extra: [String: String] = [:]) async throws -> (Int32, String) {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        var environment = ProcessInfo.processInfo.environment.merging(
            ["PREFIX": prefix, "IVY_BINARY": BuiltProgram.ivy.path, "HOME": home]) { $1 }
        environment["XDG_CONFIG_HOME"] = nil
        environment.merge(extra) { $1 }
        return try await runProcess(root.appendingPathComponent("scripts/install.sh"), arguments, environment)
    }

    /// Has systemd check `unit` as its user manager would load it, where systemd-analyze is
    /// installed: that it parses, and that its program exists and its man page is found.
    func expectVerified(_ unit: String) async throws {
        let analyze = "/usr/bin/systemd-analyze"
        guard FileManager.default.isExecutableFile(atPath: analyze) else { return }
        // A user manager needs a runtime directory of its own, which a container lacks.
        let runtime = directory.file("runtime")
        try FileManager.default.createDirectory(
            atPath: runtime, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let environment = [
            "HOME": home, "XDG_RUNTIME_DIR": runtime, "MANPATH": prefix + "/share/man", "PATH": "/usr/bin:/bin",
        ]
        let (status, output) = try await runProcess(
            URL(fileURLWithPath: analyze), ["verify", "--user", unit], environment)
        #expect(status == 0 && output.isEmpty, "\(output)")
    }
}

private func runProcess(
    _ executable: URL, _ arguments: [String], _ environment: [String: String]
) async throws -> (Int32, String) {
    var command = ChildCommand(executable.path, arguments, environment: environment)
    command.errorToOutput = true
    let result = try await runChild(command, within: .seconds(300))
    return (result.status, result.stdout)
}

/// A systemd unit file read as INI: each section's keys with their values in order (a key
/// may repeat). Enough for ivy's own unit: no line continuations.
private struct UnitFile {
    var sections: [String: [String: [String]]] = [:]

    init(contentsOfFile path: String) throws {
        var section = ""
        for line in try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n") {
            let text = line.trimmingCharacters(in: .whitespaces)
            if text.isEmpty || text.hasPrefix("#") || text.hasPrefix(";") { continue }
            if text.hasPrefix("[") && text.hasSuffix("]") {
                section = String(text.dropFirst().dropLast())
                continue
            }
            guard let equals = text.firstIndex(of: "=") else { continue }
            let key = text[..<equals].trimmingCharacters(in: .whitespaces)
            let value = text[text.index(after: equals)...].trimmingCharacters(in: .whitespaces)
            sections[section, default: [:]][key, default: []].append(value)
        }
    }
}
