package import GRDB
package import IvyCore

// The typed ids are TEXT columns, read and written as the plain string: the schema is the
// same as when they were `String`. Each type states its own witnesses: GRDB's default for
// `Codable` types (JSON text) would otherwise compete with a shared one.

extension BookID: DatabaseValueConvertible {
    package var databaseValue: DatabaseValue { rawValue.databaseValue }
    package static func fromDatabaseValue(_ dbValue: DatabaseValue) -> BookID? {
        String.fromDatabaseValue(dbValue).map(BookID.init)
    }
}

extension ClipID: DatabaseValueConvertible {
    package var databaseValue: DatabaseValue { rawValue.databaseValue }
    package static func fromDatabaseValue(_ dbValue: DatabaseValue) -> ClipID? {
        String.fromDatabaseValue(dbValue).map(ClipID.init)
    }
}

extension DriveFileID: DatabaseValueConvertible {
    package var databaseValue: DatabaseValue { rawValue.databaseValue }
    package static func fromDatabaseValue(_ dbValue: DatabaseValue) -> DriveFileID? {
        String.fromDatabaseValue(dbValue).map(DriveFileID.init)
    }
}
