import Foundation
import GoogleEmulator
import IvyCore
import Testing

@testable import IvyGoogle

@Suite("Hostile Drive answers never crash ivy")
struct HostileDriveTests {
    @Test(
        "a 308 whose Range is past the file, malformed, negative or too long stops the upload with a clear error",
        arguments: [
            "bytes=0-10000", "bytes=0-9223372036854775806", "bytes=0-9223372036854775807",
            "bytes=0-99999999999999999999999",
            "bytes=0--5", "bytes=-5", "bytes=5-9", "bytes=abc", "0-99", "",
        ])
    func badRange(range: String) async throws {
        try await withGoogle { google in
            let drive = try await google.drive()
            let folders = try await drive.folders()
            let audio = try google.writeFile("take.mp3", bytes: 10_000)
            await google.state.addFault(
                FaultRule(method: "PUT", pathContains: "upload_id", status: 308, headers: ["Range": range]))
            await #expect {
                try await drive.uploadMP3(name: "clip_c1.mp3", file: audio, folder: folders.clips[0], replacing: [])
            } throws: { error in
                let message = error.localizedDescription
                return (error as? DriveError)?.kind == .server && message.contains("uploading clip_c1.mp3")
                    && message.contains("of a 10000-byte upload")
            }
            #expect(await google.state.requests.filter { $0.method == "PUT" }.count == 1)
            #expect(await google.names(in: folders.clips[0].rawValue).isEmpty)
        }
    }

    @Test("a 308 that never confirms more stops the upload after a bounded number of tries", .timeLimit(.minutes(10)))
    func stalledUpload() async throws {
        try await withGoogle { google in
            let drive = try await google.drive()
            let folders = try await drive.folders()
            let audio = try google.writeFile("take.mp3", bytes: 10_000)
            await google.state.addFault(
                FaultRule(method: "PUT", pathContains: "upload_id", status: 308, headers: ["Range": "bytes=0-99"]))
            await #expect {
                try await drive.uploadMP3(name: "clip_c1.mp3", file: audio, folder: folders.clips[0], replacing: [])
            } throws: { error in
                error.localizedDescription.contains("stopped confirming the upload at byte 100 of 10000")
            }
            let puts = await google.state.requests.filter { $0.method == "PUT" }.count
            #expect(puts == 2 + RetryPolicy().maxAttempts, "one to byte 100, then every try stalls: \(puts)")
        }
    }

    @Test("a 308 that confirms every byte but does not finish is followed by a status query, not an empty range")
    func confirmedButUnfinished() async throws {
        try await withGoogle { google in
            let drive = try await google.drive()
            let folders = try await drive.folders()
            let audio = try google.writeFile("take.mp3", bytes: 10_000)
            await google.state.addFault(
                FaultRule(
                    method: "PUT", pathContains: "upload_id", times: 1, status: 308, headers: ["Range": "bytes=0-9999"])
            )
            _ = try await drive.uploadMP3(name: "clip_c1.mp3", file: audio, folder: folders.clips[0], replacing: [])
            // The faked 308 stored nothing, so the status query finds nothing and the file goes again.
            let puts = await google.state.requests.filter { $0.method == "PUT" }
            #expect(puts.map(\.bytes) == [0, 0, 10_000], "the faked 308, the status query, the whole file")
            #expect(await google.names(in: folders.clips[0].rawValue) == ["clip_c1.mp3"])
        }
    }

    @Test(
        "sizes Drive lists that are negative, too long for Int64 or not numbers are never trusted",
        arguments: [
            (listed: "-1", size: Int64?.none), (listed: "99999999999999999999", size: Int64.max),
            (listed: "12abc", size: nil),
            (listed: "", size: nil), (listed: "+1000", size: nil), (listed: "1000", size: 1000),
        ])
    func listedSizes(listed: String, size: Int64?) async throws {
        try await withGoogle { google in
            let drive = try await google.drive()
            let folders = try await drive.folders()
            let content = Data((0..<1000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
            let file = await google.state.putFile(
                email: "alice@example.com", name: "clip_c.mp3", parents: [folders.clips[0].rawValue], content: content)
            try await google.state.misreport(id: file.id, Misreport(size: listed))
            let remote = try #require(try await drive.listLibrary(remembered: folders).files.first)
            #expect(remote.size == size)
            let target = URL(fileURLWithPath: google.directory + "/c.mp3")
            if size == Int64.max {
                await google.state.clearRequests()
                await #expect(throws: DriveError.self) { try await drive.downloadFile(remote, to: target) }
                #expect(await google.state.requests.isEmpty, "refused before any request")
            } else {
                try await drive.downloadFile(remote, to: target)
                #expect(
                    try Data(contentsOf: target) == content, "no usable size: bounded by the cap, checked by the md5")
            }
        }
    }
}
