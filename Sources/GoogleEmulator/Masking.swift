import Foundation

/// Applies a request's `fields` parameter to a JSON object, or answers Drive's 400.
enum Masking {
    static func apply(_ fields: String, to object: [String: Any]) -> Result<[String: Any], EmulatorReply> {
        do {
            return .success(try FieldMask.parse(fields).apply(toJSONObject: object))
        } catch {
            return .failure(.driveError(400, reason: "invalidParameter", message: error.message))
        }
    }
}
