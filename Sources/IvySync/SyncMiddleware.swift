/// A layer around the door's sync, in the shape of Hummingbird's middleware
/// (`handle(input, context, next)`): it may look at or change the request on its way in, answer
/// without calling `next`, and look at or change the outcome on its way out. What a sync means
/// to its caller (cron's policy, health pings, a watch's gate) lives in layers, each in a file
/// of its own; the door itself only opens (`SyncDoor.sync(_:)`).
package protocol SyncMiddleware: Sendable {
    func handle(
        _ request: SyncRequest, door: SyncDoor, next: (SyncRequest) async throws -> SyncOutcome
    ) async throws -> SyncOutcome
}
