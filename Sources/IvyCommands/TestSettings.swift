import Foundation
package import IvyCore

/// Settings only the project's tests give ivy, through the environment (CONTRIBUTING.md lists
/// them). The binary reads them in debug builds alone (`main.swift`, under `#if DEBUG`): a
/// release never does, whatever its environment holds.
package enum TestSettings {
    /// `IVY_TEST_WAIT_SECONDS`: how long ivy waits on a server that answers nothing, a sync's
    /// silence budget (45 s) and doctor's network deadline (25 s) alike, so a test of either
    /// takes a second or two; nil when unset or not a number of seconds from 0.1 to 3600.
    package static func waitOnSilence(_ environment: [String: String]) -> Duration? {
        guard let text = environment["IVY_TEST_WAIT_SECONDS"], let seconds = Double(text), seconds >= 0.1,
            seconds <= 3600
        else { return nil }
        return .milliseconds(Int64((seconds * 1000).rounded()))
    }

    /// `IVY_TEST_IDS=SEED`: new books and clips get the ids `IDGenerator.seeded(SEED)` makes,
    /// the same in every run (the crash checker's fixture, one seed a command); nil when unset.
    package static func ids(_ environment: [String: String]) -> IDGenerator? {
        guard let seed = environment["IVY_TEST_IDS"], !seed.isEmpty else { return nil }
        return .seeded(seed)
    }
}
