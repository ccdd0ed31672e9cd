import Foundation

/// One key of files.list's `orderBy`: a field and its direction.
///
/// The files.list reference lists the keys: createdTime, folder, modifiedByMeTime,
/// modifiedTime, name (alphabetical: 1, 12, 2), name_natural (natural: 1, 2, 12),
/// quotaBytesUsed, recency, sharedWithMeTime, starred and viewedByMeTime, each ascending
/// unless followed by `desc`. A key outside that list answers 400, as Drive does for an
/// invalid parameter.
struct SortKey: Sendable, Equatable {
    enum Field: String, Sendable, CaseIterable {
        case createdTime, folder, modifiedByMeTime, modifiedTime, name
        case nameNatural = "name_natural"
        case quotaBytesUsed, recency, sharedWithMeTime, starred, viewedByMeTime
    }

    var field: Field
    var descending: Bool

    /// The keys of an `orderBy` value (none when it is absent), or Drive's 400.
    static func parse(_ text: String?) -> Result<[SortKey], EmulatorReply> {
        guard let text else { return .success([]) }
        var keys: [SortKey] = []
        for item in text.split(separator: ",", omittingEmptySubsequences: false) {
            let words = item.split(separator: " ")
            guard let first = words.first, let field = Field(rawValue: String(first)), words.count <= 2,
                words.count == 1 || words[1].lowercased() == "desc"
            else {
                return .failure(
                    EmulatorState.invalid("Invalid Value: orderBy (\(item.trimmingCharacters(in: .whitespaces)))"))
            }
            keys.append(SortKey(field: field, descending: words.count == 2))
        }
        return .success(keys)
    }

    /// `files` ordered by `keys`; a stable sort, so ties keep the order they came in.
    static func sorted(_ files: [DriveFile], by keys: [SortKey]) -> [DriveFile] {
        let indexed = files.enumerated().map { ($0.offset, $0.element) }
        return indexed.sorted { left, right in
            for key in keys {
                let order = key.compare(left.1, right.1)
                if order != .orderedSame { return order == .orderedAscending }
            }
            return left.0 < right.0
        }
        .map(\.1)
    }

    private func compare(_ left: DriveFile, _ right: DriveFile) -> ComparisonResult {
        let order = Self.ascending(field, left, right)
        guard descending else { return order }
        switch order {
        case .orderedAscending: return .orderedDescending
        case .orderedDescending: return .orderedAscending
        case .orderedSame: return .orderedSame
        }
    }

    private static func ascending(_ field: Field, _ left: DriveFile, _ right: DriveFile) -> ComparisonResult {
        func by<Value: Comparable>(_ value: (DriveFile) -> Value) -> ComparisonResult {
            let (a, b) = (value(left), value(right))
            return a < b ? .orderedAscending : a > b ? .orderedDescending : .orderedSame
        }
        switch field {
        case .createdTime: return by(\.createdTime)
        // Folders before files, as Drive's web page lists them.
        case .folder: return by { $0.isFolder ? 0 : 1 }
        // Every file here was last modified by its owner, the caller.
        case .modifiedTime, .modifiedByMeTime: return by(\.modifiedTime)
        case .recency: return by { max($0.createdTime, $0.modifiedTime) }
        case .name: return left.name.compare(right.name, options: [.caseInsensitive])
        case .nameNatural: return left.name.compare(right.name, options: [.caseInsensitive, .numeric])
        case .quotaBytesUsed: return by(\.size)
        case .starred: return by { $0.starred ? 0 : 1 }
        // Nobody views or shares in the emulator: every file ties.
        case .sharedWithMeTime, .viewedByMeTime: return .orderedSame
        }
    }
}
