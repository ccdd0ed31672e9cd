import Foundation
import Testing

/// `ivy clip audio ID [FILE]`, through the built binary: a clip's MP3 copied out whole.
@Suite("ivy clip audio")
struct ClipAudioTests {
    let ivy: IvyHome
    init() throws { ivy = try IvyHome() }

    /// A book with one clip whose MP3 is `bytes` long; the clip's id and the MP3's contents.
    private func clip(bytes: Int = 40_000) async throws -> (id: String, audio: Data) {
        let book = try await ivy.id("book", "add", "--title", "Dune")
        let path = try ivy.mp3("litany.mp3", size: bytes)
        let id = try await ivy.id(
            "clip", "add", "--book", book, "--start", "45:00", "--duration", "30", "--audio", path)
        return (id, try #require(FileManager.default.contents(atPath: path)))
    }

    private func names(_ directory: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted()
    }

    @Test("the MP3 goes to FILE whole and private, into a directory as ID.mp3, or to standard output")
    func copiesOut() async throws {
        let (id, audio) = try await clip()
        let directory = ivy.path + "/out"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let written = try await ivy.runBinaryAsync("clip", "audio", String(id.prefix(4)), directory + "/x.mp3")
        #expect(written.status == 0 && written.stdout == "wrote \(directory)/x.mp3 (40 KB)\n", "\(written.stderr)")
        #expect(FileManager.default.contents(atPath: directory + "/x.mp3") == audio)
        let mode = try FileManager.default.attributesOfItem(atPath: directory + "/x.mp3")[.posixPermissions] as? Int
        #expect(mode == 0o600)

        let into = try await ivy.runBinaryAsync("clip", "audio", id, directory)
        #expect(into.status == 0 && into.stdout == "wrote \(directory)/\(id).mp3 (40 KB)\n", "\(into.stderr)")
        #expect(FileManager.default.contents(atPath: directory + "/\(id).mp3") == audio)

        let piped = try await ivy.runBinaryAsync("clip", "audio", id)
        #expect(piped.status == 0 && Data(piped.stdout.utf8).count > 0, "\(piped.stderr)")
        let dashed = try await ivy.runBinaryAsync(
            ["clip", "audio", id, "-"], through: ["/bin/sh", "-c", "\"$0\" \"$@\" > \(directory)/piped.mp3"])
        #expect(dashed.status == 0, "\(dashed.stderr)")
        #expect(FileManager.default.contents(atPath: directory + "/piped.mp3") == audio)
        #expect(names(directory) == ["\(id).mp3", "piped.mp3", "x.mp3"], "no hidden copy left")
    }

    @Test("an existing FILE is kept unless --force; a clip with no MP3 here, or a missing directory, says so")
    func refusals() async throws {
        let (id, audio) = try await clip()
        let file = ivy.path + "/kept.mp3"
        try Data("mine".utf8).write(to: URL(fileURLWithPath: file))
        let refused = try await ivy.runBinaryAsync("clip", "audio", id, file)
        #expect(refused.status == 64, "\(refused.stderr)")
        #expect(refused.stderr.hasPrefix("Error: \(file) exists; give another FILE, or --force to replace it\n"))
        #expect(FileManager.default.contents(atPath: file) == Data("mine".utf8))
        #expect(try await ivy.runBinaryAsync("clip", "audio", id, file, "--force").status == 0)
        #expect(FileManager.default.contents(atPath: file) == audio)

        let nowhere = try await ivy.runBinaryAsync("clip", "audio", id, ivy.path + "/missing/x.mp3")
        #expect(nowhere.status == 1, "\(nowhere.stderr)")
        #expect(
            nowhere.stderr
                == "Error: cannot write \(ivy.path)/missing/x.mp3: No such file or directory; give a FILE in a "
                + "directory that exists and that you can write to\n")

        try FileManager.default.removeItem(atPath: ivy.home + "/audio/\(id).mp3")
        let absent = try await ivy.runBinaryAsync("clip", "audio", id, ivy.path + "/none.mp3")
        #expect(absent.status == 1)
        #expect(
            absent.stderr
                == "Error: clip \(id) has no MP3 here yet: run `ivy sync` to bring it from Drive, then try again\n")
        #expect(!FileManager.default.fileExists(atPath: ivy.path + "/none.mp3"))
    }

    @Test(
        "killed before or after its copy is in place: FILE is whole or as it was, and a left copy is swept later",
        arguments: ["audio.copy-out.after-temp", "audio.copy-out.after-place"])
    func crashed(point: String) async throws {
        let (id, audio) = try await clip()
        let directory = ivy.path + "/out"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let file = directory + "/x.mp3"
        try Data("before".utf8).write(to: URL(fileURLWithPath: file))
        try await CrashPointCLITests.crashed(ivy, at: point, "clip", "audio", id, file, "--force")
        let expected = point == "audio.copy-out.after-place" ? audio : Data("before".utf8)
        #expect(FileManager.default.contents(atPath: file) == expected)
        let left = names(directory).filter { $0.hasPrefix(".ivy-copy-") }
        #expect(left.count == (point == "audio.copy-out.after-temp" ? 1 : 0), "\(names(directory))")
        // The next copy, a while later: one younger than a minute may be another copy's.
        for name in left {
            var past = [timeval(tv_sec: time(nil) - 120, tv_usec: 0), timeval(tv_sec: time(nil) - 120, tv_usec: 0)]
            #expect(utimes(directory + "/" + name, &past) == 0)
        }
        #expect(try await ivy.runBinaryAsync("clip", "audio", id, file, "--force").status == 0)
        #expect(FileManager.default.contents(atPath: file) == audio)
        #expect(names(directory) == ["x.mp3"])
    }
}
