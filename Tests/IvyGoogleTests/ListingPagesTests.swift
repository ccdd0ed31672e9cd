import Foundation
import GoogleEmulator
import IvyCore
import Testing

@testable import IvyGoogle

extension GoogleHarness {
    /// Ivy's folders with `count` books in them, listed `pageCap` to a page.
    func library(books count: Int, pageCap: Int) async throws -> (DriveClient, DriveFolders) {
        let drive = try await drive()
        let folders = try await drive.folders()
        for index in 0..<count {
            await state.putFile(
                email: "alice@example.com", name: "book_\(index).json", parents: [folders.books[0].rawValue],
                content: Data("{}".utf8))
        }
        await state.setPageSizeCap(pageCap)
        return (drive, folders)
    }
}

/// Only the listings of the files, not the folder lookup: `'FOLDER' in parents and trashed = false`.
private let filesQuery = "' in parents and trashed = false"

@Suite("Listing against a Drive whose pages never end")
struct EndlessListingTests {
    @Test("a page token Drive already gave ends the listing as incomplete, and says so", .timeLimit(.minutes(10)))
    func repeatedToken() async throws {
        try await withGoogle { google in
            let (drive, folders) = try await google.library(books: 5, pageCap: 2)
            await google.state.setListFault(ListFault(.repeatToken, queryContains: filesQuery))
            for remembered in [nil, folders] {
                let listing = try await drive.listLibrary(remembered: remembered)
                #expect(!listing.isComplete)
                #expect(listing.files.count == 4, "the two pages read, each file once")
                #expect(
                    listing.incompleteReason?.contains("same page token twice") == true,
                    "\(listing.incompleteReason ?? "complete")")
            }
        }
    }

    @Test("empty pages that never end stop after one page per file found, plus 20", .timeLimit(.minutes(10)))
    func endlessEmptyPages() async throws {
        try await withGoogle { google in
            let (drive, folders) = try await google.library(books: 5, pageCap: 2)
            await google.state.setListFault(ListFault(.emptyPages, queryContains: filesQuery))
            await google.state.clearRequests()
            let listing = try await drive.listLibrary(remembered: nil)
            #expect(!listing.isComplete && listing.files.count == 5)
            #expect(
                listing.incompleteReason?.contains("kept sending pages") == true,
                "\(listing.incompleteReason ?? "complete")")
            let pages = await google.state.requests.filter {
                $0.path == "/drive/v3/files" && $0.query.contains(folders.books[0].rawValue)
            }
            #expect(
                pages.count == 5 + DriveClient.spareListPages + 1,
                "26 pages of the books folder, the last still asking for more")
            #expect(try await drive.listLibrary(remembered: folders).isComplete == false)
        }
    }

    @Test(
        "empty pages Google documents are read through: up to one per file plus 20",
        arguments: [
            (books: 5, empty: 10, complete: true), (books: 0, empty: 20, complete: true),
            (books: 0, empty: 21, complete: false),
            (books: 3, empty: 21, complete: true), (books: 3, empty: 22, complete: false),
        ])
    func someEmptyPages(books: Int, empty: Int, complete: Bool) async throws {
        try await withGoogle { google in
            let (drive, folders) = try await google.library(books: books, pageCap: 1)
            await google.state.setListFault(
                ListFault(.emptyPages, queryContains: "'\(folders.books[0])\(filesQuery)", count: empty))
            let listing = try await drive.listLibrary(remembered: nil)
            #expect(listing.isComplete == complete)
            #expect(listing.files.count == books)
        }
    }
}

@Suite("Listing when Drive rejects a page token")
struct RejectedPageTokenTests {
    @Test(
        "a page token that expired mid-listing (400) starts the listing again from the first page",
        .timeLimit(.minutes(10)))
    func expiredToken() async throws {
        try await withGoogle { google in
            await google.state.setTokenLifetime(seconds: 86_400)
            // Three to a page: the folders (Ivy, books, clips) and the empty clips folder take
            // one page each, the five books two.
            let (drive, folders) = try await google.library(books: 5, pageCap: 3)
            await google.state.clearRequests()
            await google.state.addFault(FaultRule(method: "GET", pathContains: "pageToken=", times: 1, hold: true))
            async let listed = drive.listLibrary(remembered: folders)
            await google.state.waitForHeld(count: 1)
            await google.state.advanceClock(by: 4 * 3600)
            await google.state.releaseHeld()
            let listing = try await listed
            #expect(listing.isComplete, "\(listing.incompleteReason ?? "")")
            #expect(Set(listing.files.map(\.name)) == Set((0..<5).map { "book_\($0).json" }))
            #expect(await google.state.requests.filter { $0.status == 400 }.count == 1)
        }
    }

    @Test("a page token rejected again after the restart ends the listing as incomplete, after one restart")
    func rejectedTwice() async throws {
        try await withGoogle { google in
            let (drive, folders) = try await google.library(books: 5, pageCap: 3)
            await google.state.addFault(
                FaultRule(method: "GET", pathContains: "pageToken=", status: 400, reason: "invalid"))
            await google.state.clearRequests()
            let listing = try await drive.listLibrary(remembered: folders)
            #expect(!listing.isComplete)
            #expect(
                listing.incompleteReason?.contains("rejected a page token again") == true,
                "\(listing.incompleteReason ?? "complete")")
            let rejected = await google.state.requests.filter { $0.status == 400 }
            let perQuery = Dictionary(grouping: rejected) {
                $0.query.split(separator: "&").first { $0.hasPrefix("q=") } ?? ""
            }
            #expect(
                !perQuery.isEmpty && perQuery.values.allSatisfy { $0.count == 2 },
                "the first page token, then the one after the restart")
        }
    }
}
