/// A pending sign-in as the control API lists it.
struct PendingSignIn {
    var code: String
    var order: Int
    /// The emulator's sign-in event count when it was asked for or last polled.
    var lastEvent: Int

    init?(_ object: [String: Any]) {
        guard let code = object["user_code"] as? String, let order = object["order"] as? Int else { return nil }
        self.code = code
        self.order = order
        lastEvent = object["last_event"] as? Int ?? 0
    }
}
