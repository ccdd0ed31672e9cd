import Foundation
import Testing

@testable import IvyGoogle

/// Issue 49: an upload session's `Location` is followed only to the sign-in's own Drive server.
@Suite("An upload session's Location: the sign-in's own server, or nothing is sent")
struct SessionLocationTests {
    static let google = URL(string: "https://www.googleapis.com")!
    static let emulator = URL(string: "http://127.0.0.1:41235")!
    static let session = "/upload/drive/v3/files?uploadType=resumable&upload_id=ABC"

    static func taken(_ location: String?, drive: URL) -> URL? {
        try? ResumableUpload.sessionURL(location, drive: drive, context: "uploading clip_x.mp3")
    }

    @Test("Google's own session URI, and the same server written otherwise, are taken")
    func sameServer() {
        for location in [
            "https://www.googleapis.com" + Self.session, "https://www.googleapis.com:443" + Self.session,
            "HTTPS://WWW.GoogleAPIs.com" + Self.session, Self.session,
        ] {
            #expect(Self.taken(location, drive: Self.google)?.host?.lowercased() == "www.googleapis.com", "\(location)")
        }
        #expect(Self.taken("http://127.0.0.1:41235" + Self.session, drive: Self.emulator) != nil)
        #expect(
            Self.taken("http://localhost:41235" + Self.session, drive: URL(string: "http://localhost:41235")!) != nil)
    }

    @Test("anything else is refused, naming where it pointed and the sign-in's server")
    func elsewhere() {
        for location in [
            "http://www.googleapis.com" + Self.session, "https://www.googleapis.com:8443" + Self.session,
            "https://upload.googleapis.com" + Self.session, "https://www.googleapis.com.example.com" + Self.session,
            "https://www.googleapis.com@example.com" + Self.session, "https://user@www.googleapis.com" + Self.session,
            "//example.com" + Self.session, "ftp://www.googleapis.com" + Self.session, "file:///etc/passwd",
            "javascript:alert(1)", "", "http://[::1" + Self.session,
        ] {
            #expect(Self.taken(location, drive: Self.google) == nil, "\(location)")
        }
        for location in [
            "http://127.0.0.1:41236" + Self.session, "https://127.0.0.1:41235" + Self.session,
            "http://127.0.0.2:41235" + Self.session, "http://localhost:41235" + Self.session,
            "http://drive.example.com" + Self.session,
        ] {
            #expect(Self.taken(location, drive: Self.emulator) == nil, "\(location)")
        }
        #expect(Self.taken(nil, drive: Self.google) == nil)
        do {
            _ = try ResumableUpload.sessionURL(
                "http://127.0.0.1:9" + Self.session, drive: Self.emulator, context: "uploading clip_x.mp3")
            Issue.record("taken")
        } catch {
            #expect(
                error.message.hasPrefix(
                    "uploading clip_x.mp3: Drive's answer sends the file to http://127.0.0.1:9, not to this sign-in's "
                        + "server http://127.0.0.1:41235, so nothing was sent there"),
                "\(error.message)")
        }
    }

    @Test("a spent per-project quota says what to do by whose client it is: a release's, or one's own")
    func sharedQuotaAdvice() {
        let builtIn = GoogleError.sharedQuotaExhausted(builtInClient: true).localizedDescription
        #expect(builtIn.contains("everyone who uses ivy's OAuth client"))
        #expect(builtIn.contains("`ivy login --client-id ID --client-secret-file FILE`"))
        #expect(!builtIn.contains("SECRET"))
        let own = GoogleError.sharedQuotaExhausted(builtInClient: false).localizedDescription
        #expect(own.contains("your OAuth client's Cloud project") && own.contains("quota_units_per_minute"))
        #expect(!own.contains("ivy login"))
    }
}
