import Foundation

/// One account's change feed: every file that changed, in the order of its latest change.
///
/// Drive's "Retrieve changes" guide: entries "are in chronological order (the oldest changes
/// appear first)" and "if the file has changed, the collection provides the current state of
/// each file". So a file appears once, at its latest change, with its state at the time of the
/// listing; an earlier change of it is superseded, not repeated.
struct ChangeLog: Sendable, Codable, Equatable {
    /// One change: which file, when, and the Cloud project that could see it (kept because a
    /// deleted file is gone, yet only that project may learn of its removal).
    struct Entry: Sendable, Codable, Equatable {
        var position: Int
        var fileID: String
        var time: Date
        var project: String?
    }

    /// Changes in increasing position; superseded ones stay until `compacted()` drops them.
    var entries: [Entry] = []
    /// The position of each file's latest change.
    var latest: [String: Int] = [:]
    /// The position of the newest change: a token of this value has nothing after it.
    var head = 0
    /// When the emulator last handed out each token (see `EmulatorState.changeTokenLifetime`).
    var issued: [Int: Date] = [:]

    mutating func append(fileID: String, time: Date, project: String?) {
        head += 1
        entries.append(Entry(position: head, fileID: fileID, time: time, project: project))
        latest[fileID] = head
    }

    /// The live changes after `position`, oldest first.
    func changes(after position: Int) -> some Sequence<Entry> {
        var low = 0
        var high = entries.count
        while low < high {
            let middle = (low + high) / 2
            if entries[middle].position <= position { low = middle + 1 } else { high = middle }
        }
        return entries[low...].lazy.filter { latest[$0.fileID] == $0.position }
    }

    /// The log without superseded entries, as the state file keeps it.
    func compacted() -> ChangeLog {
        var copy = self
        copy.entries = entries.filter { latest[$0.fileID] == $0.position }
        return copy
    }
}

/// Drive's change feed (`changes.getStartPageToken`, `changes.list`), per account.
extension EmulatorState {
    // MARK: recording

    /// Notes a change of a file (created, updated, trashed, untrashed) or of what was there
    /// (deleted), in its owner's feed.
    func noteChange(_ file: DriveFile) {
        changeLogs[file.owner, default: ChangeLog()].append(fileID: file.id, time: now(), project: file.project)
    }

    /// Notes a change of a file and of everything below it: trashing a folder changes the
    /// `trashed` of every file in it, and deleting one deletes them all.
    func noteChange(_ file: DriveFile, withDescendantsIn all: [String: DriveFile]) {
        noteChange(file)
        guard file.isFolder else { return }
        var frontier: Set<String> = [file.id]
        var seen: Set<String> = [file.id]
        while !frontier.isEmpty {
            let children = all.values.filter { child in
                child.parents.contains { frontier.contains($0) } && !seen.contains(child.id)
            }
            .sorted { ($0.createdTime, $0.id) < ($1.createdTime, $1.id) }
            for child in children { noteChange(child) }
            frontier = Set(children.map(\.id))
            seen.formUnion(frontier)
        }
    }

    /// The token an account's feed stands at now, as `changes.getStartPageToken` gives it.
    package func currentChangeToken(email: String) -> String {
        issueChangeToken(email: email, position: changeLogs[email]?.head ?? 0)
    }

    private func issueChangeToken(email: String, position: Int) -> String {
        changeLogs[email, default: ChangeLog()].issued[position] = now()
        return String(position)
    }

    // MARK: endpoints

    func handleStartPageToken(_ request: EmulatedRequest, email: String) -> EmulatorReply {
        let object: [String: Any] = [
            "kind": "drive#startPageToken", "startPageToken": currentChangeToken(email: email),
        ]
        switch Masking.apply(request.query["fields"] ?? "kind,startPageToken", to: object, schema: .startPageToken) {
        case .success(let masked): return .json(200, masked)
        case .failure(let reply): return reply
        }
    }

    /// Drive's answer to a parameter it will not take: 400 `invalid` naming the parameter, in
    /// the shape Google's API errors have (`location`, `locationType`).
    static func invalidParameter(_ name: String, reason: String = "invalid", message: String = "Invalid Value")
        -> EmulatorReply
    {
        .json(
            400,
            [
                "error": [
                    "code": 400, "message": message,
                    "errors": [
                        [
                            "domain": "global", "reason": reason, "message": message, "locationType": "parameter",
                            "location": name,
                        ]
                    ],
                ] as [String: Any]
            ])
    }

    /// What changes.list sends without `fields`: the change's own keys and the file's default ones.
    static let defaultChangeFields =
        "kind,nextPageToken,newStartPageToken,changes(kind,changeType,time,removed,fileId,file(kind,id,name,mimeType))"

    func handleChanges(_ request: EmulatedRequest, email: String) -> EmulatorReply {
        guard let token = request.query["pageToken"] else {
            return Self.invalidParameter(
                "pageToken", reason: "required", message: "Required parameter: pageToken")
        }
        var log = changeLogs[email] ?? ChangeLog()
        // Tokens are decimal positions in the account's feed; anything else, a position the
        // feed has not reached, or one past its lifetime, is refused.
        guard token.allSatisfy(\.isASCII), let position = Int(token), position >= 0, position <= log.head,
            token == String(position)
        else {
            return Self.invalidParameter("pageToken")
        }
        if let lifetime = changeTokenLifetime {
            guard let issued = log.issued[position], now().timeIntervalSince(issued) <= lifetime else {
                return Self.invalidParameter("pageToken")
            }
        }
        // "The maximum value is 1000; values above 1000 will be coerced to 1000" (changes.list).
        var pageSize = 100
        if let text = request.query["pageSize"] {
            guard let asked = Int(text), asked >= 1 else { return Self.invalidParameter("pageSize") }
            pageSize = min(asked, 1000)
        }
        if let cap = changesPageSizeCap { pageSize = min(pageSize, cap) }
        let includeRemoved = request.query["includeRemoved"].map { $0 != "false" } ?? true
        let spaces = (request.query["spaces"] ?? "drive").split(separator: ",").map {
            $0.trimmingCharacters(in: .whitespaces)
        }
        guard spaces.allSatisfy({ ["drive", "appDataFolder", "photos"].contains($0) }) else {
            return Self.invalidParameter("spaces")
        }
        // Nothing of the emulator lives in appDataFolder or Photos.
        let inDrive = spaces.contains("drive")

        var page: [[String: Any]] = []
        var last = position
        var full = false
        for entry in log.changes(after: position) where inDrive {
            if page.count == pageSize {
                full = true
                break
            }
            last = entry.position
            if let file = files[entry.fileID] {
                guard isVisible(file, to: email) else { continue }
                page.append(changeJSON(entry, file: fileJSON(file)))
            } else {
                // Deleted: only a project that could see the file learns it is gone.
                guard includeRemoved, entry.project != nil, entry.project == requestProject else { continue }
                page.append(changeJSON(entry, file: nil))
            }
        }
        var object: [String: Any] = ["kind": "drive#changeList", "changes": page]
        if full {
            object["nextPageToken"] = String(last)
            log.issued[last] = now()
        } else {
            object["newStartPageToken"] = String(log.head)
            log.issued[log.head] = now()
        }
        changeLogs[email] = log
        switch Masking.apply(request.query["fields"] ?? Self.defaultChangeFields, to: object, schema: .changeList) {
        case .success(let masked): return .json(200, masked)
        case .failure(let reply): return reply
        }
    }

    private func changeJSON(_ entry: ChangeLog.Entry, file: [String: Any]?) -> [String: Any] {
        var object: [String: Any] = [
            "kind": "drive#change", "changeType": "file", "type": "file", "fileId": entry.fileID,
            "time": RFC3339.string(entry.time), "removed": file == nil,
        ]
        if let file { object["file"] = file }
        return object
    }
}
