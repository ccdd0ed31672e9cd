import Foundation
package import IvyCore
package import IvySystem

/// Everything the store can refuse, worded to read well after "Error: " and to name the fix.
package enum StoreError: LocalizedError, Equatable {
    case notADatabase(path: String)
    case notAnIvyLibrary(path: String)
    case newerSchema(path: String)
    case busy(path: String)
    case unsafeDirectory(UnsafeDirectoryError)
    case cannotOpen(path: String, reason: String)
    case cannotCreateDirectory(path: String, reason: String)
    case bookNotFound(id: BookID)
    case clipNotFound(id: ClipID)
    case emptyTitle
    case invalidTime(field: String, value: Double)
    case storedTimeOutOfRange(kind: EntityKind, field: String, value: Double, option: String)
    case audioMissing(path: String)
    case audioNotAFile(path: String)
    case audioUnreadable(path: String, reason: String)
    case audioNotMP3(path: String)
    case audioTooLarge(path: String, bytes: Int64)
    case audioCopyFailed(path: String, reason: String)
    case database(path: String, message: String)
    case invalidSetting(message: String)
    case unreadableExtras(entity: String, path: String)
    case backupUnwritable(String)
    /// An import into a library that holds books or clips already.
    case notEmpty

    /// SQLite stayed busy past the timeout: another program holds a long write.
    package var isBusy: Bool {
        if case .busy = self { return true }
        return false
    }

    package var errorDescription: String? {
        switch self {
        case .notEmpty:
            "this library has books or clips already, and an import only fills an empty one; "
                + "import into a new home (IVY_HOME=DIR ivy import FILE, or --home DIR)"
        case .notADatabase(let path):
            "\(path) is not an SQLite database, so ivy will not touch it; move it aside or point IVY_HOME (or "
                + "--home) at another directory"
        case .notAnIvyLibrary(let path):
            "\(path) is an SQLite database but not an ivy library (it has none of ivy's migrations), so ivy will not "
                + "touch it; move it aside or point IVY_HOME (or --home) at another directory"
        case .busy(let path):
            "the library \(path) is busy: another program has kept it locked for writing for over "
                + "\(Int(LibraryDatabase.busyTimeout)) seconds; try again when it has finished"
        case .unsafeDirectory(let problem):
            problem.description
        case .newerSchema(let path):
            "\(path) was written by a newer version of ivy; install that version (or newer) to use this library"
        case .cannotOpen(let path, let reason):
            "cannot open the library \(path): \(reason)"
        case .cannotCreateDirectory(let path, let reason):
            "cannot create \(path): \(reason); check its permissions or choose another home with --home"
        case .bookNotFound(let id):
            "no book with id \(id); `ivy book list --all` shows every book"
        case .clipNotFound(let id):
            "no clip with id \(id); `ivy clip list` shows every clip"
        case .emptyTitle:
            "the title is empty; give the book a title with --title"
        case .invalidTime(let field, let value):
            "the \(field) must be from \(TimeRules.range), not \(value)"
        case .storedTimeOutOfRange(let kind, let field, let value, let option):
            "this \(kind.rawValue)'s stored \(field) is \(value), outside \(TimeRules.range); give a valid one with "
                + "\(option)"
        case .audioMissing(let path):
            "audio file \(path) does not exist; check the path given to --audio"
        case .audioNotAFile(let path):
            "audio file \(path) is not a regular file; give --audio an MP3 file"
        case .audioUnreadable(let path, let reason):
            "cannot read audio file \(path): \(reason)"
        case .audioNotMP3(let path):
            "audio file \(path) is not an MP3 (no ID3 tag or MPEG frame at its start); convert it to MP3 first"
        case .audioTooLarge(let path, let bytes):
            "audio file \(path) is \(AudioRules.grouped(bytes)) bytes; \(AudioRules.limitSentence): cut a shorter clip"
        case .audioCopyFailed(let path, let reason):
            "cannot copy the audio into \(path): \(reason); nothing was changed"
        case .invalidSetting(let message):
            message
        case .unreadableExtras(let entity, let path):
            "the keys other apps wrote for \(entity) (table backup_extras in \(path)) cannot be read, so it is not "
                + "uploaded without them; repair or delete that row, then run `ivy retry-failed`"
        case .backupUnwritable(let message):
            message
        case .database(let path, let message):
            "the library \(path) refused the change: \(message)"
        }
    }
}
