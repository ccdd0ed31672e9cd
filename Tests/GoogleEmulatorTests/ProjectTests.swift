import Foundation
import GoogleEmulator
import Testing

/// Google keys grants, `drive.file` visibility and API enablement on the Cloud project of the
/// OAuth client, not on the client itself. ivy's client and the Ivy phone app's client share
/// one project; `otherProjectClient` stands for any other app.
@Suite("Emulated Cloud projects: shared grants, drive.file visibility, setup errors")
struct ProjectTests {
    static let app = GoogleEmulator.appClient
    static let other = GoogleEmulator.otherProjectClient

    func refresh(_ google: EmulatorClient, _ token: String, client: EmulatedClient) async throws -> Reply {
        try await google.form(
            "/token",
            [
                "client_id": client.id, "client_secret": client.secret, "grant_type": "refresh_token",
                "refresh_token": token,
            ])
    }

    // "OAuth 2.0 for TV and Limited-Input Device Applications", Token revocation: revoking
    // "removes all OAuth 2.0 scopes previously granted to a project, invalidating any issued
    // access or refresh tokens for all clients registered under that project".
    @Test(
        "revoking ivy's token revokes the project's grant: the Ivy app is signed out too, another project's app is not")
    func revocationIsPerProject() async throws {
        try await withEmulatorClient { google in
            let ivy = try await google.signIn()
            let app = try await google.state.grant(email: "alice@example.com", clientID: Self.app.id)
            let other = try await google.state.grant(email: "alice@example.com", clientID: Self.other.id)
            let bobsApp = try await google.state.grant(email: "bob@example.com", clientID: Self.app.id)
            #expect(try await refresh(google, app.refresh, client: Self.app).status == 200)

            #expect(try await google.form("/revoke", ["token": ivy.refresh]).status == 200)

            let appRefresh = try await refresh(google, app.refresh, client: Self.app)
            #expect(appRefresh.status == 400 && appRefresh.oauthError == "invalid_grant")
            #expect(try await google.request("GET", "/drive/v3/about?fields=user", token: app.access).status == 401)
            #expect(try await refresh(google, other.refresh, client: Self.other).status == 200)
            #expect(
                try await refresh(google, bobsApp.refresh, client: Self.app).status == 200,
                "another account's grant stays")
        }
    }

    @Test("drive.file: a client sees what its project's clients made, never a web-page file or another project's")
    func visibility() async throws {
        try await withEmulatorClient { google in
            let ivy = try await google.signIn().access
            let app = try await google.state.grant(email: "alice@example.com", clientID: Self.app.id).access
            let other = try await google.state.grant(email: "alice@example.com", clientID: Self.other.id).access

            let folder = try await google.createFolder("books", token: app)
            let byApp = try #require(
                try await google.upload(name: "book_a.json", parent: folder, content: Data("{}".utf8), token: app).json[
                    "id"] as? String)
            let byHand = await google.state.putFile(
                email: "alice@example.com", name: "book_b.json", parents: [folder], content: Data("{}".utf8),
                project: nil)
            let otherFolder = try await google.createFolder("books", token: other)
            let byOther = try #require(
                try await google.upload(
                    name: "book_c.json", parent: otherFolder, content: Data("{}".utf8), token: other
                ).json["id"] as? String)

            #expect(try await google.list("'\(folder)' in parents", token: ivy).names == ["book_a.json"])
            #expect(
                try await google.list("name contains 'book'", token: ivy).names.sorted() == ["book_a.json", "books"])
            #expect(try await google.request("GET", "/drive/v3/files/\(byApp)?alt=media", token: ivy).status == 200)
            for hidden in [byHand.id, byOther, otherFolder] {
                let reply = try await google.request("GET", "/drive/v3/files/\(hidden)?fields=id", token: ivy)
                #expect(reply.status == 404 && reply.driveReason == "notFound")
                #expect(try await google.request("DELETE", "/drive/v3/files/\(hidden)", token: ivy).status == 404)
            }
            #expect(
                try await google.list("name contains 'book'", token: other).names.sorted() == ["book_c.json", "books"])
            let intoForeign = try await google.upload(
                name: "book_d.json", parent: folder, content: Data("{}".utf8), token: other)
            #expect(intoForeign.status == 404, "a folder another project made cannot take this project's files")
        }
    }

    // Drive's User resource: emailAddress "may not be present in certain contexts if the user
    // has not made their email address visible to the requester".
    @Test("about can leave out emailAddress; permissionId is always there")
    func aboutWithoutEmail() async throws {
        try await withEmulatorClient { google in
            let token = try await google.signIn().access
            await google.state.setAboutOmitsEmail(true)
            let user = try #require(
                try await google.request("GET", "/drive/v3/about?fields=user", token: token).json["user"]
                    as? [String: Any])
            #expect(user["emailAddress"] == nil && user["permissionId"] as? String == "04871234567890123456")
        }
    }

    @Test(
        """
        a project without the Drive API answers 403 accessNotConfigured; \
        a token without a Drive scope 403 insufficientPermissions
        """
    )
    func setupErrors() async throws {
        try await withEmulatorClient { google in
            let token = try await google.signIn().access
            let other = try await google.state.grant(email: "alice@example.com", clientID: Self.other.id).access
            await google.state.setDriveAPI(enabled: false)
            let refused = try await google.request("GET", "/drive/v3/about?fields=user", token: token)
            #expect(refused.status == 403 && refused.driveReason == "accessNotConfigured")
            let message = (refused.json["error"] as? [String: Any])?["message"] as? String ?? ""
            #expect(
                message.contains("Drive API has not been used in project") && message.contains("Enable it by visiting"))
            #expect(
                try await google.request("GET", "/drive/v3/about?fields=user", token: other).status == 200,
                "only that project")
            await google.state.setDriveAPI(enabled: true)
            #expect(try await google.request("GET", "/drive/v3/about?fields=user", token: token).status == 200)

            // The person unticked Drive on the consent screen: the token has only what was left.
            await google.state.setDeviceCode(interval: 0)
            let code = try await google.deviceCode(scope: "openid email https://www.googleapis.com/auth/drive.file")
            try await google.state.approve(userCode: nil, email: "alice@example.com", scope: "openid email")
            let tokens = try await google.poll(try #require(code.json["device_code"] as? String))
            #expect(tokens.json["scope"] as? String == "openid https://www.googleapis.com/auth/userinfo.email")
            let narrow = try #require(tokens.json["access_token"] as? String)
            let scopeless = try await google.request("GET", "/drive/v3/files", token: narrow)
            #expect(scopeless.status == 403 && scopeless.driveReason == "insufficientPermissions")
        }
    }
}
