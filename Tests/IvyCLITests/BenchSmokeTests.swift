import Foundation
import IvyTestSupport
import Testing

@Suite("The benchmark script")
struct BenchSmokeTests {
    @Test("a CI-sized run of scripts/bench prints every figure", .timeLimit(.minutes(10)))
    func smoke() async throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let bench = ChildCommand(
            root.appendingPathComponent("scripts/bench").path,
            ["--smoke", "--bin-path", URL(fileURLWithPath: BuiltProgram.ivy.path).deletingLastPathComponent().path],
            environment: ProcessInfo.processInfo.environment)
        let finished = try await runChild(bench, within: .seconds(540))
        let result = (finished.status, finished.stdout, finished.stderr)
        #expect(result.0 == 0, "\(result.2)")
        let figures = Set(
            result.1.split(separator: "\n").compactMap { $0.split(separator: " ").dropFirst().first.map(String.init) })
        for figure in [
            "a_first_sync_seconds", "a_first_sync_requests", "b_limit_used", "b_rate_limited_share",
            "c_new_device_seconds",
            "d_noop_requests", "e_ten_edits_requests", "f_peak_rss_upload_mb", "f_peak_rss_download_mb",
            "g_auto_skip_cooldown_seconds", "g_auto_skip_signed_out_seconds", "h_noop_10k_requests",
            "h_book_list_json_seconds", "j_propagation_median", "j_idle_requests_per_interval_a",
            "j_idle_requests_per_interval_b", "j_idle_cpu_a", "j_idle_cpu_b", "k_upload_terminal_wall_seconds",
            "k_download_pipe_cpu_seconds",
        ] {
            #expect(figures.contains(figure), "missing \(figure)")
        }
        #expect(result.1.contains("bench d_noop_requests 1 requests"), "one page of Drive's changes")
        for device in ["a", "b"] {
            #expect(result.1.contains("bench j_watch_exit_\(device) 0 status"), "SIGTERM ends a watch with 0")
        }
    }
}
