import Foundation

/// The descriptors this process keeps to talk to a started child.
struct SpawnedChild {
    let pid: pid_t
    /// Standard input's pipe (nil: /dev/null or the terminal).
    var input: Int32?
    var output: Int32?
    var error: Int32?
    /// The pseudo-terminal's primary side, when any stream is on it.
    var terminal: Int32?
}

/// Starts `command` with posix_spawn, in a process group of its own (so the whole of what it
/// starts can be killed at once), signals unblocked and at their defaults whatever this
/// process's threads had set, and no descriptor of this process but the three it is given.
func spawn(_ command: ChildCommand) throws -> SpawnedChild {
    var opened: [Int32] = []
    func fail(_ reason: String) -> ChildError {
        for descriptor in opened { close(descriptor) }
        return .cannotStart(command: command.description, reason: reason)
    }
    func pipePair() throws -> (read: Int32, write: Int32) {
        var ends: [Int32] = [-1, -1]
        guard let pipe2 = glibcFunction("pipe2", as: Pipe2.self), pipe2(&ends, O_CLOEXEC) == 0 else {
            throw fail("pipe: \(String(cString: strerror(errno)))")
        }
        opened += ends
        return (ends[0], ends[1])
    }

    // Every descriptor made here is close-on-exec; the child gets its three by dup2, which
    // clears the flag on the copy. So no other child started meanwhile inherits a pipe end
    // and holds its reader open.
    var terminal: (primary: Int32, secondary: Int32)?
    if !command.terminal.isEmpty {
        do {
            let made = try pseudoTerminal(columns: command.columns, raw: command.rawTerminal)
            opened += [made.primary, made.secondary]
            terminal = made
        } catch {
            throw fail("no pseudo-terminal: \(error)")
        }
    }
    var child = SpawnedChild(pid: 0)
    var sources: [Int32] = [-1, -1, -1]
    var childEnds: [Int32] = []

    if let terminal, command.terminal.contains(.input) {
        sources[0] = terminal.secondary
    } else {
        switch command.input {
        case .none: break
        case .text, .open:
            let ends = try pipePair()
            sources[0] = ends.read
            child.input = ends.write
            childEnds.append(ends.read)
        }
    }
    if let terminal, command.terminal.contains(.output) {
        sources[1] = terminal.secondary
    } else {
        let ends = try pipePair()
        sources[1] = ends.write
        child.output = ends.read
        childEnds.append(ends.write)
    }
    if let terminal, command.terminal.contains(.error) {
        sources[2] = terminal.secondary
    } else if command.errorToOutput {
        sources[2] = sources[1]
    } else {
        let ends = try pipePair()
        sources[2] = ends.write
        child.error = ends.read
        childEnds.append(ends.write)
    }

    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    if sources[0] >= 0 {
        posix_spawn_file_actions_adddup2(&actions, sources[0], STDIN_FILENO)
    } else {
        posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0)
    }
    posix_spawn_file_actions_adddup2(&actions, sources[1], STDOUT_FILENO)
    posix_spawn_file_actions_adddup2(&actions, sources[2], STDERR_FILENO)
    if let directory = command.workingDirectory {
        guard let addChdir = glibcFunction("posix_spawn_file_actions_addchdir_np", as: AddChdir.self) else {
            throw fail("this C library cannot set a child's working directory")
        }
        _ = addChdir(&actions, directory)
    }
    closeTheOthers(&actions)

    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var none = sigset_t()
    sigemptyset(&none)
    posix_spawnattr_setsigmask(&attributes, &none)
    var defaults = sigset_t()
    sigemptyset(&defaults)
    for number: Int32 in 1..<32 where number != SIGKILL && number != SIGSTOP { sigaddset(&defaults, number) }
    posix_spawnattr_setsigdefault(&attributes, &defaults)
    posix_spawnattr_setpgroup(&attributes, 0)
    posix_spawnattr_setflags(
        &attributes,
        Int16(POSIX_SPAWN_SETPGROUP) | Int16(POSIX_SPAWN_SETSIGMASK) | Int16(POSIX_SPAWN_SETSIGDEF))

    if let terminal, command.terminal.contains(.input), case .text(let text) = command.input {
        // Typed ahead: the terminal keeps the line until the child reads it.
        writeAll(terminal.primary, Array(text.utf8))
    }

    let argv = ([command.executable] + command.arguments).map { strdup($0) } + [nil]
    defer { for pointer in argv { free(pointer) } }
    let environment = command.environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer { for pointer in environment { free(pointer) } }
    var pid: pid_t = 0
    let spawned = posix_spawn(&pid, command.executable, &actions, &attributes, argv, environment)
    guard spawned == 0 else { throw fail(String(cString: strerror(spawned))) }
    child = SpawnedChild(
        pid: pid, input: child.input, output: child.output, error: child.error, terminal: terminal?.primary)
    // Only the child holds its ends now, so reading ends when it (and whatever it started) does.
    for descriptor in childEnds { close(descriptor) }
    if let terminal { close(terminal.secondary) }
    return child
}

/// A new pseudo-terminal `columns` wide. posix_openpt and friends are not in Swift's Glibc
/// module; this is what they do: unlock it (TIOCSPTLCK), ask its number (TIOCGPTN), and set
/// its size (TIOCSWINSZ), which a program reads back with TIOCGWINSZ.
private func pseudoTerminal(columns: UInt16, raw: Bool) throws -> (primary: Int32, secondary: Int32) {
    let primary = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC)
    guard primary >= 0 else { throw Errno(errno) }
    var unlock: CInt = 0
    var number: CUnsignedInt = 0
    var size = winsize(ws_row: 24, ws_col: columns, ws_xpixel: 0, ws_ypixel: 0)
    let secondary =
        ioctl(primary, UInt(0x4004_5431), &unlock) == 0 && ioctl(primary, UInt(0x8004_5430), &number) == 0
        ? open("/dev/pts/\(number)", O_RDWR | O_NOCTTY | O_CLOEXEC) : -1
    guard secondary >= 0, ioctl(primary, UInt(TIOCSWINSZ), &size) == 0 else {
        let error = errno
        close(primary)
        if secondary >= 0 { close(secondary) }
        throw Errno(error)
    }
    if raw {
        var settings = termios()
        tcgetattr(secondary, &settings)
        cfmakeraw(&settings)
        tcsetattr(secondary, TCSANOW, &settings)
    }
    return (primary, secondary)
}

/// An errno value, named as strerror names it.
struct Errno: Error, CustomStringConvertible {
    let number: Int32
    init(_ number: Int32) { self.number = number }
    var description: String { String(cString: strerror(number)) }
}

/// Writes every byte, however many writes it takes (a pipe takes 64 KiB before it blocks).
@discardableResult
func writeAll(_ descriptor: Int32, _ bytes: [UInt8]) -> Bool {
    var rest = bytes[...]
    while !rest.isEmpty {
        let written = rest.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        if written < 0 {
            if errno == EINTR { continue }
            return false
        }
        rest = rest.dropFirst(written)
    }
    return true
}

private typealias AddChdir =
    @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>)
    -> Int32
private typealias Pipe2 = @convention(c) (UnsafeMutablePointer<Int32>, Int32) -> Int32
private typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32

/// Closes in the child every descriptor but its three standard ones: those another thread
/// opened without close-on-exec stay out of it too.
func closeTheOthers(_ actions: inout posix_spawn_file_actions_t) {
    if let closeFrom = glibcFunction("posix_spawn_file_actions_addclosefrom_np", as: AddCloseFrom.self) {
        _ = closeFrom(&actions, STDERR_FILENO + 1)
    }
}

/// A glibc function Swift's Glibc module leaves out (GNU extensions), found at run time.
private func glibcFunction<Function>(_ name: String, as type: Function.Type) -> Function? {
    guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), name) else { return nil }
    return unsafeBitCast(symbol, to: type)
}
