import Foundation

/// ivy's one convention for JSON printed for programs (`--json`, the watch's event lines):
///
/// - keys are the Swift property names in snake case (`SnakeCase`), and output types get
///   their `Encodable` from the compiler: no hand-written keys or `encode(to:)`;
/// - every key is always there: an optional property is `@Null`, written as `null` when it
///   has no value, so a program reads one shape whatever the library holds;
/// - keys sorted; control, bidi and line-separator characters in strings written as escapes
///   (`TerminalText.jsonEscaped`); an infinity (a row from before the time rules) as "inf".
package enum JSONOutput {
    /// A document for `--json`, pretty printed; `oneLine` for a stream of events.
    package static func text(_ value: some Encodable, oneLine: Bool = false) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting =
            oneLine ? [.sortedKeys, .withoutEscapingSlashes] : [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        encoder.keyEncodingStrategy = .custom { path in
            SnakeCase.Key(SnakeCase.snake(path.last?.stringValue ?? ""))
        }
        encoder.nonConformingFloatEncodingStrategy = .convertToString(
            positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
        return TerminalText.jsonEscaped(String(decoding: try encoder.encode(value), as: UTF8.self))
    }
}

/// An optional that `JSONOutput` writes as `null` when it has no value, where a compiler-made
/// `Encodable` would leave its key out.
@propertyWrapper
package struct Null<Value: Encodable & Sendable>: Encodable, Sendable {
    package var wrappedValue: Value?

    package init(wrappedValue: Value?) {
        self.wrappedValue = wrappedValue
    }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        if let wrappedValue { try container.encode(wrappedValue) } else { try container.encodeNil() }
    }
}

extension Null: Equatable where Value: Equatable {}
extension Null: Hashable where Value: Hashable {}

extension Null: Decodable where Value: Decodable {
    /// Reads back what `encode(to:)` wrote: the key must be there, its value may be null.
    package init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        wrappedValue = container.decodeNil() ? nil : try container.decode(Value.self)
    }
}
