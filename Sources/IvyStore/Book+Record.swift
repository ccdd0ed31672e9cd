import GRDB
package import IvyCore

extension Book: SnakeCaseColumns {
    package static let databaseTableName = "books"
}
