import Foundation
import GRDB
import Testing

/// `ivy check --history`, through the built binary: recorded versions restored into a scratch
/// copy and compared with the history; planted damage found in one run.
@Suite("The restore drill")
struct HistoryDrillTests {
    let ivy: IvyHome
    init() throws { ivy = try IvyHome() }

    /// A book renamed and moved on, and a clip retaken, renamed and deleted: 8 versions, 7 of
    /// them not deletions, two MP3s kept by the history.
    private func library() async throws -> (book: String, clip: String) {
        let (book, clip, _, second) = try await ivy.clipWithTwoTakes()
        for change in [["--title", "Dune II"], ["--position", "100"], ["--artist", "Herbert"]] {
            #expect(try await ivy.run(["book", "update", book] + change).status == 0)
        }
        #expect(try await ivy.run("clip", "update", clip, "--audio", second, "--note", "two").status == 0)
        #expect(try await ivy.run("clip", "update", clip, "--note", "three").status == 0)
        #expect(try await ivy.run("clip", "delete", clip).status == 0)
        return (book, clip)
    }

    private var state: [String] {
        get throws {
            try ivy.sql("SELECT id, json, audio_md5 FROM history ORDER BY id").map { $0.description }
                + ivy.sql("SELECT * FROM books").map { $0.description }
                + ivy.sql("SELECT * FROM clips").map { $0.description }
                + ((try? FileManager.default.contentsOfDirectory(atPath: ivy.home)) ?? []).sorted()
        }
    }

    @Test("every version restores as the history says, and the library is left exactly as it was")
    func allRestore() async throws {
        _ = try await library()
        let before = try state
        let drill = try await ivy.runBinaryAsync("check", "--history", "--versions", "100")
        #expect(drill.status == 0, "\(drill.stdout) \(drill.stderr)")
        #expect(
            drill.stdout
                == "History drill: 7 versions restored into a scratch copy and compared; 8 versions and 2 kept "
                + "MP3s read: all as the history says\n")
        #expect(try state == before, "nothing in the library changed, and no scratch copy is left")
        let json = try #require(try await ivy.runBinaryAsync("check", "--history", "--json").json() as? [String: Any])
        #expect(json["ok"] as? Bool == true && json["kept_audio"] as? Int == 2, "\(json)")
        #expect((json["restored"] as? Int ?? 0) >= 4, "every version of one entity at least: \(json)")
    }

    @Test("a kept MP3 that changed, or a version whose JSON no longer reads, is found in one run, exit 6")
    func plantedDamage() async throws {
        _ = try await library()
        let kept = try #require(
            try ivy.sql("SELECT DISTINCT audio_md5 FROM history WHERE audio_md5 IS NOT NULL")
                .first?["audio_md5"] as String?)
        let path = ivy.home + "/history/\(kept).mp3"
        var bytes = try #require(FileManager.default.contents(atPath: path))
        bytes[bytes.count / 2] ^= 0xFF
        try bytes.write(to: URL(fileURLWithPath: path))
        let mp3 = try await ivy.runBinaryAsync("check", "--history", "--versions", "0")
        #expect(mp3.status == 6, "\(mp3.stdout) \(mp3.stderr)")
        #expect(mp3.stdout.contains("problem: history/\(kept).mp3 has md5 "), "\(mp3.stdout)")
        #expect(mp3.stdout.contains(": not the MP3 it names\n"), "\(mp3.stdout)")

        bytes[bytes.count / 2] ^= 0xFF
        try bytes.write(to: URL(fileURLWithPath: path))
        #expect(try await ivy.runBinaryAsync("check", "--history", "--versions", "0").status == 0)
        try ivy.execute("UPDATE history SET json = '{\"title\": ' WHERE id = 2")
        let row = try await ivy.runBinaryAsync("check", "--history", "--versions", "0")
        #expect(row.status == 6, "\(row.stdout) \(row.stderr)")
        #expect(row.stdout.contains("problem: version 2 of clip "), "\(row.stdout)")
        #expect(row.stdout.contains(": its JSON does not read as a backup\n"), "\(row.stdout)")
    }

    @Test("doctor runs a small drill: ok when the versions restore, a problem naming the version when one does not")
    func doctorDrills() async throws {
        let (_, clip, _, second) = try await ivy.clipWithTwoTakes()
        #expect(try await ivy.run("clip", "update", clip, "--audio", second).status == 0)
        let fine = try await ivy.runBinaryAsync("doctor")
        #expect(
            fine.stdout.contains("\nok      history: 3 versions restored into a scratch copy as recorded\n"),
            "\(fine.stdout)")
        // The first take, kept by the history when the second replaced it, changed since.
        let kept = try #require(
            try ivy.sql("SELECT audio_md5 FROM history WHERE audio_md5 IS NOT NULL").first?["audio_md5"] as String?)
        let path = ivy.home + "/history/\(kept).mp3"
        var bytes = try #require(FileManager.default.contents(atPath: path))
        bytes[bytes.count - 1] ^= 0xFF
        try bytes.write(to: URL(fileURLWithPath: path))
        let damaged = try await ivy.runBinaryAsync("doctor")
        #expect(damaged.status == 1)
        #expect(
            damaged.stdout.contains(
                "\nproblem history: 1 of the versions drilled did not restore as recorded; first: version 2 of clip "
                    + "\(clip): its MP3 restores with md5 "
            ),
            "\(damaged.stdout)")
        #expect(damaged.stdout.contains("; fix: run `ivy check --history` for the whole drill\n"), "\(damaged.stdout)")
    }

    @Test("a drill killed once its scratch copy is made changes nothing; a later drill removes the copy")
    func killedDrill() async throws {
        _ = try await library()
        let before = try state
        try await CrashPointCLITests.crashed(ivy, at: "history.drill.after-copy", "check", "--history")
        let left = try FileManager.default.contentsOfDirectory(atPath: ivy.home).filter {
            $0.hasPrefix(".check-history-")
        }
        #expect(left.count == 1, "the scratch copy a kill leaves")
        #expect(try state.filter { !$0.hasPrefix(".check-history-") } == before.filter { !$0.hasPrefix(".") })
        // An hour later (one younger may be a running drill's).
        for name in left {
            var past = [timeval(tv_sec: time(nil) - 7200, tv_usec: 0), timeval(tv_sec: time(nil) - 7200, tv_usec: 0)]
            #expect(utimes(ivy.home + "/" + name, &past) == 0)
        }
        #expect(try await ivy.runBinaryAsync("check", "--history").status == 0)
        #expect(try state == before, "the copy removed, the library as it was")
    }

    @Test("--versions is for --history, from 0 to 10000; --history takes no --archive or --read-data")
    func refusals() async throws {
        for arguments in [
            ["check", "--versions", "3"], ["check", "--history", "--versions", "-1"],
            ["check", "--history", "--read-data"], ["check", "--history", "--archive", "x.zip"],
        ] {
            let result = try await ivy.run(arguments)
            #expect(result.status == 64, "\(arguments): \(result.stderr)")
        }
    }
}
