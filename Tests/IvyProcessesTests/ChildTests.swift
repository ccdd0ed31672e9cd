import Foundation
import IvyTestSupport
import Testing

@Suite("The child-process helper")
struct ChildTests {
    private static func shell(_ script: String) -> ChildCommand {
        ChildCommand("/bin/sh", ["-c", script], environment: ["PATH": "/usr/bin:/bin"])
    }

    @Test("a child that ignores SIGTERM, and what it started, are killed and reaped when the scope ends")
    func ignoresTerm() async throws {
        let (pid, grandchild) = try await withChild(Self.shell("trap '' TERM; sleep 300 & echo $!; wait")) { child in
            let grandchild = try #require(try await child.firstMatch(of: /(\d+)\n/, what: "print its sleep's pid"))
            child.send(SIGTERM)
            return (child.pid, try #require(pid_t(grandchild)))
        }
        #expect(!isRunning(pid))
        // Killed with its parent's group; its death, seen by whoever reaps it now, may lag a little.
        let deadline = ContinuousClock.now + .seconds(10)
        while isRunning(grandchild) && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        #expect(!isRunning(grandchild))
        #expect(!ChildRegistry.live.contains(pid))
    }

    @Test("a child still running when the body throws is killed and reaped, and the error comes through")
    func bodyThrows() async throws {
        struct Failure: Error {}
        var started: pid_t?
        do {
            try await withChild(Self.shell("echo up; sleep 300")) { child in
                started = child.pid
                _ = try await child.firstMatch(of: /(up)/)
                throw Failure()
            }
            Issue.record("the body's error did not come through")
        } catch is Failure {}
        let pid = try #require(started)
        #expect(!isRunning(pid))
        #expect(!ChildRegistry.live.contains(pid))
    }

    @Test("a wait past its deadline kills the child and names the command and what it waited for")
    func deadline() async throws {
        let error = await #expect(throws: ChildError.self) {
            try await withChild(Self.shell("echo partial; sleep 300")) { child in
                _ = try await child.wait(within: .milliseconds(500))
            }
        }
        let text = "\(try #require(error))"
        #expect(
            text.hasPrefix("`sh -c 'echo partial; sleep 300'` did not exit within 0.5 seconds, and was killed"),
            "\(text)")
        #expect(text.contains("partial"), "\(text)")
        let line = await #expect(throws: ChildError.self) {
            try await withChild(Self.shell("sleep 300")) { child in
                _ = try await child.firstMatch(of: /(never)/, within: .milliseconds(200), what: "say never")
            }
        }
        #expect("\(try #require(line))".contains("did not say never"))
    }

    @Test("megabytes on both standard output and standard error are read as they come: no deadlock")
    func largeOutput() async throws {
        let script = "head -c 3000000 /dev/zero | tr '\\0' o; head -c 3000000 /dev/zero | tr '\\0' e >&2; echo done"
        let result = try await runChild(Self.shell(script), within: .seconds(60))
        #expect(result.exit == .exited(0))
        #expect(result.stdout.utf8.count == 3_000_005 && result.stdout.hasSuffix("done\n"))
        #expect(result.stderr.utf8.count == 3_000_000)
    }

    @Test("on a pseudo-terminal: the child sees a terminal of the given width and reads what is typed")
    func terminal() async throws {
        var command = Self.shell("test -t 0 && test -t 1 && stty size; read line; echo \"got $line\"")
        command.terminal = [.input, .output]
        command.columns = 57
        let result = try await withChild(command) { child in
            _ = try await child.firstMatch(of: /(57)/, in: .output, what: "print the width")
            await child.type("hello\n")
            return try await child.finish()
        }
        #expect(result.exit == .exited(0))
        #expect(result.terminal.contains("24 57") && result.terminal.contains("got hello"), "\(result.terminal)")
    }

    @Test(
        """
        a child runs in a process group of its own, with the given environment and directory, no descriptor of \
        this process but its three, and every signal unblocked and at its default
        """)
    func startedClean() async throws {
        // Opened without close-on-exec, as code this process does not control may open one.
        let inherited = open("/dev/null", O_RDONLY)
        defer { close(inherited) }
        let ignored = signal(SIGUSR2, SIG_IGN)
        defer { signal(SIGUSR2, ignored) }
        // The shell reads its own status with builtins first: dash blocks every signal around
        // a fork, so a command it forks could catch it mid-fork.
        var command = Self.shell(
            """
            while read -r line; do case $line in Sig[BI]*) echo "$line" ;; esac; done < /proc/$$/status
            read -r stat < /proc/$$/stat; set -- $stat; echo "$5 $$"
            ls /proc/$$/fd; env | sort; pwd
            """)
        command.environment["IVY_WORD"] = "two words"
        command.workingDirectory = "/usr"
        let result = try await runChild(command)
        #expect(result.exit == .exited(0), "\(result.stderr)")
        let lines = result.stdout.split(separator: "\n").map(String.init)
        try #require(lines.count == 10, "\(result.stdout)")
        #expect(lines[0] == "SigBlk:\t0000000000000000", "\(result.stdout)")
        // Signals 1 to 31; glibc's posix_spawn ignores its own two (32 and 33) in every child.
        let ignoring = UInt64(lines[1].dropFirst("SigIgn:\t".count), radix: 16)
        #expect(ignoring.map { $0 & 0x7fff_ffff } == 0, "\(result.stdout)")
        let group = lines[2].split(separator: " ")
        #expect(group.count == 2 && group[0] == group[1], "its process group is its own: \(result.stdout)")
        #expect(lines[3...5] == ["0", "1", "2"], "\(result.stdout)")
        #expect(lines[6...] == ["IVY_WORD=two words", "PATH=/usr/bin:/bin", "PWD=/usr", "/usr"], "\(result.stdout)")
    }

    @Test("the sentinel kills, at end-of-file, every group still registered and none that was forgotten")
    func sentinel() async throws {
        try await withChild(Self.shell("sleep 300")) { kept in
            try await withChild(Self.shell("sleep 300")) { forgotten in
                var sentinel = ChildCommand("/bin/sh", ["-c", ChildRegistry.sentinelScript])
                sentinel.input = .text("+\(kept.pid)\n+\(forgotten.pid)\n-\(forgotten.pid)\n")
                // The script ends at end-of-file: after the text, its input is closed.
                let result = try await runChild(sentinel, within: .seconds(30))
                #expect(result.exit == .exited(0), "\(result.stderr)")
                #expect(try await kept.wait(within: .seconds(30)) == .signalled(SIGKILL))
                #expect(forgotten.exit == nil)
            }
        }
    }
}

/// Whether `pid` is a process that has not ended (a zombie, ended and not reaped yet by its
/// new parent, counts as ended).
private func isRunning(_ pid: pid_t) -> Bool {
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8) else { return false }
    let state = stat.split(separator: ")").last?.split(separator: " ").first
    return state != "Z" && state != "X"
}
