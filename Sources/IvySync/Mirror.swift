import Foundation
import IvyCore
import IvyGoogle
import IvyStore

/// What Drive's change feed does to the mirror of the listing, decided page by page.
enum MirrorRules {
    /// One page's effect: the update to apply, or why the mirror cannot follow it and the
    /// listing must be taken in full (one of ivy's folders changed, or a new one appeared).
    enum Effect: Equatable {
        case update(MirrorUpdate)
        case needsFullListing(String)
    }

    /// The mirror keeps the files in the books and clips folders, as the full listing does:
    /// a file trashed, removed or moved out of them leaves it; a change elsewhere is
    /// ignored. A change to one of ivy's folders, or a folder that could be a twin of one,
    /// is beyond the mirror: the folders are looked up again with a full listing.
    ///
    /// A file the mirror holds that comes back alive but with no parents at all is not taken
    /// as moved out: an answer without the field it asked for is no reason to drop a file
    /// (and delete a clip here); a full listing decides.
    ///
    /// A file the mirror never held that is now deleted (Drive names no file then) or in the
    /// trash in one of ivy's folders came and went between two syncs: the update says so, as
    /// no absence seen before it can count as unbroken.
    static func effect(of page: DriveChangePage, folders: DriveFolders, mirrored: Set<DriveFileID>) -> Effect {
        let ivy = Set(folders.ivy)
        let holding = Set(folders.books + folders.clips)
        var final: [DriveFileID: MirroredFile?] = [:]
        var order: [DriveFileID] = []
        var unseenFileGone = false
        for change in page.changes {
            if final[change.fileID] == nil { order.append(change.fileID) }
            guard let changed = change.file else {
                if ivy.contains(change.fileID) || holding.contains(change.fileID) {
                    return .needsFullListing("one of ivy's folders on Drive was deleted")
                }
                // Deleted before the mirror saw it: Drive gives no name, so it may have been
                // any entity's newer copy, made and removed by a replace between two syncs.
                if !mirrored.contains(change.fileID) { unseenFileGone = true }
                final[change.fileID] = .some(nil)
                continue
            }
            if changed.mimeType == DriveClient.folderType {
                if let reason = folderReason(changed, ivy: ivy, holding: holding, books: folders.books) {
                    return .needsFullListing(reason)
                }
                final[change.fileID] = .some(nil)
                continue
            }
            if !changed.trashed, changed.parents.isEmpty, mirrored.contains(change.fileID) {
                return .needsFullListing("Drive reported \(changed.file.name) without its folder")
            }
            let inside = !changed.trashed && changed.parents.contains { holding.contains($0) }
            if !inside, changed.parents.contains(where: { holding.contains($0) }), !mirrored.contains(change.fileID) {
                unseenFileGone = true
            }
            let kept =
                inside ? MirroredFile(file: changed.file, parents: changed.parents, mimeType: changed.mimeType) : nil
            final[change.fileID] = .some(kept)
        }
        var upserts: [MirroredFile] = []
        var removals: [DriveFileID] = []
        for id in order {
            if let file = final[id] ?? nil { upserts.append(file) } else { removals.append(id) }
        }
        return .update(
            MirrorUpdate(upserts: upserts, removals: removals, token: page.nextToken, unseenFileGone: unseenFileGone))
    }

    /// Why a folder's change means the folders must be looked up again; nil when it leaves
    /// ivy's folders as they are (a folder of ivy's, unchanged in what matters, or a folder
    /// that is none of ivy's).
    private static func folderReason(
        _ folder: ChangedFile, ivy: Set<DriveFileID>, holding: Set<DriveFileID>, books: [DriveFileID]
    ) -> String? {
        let id = folder.file.id
        let name = folder.file.name
        let inIvy = folder.parents.contains { ivy.contains($0) }
        if ivy.contains(id) {
            return folder.trashed || name != "Ivy" ? "the Ivy folder on Drive was trashed or renamed" : nil
        }
        if holding.contains(id) {
            let role = Set(books).contains(id) ? "books" : "clips"
            let intact = !folder.trashed && inIvy && name == role
            return intact ? nil : "ivy's \(role) folder on Drive was trashed, moved or renamed"
        }
        guard !folder.trashed else { return nil }
        if name == "Ivy" || (inIvy && (name == "books" || name == "clips")) {
            return "a new \(name) folder appeared on Drive (a twin is listed with the others)"
        }
        return nil
    }
}

extension SyncEngine {
    /// The mirror brought up to date from Drive's change feed, or why the listing must be
    /// taken in full this time. Each page is saved with its token as it is applied (not in
    /// a dry run, which changes nothing); a page that cannot be read, a token Drive refuses,
    /// or an error partway leaves the mirror as the last page saved left it, and the sync
    /// lists Drive in full, except when Drive cannot be reached or limits the rate: then
    /// the sync stops.
    func followChanges(_ mirror: DriveMirror, folders: DriveFolders, dryRun: Bool) async throws -> MirrorFollowed {
        try await Self.followChanges(mirror, folders: folders, drive: drive, saving: dryRun ? nil : library)
    }

    /// `followChanges` for any Drive client; with no library to save each page to, the mirror
    /// is brought up to date in memory only (`ivy check`, a dry run).
    static func followChanges(
        _ mirror: DriveMirror, folders: DriveFolders, drive: DriveClient, saving library: LibraryDatabase?
    ) async throws -> MirrorFollowed {
        var files = Dictionary(mirror.files.map { ($0.file.id, $0) }, uniquingKeysWith: { $1 })
        var token = mirror.token
        let end: ChangeFeedEnd
        do {
            end = try await drive.changes(since: mirror.token) { page in
                switch MirrorRules.effect(of: page, folders: folders, mirrored: Set(files.keys)) {
                case .needsFullListing(let reason): throw FeedStop(reason: reason)
                case .update(let update):
                    if let library {
                        guard try await library.applyDriveMirrorPage(update, from: token) else {
                            throw FeedStop(reason: "the mirror was reset while Drive's changes were read")
                        }
                    }
                    for id in update.removals { files[id] = nil }
                    for file in update.upserts { files[file.file.id] = file }
                    token = update.token
                }
            }
        } catch let stop as FeedStop {
            return .needsFullListing(stop.reason)
        } catch let error as DriveError where error.kind == .network || error.kind == .rateLimited {
            // Drive out of reach, or asking for fewer requests: a full listing would fail the
            // same way, or cost more of what is limited. The sync stops; the pages saved stay.
            throw error
        } catch let error as DriveError {
            return .needsFullListing("reading Drive's changes failed (\(error.localizedDescription))")
        }
        switch end {
        case .caughtUp: return .current(files.values.map(\.file).sorted { $0.id < $1.id })
        case .rejected(let reason): return .needsFullListing("Drive refused the saved change token (\(reason))")
        case .broken(let reason): return .needsFullListing("Drive's change feed could not be followed (\(reason))")
        }
    }

    enum MirrorFollowed {
        /// Every file in the books and clips folders, as of now.
        case current([RemoteFile])
        case needsFullListing(String)
    }

    private struct FeedStop: Error {
        let reason: String
    }
}
