import Synchronization

/// A known defect a debug build can be told to have (`IVY_TEST_DEFECT=NAME`, CONTRIBUTING.md),
/// so a test can show that the crash checker (`ivy-soak --crash-check`) reports it: a checker
/// that never fails proves nothing. A release never reads the setting.
package enum PlantedDefect: String, CaseIterable, Sendable {
    /// A sync no longer sweeps the `.download-` and `.incoming-` files a killed ivy left in the
    /// audio directory: harmless until a crash lands mid-download, then an orphan for good.
    case keepTransferLeftovers = "keep-transfer-leftovers"

    private static let planted = Atomic<Int>(-1)

    /// Plants `defect` for the rest of the process.
    package static func plant(_ defect: PlantedDefect) {
        planted.store(allCases.firstIndex(of: defect) ?? -1, ordering: .relaxed)
    }

    /// Whether this defect was planted; false in a release, which never plants one.
    package var isPlanted: Bool {
        let index = Self.planted.load(ordering: .relaxed)
        return index >= 0 && Self.allCases[index] == self
    }
}
