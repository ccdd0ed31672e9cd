import Foundation
import GRDB
import Testing

@Suite("ivy clip")
struct ClipCommandTests {
    let ivy: IvyHome
    let book: String

    init() async throws {
        ivy = try IvyHome()
        book = try await ivy.id("book", "add", "--title", "Dune")
    }

    var audioFiles: [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: ivy.home + "/audio").sorted()) ?? []
    }

    @Test("add copies the audio in and prints the id; list, show and JSON agree")
    func addListShow() async throws {
        let source = try ivy.mp3("take.mp3", size: 4096)
        let id = try await ivy.id(
            "clip", "add", "--book", book, "--start", "45:00", "--duration", "30.5", "--audio", source, "--note",
            "the spice")
        #expect(audioFiles == ["\(id).mp3"])
        #expect(
            FileManager.default.contents(atPath: ivy.home + "/audio/\(id).mp3")
                == FileManager.default.contents(atPath: source))
        let list = try await ivy.run("clip", "list", "--book", book)
        #expect(list.lines.count == 2)
        #expect(
            list.lines[1].contains("0:45:00") && list.lines[1].contains("0:00:30.5")
                && list.lines[1].contains("the spice"))
        let object = try #require(try await ivy.run("clip", "show", id, "--json").json() as? [String: Any])
        #expect(
            Set(object.keys) == [
                "id", "book_id", "start", "duration", "note", "transcription", "created_at", "updated_at",
                "created_at_ms", "updated_at_ms",
            ])
        #expect(object["start"] as? Double == 2700)
        #expect(object["duration"] as? Double == 30.5)
        #expect(object["book_id"] as? String == book)
        #expect(object["transcription"] is NSNull)
        #expect((try await ivy.run("clip", "list", "--json").json() as? [Any])?.count == 1)
        #expect(try await ivy.run("clip", "show", id).stdout.contains("audio          \(ivy.home)/audio/\(id).mp3"))
    }

    @Test("a clip of 0 seconds is refused; one longer than its MP3 can play is added with a warning that says why")
    func impossibleDurations() async throws {
        let source = try ivy.mp3("short.mp3", size: 9000)
        let zero = try await ivy.runBinaryAsync(
            "clip", "add", "--book", book, "--start", "0", "--duration", "0", "--audio", source)
        #expect(zero.status == 64, "\(zero.stderr)")
        #expect(zero.stderr.hasPrefix("Error: invalid --duration '0': a clip lasts more than 0 seconds; "))
        #expect(try ivy.count("SELECT count(*) FROM clips") == 0)

        let long = try await ivy.runBinaryAsync(
            "clip", "add", "--book", book, "--start", "0", "--duration", "30:00:00", "--audio", source)
        #expect(long.status == 0, "\(long.stderr)")
        let id = long.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(
            long.stderr
                == "warning: a clip of 30:00:00 is longer than an MP3 of 9,000 bytes can play (at most 0:00:09 at "
                + "MP3's lowest bitrate, 8 kbit/s); if --duration is wrong, correct it with "
                + "`ivy clip update \(id) --duration`\n")
        let fixed = try await ivy.runBinaryAsync("clip", "update", id, "--duration", "9")
        #expect(fixed.status == 0 && fixed.stderr.isEmpty, "\(fixed.stderr)")
        let zeroAgain = try await ivy.runBinaryAsync("clip", "update", id, "--duration", "0:00")
        #expect(zeroAgain.status == 64 && zeroAgain.stderr.contains("a clip lasts more than 0 seconds"))
        let plausible = try await ivy.runBinaryAsync(
            "clip", "add", "--book", book, "--start", "0", "--duration", "8.5", "--audio", source)
        #expect(plausible.status == 0 && plausible.stderr.isEmpty, "\(plausible.stderr)")
    }

    @Test("an MPEG frame without an ID3 tag is accepted as MP3")
    func frameSync() async throws {
        let source = try ivy.mp3("raw.mp3", size: 1000, header: [0xFF, 0xFB, 0x90, 0x64])
        #expect(
            try await ivy.run("clip", "add", "--book", book, "--start", "0", "--duration", "1", "--audio", source)
                .status == 0)
    }

    @Test("update changes the note and times; new audio replaces the old atomically")
    func update() async throws {
        let id = try await ivy.id(
            "clip", "add", "--book", book, "--start", "10", "--duration", "5", "--audio", try ivy.mp3("a.mp3"),
            "--note", "old")
        #expect(try await ivy.run("clip", "update", id, "--note", "new", "--start", "1:00").status == 0)
        let replacement = try ivy.mp3("b.mp3", size: 777)
        #expect(try await ivy.run("clip", "update", id, "--audio", replacement).status == 0)
        let object = try #require(try await ivy.run("clip", "show", id, "--json").json() as? [String: Any])
        #expect(object["note"] as? String == "new")
        #expect(object["start"] as? Double == 60)
        #expect(object["duration"] as? Double == 5)
        #expect(FileManager.default.contents(atPath: ivy.home + "/audio/\(id).mp3")?.count == 777)
        #expect(audioFiles == ["\(id).mp3"])
        #expect(try await ivy.run("clip", "update", id, "--note", "").status == 0)
        #expect((try await ivy.run("clip", "show", id, "--json").json() as? [String: Any])?["note"] is NSNull)
    }

    @Test("delete removes the row and the audio and queues a delete")
    func delete() async throws {
        let id = try await ivy.id(
            "clip", "add", "--book", book, "--start", "0", "--duration", "1", "--audio", try ivy.mp3("a.mp3"))
        #expect(try await ivy.run("clip", "delete", id).status == 0)
        #expect(audioFiles.isEmpty)
        #expect(try ivy.count("SELECT count(*) FROM clips") == 0)
        let queue = try ivy.sql("SELECT operation FROM sync_queue WHERE entity_type = 'clip'").map {
            $0["operation"] as String
        }
        #expect(queue == ["delete"])
        #expect(try await ivy.run("clip", "show", id).status == 1)
    }

    @Test("a 50 MB MP3 is allowed; one byte more is refused")
    func sizeCap() async throws {
        let atCap = try ivy.mp3("cap.mp3", size: 52_428_800)
        #expect(
            try await ivy.run("clip", "add", "--book", book, "--start", "0", "--duration", "1", "--audio", atCap).status
                == 0)
        let over = try ivy.mp3("over.mp3", size: 52_428_801)
        let result = try await ivy.run(
            "clip", "add", "--book", book, "--start", "0", "--duration", "1", "--audio", over)
        #expect(result.status == 1)
        #expect(result.stderr.contains("52,428,801 bytes") && result.stderr.contains("50 MB"))
        #expect(try ivy.count("SELECT count(*) FROM clips") == 1)
    }

    @Test(
        "bad input is refused, named, and leaves no clip, audio or queue entry",
        arguments: [
            (
                ["--book", "0000-dead-beef", "--start", "0", "--duration", "1", "--audio", "@mp3"],
                "no book with id 0000-dead-beef", 1
            ),
            (["--book", "@book", "--start", "0", "--duration", "1", "--audio", "@wav"], "is not an MP3", 1),
            (["--book", "@book", "--start", "0", "--duration", "1", "--audio", "@empty"], "is not an MP3", 1),
            (["--book", "@book", "--start", "0", "--duration", "1", "--audio", "@missing"], "does not exist", 1),
            (["--book", "@book", "--start", "0", "--duration", "1", "--audio", "@dir"], "not a regular file", 1),
            (["--book", "@book", "--start=-1", "--duration", "1", "--audio", "@mp3"], "invalid --start", 64),
            (
                ["--book", "@book", "--start", "0", "--duration", "1:2:3:4", "--audio", "@mp3"], "invalid --duration",
                64
            ),
            (["--book", "@book", "--start", "0", "--duration", "x", "--audio", "@mp3"], "H:MM:SS", 64),
            (["--book", "Bad Id", "--start", "0", "--duration", "1", "--audio", "@mp3"], "not a book id", 64),
        ] as [([String], String, Int32)])
    func badAdd(arguments: [String], message: String, status: Int32) async throws {
        try FileManager.default.createDirectory(atPath: ivy.path + "/folder.mp3", withIntermediateDirectories: true)
        let substitutions = [
            "@book": book, "@mp3": try ivy.mp3("ok.mp3"),
            "@wav": try ivy.mp3("song.wav", size: 100, header: Array("RIFF\0\0\0\0WAVE".utf8)),
            "@empty": try ivy.mp3("empty.mp3", size: 0, header: []), "@missing": ivy.path + "/nowhere.mp3",
            "@dir": ivy.path + "/folder.mp3",
        ]
        try ivy.execute("DELETE FROM sync_queue")
        let result = try await ivy.run(["clip", "add"] + arguments.map { substitutions[$0] ?? $0 })
        #expect(result.status == status)
        #expect(result.stderr.contains(message), "stderr: \(result.stderr)")
        #expect(result.stdout.isEmpty)
        #expect(try ivy.count("SELECT count(*) FROM clips") == 0)
        #expect(try ivy.count("SELECT count(*) FROM sync_queue") == 0)
        #expect(audioFiles.isEmpty)
    }

    @Test(
        "unknown clip ids are errors for show, update and delete",
        arguments: [
            ["clip", "show", "0000-dead-beef"], ["clip", "update", "0000-dead-beef", "--note", "x"],
            ["clip", "delete", "0000-dead-beef"],
            ["clip", "list", "--book", "0000-dead-beef"],
        ])
    func unknownIDs(arguments: [String]) async throws {
        let result = try await ivy.run(arguments)
        #expect(result.status == 1)
        #expect(result.stderr.contains("0000-dead-beef") && result.stderr.contains("ivy"))
    }
}
