import Foundation
import GoogleEmulator
import IvyGoogle
import IvyTestSupport
import Testing

@Suite("Cancelling a request")
struct CancellationTests {
    @Test("a request made by a task already cancelled ends at once with CancellationError and sends nothing")
    func alreadyCancelled() async throws {
        try await withEmulator { emulator in
            let transport = emulator.socketTransport
            let url = emulator.baseURL.appendingPathComponent("drive/v3/about")
            // Cancelled before its request starts: the task is cancelled before it is resumed.
            let outcome = await Task {
                withUnsafeCurrentTask { $0?.cancel() }
                do {
                    _ = try await transport.send(HTTPRequest(method: "GET", url: url))
                    return "sent"
                } catch is CancellationError {
                    return "cancelled"
                } catch {
                    return "\(error)"
                }
            }.value
            #expect(outcome == "cancelled")
            #expect(await emulator.state.requests.isEmpty)
        }
    }

    @Test("a request cancelled while Drive holds it ends with CancellationError")
    func cancelledInFlight() async throws {
        try await withEmulator { emulator in
            let transport = emulator.socketTransport
            let url = emulator.baseURL.appendingPathComponent("drive/v3/about")
            await emulator.state.addFault(FaultRule(method: "GET", pathContains: "/about", hold: true))
            let request = Task { try await transport.send(HTTPRequest(method: "GET", url: url)) }
            await emulator.state.waitForHeld(count: 1)
            request.cancel()
            await #expect(throws: CancellationError.self) { try await request.value }
            await emulator.state.releaseHeld()
        }
    }
}
