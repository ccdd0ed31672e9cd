/// What `scripts/package` writes into a release's binary after the build: the commit it was
/// built from and, when it was given one, the OAuth client the release carries. Written after
/// the build, it keeps the client out of the source tree, out of every compiler's arguments, and
/// out of a plain `swift build`, whose binary has no stamp at all.
///
/// The stamp goes into a slot the binary reserves in its read-only data (Sources/IvyStamp): the
/// stamp's length as `lengthDigits` decimal digits, then its lines (`key=value`).
package struct BuildStamp: Sendable, Equatable {
    /// The commit's short hash; nil when the binary has no stamp.
    package var commit: String?
    /// The tree had changes not yet committed when it was built.
    package var dirty: Bool
    /// Built from a tree outside git: no commit to name.
    package var outsideGit: Bool
    /// The OAuth client built into the release, both halves or neither.
    package var clientID: String?
    package var clientSecret: String?

    package init(
        commit: String? = nil, dirty: Bool = false, outsideGit: Bool = false, clientID: String? = nil,
        clientSecret: String? = nil
    ) {
        self.commit = commit
        self.dirty = dirty
        self.outsideGit = outsideGit
        self.clientID = clientID
        self.clientSecret = clientSecret
    }

    /// A binary without a stamp: `swift build`'s.
    package static let none = BuildStamp()

    /// Digits of the stamp's length, at the start of the slot.
    package static let lengthDigits = 8

    /// The stamp in `slot` (what follows the slot's marker); `none` when scripts/package has not
    /// written one (the slot's NULs) or what is there is not a stamp.
    package init(slot: [UInt8]) {
        let digits = slot.prefix(Self.lengthDigits)
        guard digits.count == Self.lengthDigits,
            digits.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
            let length = Int(String(decoding: digits, as: UTF8.self)), length <= slot.count - Self.lengthDigits
        else {
            self.init()
            return
        }
        self.init(payload: Array(slot[Self.lengthDigits..<Self.lengthDigits + length]))
    }

    /// The stamp its lines describe; unknown keys are skipped, so an older ivy reads a newer stamp.
    package init(payload: [UInt8]) {
        self.init()
        for line in String(decoding: payload, as: UTF8.self).split(separator: "\n") {
            guard let equals = line.firstIndex(of: "=") else { continue }
            let key = line[..<equals]
            let value = String(line[line.index(after: equals)...])
            switch key {
            case "commit": commit = value.isEmpty ? nil : value
            case "dirty": dirty = value == "yes"
            case "outside_git": outsideGit = value == "yes"
            case "client_id": clientID = value.isEmpty ? nil : value
            case "client_secret": clientSecret = value.isEmpty ? nil : value
            default: continue
            }
        }
        if clientID == nil || clientSecret == nil {
            clientID = nil
            clientSecret = nil
        }
    }

    /// What `ivy --version` prints: `ivy 0.4.0 (commit abc1234)`.
    package func versionLine(_ version: String) -> String {
        let built =
            if let commit {
                dirty ? "commit \(commit), with uncommitted changes" : "commit \(commit)"
            } else if outsideGit {
                "built outside git: no commit"
            } else {
                "commit unknown: not built by scripts/package"
            }
        return "ivy \(version) (\(built))"
    }
}
