import Foundation
import IvyTestSupport
import Testing

@Suite("scripts/install.sh")
struct InstallTests {
    @Test("installs the binary, man page and completions for bash, zsh and fish; again idempotently; then uninstalls")
    func installAndUninstall() async throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let directory = try TemporaryHome(prefix: "ivy-prefix")
        defer { withExtendedLifetime(directory) {} }
        // Made by the installer.
        let prefix = directory.file("prefix")
        func install(_ arguments: [String]) async throws -> (Int32, String) {
            try await offCooperativePool {
                let process = Process()
                process.executableURL = root.appendingPathComponent("scripts/install.sh")
                process.arguments = arguments
                process.environment = ProcessInfo.processInfo.environment.merging(
                    ["PREFIX": prefix, "IVY_BINARY": IvyHome.binary.path]) { $1 }
                let out = Pipe()
                process.standardOutput = out
                process.standardError = out
                try process.run()
                let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
                process.waitUntilExit()
                return (process.terminationStatus, text)
            }
        }
        let files = [
            "bin/ivy", "share/man/man1/ivy.1", "share/bash-completion/completions/ivy", "share/zsh/site-functions/_ivy",
            "share/fish/vendor_completions.d/ivy.fish",
        ].map { prefix + "/" + $0 }
        for _ in 0..<2 {
            let (status, output) = try await install([])
            #expect(status == 0, "\(output)")
            for file in files { #expect(FileManager.default.fileExists(atPath: file), "\(file)") }
        }
        let bash = try String(contentsOfFile: files[2], encoding: .utf8)
        #expect(bash.contains("reset-manifest") && bash.contains("retry-failed"))
        let (status, _) = try await install(["--uninstall"])
        #expect(status == 0)
        for file in files { #expect(!FileManager.default.fileExists(atPath: file)) }
    }
}
