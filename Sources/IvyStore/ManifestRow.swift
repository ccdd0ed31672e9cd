import GRDB
import IvyCore

/// A row of `sync_manifest` without its base JSON (the content both sides agreed on), which
/// only a merge reads, one entity at a time; the base audio's md5 comes along, as the planner
/// compares Drive's MP3 with it.
struct ManifestRow: SnakeCaseColumns {
    static let databaseTableName = "sync_manifest"
    static let selection =
        "entity_type, entity_id, local_updated_at, remote_updated_at, remote_file_id, remote_mp3_file_id, "
        + "base_audio_md5, synced_at, missing_since"

    var entityType: String
    var entityID: String
    var localUpdatedAt: Milliseconds?
    var remoteUpdatedAt: Milliseconds?
    var remoteFileID: DriveFileID?
    var remoteMP3FileID: DriveFileID?
    var baseAudioMD5: String?
    var syncedAt: Milliseconds?
    var missingSince: Milliseconds?

    /// Nil for a kind this ivy does not know: the row is left as it is, never acted on.
    var entry: ManifestEntry? {
        EntityKind(rawValue: entityType).map { kind in
            ManifestEntry(
                key: EntityKey(kind, entityID), localUpdatedAt: localUpdatedAt, remoteUpdatedAt: remoteUpdatedAt,
                remoteFileID: remoteFileID, remoteMP3FileID: remoteMP3FileID, audioMD5: baseAudioMD5,
                syncedAt: syncedAt, missingSince: missingSince)
        }
    }
}
