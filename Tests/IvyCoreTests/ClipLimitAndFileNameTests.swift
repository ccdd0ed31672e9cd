import IvyCore
import Testing

@Suite("The 50 MB rule and Drive file names")
struct ClipLimitAndFileNameTests {
    @Test("exactly 50 MB is allowed, one byte more is not, and the refusal says by how much")
    func cap() {
        #expect(AudioRules.allows(52_428_800))
        #expect(!AudioRules.allows(52_428_801))
        #expect(AudioRules.overLimit(52_428_800) == nil)
        #expect(AudioRules.overLimit(52_428_801) == "52,428,801 bytes, over the 50 MB clip limit")
        #expect(AudioRules.limitSentence == "clip audio is limited to 50 MB (52,428,800 bytes)")
    }

    @Test("an entity's Drive file names read back as that entity")
    func names() {
        let book = EntityKey(.book, "0f8a2c1e-5b7d-4e3f-9a1b-2c3d4e5f6a7b")
        let clip = EntityKey(.clip, "5b7d9e3f-0f8a-4c1e-8a1b-2c3d4e5f6a7b")
        #expect(book.jsonFileName == "book_0f8a2c1e-5b7d-4e3f-9a1b-2c3d4e5f6a7b.json")
        #expect(clip.mp3FileName == "clip_5b7d9e3f-0f8a-4c1e-8a1b-2c3d4e5f6a7b.mp3")
        #expect(EntityFileName(parsing: book.jsonFileName) == EntityFileName(key: book, format: .json))
        #expect(EntityFileName(parsing: clip.jsonFileName) == EntityFileName(key: clip, format: .json))
        #expect(EntityFileName(parsing: clip.mp3FileName) == EntityFileName(key: clip, format: .mp3))
    }
}
