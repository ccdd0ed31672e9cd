import Foundation
import IvyCore
import Testing

@testable import IvyGoogle

/// The wire types read Google's answers as the `[String: Any]` reading before them did: a
/// field of the wrong type is missing, never a failed answer.
@Suite("Google's answers decoded leniently")
struct WireTests {
    func answer(_ json: String) -> HTTPResponse { HTTPResponse(status: 200, body: Data(json.utf8)) }

    @Test("a file needs a string id, name and modifiedTime; other fields of the wrong type are left out")
    func files() throws {
        let good =
            #"{"id":"f1","name":"a.mp3","modifiedTime":"2026-01-02T03:04:05.678Z","size":"12","#
            + #""md5Checksum":"abc","mimeType":"audio/mpeg","parents":["p"],"createdTime":7}"#
        let file = try #require(answer(good).decoded(WireFile.self))
        #expect(file.remote?.id == "f1" && file.remote?.size == 12 && file.remote?.md5 == "abc")
        #expect(file.remote?.createdTime == nil && file.parents == ["p"] && file.mimeType == "audio/mpeg")
        for bad in [
            #"{"id":7,"name":"a","modifiedTime":"2026-01-02T03:04:05.678Z"}"#,
            #"{"id":"f","name":["a"],"modifiedTime":"2026-01-02T03:04:05.678Z"}"#,
            #"{"id":"f","name":"a","modifiedTime":"yesterday"}"#, #"{"id":"f","name":"a"}"#,
        ] {
            #expect(answer(bad).decoded(WireFile.self)?.remote == nil, "\(bad)")
        }
        let odd = try #require(answer(#"{"size":12,"parents":["p",3],"md5Checksum":false}"#).decoded(WireFile.self))
        #expect(odd.size == nil && odd.parents == nil && odd.md5Checksum == nil)
    }

    @Test("trashed is a Boolean, or 0 and 1 as JSONSerialization read them")
    func trashed() {
        let cases: [(String, Bool?)] = [
            ("false", false), ("true", true), ("0", false), ("1", true), ("2", nil), (#""no""#, nil),
        ]
        for (raw, expected) in cases {
            #expect(answer(#"{"trashed":\#(raw)}"#).decoded(WireFile.self)?.trashed == expected, "\(raw)")
        }
    }

    @Test("a page whose files are not a list of objects lists nothing; a page that is not an object is no answer")
    func pages() {
        #expect(
            answer(#"{"files":[{"id":"a"},3],"nextPageToken":"t"}"#).decoded(WireFilePage.self)?.files.isEmpty == true)
        #expect(answer(#"{"files":"none","nextPageToken":5}"#).decoded(WireFilePage.self)?.nextPageToken == nil)
        #expect(answer(#"{"files":[{"id":"a"}]}"#).decoded(WireFilePage.self)?.files.count == 1)
        #expect(answer(#"[{"files":[]}]"#).decoded(WireFilePage.self) == nil)
        #expect(answer("not json").decoded(WireFilePage.self) == nil)
    }

    @Test("error bodies: Drive's envelope, OAuth's flat code, or neither")
    func errors() {
        func parsed(_ json: String, status: Int = 400) -> GoogleError {
            GoogleError.from(HTTPResponse(status: status, body: Data(json.utf8)))
        }
        #expect(
            parsed(#"{"error":{"message":"m","errors":[{"reason":"r"}]}}"#)
                == .http(status: 400, reason: "r", message: "m"))
        #expect(
            parsed(#"{"error":{"errors":[{"reason":"r"},7]}}"#)
                == .http(status: 400, reason: nil, message: "no message"))
        #expect(
            parsed(#"{"error":"invalid_grant"}"#)
                == .http(status: 400, reason: "invalid_grant", message: "invalid_grant"))
        #expect(parsed(#"{"error":"x","error_description":"why"}"#) == .http(status: 400, reason: "x", message: "why"))
        #expect(parsed(#"{"error":5}"#, status: 404) == .http(status: 404, reason: nil, message: "not found"))
        #expect(parsed("<html>", status: 503) == .http(status: 503, reason: nil, message: "server error"))
    }

    @Test(
        "OAuth time spans: whole and real numbers, numeric strings, and Booleans as 1 and 0",
        arguments: [
            ("7", 7), ("7.9", 7), (#"" 8 ""#, 8), ("true", 1), ("false", 0), ("1e300", 60), (#""x""#, nil),
            ("null", nil),
            ("[]", nil),
        ] as [(String, Int?)])
    func numbers(raw: String, seconds: Int?) {
        let token = answer(#"{"access_token":"a","expires_in":\#(raw)}"#).decoded(TokenAnswer.self)
        #expect(OAuthLimits.seconds(token?.expiresIn, in: 0...60) == seconds)
    }
}
