import GRDB

extension Database {
    /// Runs one statement kept in the connection's statement cache. A sync applies the same
    /// few statements to every downloaded book and clip; prepared afresh each time, SQLite
    /// parsed each one again with the triggers it fires, a third of a download's CPU.
    func executeCached(_ sql: String, _ arguments: StatementArguments = []) throws {
        try cachedStatement(sql: sql).execute(arguments: arguments)
    }
}
