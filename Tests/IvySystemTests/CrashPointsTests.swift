import Foundation
import IvySystem
import Testing

/// The crash points' catalogue against ivy's sources: every durable step has a point, every
/// point is reached somewhere, every name a test or document spells is catalogued.
@Suite("Crash points")
struct CrashPointsTests {
    /// The repository's root, from this file's place in it.
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path

    /// ivy's own modules: not the emulator, the soak, or the helpers that run ivy from outside.
    static let modules = ["IvyCLI", "IvyCommands", "IvyGoogle", "IvyStore", "IvySync", "IvySystem", "IvyZip"]

    /// Each Swift file of `directories` under the root, as (path relative to the root, text).
    static func swiftFiles(_ directories: [String]) throws -> [(path: String, text: String)] {
        var files: [(String, String)] = []
        for directory in directories {
            let base = root + "/" + directory
            guard let walker = FileManager.default.enumerator(atPath: base) else { continue }
            for case let name as String in walker where name.hasSuffix(".swift") {
                files.append((directory + "/" + name, try String(contentsOfFile: base + "/" + name, encoding: .utf8)))
            }
        }
        return files.sorted { $0.0 < $1.0 }
    }

    /// A durable step's code, by what it calls; `drive` only in the Drive client's files.
    static let steps: [(name: String, pattern: String, driveOnly: Bool)] = [
        ("a GRDB write", #"\bpool\.write\b|\bdbQueue\.write\b|\binTransaction\b|WithoutTransaction\b"#, false),
        ("a migration", #"\.migrate\(pool\)"#, false),
        ("a rename", #"(?<![A-Za-z_.])rename(at)?\("#, false),
        ("a hard link", #"(?<![A-Za-z_])link(at)?\("#, false),
        ("a move or replace", #"\bmoveItem\(|\breplaceItemAt\(|\bcopyItem\("#, false),
        ("an atomic file write", #"atomicallyTo:|\.atomic\b|\.write\(to:"#, false),
        ("a request that changes Drive", #"method: "(POST|PUT|PATCH|DELETE)""#, true),
    ]

    /// Functions that only build a request another function sends, each with where its
    /// points are reached.
    static let builders = [
        "static func sessionPut(": "uploadMP3 reaches drive.upload.before-send and after-answer around sending it"
    ]

    /// The lines of the function around line `index`: from its `func` (or `init`) to the next.
    static func function(around index: Int, in lines: [String]) -> ArraySlice<String> {
        let declaration =
            #"^\s*(@[A-Za-z]+\s+)*((package|private|fileprivate|static|mutating|@inline\(__always\))\s+)*(func|init)\b"#
        func isDeclaration(_ line: String) -> Bool { line.range(of: declaration, options: .regularExpression) != nil }
        var start = index
        while start > 0, !isDeclaration(lines[start]) { start -= 1 }
        var end = index + 1
        while end < lines.count, !isDeclaration(lines[end]) { end += 1 }
        return lines[start..<end]
    }

    @Test("every durable step in ivy's sources reaches a crash point in its function")
    func everyStepHasAPoint() throws {
        let files = try Self.swiftFiles(Self.modules.map { "Sources/" + $0 })
        #expect(files.count > 50, "found \(files.count) files under \(Self.root)/Sources")
        var found = 0
        var missing: [String] = []
        for file in files where !file.path.hasSuffix("/CrashPoints.swift") {
            let lines = file.text.components(separatedBy: "\n")
            let drive = (file.path as NSString).lastPathComponent.hasPrefix("DriveClient")
            for (index, line) in lines.enumerated() {
                let code = line.trimmingCharacters(in: .whitespaces)
                guard !code.hasPrefix("//") else { continue }
                for step in Self.steps where !step.driveOnly || drive {
                    guard line.range(of: step.pattern, options: .regularExpression) != nil else { continue }
                    found += 1
                    let function = Self.function(around: index, in: lines)
                    let body = function.joined(separator: "\n")
                    let builder = Self.builders.keys.contains { function.first?.contains($0) == true }
                    if !builder && !body.contains("CrashPoints.reach(") && !body.contains("crash: ") {
                        missing.append("\(file.path):\(index + 1): \(step.name) with no crash point: \(code)")
                    }
                }
            }
        }
        // The scan sees the steps it is meant to: the commit, the renames, the Drive requests.
        #expect(found >= 15, "only \(found) durable steps found")
        #expect(missing.isEmpty, "\(missing.joined(separator: "\n"))")
        let all = files.map(\.text).joined(separator: "\n")
        for builder in Self.builders.keys {
            #expect(all.contains(builder), "no \(builder) left: drop it from `builders`")
        }
    }

    @Test("every catalogued point is reached somewhere in ivy's sources")
    func noDeadNames() throws {
        let sources = try Self.swiftFiles(Self.modules.map { "Sources/" + $0 })
            .filter { !$0.path.hasSuffix("/CrashPoints.swift") }.map(\.text).joined(separator: "\n")
        let dead = CrashPoint.allCases.filter { point in
            let name = "\(point)"
            return sources.range(of: #"\.\#(name)\b"#, options: .regularExpression) == nil
        }
        #expect(dead.isEmpty, "catalogued and never reached: \(dead.map(\.rawValue))")
    }

    @Test("every crash point a test or document names is catalogued")
    func namedPointsAreCatalogued() throws {
        var texts = try Self.swiftFiles(["Tests"]).map { ($0.path, $0.text) }
        for document in ["CONTRIBUTING.md", "ARCHITECTURE.md"] {
            let path = Self.root + "/" + document
            if let text = try? String(contentsOfFile: path, encoding: .utf8) { texts.append((document, text)) }
        }
        var unknown: [String] = []
        var named = 0
        for (path, text) in texts {
            let pattern = #"IVY_CRASH_AT(": "|=)([a-z][a-z.-]*[a-z])(:[0-9]+)?"#
            let expression = try NSRegularExpression(pattern: pattern)
            for match in expression.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                guard let range = Range(match.range(at: 2), in: text) else { continue }
                let name = String(text[range])
                guard name != "name" else { continue }
                named += 1
                if CrashPoint(rawValue: name) == nil { unknown.append("\(path): \(name)") }
            }
        }
        #expect(named > 0)
        #expect(unknown.isEmpty, "not catalogued: \(unknown)")
    }

    @Test("names are stable dotted words, descriptions one line, the listing sorted by name")
    func catalogue() {
        for point in CrashPoint.allCases {
            #expect(point.rawValue.range(of: #"^[a-z]+(\.[a-z]+(-[a-z]+)*)+$"#, options: .regularExpression) != nil)
            #expect(!point.about.isEmpty && !point.about.contains("\n"), "\(point.rawValue)")
        }
        let listing = CrashPoints.listing
        #expect(listing.count == CrashPoint.allCases.count)
        #expect(listing == listing.sorted())
        #expect(listing.first?.hasPrefix("audio.copy-out.after-place ") == true)
    }

    @Test("IVY_CRASH_AT is NAME or NAME:N with N from 1; anything else names no point")
    func parsing() {
        #expect(CrashPoints.parse("drive.create.after-answer")?.point == .driveCreateAfterAnswer)
        #expect(CrashPoints.parse("drive.create.after-answer")?.count == 1)
        #expect(CrashPoints.parse("store.commit.synced:3")?.count == 3)
        for bad in [
            "", "drive.create", "store.commit.synced:0", "store.commit.synced:", "store.commit.synced:x", "x:1",
        ] {
            #expect(CrashPoints.parse(bad) == nil, "\(bad)")
        }
    }
}
