import ArgumentParser
import Foundation
import IvyCore
import IvyGoogle
import IvyStore
import IvySync
import IvySystem
import Logging
import Synchronization

struct ResetManifestCommand: ContextCommand {
    static let configuration = CommandConfiguration(
        commandName: "reset-manifest",
        abstract: "Forget what was synced; the next sync compares everything afresh.",
        discussion: """
            Clears the sync manifest and the remembered Drive folders (queued changes stay). The next sync is a full \
            re-sync: entities on both sides are merged field by field, so nothing is duplicated or lost.
            """)

    @OptionGroup var global: GlobalOptions
    @Flag(help: "Do not ask for confirmation.") var yes = false

    func run(_ context: Context) async throws {
        let home = try global.home(context)
        let library = try await home.library()
        if !yes {
            guard home.terminal.input else {
                throw ValidationError("reset-manifest needs confirmation; run it on a terminal or pass --yes")
            }
            guard home.agrees("Forget what this library last synced? The next sync re-compares everything.") else {
                return home.output.line("Nothing changed.")
            }
        }
        // A running sync would write back the mirror and folders it read before the reset:
        // wait for it, so what is forgotten stays forgotten.
        try await withSyncLock(home.waitForSyncLock()) {
            let entries = try await library.localStatus().manifestEntries
            try await library.resetManifest()
            home.output.line(
                "Forgot \(entries) synced entr\(entries == 1 ? "y" : "ies"); the next `ivy sync` is a full re-sync.")
        }
    }
}
