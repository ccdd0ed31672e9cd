import Foundation

/// ivy's programs as this build made them: where the tests and `ivy-soak` find them.
package enum BuiltProgram: String, Sendable, CaseIterable {
    case ivy
    case emulator = "ivy-emulator"
    case soak = "ivy-soak"

    /// The program in the build directory this process's executable was built into (the test
    /// bundle and `ivy-soak` both sit there), unless the environment names another: `IVY_BINARY`
    /// for ivy (a release build, an installed one), `IVY_EMULATOR` for the emulator.
    package var path: String {
        if let variable = overrideVariable, let override = ProcessInfo.processInfo.environment[variable],
            !override.isEmpty
        {
            return override
        }
        return Self.buildDirectory + "/" + rawValue
    }

    /// The variable that names another build of this program.
    package var overrideVariable: String? {
        switch self {
        case .ivy: "IVY_BINARY"
        case .emulator: "IVY_EMULATOR"
        case .soak: nil
        }
    }

    /// The directory of this process's executable, symbolic links resolved.
    package static let buildDirectory: String =
        URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent().path
}
