package import Foundation
import IvySystem
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
/// (PR_SET_PDEATHSIG) is out of reach: swift-subprocess's `PlatformOptions` cannot set it
/// (nor can posix_spawn), and it fires when the spawning *thread* ends, which pool threads do.
package enum ChildRegistry {
    private struct State {
        var live: Set<pid_t> = []
        var stopping = false
        /// This process's end of the sentinel's socket; nil until the first child, -1 if the
        /// sentinel could not start.
        var sentinel: Int32?
    }

    private static let state = Mutex(State())

    /// Before a child starts: throws if the process is stopping, and starts the sentinel and
    /// the exit handler the first time.
    static func prepare(_ command: ChildCommand) async throws {
        guard !isStopping else { throw ChildError.stopping(command: command.description) }
        await watchOver()
    }

    /// Registers a child just started, under one lock with `stopAll()`: a child is either
    /// registered before the stop, and killed by it, or killed here as soon as it started.
    static func started(_ pid: pid_t) {
        state.withLock { state in
            state.live.insert(pid)
            tell(state.sentinel, "+\(pid)\n")
            if state.stopping { kill(-pid, SIGKILL) }
        }
    }

    /// Registers a process group this process did not start as a child but must not outlive:
    /// a daemon a child started in a session of its own (`ivy-emulator --background`'s), killed
    /// at exit as a child is. `forget` it once it is stopped.
    package static func adopt(_ group: pid_t) async {
        await watchOver()
        state.withLock { state in
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

    /// Starts the sentinel and the exit handler, once; returns once the sentinel listens.
    private static func watchOver() async {
        let socket = await sentinel.value
        state.withLock { $0.sentinel = socket }
    }

    /// The sentinel's end of its socket, once it has started (-1 if it could not).
    private static let sentinel = Task(executorPreference: BlockingExecutor.shared) {
        atexit { ChildRegistry.killAll() }
        return await startSentinel(sentinelScript)
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
}
