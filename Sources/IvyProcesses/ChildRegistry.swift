package import Foundation
import Synchronization

/// Every child this process started and has not reaped yet, so none outlives it.
///
/// Three layers, each catching what the one before cannot: `withChild` kills its child (and the
/// child's process group) when its body ends, however it ends; an `atexit` handler kills every
/// child still registered when this process exits normally (a test run that ends while a
/// failed test's child still runs); and a sentinel, a small `/bin/sh` of its own process
/// group started with the first child, reads this process's registrations from a socket and,
/// at end-of-file, which the kernel gives it however this process ends (SIGKILL and crashes
/// included), kills every group still registered. Linux's "die with my parent"
/// (PR_SET_PDEATHSIG) is out of reach: posix_spawn cannot set it, and it fires when the
/// spawning *thread* ends, which pool threads do.
package enum ChildRegistry {
    private struct State {
        var live: Set<pid_t> = []
        var stopping = false
        /// This process's end of the sentinel's socket; nil until the first child, -1 if the
        /// sentinel could not start.
        var sentinel: Int32?
    }

    private static let state = Mutex(State())

    /// Starts a child through `start` and registers it, under one lock with `stopAll()`: a
    /// child is either started before the stop, and killed by it, or never started.
    static func register(_ command: ChildCommand, start: () throws -> SpawnedChild) throws -> SpawnedChild {
        try state.withLock { state in
            guard !state.stopping else { throw ChildError.stopping(command: command.description) }
            watchOver(&state)
            let child = try start()
            state.live.insert(child.pid)
            tell(state.sentinel, "+\(child.pid)\n")
            return child
        }
    }

    /// Registers a process group this process did not start as a child but must not outlive:
    /// a daemon a child started in a session of its own (`ivy-emulator --background`'s), killed
    /// at exit as a child is. `forget` it once it is stopped.
    package static func adopt(_ group: pid_t) {
        state.withLock { state in
            watchOver(&state)
            state.live.insert(group)
            tell(state.sentinel, "+\(group)\n")
        }
    }

    /// Forgets a child that has been reaped (its group killed before that), or an adopted group
    /// that was stopped.
    package static func forget(_ pid: pid_t) {
        state.withLock { state in
            state.live.remove(pid)
            tell(state.sentinel, "-\(pid)\n")
        }
    }

    /// Kills every registered child's process group, and starts no child from now on: for a
    /// program stopping on Ctrl-C.
    package static func stopAll() {
        state.withLock { state in
            state.stopping = true
            for pid in state.live { kill(-pid, SIGKILL) }
        }
    }

    /// Whether `stopAll()` was called.
    package static var isStopping: Bool { state.withLock { $0.stopping } }

    /// The children started and not reaped yet.
    package static var live: Set<pid_t> { state.withLock { $0.live } }

    /// Starts the sentinel and the exit handler, once.
    private static func watchOver(_ state: inout State) {
        guard state.sentinel == nil else { return }
        state.sentinel = startSentinel()
        atexit { ChildRegistry.killAll() }
    }

    /// At exit: kills what is left, without waiting for a lock another thread may hold forever.
    private static func killAll() {
        _ = state.withLockIfAvailable { state in
            for pid in state.live { kill(-pid, SIGKILL) }
        }
    }

    private static func tell(_ sentinel: Int32?, _ line: String) {
        guard let sentinel, sentinel >= 0 else { return }
        // A socket, not a pipe: MSG_NOSIGNAL keeps a dead sentinel from killing this process
        // with SIGPIPE.
        _ = Array(line.utf8).withUnsafeBytes { send(sentinel, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    /// The sentinel's script: it keeps the set of live groups and kills them at end-of-file.
    /// It ignores the signals a terminal or a service manager sends a whole group.
    package static let sentinelScript = """
        trap '' HUP INT TERM PIPE
        live=' '
        while read -r change; do
            group=${change#?}
            case $change in
            +*) live="$live$group " ;;
            -*) case $live in *" $group "*) live="${live%% $group *} ${live#* $group }" ;; esac ;;
            esac
        done
        for group in $live; do kill -9 "-$group" 2>/dev/null; done
        """

    private static func startSentinel() -> Int32 {
        var ends: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) == 0 else {
            return -1
        }
        var command = ChildCommand("/bin/sh", ["-c", sentinelScript])
        command.environment = ["PATH": "/usr/bin:/bin"]
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, ends[1], STDIN_FILENO)
        posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0)
        closeTheOthers(&actions)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // A group of its own: Ctrl-C on this process's group does not reach it.
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP))
        let argv = ([command.executable] + command.arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        let environment = command.environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for pointer in environment { free(pointer) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, command.executable, &actions, &attributes, argv, environment)
        close(ends[1])
        guard spawned == 0 else {
            close(ends[0])
            return -1
        }
        return ends[0]
    }
}
