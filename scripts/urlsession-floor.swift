// The thinnest URLSession client, for scripts/bench's figure (c): GETs every Drive file id read
// from stdin, CONCURRENCY at a time, drops the bytes, and prints the seconds it took. What it
// needs above the latency floor is URLSession's and the emulator's, none of it ivy's.
// Usage: urlsession-floor BASE_URL TOKEN CONCURRENCY < ids
import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

let arguments = CommandLine.arguments
let base = arguments[1]
let token = arguments[2]
let concurrency = Int(arguments[3]) ?? 8
var ids: [String] = []
while let line = readLine() { if !line.isEmpty { ids.append(line) } }
let configuration = URLSessionConfiguration.default
configuration.httpMaximumConnectionsPerHost = 16
configuration.urlCache = nil
let session = URLSession(configuration: configuration)
let started = Date()
await withTaskGroup(of: Void.self) { group in
    var next = ids.makeIterator()
    func launch() {
        guard let id = next.next() else { return }
        group.addTask {
            var request = URLRequest(url: URL(string: "\(base)/drive/v3/files/\(id)?alt=media")!)
            request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
            _ = try? await session.data(for: request)
        }
    }
    for _ in 0..<concurrency { launch() }
    while await group.next() != nil { launch() }
}
print(String(format: "%.3f", Date().timeIntervalSince(started)))
