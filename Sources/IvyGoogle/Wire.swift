import Foundation
import IvyCore

// Google's answers as ivy reads them. Every field is read leniently: one missing, null or of
// another type than Google documents is nil, never a failed answer, so a hostile or odd
// answer is skipped or refused by the code that uses it, with that code's own message.

extension KeyedDecodingContainer {
    /// The value at `key` when it is a `T`; nil when it is missing, null or anything else.
    func lenient<T: Decodable>(_ key: Key) -> T? {
        (try? decodeIfPresent(T.self, forKey: key)) ?? nil
    }
}

/// The key of any JSON object member.
struct WireKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
    init(_ name: String) { stringValue = name }
}

extension HTTPResponse {
    /// The body as `T`; nil when it is not JSON or not the shape `T` insists on (an object).
    func decoded<T: Decodable>(_ type: T.Type) -> T? {
        try? JSONDecoder().decode(T.self, from: body)
    }
}

/// A file resource as `files.list`, `files.get` and the creates answer it.
struct WireFile: Decodable {
    var id: String?
    var name: String?
    var mimeType: String?
    var size: String?
    var md5Checksum: String?
    var modifiedTime: String?
    var createdTime: String?
    var parents: [String]?
    var trashed: Bool?

    init(from decoder: any Decoder) throws {
        // Not an object: not a file (a listing with such an entry reads as having no files).
        let fields = try decoder.container(keyedBy: WireKey.self)
        id = fields.lenient(WireKey("id"))
        name = fields.lenient(WireKey("name"))
        mimeType = fields.lenient(WireKey("mimeType"))
        size = fields.lenient(WireKey("size"))
        md5Checksum = fields.lenient(WireKey("md5Checksum"))
        modifiedTime = fields.lenient(WireKey("modifiedTime"))
        createdTime = fields.lenient(WireKey("createdTime"))
        parents = fields.lenient(WireKey("parents"))
        // Foundation's JSONSerialization, which ivy read these with before, took 0 and 1 as Booleans.
        trashed =
            fields.lenient(WireKey("trashed"))
            ?? (fields.lenient(WireKey("trashed")) as Int?).flatMap {
                $0 == 0 ? false : $0 == 1 ? true : nil
            }
    }

    /// `parents` as Drive file ids (none when missing).
    var parentIDs: [DriveFileID] { (parents ?? []).map(DriveFileID.init) }

    /// The file as the planner sees it; nil without an id, a name or a readable `modifiedTime`.
    var remote: RemoteFile? {
        guard let id, let name, let modified = modifiedTime.flatMap(DriveTime.milliseconds) else { return nil }
        return RemoteFile(
            id: DriveFileID(id), name: name, modifiedTime: modified,
            createdTime: createdTime.flatMap(DriveTime.milliseconds),
            size: Self.size(size), md5: md5Checksum)
    }

    /// Drive's `size`, an int64 written as a JSON string. Digits too many for Int64 mean a
    /// file larger than ivy can count (Int64.max, over every cap); anything else that is not
    /// a whole number of bytes, a negative one included, means no usable size: the download
    /// is then bounded by the 50 MB cap and checked against the md5.
    static func size(_ text: String?) -> Int64? {
        guard let text, !text.isEmpty, text.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) else { return nil }
        return Int64(text) ?? Int64.max
    }
}

/// One page of `files.list`.
struct WireFilePage: Decodable {
    /// Empty when `files` is missing, not a list, or holds anything but objects.
    var files: [WireFile]
    var nextPageToken: String?

    init(from decoder: any Decoder) throws {
        let fields = try decoder.container(keyedBy: WireKey.self)
        files = fields.lenient(WireKey("files")) ?? []
        nextPageToken = fields.lenient(WireKey("nextPageToken"))
    }
}

/// `files.generateIds`.
struct GeneratedIDs: Decodable {
    var ids: [String]?

    init(from decoder: any Decoder) throws {
        ids = try decoder.container(keyedBy: WireKey.self).lenient(WireKey("ids"))
    }
}

/// `about` with `fields=user(emailAddress,permissionId)`.
struct AboutAnswer: Decodable {
    struct User: Decodable {
        var emailAddress: String?
        var permissionId: String?

        init(from decoder: any Decoder) throws {
            let fields = try decoder.container(keyedBy: WireKey.self)
            emailAddress = fields.lenient(WireKey("emailAddress"))
            permissionId = fields.lenient(WireKey("permissionId"))
        }
    }

    var user: User?

    init(from decoder: any Decoder) throws {
        user = try decoder.container(keyedBy: WireKey.self).lenient(WireKey("user"))
    }
}

/// An error answer: Drive's `{"error":{"message","errors":[{"reason"}]}}` or OAuth's flat
/// `{"error","error_description"}`; the device-code quota answer says `error_code`.
struct GoogleErrorAnswer: Decodable {
    struct Envelope: Decodable {
        var message: String?
        /// The first entry's reason; nil when `errors` is not a list of objects.
        var reason: String?

        /// ErrorInfo's `metadata.quota_limit` (`defaultPerMinutePerUser`,
        /// `defaultPerMinutePerProject`): whose quota a rate limit is.
        var quotaLimit: String?

        struct Entry: Decodable {
            var reason: String?

            init(from decoder: any Decoder) throws {
                reason = try decoder.container(keyedBy: WireKey.self).lenient(WireKey("reason"))
            }
        }

        /// One of `error.details[]`, read only when it is a `google.rpc.ErrorInfo`: googleapis'
        /// google/rpc/error_details.proto gives it `reason` (UPPER_SNAKE_CASE, such as
        /// `RATE_LIMIT_EXCEEDED`), `domain` and a string map `metadata`; AIP-193 says every
        /// error should carry one. Any other detail (`google.rpc.Help`...) reads as nothing.
        struct Detail: Decodable {
            static let errorInfoType = "type.googleapis.com/google.rpc.ErrorInfo"
            var reason: String?
            var quotaLimit: String?

            init(from decoder: any Decoder) throws {
                let fields = try decoder.container(keyedBy: WireKey.self)
                guard (fields.lenient(WireKey("@type")) as String?) == Self.errorInfoType else { return }
                reason = fields.lenient(WireKey("reason"))
                quotaLimit = (fields.lenient(WireKey("metadata")) as [String: String]?)?["quota_limit"]
            }
        }

        init(from decoder: any Decoder) throws {
            let fields = try decoder.container(keyedBy: WireKey.self)
            message = fields.lenient(WireKey("message"))
            // Drive's classic shape names the reason in `errors[0].reason`; Google's newer
            // shape (AIP-193) only in an ErrorInfo detail. Whichever is there.
            let info = (fields.lenient(WireKey("details")) as [Detail]?)?.first { $0.reason != nil }
            reason = (fields.lenient(WireKey("errors")) as [Entry]?)?.first?.reason ?? info?.reason
            quotaLimit = info?.quotaLimit
        }
    }

    /// Drive's shape.
    var envelope: Envelope?
    /// OAuth's shape: the error code.
    var code: String?
    var description: String?
    var errorCode: String?

    init(from decoder: any Decoder) throws {
        let fields = try decoder.container(keyedBy: WireKey.self)
        envelope = fields.lenient(WireKey("error"))
        code = fields.lenient(WireKey("error"))
        description = fields.lenient(WireKey("error_description"))
        errorCode = fields.lenient(WireKey("error_code"))
    }
}

/// A number the OAuth endpoints send for a time span: a JSON number or a numeric string.
enum OAuthNumber: Decodable {
    case whole(Int)
    case real(Double)
    case text(String)

    init(from decoder: any Decoder) throws {
        let value = try decoder.singleValueContainer()
        if let whole = try? value.decode(Int.self) {
            self = .whole(whole)
        } else if let real = try? value.decode(Double.self) {
            self = .real(real)
        } else if let text = try? value.decode(String.self) {
            self = .text(text)
        } else if let flag = try? value.decode(Bool.self) {
            // JSONSerialization, which ivy read these with before, took true as 1 and false as 0.
            self = .whole(flag ? 1 : 0)
        } else {
            throw DecodingError.typeMismatch(
                OAuthNumber.self, .init(codingPath: decoder.codingPath, debugDescription: "not a number"))
        }
    }
}

/// The token endpoint's answer to a sign-in or a refresh.
struct TokenAnswer: Decodable {
    var accessToken: String?
    var refreshToken: String?
    var expiresIn: OAuthNumber?
    var scope: String?

    init(from decoder: any Decoder) throws {
        let fields = try decoder.container(keyedBy: WireKey.self)
        accessToken = fields.lenient(WireKey("access_token"))
        refreshToken = fields.lenient(WireKey("refresh_token"))
        expiresIn = fields.lenient(WireKey("expires_in"))
        scope = fields.lenient(WireKey("scope"))
    }
}

/// The device-code endpoint's answer.
struct DeviceCodeAnswer: Decodable {
    var deviceCode: String?
    var userCode: String?
    /// Google's name is `verification_url`; RFC 8628's is `verification_uri`.
    var verificationURL: String?
    var expiresIn: OAuthNumber?
    var interval: OAuthNumber?

    init(from decoder: any Decoder) throws {
        let fields = try decoder.container(keyedBy: WireKey.self)
        deviceCode = fields.lenient(WireKey("device_code"))
        userCode = fields.lenient(WireKey("user_code"))
        verificationURL = fields.lenient(WireKey("verification_url")) ?? fields.lenient(WireKey("verification_uri"))
        expiresIn = fields.lenient(WireKey("expires_in"))
        interval = fields.lenient(WireKey("interval"))
    }
}

/// The metadata of a file or folder ivy creates, with the id it generated for it.
struct NewFile: Encodable {
    var id: DriveFileID
    var name: String
    /// Nil for the Ivy folder itself, made in My Drive.
    var parents: [DriveFileID]?
    var mimeType: String

    func json() throws -> Data { try JSONEncoder().encode(self) }
}

/// `changes.getStartPageToken`.
struct StartPageTokenAnswer: Decodable {
    var startPageToken: String?

    init(from decoder: any Decoder) throws {
        startPageToken = try decoder.container(keyedBy: WireKey.self).lenient(WireKey("startPageToken"))
    }
}

/// One entry of `changes.list`.
struct WireChange: Decodable {
    var changeType: String?
    var fileId: String?
    var removed: Bool?
    var file: WireFile?
    /// Whether `file` was there at all (then it must read as a file).
    var hasFile: Bool

    init(from decoder: any Decoder) throws {
        let fields = try decoder.container(keyedBy: WireKey.self)
        changeType = fields.lenient(WireKey("changeType"))
        fileId = fields.lenient(WireKey("fileId"))
        removed = fields.lenient(WireKey("removed"))
        file = fields.lenient(WireKey("file"))
        hasFile = fields.contains(WireKey("file")) && !((try? fields.decodeNil(forKey: WireKey("file"))) ?? false)
    }

    /// The change as ivy applies it; nil when it cannot be applied safely: no file id, or a
    /// file that is there but cannot be read (a change ivy skipped would leave the mirror
    /// wrong for good, so such a page breaks the chain instead).
    var change: DriveChange? {
        guard let fileId, !fileId.isEmpty else { return nil }
        if removed == true { return DriveChange(fileID: DriveFileID(fileId), file: nil) }
        guard hasFile else {
            // Neither removed nor a file: a change of a shared drive, or one Drive left out.
            // Documented as "present if the type is file and the file has not been removed".
            return nil
        }
        guard let object = file, let remote = object.remote, remote.id.rawValue == fileId else { return nil }
        return DriveChange(
            fileID: remote.id,
            file: ChangedFile(
                file: remote, mimeType: object.mimeType ?? "", parents: object.parentIDs,
                trashed: object.trashed ?? false))
    }
}

/// One page of `changes.list`.
struct WireChangePage: Decodable {
    /// Nil when `changes` is missing, not a list, or holds anything but objects: the page
    /// then breaks the chain.
    var changes: [WireChange]?
    var nextPageToken: String?
    var newStartPageToken: String?

    init(from decoder: any Decoder) throws {
        let fields = try decoder.container(keyedBy: WireKey.self)
        changes = fields.lenient(WireKey("changes"))
        nextPageToken = fields.lenient(WireKey("nextPageToken"))
        newStartPageToken = fields.lenient(WireKey("newStartPageToken"))
    }
}
