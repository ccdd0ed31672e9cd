import ArgumentParser
import Foundation
import IvyCore
import IvyGoogle
import IvyStore
import IvySync
import IvySystem
import Logging
import Synchronization

struct QueueCommand: ContextCommand {
    static let configuration = CommandConfiguration(
        commandName: "queue", abstract: "List local changes still to reach Drive, with attempts and the last error.")

    @OptionGroup var global: GlobalOptions
    @Flag(help: "Show whole ids (the table cuts them to the width that keeps them apart).") var fullIds = false
    @Flag(help: "Print one JSON array.") var json = false

    /// One queue item as `ivy queue --json` prints it (`JSONOutput`).
    struct Item: Encodable {
        let entityType: String
        let entityID: String
        let operation: String
        let attempts: Int
        let failed: Bool
        @Null var lastError: String?
        let queuedAt: String
        let queuedAtMS: Milliseconds
    }

    func run(_ context: Context) async throws {
        let home = try global.home(context)
        let items = try await home.library(readOnly: true).queueItems()
        if json {
            return try home.output.json(
                items.map {
                    Item(
                        entityType: $0.key.kind.rawValue, entityID: $0.key.id, operation: $0.operation.rawValue,
                        attempts: $0.attempts, failed: $0.hasFailed, lastError: $0.lastError,
                        queuedAt: Display.rfc3339($0.queuedAt), queuedAtMS: $0.queuedAt)
                })
        }
        guard !items.isEmpty else { return home.output.line("The queue is empty: everything has reached Drive.") }
        // One width for books and clips alike: the column is one list of ids to tell apart.
        let shown = IDPrefix.shown(items.map(\.key.id), full: fullIds)
        home.output.table(
            ["KIND", "ID", "OPERATION", "STATE", "ATTEMPTS", "LAST ERROR"],
            items.map {
                [
                    $0.key.kind.rawValue, shown($0.key.id), $0.operation.rawValue, $0.hasFailed ? "failed" : "pending",
                    String($0.attempts), Display.cell($0.lastError, limit: 60),
                ]
            })
    }
}
