import GRDB
package import IvyCore

extension Clip: SnakeCaseColumns {
    package static let databaseTableName = "clips"
}
