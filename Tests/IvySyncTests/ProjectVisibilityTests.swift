import Foundation
import GoogleEmulator
import IvyCore
import IvyGoogle
import IvyStore
import IvySync
import IvyTestSupport
import Testing

extension World {
    /// Another OAuth client writing to alice's Drive through Drive's API, as that app would:
    /// the Ivy phone app (ivy's own Cloud project) or an app of another project.
    func app(_ client: EmulatedClient) async throws -> DriveClient {
        let tokens = try await state.grant(email: alice, clientID: client.id)
        let credentials = ClientCredentials(id: client.id, secret: client.secret)
        let token = StoredToken(
            accessToken: tokens.access, refreshToken: tokens.refresh, expiresAt: clock.clock.now() + 3_000_000,
            scope: DeviceFlow.scope, clientID: client.id, email: alice, permissionID: "")
        let store = TokenStore(path: directory + "/\(client.id).json", warn: { _ in })
        let provider = TokenProvider(
            token: token, store: store, endpoints: endpoints, credentials: credentials,
            effects: GoogleEffects(transport: transport, clock: clock.clock, sleep: { _ in }))
        return DriveClient(
            drive: endpoints.drive, authorized: AuthorizedTransport(tokens: provider, transport: transport))
    }
}

/// ivy asks for `drive.file`: it sees only what apps of its own Cloud project made, which is
/// why it must share the Ivy app's project ("api-specific-auth": files created or opened by
/// the app; the Picker's setAppId takes the project number as the app's identity).
@Suite("drive.file: what the Ivy app writes syncs; what another project or the web page makes is never seen")
struct ProjectVisibilityTests {
    static func bookJSON(id: String, title: String) -> Data {
        let json =
            #"{"id":"\#(id)","title":"\#(title)","position":1,"hidden":false,"#
            + #""created_at":1700000000000,"updated_at":1700000000000}"#
        return Data(json.utf8)
    }

    @Test("a book the Ivy app wrote is synced; one from another project's app or from Drive's web page is not")
    func visibility() async throws {
        try await withWorld { world in
            let laptop = try await world.device("laptop")
            try await laptop.addBook("Dune")
            #expect(try await laptop.sync().failures.isEmpty)
            let books = try await world.folderID("books")

            let fromApp = UUID().uuidString.lowercased()
            let phone = try await world.app(GoogleEmulator.appClient)
            _ = try await phone.uploadJSON(
                name: "book_\(fromApp).json", data: Self.bookJSON(id: fromApp, title: "Emma"),
                folder: DriveFileID(books),
                replacing: [])

            // Another project's app cannot even see ivy's folders: it builds its own tree.
            let fromOther = UUID().uuidString.lowercased()
            let other = try await world.app(GoogleEmulator.otherProjectClient)
            let otherFolders = try await other.folders()
            _ = try await other.uploadJSON(
                name: "book_\(fromOther).json", data: Self.bookJSON(id: fromOther, title: "Impostor"),
                folder: otherFolders.books[0], replacing: [])
            let byHand = UUID().uuidString.lowercased()
            await world.state.putFile(
                email: alice, name: "book_\(byHand).json", parents: [books],
                content: Self.bookJSON(id: byHand, title: "Dropped in"),
                project: nil)

            let report = try await laptop.sync()
            #expect(report.failures.isEmpty && report.skipped.isEmpty, "\(report.failures) \(report.skipped)")
            #expect(report.downloaded.pair == [1, 0])
            #expect(try await laptop.book(BookID(fromApp))?.title == "Emma")
            #expect(try await laptop.book(BookID(fromOther)) == nil)
            #expect(try await laptop.book(BookID(byHand)) == nil)
            #expect(try await laptop.library.books(includeHidden: true).map(\.title).sorted() == ["Dune", "Emma"])
            let ivyFolders = await world.state.dump(email: alice).filter { $0.isFolder && $0.name == "Ivy" }
            #expect(ivyFolders.count == 2, "ivy's tree and the other app's, neither seeing the other")
            #expect(try await laptop.sync().transferredNothing)
        }
    }
}
