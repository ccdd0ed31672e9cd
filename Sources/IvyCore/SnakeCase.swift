import Synchronization

/// ivy's one rule between a Swift name and the snake-case name of a database column or a
/// `--json` key: `lastError` is `last_error`, `bookID` is `book_id`, `remoteMP3FileID` is
/// `remote_mp3_file_id`, `quotaUnits24h` is `quota_units_24h`.
///
/// A word starts at a capital after a lower-case letter or a digit, at the last capital of a
/// run followed by lower case (`URLSession`), and at a number followed by lower case (`24h`);
/// a number ending an initialism stays in it (`md5`, `mp3`). Foundation's and GRDB's own
/// conversions keep `24h` in the word before it, and GRDB's way back spells `book_id` as
/// `bookId`, not as Swift does.
package enum SnakeCase {
    /// The initialisms ivy's names spell in capitals, for the way back.
    static let initialisms: Set<Substring> = ["id", "md5", "mp3", "url", "json"]

    /// Each name converted once: GRDB asks for every column of every row it reads or writes,
    /// and a full listing writes ten thousand rows and more.
    private static let known = Mutex<(snake: [String: String], camel: [String: String])>(([:], [:]))

    package static func snake(_ name: String) -> String {
        if let found = known.withLock({ $0.snake[name] }) { return found }
        let converted = snakeConverted(name)
        known.withLock { $0.snake[name] = converted }
        return converted
    }

    package static func camel(_ name: String) -> String {
        if let found = known.withLock({ $0.camel[name] }) { return found }
        let converted = camelConverted(name)
        known.withLock { $0.camel[name] = converted }
        return converted
    }

    /// A name as a coding key: a JSON key, or the property a column is read into.
    package struct Key: CodingKey {
        package let stringValue: String
        package var intValue: Int? { nil }
        package init(_ name: String) { stringValue = name }
        package init?(stringValue: String) { self.stringValue = stringValue }
        package init?(intValue: Int) { nil }
    }

    private static func snakeConverted(_ name: String) -> String {
        let characters = Array(name)
        var result = ""
        for (index, character) in characters.enumerated() {
            let previous = index > 0 ? characters[index - 1] : nil
            let next = index + 1 < characters.count ? characters[index + 1] : nil
            if character.isUppercase, let previous {
                let endsRun = previous.isUppercase && next?.isLowercase == true
                if previous.isLowercase || previous.isNumber || endsRun { result += "_" }
            } else if character.isNumber, previous?.isLowercase == true {
                let rest = characters[index...].drop { $0.isNumber }
                if rest.first?.isLowercase == true { result += "_" }
            }
            result += character.lowercased()
        }
        return result
    }

    private static func camelConverted(_ name: String) -> String {
        let words = name.split(separator: "_")
        guard let first = words.first else { return name }
        let rest = words.dropFirst().map { word in
            initialisms.contains(word) ? word.uppercased() : word.prefix(1).uppercased() + word.dropFirst()
        }
        return String(first) + rest.joined()
    }
}
