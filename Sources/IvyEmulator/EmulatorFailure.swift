/// A failure that is not the user's input: ArgumentParser prints it as one line, exit 1.
struct EmulatorFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
