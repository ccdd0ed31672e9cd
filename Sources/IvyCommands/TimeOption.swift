import ArgumentParser
import IvyCore

/// Parses a time option given as seconds or H:MM:SS / MM:SS, or says exactly what is accepted.
/// Time options parse `.unconditional`ly, so `--position -5` reaches this and is told why.
func seconds(_ text: String?, option: String) throws -> Double? {
    guard let text else { return nil }
    do {
        return try TimeText.seconds(from: text)
    } catch {
        let things = option.drop { $0 == "-" } + "s"
        let why =
            switch error.problem {
            case .negative: "\(things) are 0 or more, up to 10,000,000 seconds"
            case .tooLarge: "\(things) are at most 10,000,000 seconds (2777:46:40)"
            case .malformed: "give seconds (2700 or 2700.5) or H:MM:SS / MM:SS, from \(TimeRules.range)"
            }
        throw ValidationError("invalid \(option) '\(text)': \(why)")
    }
}

/// An id argument: checked for shape before anything looks it up.
func checkedID(_ id: String, kind: EntityKind) throws -> String {
    guard EntityID.isValid(id) else {
        throw ValidationError(
            "'\(id)' is not a \(kind.rawValue) id: ids are lowercase UUIDs such as 3f2a9c1e-…; `ivy \(kind.rawValue) "
                + "list` shows them"
        )
    }
    return id
}

/// Optional text options: an empty value clears the field.
func clearable(_ text: String?) -> String?? {
    guard let text else { return nil }
    return .some(text.isEmpty ? nil : text)
}
