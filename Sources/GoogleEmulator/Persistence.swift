package import Foundation

/// What `ivy-emulator --state FILE` keeps across restarts: accounts, clients, tokens and
/// every Drive. Sign-ins in progress and upload sessions are not kept.
struct EmulatorSnapshot: Codable {
    /// 2 since files and clients carry their Cloud project; absent before.
    var version: Int?
    var accounts: [EmulatedAccount]
    var clients: [EmulatedClient]
    var refreshTokens: [String: RefreshGrant]
    var accessTokens: [String: AccessGrant]
    var files: [String: DriveFile]
    var reservedIDs: Set<String>
    var tokenLifetime: Int
    /// The serial number in the last id or token made; absent in older files. Carried on so
    /// ids and tokens made after a restart never repeat old ones, whatever the seed.
    var serial: UInt64?
    /// Each account's change feed, so change tokens from before a restart keep working;
    /// absent in older files, whose tokens the restarted emulator then refuses as unknown.
    var changeLogs: [String: ChangeLog]?
    /// The port it last listened on, so a restart can listen there again and sign-ins made
    /// against it (which record the URL) keep working; absent in older files.
    var port: Int?
    /// The certificate authority of an emulator that served TLS (its key too: the file is
    /// 0600), so a restart presents a certificate the same clients trust; absent otherwise.
    var authority: EmulatorAuthority?
}

extension EmulatorState {
    package func snapshot() throws -> Data {
        let snapshot = EmulatorSnapshot(
            version: 2, accounts: accounts, clients: clients, refreshTokens: refreshTokens, accessTokens: accessTokens,
            files: files,
            reservedIDs: reservedIDs, tokenLifetime: tokenLifetime, serial: serial,
            changeLogs: changeLogs.mapValues { $0.compacted() }, port: listeningPort,
            authority: authority)
        return try JSONEncoder().encode(snapshot)
    }

    package func restore(from data: Data) throws {
        let snapshot = try JSONDecoder().decode(EmulatorSnapshot.self, from: data)
        accounts = snapshot.accounts
        clients = snapshot.clients
        refreshTokens = snapshot.refreshTokens
        accessTokens = snapshot.accessTokens
        files = snapshot.files
        if snapshot.version == nil {
            // Before projects, every file was ivy's.
            for id in files.keys { files[id]?.project = EmulatedClient.ivyProject }
        }
        reservedIDs = snapshot.reservedIDs
        tokenLifetime = snapshot.tokenLifetime
        serial = max(serial, snapshot.serial ?? 0)
        changeLogs = snapshot.changeLogs ?? [:]
        listeningPort = snapshot.port
        authority = snapshot.authority ?? authority
    }
}
