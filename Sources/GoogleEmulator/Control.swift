import Foundation

/// The control API's door: its secret, checked before any route is looked at.
extension EmulatorState {
    /// The header a control request carries `controlSecret` in. Not `Authorization`, which is
    /// Drive's; and a header a web page cannot send to 127.0.0.1 without a CORS preflight,
    /// which the emulator never grants.
    package static let controlSecretHeader = "X-Ivy-Emulator-Secret"

    /// 32 bytes of the system's randomness, in hex: never from the seeded generator, whose seed
    /// is printed, nor kept in the state file, so each run's secret is its own.
    package static func newControlSecret() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<32).map { _ in String(format: "%02x", UInt8.random(in: .min ... .max, using: &generator)) }
            .joined()
    }

    /// The answer to a control request without this emulator's secret, or nil when it has it.
    /// Refused before the path is looked at, so a stranger learns nothing of the routes either.
    func controlRefusal(_ request: EmulatedRequest) -> EmulatorReply? {
        guard let given = request.headers[Self.controlSecretHeader.lowercased()] else {
            return .json(
                401,
                [
                    "error": "the emulator's control API needs its secret: send the \(Self.controlSecretHeader) "
                        + "header with IVY_EMULATOR_SECRET of the export line ivy-emulator printed as it started"
                ])
        }
        guard Self.sameSecret(given, controlSecret) else {
            return .json(
                403,
                [
                    "error": "wrong \(Self.controlSecretHeader): not the secret this emulator printed "
                        + "(IVY_EMULATOR_SECRET of its export line; an emulator makes a new one each time it starts)"
                ])
        }
        return nil
    }

    /// Compares in time that depends on the secret's length only, not on how much of it a
    /// guess got right.
    static func sameSecret(_ given: String, _ secret: String) -> Bool {
        let guess = Array(given.utf8)
        var difference: UInt8 = guess.count == secret.utf8.count ? 0 : 1
        for (index, byte) in secret.utf8.enumerated() {
            difference |= byte ^ (index < guess.count ? guess[index] : 0)
        }
        return difference == 0
    }

    /// Answers a control request that carried the secret, by `controlRoutes`.
    func handleControl(_ request: EmulatedRequest) -> EmulatorReply {
        let segments = request.path.split(separator: "/").dropFirst().map(String.init)
        for route in Self.controlRoutes where route.method == request.method {
            if let ids = route.ids(matching: segments) { return route.reply(self, request, ids: ids) }
        }
        return .json(404, ["error": "no control endpoint \(request.method) \(request.path)"])
    }
}
