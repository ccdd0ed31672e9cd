import Foundation

/// Applies a request's `fields` parameter to a JSON object, or answers Drive's 400.
enum Masking {
    /// Drive answers a selection naming a field its resource does not have with 400 "Invalid
    /// field selection NAME" (Drive guide "Return specific fields": `files(id,capabilities,
    /// canAddChildren)` fails so); a fake that dropped such a name would let a client's typo
    /// pass its tests and then fail against Google.
    static func apply(_ fields: String, to object: [String: Any], schema: Schema) -> Result<
        [String: Any], EmulatorReply
    > {
        do {
            let mask = try FieldMask.parse(fields)
            if let unknown = schema.unknownField(in: mask) {
                return .failure(invalidSelection(unknown))
            }
            return .success(mask.apply(toJSONObject: object))
        } catch {
            return .failure(.driveError(400, reason: "invalidParameter", message: error.message))
        }
    }

    static func invalidSelection(_ name: String) -> EmulatorReply {
        .driveError(400, reason: "invalidParameter", message: "Invalid field selection \(name)")
    }
}

/// The field names a Drive resource has, as its discovery document lists them (Drive v3,
/// revision 20261106, as google-api-python-client 2.202.0 ships it): what a `fields`
/// selection may name. Fields the emulator never fills in are still valid to ask for; they
/// are simply absent from the answer, as Drive leaves out fields without a value.
indirect enum Schema {
    /// An object whose keys are these; each key's value has its own schema.
    case object([String: Schema])
    /// A value whose inner names are not checked (a map such as `appProperties`, or a
    /// nested resource the emulator does not model).
    case open

    /// The first name in `mask` (depth first, sorted) that this schema does not have.
    func unknownField(in mask: FieldMask) -> String? {
        guard case .object(let known) = self, let keys = mask.keys else { return nil }
        for (key, inner) in keys.sorted(by: { $0.key < $1.key }) {
            guard let schema = known[key] else { return key }
            if let unknown = schema.unknownField(in: inner) { return unknown }
        }
        return nil
    }

    private static func leaves(_ names: String) -> [String: Schema] {
        Dictionary(uniqueKeysWithValues: names.split(separator: ",").map { (String($0), Schema.open) })
    }

    static let file = Schema.object(
        leaves(
            "appProperties,capabilities,clientEncryptionDetails,contentHints,contentRestrictions,"
                + "copyRequiresWriterPermission,createdTime,description,downloadRestrictions,driveId,"
                + "explicitlyTrashed,exportLinks,fileExtension,folderColorRgb,fullFileExtension,"
                + "hasAugmentedPermissions,hasThumbnail,headRevisionId,iconLink,id,imageMediaMetadata,"
                + "inheritedPermissionsDisabled,isAppAuthorized,kind,labelInfo,lastModifyingUser,linkShareMetadata,"
                + "md5Checksum,mimeType,modifiedByMe,modifiedByMeTime,modifiedTime,name,originalFilename,ownedByMe,"
                + "owners,parents,permissionIds,permissions,properties,quotaBytesUsed,resourceKey,sha1Checksum,"
                + "sha256Checksum,shared,sharedWithMeTime,sharingUser,shortcutDetails,size,spaces,starred,"
                + "teamDriveId,thumbnailLink,thumbnailVersion,trashed,trashedTime,trashingUser,version,"
                + "videoMediaMetadata,viewedByMe,viewedByMeTime,viewersCanCopyContent,webContentLink,webViewLink,"
                + "writersCanShare"))

    static let fileList = Schema.object(
        leaves("incompleteSearch,kind,nextPageToken").merging(["files": file]) { $1 })

    static let changeList = Schema.object(
        leaves("kind,newStartPageToken,nextPageToken").merging([
            "changes": .object(
                leaves("changeType,drive,driveId,fileId,kind,removed,teamDrive,teamDriveId,time,type")
                    .merging(["file": file]) { $1 })
        ]) { $1 })

    static let startPageToken = Schema.object(leaves("kind,startPageToken"))

    static let about = Schema.object(
        leaves(
            "appInstalled,canCreateDrives,canCreateTeamDrives,driveThemes,exportFormats,folderColorPalette,"
                + "importFormats,kind,maxImportSizes,maxUploadSize,teamDriveThemes"
        ).merging([
            "user": .object(leaves("displayName,emailAddress,kind,me,permissionId,photoLink")),
            "storageQuota": .object(leaves("limit,usage,usageInDrive,usageInDriveTrash")),
        ]) { $1 })
}
