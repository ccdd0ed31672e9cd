import GRDB
import IvyCore

/// The library's migrations. Shipped migrations are never edited: a change is a new one.
enum Schema {
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1: library, queue, manifest, settings") { db in
            try db.execute(sql: v1)
        }
        migrator.registerMigration("v2: sync bases") { db in
            try db.execute(sql: v2)
        }
        migrator.registerMigration("v3: time ranges") { db in
            try db.execute(sql: v3)
        }
        migrator.registerMigration("v4: held changes reported") { db in
            try db.execute(sql: v4)
        }
        migrator.registerMigration("v5: drive mirror") { db in
            try db.execute(sql: v5)
        }
        migrator.registerMigration("v6: local trash") { db in
            try db.execute(sql: v6)
        }
        migrator.registerMigration("v7: missing on drive since") { db in
            try db.execute(sql: v7)
        }
        migrator.registerMigration("v8: audio replacements") { db in
            try db.execute(sql: v8)
        }
        migrator.registerMigration("v9: trash keeps what a restore replaces") { db in
            // SQLite cannot change a CHECK: the table is made anew. Its ids only grow, even
            // past entries removed before this: the AUTOINCREMENT counter is carried over.
            let counter = try Int64.fetchOne(db, sql: "SELECT seq FROM sqlite_sequence WHERE name = 'trash'")
            try db.execute(sql: v9)
            if let counter {
                try db.execute(
                    sql: "UPDATE sqlite_sequence SET seq = max(seq, ?) WHERE name = 'trash'", arguments: [counter])
                if db.changesCount == 0 {
                    try db.execute(
                        sql: "INSERT INTO sqlite_sequence (name, seq) VALUES ('trash', ?)", arguments: [counter])
                }
            }
        }
        migrator.registerMigration("v10: history") { db in
            try db.execute(sql: v10)
        }
        migrator.registerMigration("v11: history in the order of changes") { db in
            try db.execute(sql: v11)
        }
        migrator.registerMigration("merge conflicts: the values a merge did not keep") { db in
            try db.execute(sql: mergeConflicts)
        }
        migrator.registerMigration("unreadable drive files") { db in
            try db.execute(sql: unreadableDriveFiles)
        }
        migrator.registerMigration("quota: units spent") { db in
            // What each sync (each look of a watch) cost in Google's quota units, for
            // `ivy status`'s last 24 hours; rows older than a week are dropped as new ones come.
            try db.execute(
                sql: """
                    CREATE TABLE quota_spent (
                        id INTEGER PRIMARY KEY,
                        spent_at INTEGER NOT NULL,
                        units INTEGER NOT NULL CHECK (units >= 0),
                        requests INTEGER NOT NULL CHECK (requests >= 0)
                    );
                    CREATE INDEX quota_spent_at ON quota_spent (spent_at);
                    """)
        }
        migrator.registerMigration("merge conflicts: the version of the take not kept") { db in
            try db.execute(sql: lostTakeVersion)
        }
        migrator.registerMigration("history: dated by Google's clock, in the order of changes") { db in
            try db.execute(sql: googleClock)
        }
        migrator.registerMigration("upload sessions: a killed MP3 upload resumes") { db in
            try db.execute(sql: uploadSessions)
        }
        return migrator
    }

    /// Milliseconds since the epoch inside SQL, for rows written by triggers.
    private static let nowMilliseconds = "CAST(round((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER)"

    /// Triggers skip their work while the sync engine applies remote changes: it inserts
    /// the one row of `sync_applying` at the start of its transaction and deletes it before
    /// the commit, so no other connection ever sees it.
    private static let captureEnabled = "NOT EXISTS (SELECT 1 FROM sync_applying)"

    /// Replaces the entity's queue row (a newer change resets attempts). Delete-then-insert
    /// rather than INSERT OR REPLACE: the outer statement's conflict policy overrides a
    /// trigger's, so an UPSERT into books would turn OR REPLACE back into ABORT.
    private static func enqueue(_ kind: String, id: String, operation: String) -> String {
        """
        DELETE FROM sync_queue WHERE entity_type = '\(kind)' AND entity_id = \(id);
                INSERT INTO sync_queue (entity_type, entity_id, operation, attempts, last_error, queued_at)
                VALUES ('\(kind)', \(id), '\(operation)', 0, NULL, \(nowMilliseconds));
        """
    }

    private static func idRules(table: String, kind: String) -> String {
        """
        CREATE TRIGGER \(table)_id_valid BEFORE INSERT ON \(table)
        WHEN NEW.id IS NULL OR NEW.id = '' OR NEW.id GLOB '*[^a-f0-9-]*'
        BEGIN
            SELECT RAISE(ABORT, 'invalid \(kind) id: ids must match ^[a-f0-9-]+$ (lowercase UUIDs)');
        END;
        CREATE TRIGGER \(table)_id_fixed BEFORE UPDATE OF id ON \(table)
        WHEN NEW.id IS NOT OLD.id
        BEGIN
            SELECT RAISE(ABORT, '\(kind) ids cannot change: insert a new \(kind) instead');
        END;
        """
    }

    /// Queue capture. An UPDATE that leaves every synced column as it was enqueues nothing;
    /// `books.uri` is a path on this device, never synced, so it is not among them.
    private static func capture(table: String, kind: String, columns: [String]) -> String {
        let changed = columns.map { "OLD.\($0) IS NOT NEW.\($0)" }.joined(separator: " OR ")
        return """
            CREATE TRIGGER \(table)_capture_insert AFTER INSERT ON \(table)
            WHEN \(captureEnabled)
            BEGIN
                \(enqueue(kind, id: "NEW.id", operation: "upsert"))
            END;
            CREATE TRIGGER \(table)_capture_update AFTER UPDATE ON \(table)
            WHEN \(captureEnabled) AND (\(changed))
            BEGIN
                \(enqueue(kind, id: "NEW.id", operation: "upsert"))
            END;
            CREATE TRIGGER \(table)_capture_delete AFTER DELETE ON \(table)
            WHEN \(captureEnabled)
            BEGIN
                \(enqueue(kind, id: "OLD.id", operation: "delete"))
            END;
            """
    }

    /// The columns whose changes are captured into the sync queue.
    private static let bookColumns = ["title", "artist", "artwork", "position", "hidden", "created_at", "updated_at"]
    private static let clipColumns = [
        "book_id", "start", "duration", "note", "transcription", "created_at", "updated_at",
    ]

    private static let v1 = """
        CREATE TABLE books (
            id TEXT PRIMARY KEY NOT NULL,
            title TEXT NOT NULL,
            artist TEXT,
            artwork TEXT,
            position REAL NOT NULL DEFAULT 0,
            hidden INTEGER NOT NULL DEFAULT 0,
            uri TEXT,
            created_at INTEGER NOT NULL,
            updated_at INTEGER NOT NULL
        );
        CREATE TABLE clips (
            id TEXT PRIMARY KEY NOT NULL,
            book_id TEXT NOT NULL,
            start REAL NOT NULL,
            duration REAL NOT NULL,
            note TEXT,
            transcription TEXT,
            created_at INTEGER NOT NULL,
            updated_at INTEGER NOT NULL
        );
        CREATE INDEX clips_by_book ON clips(book_id);

        -- Keys of backup JSON that this version of ivy does not know, kept so that a
        -- round trip through ivy never drops what a newer app wrote.
        CREATE TABLE backup_extras (
            entity_type TEXT NOT NULL CHECK (entity_type IN ('book','clip')),
            entity_id TEXT NOT NULL,
            json TEXT NOT NULL,
            PRIMARY KEY (entity_type, entity_id)
        );

        CREATE TABLE sync_queue (
            entity_type TEXT NOT NULL CHECK (entity_type IN ('book','clip')),
            entity_id TEXT NOT NULL,
            operation TEXT NOT NULL CHECK (operation IN ('upsert','delete')),
            attempts INTEGER NOT NULL DEFAULT 0,
            last_error TEXT,
            queued_at INTEGER NOT NULL,
            UNIQUE (entity_type, entity_id)
        );

        CREATE TABLE sync_manifest (
            entity_type TEXT NOT NULL CHECK (entity_type IN ('book','clip')),
            entity_id TEXT NOT NULL,
            local_updated_at INTEGER,
            remote_updated_at INTEGER,
            remote_file_id TEXT,
            remote_mp3_file_id TEXT,
            synced_at INTEGER,
            PRIMARY KEY (entity_type, entity_id)
        );

        CREATE TABLE settings (
            key TEXT PRIMARY KEY NOT NULL,
            value TEXT
        );

        CREATE TABLE sync_applying (
            engine INTEGER PRIMARY KEY CHECK (engine = 1)
        );

        \(idRules(table: "books", kind: "book"))
        \(idRules(table: "clips", kind: "clip"))
        CREATE TRIGGER clips_book_id_valid BEFORE INSERT ON clips
        WHEN NEW.book_id IS NULL OR NEW.book_id = '' OR NEW.book_id GLOB '*[^a-f0-9-]*'
        BEGIN
            SELECT RAISE(ABORT, 'invalid book id for clip: ids must match ^[a-f0-9-]+$ (lowercase UUIDs)');
        END;
        CREATE TRIGGER clips_book_id_valid_update BEFORE UPDATE OF book_id ON clips
        WHEN NEW.book_id IS NULL OR NEW.book_id = '' OR NEW.book_id GLOB '*[^a-f0-9-]*'
        BEGIN
            SELECT RAISE(ABORT, 'invalid book id for clip: ids must match ^[a-f0-9-]+$ (lowercase UUIDs)');
        END;
        \(capture(table: "books", kind: "book", columns: bookColumns))
        \(capture(table: "clips", kind: "clip", columns: clipColumns))
        """

    /// The base of the three-way merge: the backup JSON both sides last agreed on, and the
    /// md5 of the clip audio then, in the manifest row so both are written in one statement.
    private static let v2 = """
        ALTER TABLE sync_manifest ADD COLUMN base_json TEXT;
        ALTER TABLE sync_manifest ADD COLUMN base_audio_md5 TEXT;
        """

    /// A time of play must be a finite number of seconds within `TimeRules`, whoever writes
    /// it. SQLite stores NaN as NULL and keeps ±Inf as REAL, so NULL and both infinities fail
    /// the range test; text that is not a number compares above every number and fails too.
    /// Rows written before this migration are left as they were: they read and show, and
    /// the next write to them must bring the time into range.
    private static func timeRule(table: String, kind: String, columns: [String]) -> String {
        let maximum = Int(TimeRules.maximumSeconds)
        let invalid = columns.map { "NEW.\($0) IS NULL OR NOT (NEW.\($0) >= 0 AND NEW.\($0) <= \(maximum))" }
            .joined(separator: " OR ")
        let names = columns.joined(separator: " and ")
        let message = "invalid \(kind) \(names): times are finite seconds from 0 to \(maximum)"
        return """
            CREATE TRIGGER \(table)_times_valid_insert BEFORE INSERT ON \(table)
            WHEN \(invalid)
            BEGIN
                SELECT RAISE(ABORT, '\(message)');
            END;
            CREATE TRIGGER \(table)_times_valid_update BEFORE UPDATE OF \(columns.joined(separator: ", ")) ON \(table)
            WHEN \(invalid)
            BEGIN
                SELECT RAISE(ABORT, '\(message)');
            END;
            """
    }

    private static let v3 = """
        \(timeRule(table: "books", kind: "book", columns: ["position"]))
        \(timeRule(table: "clips", kind: "clip", columns: ["start", "duration"]))
        """

    /// Which held changes `sync --auto` already told cron about, by the queue row's
    /// `queued_at`: cron hears once about a failure, and again only when the change changes.
    private static let v4 = """
        CREATE TABLE sync_reported (
            entity_type TEXT NOT NULL CHECK (entity_type IN ('book','clip')),
            entity_id TEXT NOT NULL,
            queued_at INTEGER NOT NULL,
            PRIMARY KEY (entity_type, entity_id)
        );
        """

    /// A mirror of Drive's listing of ivy's folders, kept current by Drive's change feed, and
    /// the change token it is current up to. The token row exists only while the mirror is a
    /// complete listing: it is written in the same transaction as the rows it describes, and
    /// removed with them. Times are milliseconds since the epoch; `parents` a JSON array.
    private static let v5 = """
        CREATE TABLE drive_mirror (
            file_id TEXT PRIMARY KEY NOT NULL,
            name TEXT NOT NULL,
            parents TEXT NOT NULL,
            mime_type TEXT NOT NULL,
            size INTEGER,
            md5 TEXT,
            modified_time INTEGER NOT NULL,
            created_time INTEGER
        );
        CREATE TABLE drive_mirror_token (
            id INTEGER PRIMARY KEY NOT NULL CHECK (id = 1),
            token TEXT NOT NULL CHECK (token <> '')
        );
        """

    /// The local trash: what a sync deleted or overwrote here, as the backup JSON the entity
    /// had (unknown keys included), why, and when (ms since the epoch). `audio_file` names the
    /// MP3 kept in the trash directory, when the sync removed or replaced one. The id only
    /// grows (AUTOINCREMENT), so an id a user saw never names another entry later. No trigger
    /// watches this table: the trash never enters the sync queue.
    private static let v6 = """
        CREATE TABLE trash (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            entity_type TEXT NOT NULL CHECK (entity_type IN ('book','clip')),
            entity_id TEXT NOT NULL,
            reason TEXT NOT NULL CHECK (reason IN ('deleted','download','merge')),
            trashed_at INTEGER NOT NULL,
            json TEXT NOT NULL,
            audio_file TEXT
        );
        CREATE INDEX trash_by_time ON trash(trashed_at);
        """

    /// When a sync first found a synced entity missing on Drive (ms since the epoch, this
    /// device's clock): an absence is acted on only once it has lasted, since another device
    /// replaces a file by deleting it and then creating the new one.
    ///
    /// And the base before the last one (`prior_base_json`): when this device's last upload is
    /// one of several files of one name on Drive, the others were made from what came before
    /// it, so they are merged against that.
    private static let v7 = """
        ALTER TABLE sync_manifest ADD COLUMN missing_since INTEGER;
        ALTER TABLE sync_manifest ADD COLUMN prior_base_json TEXT;
        """

    /// A clip whose new audio was committed with its row while the audio it replaced is still
    /// kept aside (`AudioJournal`): written in the transaction that changes the row, so after a
    /// kill its presence says the change committed (drop the old audio) and its absence that it
    /// did not (put the old audio back).
    private static let v8 = """
        CREATE TABLE audio_replacements (clip_id TEXT PRIMARY KEY NOT NULL);
        """

    /// The trash also keeps what `ivy trash restore` replaced (reason `restore`).
    private static let v9 = """
        CREATE TABLE trash_v9 (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            entity_type TEXT NOT NULL CHECK (entity_type IN ('book','clip')),
            entity_id TEXT NOT NULL,
            reason TEXT NOT NULL CHECK (reason IN ('deleted','download','merge','restore')),
            trashed_at INTEGER NOT NULL,
            json TEXT NOT NULL,
            audio_file TEXT
        );
        INSERT INTO trash_v9 SELECT id, entity_type, entity_id, reason, trashed_at, json, audio_file FROM trash;
        DROP TABLE trash;
        ALTER TABLE trash_v9 RENAME TO trash;
        CREATE INDEX trash_by_time ON trash(trashed_at);
        """

    /// History: every state of every book and clip, whoever wrote it (see `History`).
    ///
    /// `json` is the entity's backup JSON after the change (unknown keys included), NULL for a
    /// delete. `audio_md5` names the MP3 a clip had at this version once that MP3 was replaced
    /// or deleted (kept as `history/<md5>.mp3`); NULL means the clip's audio now. `source`
    /// says who wrote it: `drive` while the sync engine applies Drive's changes (its
    /// `sync_applying` row), `restore` while a restore writes (its `history_restoring` row),
    /// else `here`. Plain INTEGER ids (no AUTOINCREMENT, which costs every insert a write of
    /// `sqlite_sequence`): the newest row, which retention never removes, keeps them growing.
    /// Rows are recorded by triggers in the writer's own transaction, unless `history_days`
    /// is 0. Entities already in the library get one version each (operation `existing`), dated
    /// by their `updated_at`: what they were before is unknown, and a restore to before it
    /// leaves them as they are (only an entity whose first version is its `insert` was made
    /// after a moment with no version of it).
    private static let v10 = """
        CREATE TABLE history (
            id INTEGER PRIMARY KEY,
            entity_type TEXT NOT NULL CHECK (entity_type IN ('book','clip')),
            entity_id TEXT NOT NULL,
            recorded_at INTEGER NOT NULL,
            source TEXT NOT NULL CHECK (source IN ('here','drive','restore')),
            operation TEXT NOT NULL CHECK (operation IN ('insert','update','delete','existing')),
            json TEXT,
            audio_md5 TEXT
        );
        CREATE INDEX history_by_entity ON history(entity_type, entity_id, id);
        CREATE INDEX history_by_time ON history(recorded_at);
        CREATE TABLE history_restoring (
            restore INTEGER PRIMARY KEY CHECK (restore = 1)
        );
        \(history(table: "books", kind: "book", columns: bookColumns, json: bookJSON))
        \(history(table: "clips", kind: "clip", columns: clipColumns, json: clipJSON))
        INSERT INTO history (entity_type, entity_id, recorded_at, source, operation, json)
        SELECT 'book', id, updated_at, 'here', 'existing', \(bookJSON("books.")) FROM books ORDER BY updated_at, id;
        INSERT INTO history (entity_type, entity_id, recorded_at, source, operation, json)
        SELECT 'clip', id, updated_at, 'here', 'existing', \(clipJSON("clips.")) FROM clips ORDER BY updated_at, id;
        """

    /// Drops the history triggers, for a migration that makes them anew.
    private static let dropHistoryTriggers = """
        DROP TRIGGER books_history_insert;
        DROP TRIGGER books_history_update;
        DROP TRIGGER books_history_delete;
        DROP TRIGGER clips_history_insert;
        DROP TRIGGER clips_history_update;
        DROP TRIGGER clips_history_delete;
        """

    /// The time a version is recorded at: the clock's, but never before the newest version's,
    /// so recorded times follow the order of changes when the clock steps back (NTP after a
    /// clock that ran ahead). The times only label versions; the order is the rows' ids.
    private static let clampedNow = "max(\(nowMilliseconds), coalesce((SELECT max(recorded_at) FROM history), 0))"

    /// History in the order of changes (ARCHITECTURE.md, "History"):
    /// - the triggers record times that never go backwards (`clampedNow`);
    /// - the versions v10 dated by an entity's `updated_at` (another device's clock, perhaps
    ///   far ahead) are dated no later than the first version recorded after them, nor now;
    /// - times already recorded are made to follow the order of the rows (a running maximum);
    /// - a trash entry marks the newest version when it was kept, so "changed here since" is
    ///   a version recorded after that mark, not a comparison with another device's clock.
    private static let v11 = """
        \(dropHistoryTriggers)
        \(history(table: "books", kind: "book", columns: bookColumns, json: bookJSON, recordedAt: clampedNow))
        \(history(table: "clips", kind: "clip", columns: clipColumns, json: clipJSON, recordedAt: clampedNow))
        UPDATE history SET recorded_at = min(
            recorded_at, \(nowMilliseconds),
            coalesce((SELECT min(recorded_at) FROM history WHERE operation != 'existing'), recorded_at))
        WHERE operation = 'existing';
        UPDATE history SET recorded_at = running.at
        FROM (SELECT id, max(recorded_at) OVER (ORDER BY id ROWS UNBOUNDED PRECEDING) AS at FROM history) AS running
        WHERE running.id = history.id AND history.recorded_at < running.at;
        ALTER TABLE trash ADD COLUMN history_mark INTEGER;
        """

    /// The time a version is recorded at: ivy's clock as the writing transaction read it
    /// (`history_clock`: Google's time when known), else this device's clock (another program
    /// writing). Never clamped: a label a wrong clock gave stays on its own version, and the
    /// order of changes is the rows' ids (ARCHITECTURE.md, "History").
    private static let recordedNow = "coalesce((SELECT now FROM history_clock), \(nowMilliseconds))"

    /// Which clock dated a version: `google`, or `device` (this device's own, unchecked).
    private static let recordedClock =
        "coalesce((SELECT CASE WHEN sure THEN 'google' ELSE 'device' END FROM history_clock), 'device')"

    /// History dated by Google's clock (DESIGN.md §12):
    /// - `history_clock` holds, only inside an ivy write transaction, the time that
    ///   transaction records (`LibraryDatabase.write`) and whether it is Google's;
    /// - `history.clock` says which clock dated each version (NULL: recorded before this, by
    ///   this device's clock, clamped to never go backwards);
    /// - the triggers record those instead of a clamped wall clock.
    private static let googleClock = """
        CREATE TABLE history_clock (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            now INTEGER NOT NULL,
            sure INTEGER NOT NULL CHECK (sure IN (0, 1))
        );
        ALTER TABLE history ADD COLUMN clock TEXT CHECK (clock IN ('google', 'device'));
        \(dropHistoryTriggers)
        \(history(
            table: "books", kind: "book", columns: bookColumns, json: bookJSON, recordedAt: recordedNow,
            clock: recordedClock))
        \(history(
            table: "clips", kind: "clip", columns: clipColumns, json: clipJSON, recordedAt: recordedNow,
            clock: recordedClock))
        """

    /// A version of one clip (the argument, its id) as its row is now, recorded as the history
    /// triggers record an update: for a change of its MP3 alone, which no trigger sees
    /// (`HistoryAudio.recordAudioChanges`).
    static let clipVersionNow = """
        INSERT INTO history (entity_type, entity_id, recorded_at, source, operation, json, clock)
        SELECT 'clip', id, \(recordedNow), \(historySource), 'update', \(clipJSON("clips.")), \(recordedClock)
        FROM clips WHERE id = ?
        """

    /// A version of one clip (arguments: its id, the operation, its backup JSON) whose MP3 is
    /// the one kept in the history as `<md5>.mp3` (the last argument): another take of its
    /// audio that lost to a newer one (`EngineWriter.keepOtherTakes`).
    static let clipVersionWithAudio = """
        INSERT INTO history (entity_type, entity_id, recorded_at, source, operation, json, audio_md5, clock)
        VALUES ('clip', ?, \(recordedNow), \(historySource), ?, ?, ?, \(recordedClock))
        """

    /// The merge conflicts (see `ConflictRecord`): per field a merge settled by a rule, the value
    /// kept and the one not kept (`lost_json`, NULL when both were kept), as JSON; whose value
    /// won (`here`, `drive`, `both`), by which rule, when, and the history version the merge
    /// wrote (`history_id`, NULL when history was off or the write made none). No foreign key:
    /// a conflict outlives its version's pruning, since it holds both values itself. `seen`
    /// turns 1 when `ivy history --conflicts` has shown it. AUTOINCREMENT ids, so the order
    /// rows were written in is their id's even after the oldest are trimmed.
    private static let mergeConflicts = """
        CREATE TABLE merge_conflicts (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            entity_type TEXT NOT NULL CHECK (entity_type IN ('book','clip')),
            entity_id TEXT NOT NULL,
            field TEXT NOT NULL,
            kept_json TEXT NOT NULL,
            lost_json TEXT,
            winner TEXT NOT NULL CHECK (winner IN ('here','drive','both')),
            rule TEXT NOT NULL,
            recorded_at INTEGER NOT NULL,
            history_id INTEGER,
            seen INTEGER NOT NULL DEFAULT 0 CHECK (seen IN (0, 1))
        );
        CREATE INDEX merge_conflicts_unseen ON merge_conflicts(seen) WHERE seen = 0;
        """

    /// A clip's audio conflict names the history version that keeps the take not kept
    /// (`lost_history_id`), so `ivy restore --version` can bring it back; NULL for other fields,
    /// with the history off, or once that version was pruned.
    private static let lostTakeVersion = """
        ALTER TABLE merge_conflicts ADD COLUMN lost_history_id INTEGER;
        """

    private static let historySource = """
        CASE WHEN EXISTS (SELECT 1 FROM history_restoring) THEN 'restore' \
        WHEN EXISTS (SELECT 1 FROM sync_applying) THEN 'drive' ELSE 'here' END
        """

    private static let historyEnabled =
        "NOT EXISTS (SELECT 1 FROM settings WHERE key = 'history_days' AND value = '0')"

    /// The unknown keys kept for the entity, as a JSON object (an unreadable one as none: a
    /// trigger that failed on it would refuse the writer's change).
    private static func extras(kind: String, id: String) -> String {
        """
        coalesce((SELECT json FROM backup_extras WHERE entity_type = '\(kind)' AND entity_id = \(id) \
        AND json_valid(json) AND json_type(json) = 'object'), '{}')
        """
    }

    /// The book's backup JSON as `BackupCodec` writes it, from the row named by `row`.
    private static func bookJSON(_ row: String) -> String {
        """
        json_set(\(extras(kind: "book", id: row + "id")), '$.id', \(row)id, '$.title', \(row)title, \
        '$.artist', \(row)artist, '$.artwork', \(row)artwork, '$.position', \(row)position, \
        '$.hidden', json(CASE WHEN \(row)hidden THEN 'true' ELSE 'false' END), \
        '$.created_at', \(row)created_at, '$.updated_at', \(row)updated_at)
        """
    }

    private static func clipJSON(_ row: String) -> String {
        """
        json_set(\(extras(kind: "clip", id: row + "id")), '$.id', \(row)id, '$.book_id', \(row)book_id, \
        '$.start', \(row)start, '$.duration', \(row)duration, '$.note', \(row)note, \
        '$.transcription', \(row)transcription, '$.created_at', \(row)created_at, '$.updated_at', \(row)updated_at)
        """
    }

    /// History capture: a version after each insert and each update of a synced column, a
    /// tombstone after each delete, in the writer's transaction.
    private static func history(
        table: String, kind: String, columns: [String], json: (String) -> String,
        recordedAt: String = nowMilliseconds, clock: String? = nil
    ) -> String {
        let changed = columns.map { "OLD.\($0) IS NOT NEW.\($0)" }.joined(separator: " OR ")
        func record(_ id: String, _ operation: String, _ json: String) -> String {
            // The migrations before `googleClock` made these without the clock column.
            guard let clock else {
                return """
                    INSERT INTO history (entity_type, entity_id, recorded_at, source, operation, json)
                        VALUES ('\(kind)', \(id), \(recordedAt), \(historySource), '\(operation)', \(json));
                    """
            }
            return """
                INSERT INTO history (entity_type, entity_id, recorded_at, source, operation, json, clock)
                    VALUES ('\(kind)', \(id), \(recordedAt), \(historySource), '\(operation)', \(json), \(clock));
                """
        }
        return """
            CREATE TRIGGER \(table)_history_insert AFTER INSERT ON \(table)
            WHEN \(historyEnabled)
            BEGIN
                \(record("NEW.id", "insert", json("NEW.")))
            END;
            CREATE TRIGGER \(table)_history_update AFTER UPDATE ON \(table)
            WHEN \(historyEnabled) AND (\(changed))
            BEGIN
                \(record("NEW.id", "update", json("NEW.")))
            END;
            CREATE TRIGGER \(table)_history_delete AFTER DELETE ON \(table)
            WHEN \(historyEnabled)
            BEGIN
                \(record("OLD.id", "delete", "NULL"))
            END;
            """
    }

    /// The backup JSON files on Drive a sync read and could not use, as they were then (file
    /// id, `modified_time`, md5): beside a usable file of the same name they are left alone,
    /// not read again until they change (`UnreadableDriveFile`).
    /// The Drive upload session of each clip whose MP3 is on its way (`UploadSessionRecord`):
    /// one per queued clip, written when Drive opens the session and after each chunk's
    /// answer, deleted when the upload completes or fails for good.
    private static let uploadSessions = """
        CREATE TABLE upload_sessions (
            clip_id TEXT PRIMARY KEY NOT NULL,
            uri TEXT NOT NULL,
            file_id TEXT NOT NULL,
            committed INTEGER NOT NULL CHECK (committed >= 0 AND committed <= size),
            md5 TEXT NOT NULL,
            size INTEGER NOT NULL CHECK (size >= 0),
            started_at INTEGER NOT NULL
        );
        """

    private static let unreadableDriveFiles = """
        CREATE TABLE unreadable_drive_files (
            file_id TEXT PRIMARY KEY,
            entity_type TEXT NOT NULL CHECK (entity_type IN ('book','clip')),
            entity_id TEXT NOT NULL,
            name TEXT NOT NULL,
            modified_time INTEGER NOT NULL,
            md5 TEXT,
            reason TEXT NOT NULL,
            read_at INTEGER NOT NULL
        );
        """
}
