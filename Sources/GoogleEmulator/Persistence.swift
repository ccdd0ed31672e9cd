import Foundation

/// What `ivy-emulator --state FILE` keeps across restarts: accounts, clients, tokens and
/// every Drive. Sign-ins in progress and upload sessions are not kept.
struct EmulatorSnapshot: Codable {
    var accounts: [EmulatedAccount]
    var clients: [EmulatedClient]
    var refreshTokens: [String: RefreshGrant]
    var accessTokens: [String: AccessGrant]
    var files: [String: DriveFile]
    var reservedIDs: Set<String>
    var tokenLifetime: Int
}

extension EmulatorState {
    package func snapshot() throws -> Data {
        let snapshot = EmulatorSnapshot(
            accounts: accounts, clients: clients, refreshTokens: refreshTokens, accessTokens: accessTokens, files: files,
            reservedIDs: reservedIDs, tokenLifetime: tokenLifetime)
        return try JSONEncoder().encode(snapshot)
    }

    package func restore(from data: Data) throws {
        let snapshot = try JSONDecoder().decode(EmulatorSnapshot.self, from: data)
        accounts = snapshot.accounts
        clients = snapshot.clients
        refreshTokens = snapshot.refreshTokens
        accessTokens = snapshot.accessTokens
        files = snapshot.files
        reservedIDs = snapshot.reservedIDs
        tokenLifetime = snapshot.tokenLifetime
    }
}
