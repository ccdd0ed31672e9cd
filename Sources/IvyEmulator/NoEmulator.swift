/// Nothing answered at the emulator's address: one line that says so, and how to start one.
struct NoEmulator: Error, CustomStringConvertible {
    let url: String
    var description: String {
        "no emulator answers at \(url); start one with `ivy-emulator --state FILE` (or "
            + "`eval \"$(ivy-emulator --state FILE --background)\"`) and pass the URL it prints (--url)"
    }
}
