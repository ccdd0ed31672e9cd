import ArgumentParser
import Foundation
import IvyCore
import IvyGoogle
import IvyStore
import IvySync
import IvySystem
import Logging
import Synchronization

struct RetryFailedCommand: ContextCommand {
    static let configuration = CommandConfiguration(
        commandName: "retry-failed", abstract: "Give failed queue items another chance: they become pending again.")

    @OptionGroup var global: GlobalOptions

    func run(_ context: Context) async throws {
        let home = try global.home(context)
        let count = try await home.library().retryFailed()
        home.output.line(
            count == 0
                ? "No failed items."
                : "\(count) failed item\(count == 1 ? "" : "s") will be tried again at the next sync.")
    }
}
