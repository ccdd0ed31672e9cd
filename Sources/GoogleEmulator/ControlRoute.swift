import Foundation

/// One route of the control API: a method, a path under `/_emulator/` whose `*` segments
/// take any value (a file's id), and a handler given the decoded body and answering with a
/// value encoded as JSON.
struct ControlRoute: Sendable {
    let method: String
    let pattern: [String]
    private let run: @Sendable (isolated EmulatorState, EmulatedRequest, [String]) -> EmulatorReply

    /// `usage` follows the problem when a body does not decode: what the route takes.
    init<Body: ControlBody, Answer: Encodable & SendableMetatype>(
        _ method: String, _ path: String, _ body: Body.Type, usage: String? = nil,
        _ handle: @escaping @Sendable (isolated EmulatorState, ControlCall<Body>) throws -> Answer
    ) {
        self.method = method
        pattern = path.split(separator: "/").map(String.init)
        run = { state, request, ids in
            let body: Body
            do {
                body = try Body.read(request.body, with: ControlCoding.decoder)
            } catch {
                let problem = ControlCoding.problem(error)
                return .json(400, ["error": usage.map { "\(problem); \($0)" } ?? problem])
            }
            do {
                let answer = try handle(state, ControlCall(body: body, ids: ids, query: request.query))
                return ControlCoding.reply(answer)
            } catch let error as EmulatorControlError {
                return .json(400, ["error": error.description])
            } catch {
                return .json(400, ["error": "\(error)"])
            }
        }
    }

    init<Answer: Encodable & SendableMetatype>(
        _ method: String, _ path: String,
        _ handle: @escaping @Sendable (isolated EmulatorState, ControlCall<NoBody>) throws -> Answer
    ) {
        self.init(method, path, NoBody.self, handle)
    }

    /// The `*` segments of `segments` when the route's pattern matches them, else nil.
    func ids(matching segments: [String]) -> [String]? {
        guard segments.count == pattern.count else { return nil }
        var ids: [String] = []
        for (segment, expected) in zip(segments, pattern) {
            if expected == "*" {
                ids.append(segment)
            } else if segment != expected {
                return nil
            }
        }
        return ids
    }

    func reply(_ state: isolated EmulatorState, _ request: EmulatedRequest, ids: [String]) -> EmulatorReply {
        run(state, request, ids)
    }
}

/// What a control handler is given: its body, the path's `*` segments in order, and the query.
struct ControlCall<Body> {
    let body: Body
    let ids: [String]
    let query: [String: String]
}

/// A control request's body. An empty one reads as `{}`, so a route whose fields are all
/// optional takes a bare POST, as the control API always has.
protocol ControlBody: Decodable, SendableMetatype {
    static func read(_ data: Data, with decoder: JSONDecoder) throws -> Self
}

extension ControlBody {
    static func read(_ data: Data, with decoder: JSONDecoder) throws -> Self {
        try decoder.decode(Self.self, from: data.isEmpty ? Data("{}".utf8) : data)
    }
}

/// A route that reads nothing of its body, whatever was sent.
struct NoBody: ControlBody {
    static func read(_ data: Data, with decoder: JSONDecoder) -> Self { NoBody() }
}

/// `{"ok": true}`: the answer of a route with nothing else to say.
struct Done: Encodable {
    let ok = true
}

/// A field whose absence and whose null mean different things: `{"changes_page_size": null}`
/// lifts the cap, a body without the field leaves the cap as it is.
enum Nullable<Value: Decodable>: Decodable {
    case absent
    case null
    case value(Value)

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        self = container.decodeNil() ? .null : .value(try container.decode(Value.self))
    }
}

extension KeyedDecodingContainer {
    /// A synthesized `init(from:)` decodes a `Nullable` property through this overload, so a
    /// missing key is `.absent` rather than an error.
    func decode<Value>(_ type: Nullable<Value>.Type, forKey key: Key) throws -> Nullable<Value> {
        guard contains(key) else { return .absent }
        return try decodeNil(forKey: key) ? .null : .value(try decode(Value.self, forKey: key))
    }
}

/// A JSON value built as a dictionary elsewhere (Drive's file resource), as an answer.
struct JSONValue: Encodable {
    let value: Any

    init(_ value: Any) { self.value = value }

    func encode(to encoder: any Encoder) throws {
        switch value {
        // Exactly Bool: a Bool must not pass for a number, nor a number for a Bool.
        case let flag as Bool where type(of: value) == Bool.self:
            var container = encoder.singleValueContainer()
            try container.encode(flag)
        case let number as Int:
            var container = encoder.singleValueContainer()
            try container.encode(number)
        case let text as String:
            var container = encoder.singleValueContainer()
            try container.encode(text)
        case let object as [String: Any]:
            var container = encoder.container(keyedBy: Key.self)
            for (key, element) in object { try container.encode(JSONValue(element), forKey: Key(key)) }
        case let array as [Any]:
            var container = encoder.unkeyedContainer()
            for element in array { try container.encode(JSONValue(element)) }
        default:
            throw EncodingError.invalidValue(
                value, .init(codingPath: encoder.codingPath, debugDescription: "no JSON for \(type(of: value))"))
        }
    }

    private struct Key: CodingKey {
        let stringValue: String
        init(_ key: String) { stringValue = key }
        init?(stringValue: String) { self.stringValue = stringValue }
        var intValue: Int? { nil }
        init?(intValue: Int) { nil }
    }
}

/// How the control API reads bodies and writes answers.
enum ControlCoding {
    /// Field names are spelled out in each body's `CodingKeys` (snake_case, or a fault rule's
    /// camelCase), so an error names the field as the caller sent it.
    static let decoder = JSONDecoder()

    static func reply(_ answer: some Encodable) -> EmulatorReply {
        // Sorted keys as every other reply of the emulator; request times in milliseconds.
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        encoder.dateEncodingStrategy = .millisecondsSince1970
        do {
            let data = try encoder.encode(answer)
            return EmulatorReply(status: 200, headers: ["Content-Type": "application/json; charset=UTF-8"], body: data)
        } catch {
            return .json(500, ["error": "the emulator could not write its answer: \(error)"])
        }
    }

    /// What is wrong with a body, naming the field.
    static func problem(_ error: any Error) -> String {
        guard let error = error as? DecodingError else { return "the body does not decode: \(error)" }
        switch error {
        case .keyNotFound(let key, let context): return "\(field(context.codingPath + [key])) is missing"
        case .valueNotFound(let type, let context):
            return "\(field(context.codingPath)) is null; it must be \(kind(type))"
        case .typeMismatch(let type, let context):
            return context.codingPath.isEmpty
                ? "the body must be a JSON object" : "\(field(context.codingPath)) must be \(kind(type))"
        case .dataCorrupted(let context):
            return context.codingPath.isEmpty
                ? "the body is not JSON" : "\(field(context.codingPath)) is not valid: \(context.debugDescription)"
        @unknown default: return "the body does not decode: \(error)"
        }
    }

    private static func field(_ path: [any CodingKey]) -> String {
        path.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".")
    }

    private static func kind(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: "a string"
        case is Bool.Type: "true or false"
        case is Int.Type, is Int64.Type, is UInt64.Type: "a whole number"
        case is Double.Type: "a number"
        default: "of type \(type)"
        }
    }
}
