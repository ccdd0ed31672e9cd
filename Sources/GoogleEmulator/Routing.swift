import Foundation

extension EmulatorState {
    /// Routes one request: OAuth, the control API, or Drive behind bearer auth.
    package func handle(_ request: EmulatedRequest, baseURL: String) -> (reply: EmulatorReply, account: String?) {
        let path = request.path
        switch (request.method, path) {
        case ("POST", "/device/code"):
            var withBase = request
            withBase.headers["x-emulator-base"] = baseURL
            return (handleDeviceCode(withBase), nil)
        case ("POST", "/token"): return (handleToken(request), nil)
        case ("POST", "/revoke"): return (handleRevoke(request), nil)
        case ("GET", "/device"): return (devicePage(), nil)
        default: break
        }
        if path.hasPrefix("/_emulator/") { return (controlRefusal(request) ?? handleControl(request), nil) }
        if request.method == "POST", path.hasPrefix("/health/") {
            // A health-check service (healthchecks.io's convention) for ivy's pings; not
            // control, so fault rules (a hold: a service that never answers) apply to it.
            healthPings.append(HealthPing(path: path, body: String(decoding: request.body, as: UTF8.self)))
            return (.json(200, ["ok": true]), nil)
        }
        guard path.hasPrefix("/drive/v3/") || path.hasPrefix("/upload/drive/v3/") else {
            return (.driveError(404, reason: "notFound", message: "No such endpoint: \(request.method) \(path)"), nil)
        }
        let caller: Caller
        switch self.caller(bearer: request.headers["authorization"]) {
        case .success(let found): caller = found
        case .failure(let reply): return (reply, nil)
        }
        if driveDisabledProjects.contains(caller.project) {
            return (Self.accessNotConfigured(caller.project), caller.email)
        }
        guard !caller.scopes.isDisjoint(with: Self.driveScopes) else {
            // What Drive answers a token granted without any Drive scope (the person unticked it).
            let reply = EmulatorReply.driveError(
                403, reason: "insufficientPermissions", message: "Request had insufficient authentication scopes.")
            return (reply, caller.email)
        }
        requestProject = caller.project
        defer { requestProject = nil }
        return (drive(request, email: caller.email, baseURL: baseURL), caller.email)
    }

    static let driveScopes: Set<String> = [
        "https://www.googleapis.com/auth/drive", "https://www.googleapis.com/auth/drive.file",
        "https://www.googleapis.com/auth/drive.appdata",
    ]

    /// Google's answer while the Drive API is not enabled in the caller's Cloud project, in
    /// the words it uses (domain usageLimits, reason accessNotConfigured).
    static func accessNotConfigured(_ project: String) -> EmulatorReply {
        let link = "https://console.developers.google.com/apis/api/drive.googleapis.com/overview?project=\(project)"
        let message =
            "Google Drive API has not been used in project \(project) before or it is disabled. Enable it by visiting "
            + "\(link) then retry. If you enabled this API recently, wait a few minutes for the action to propagate "
            + "to our systems and retry."
        return .json(
            403,
            [
                "error": [
                    "code": 403, "message": message, "status": "PERMISSION_DENIED",
                    "errors": [
                        [
                            "domain": "usageLimits", "reason": "accessNotConfigured", "message": message,
                            "extendedHelp": link,
                        ]
                    ],
                ] as [String: Any]
            ])
    }

    private func drive(_ request: EmulatedRequest, email: String, baseURL: String) -> EmulatorReply {
        let segments = request.path.split(separator: "/").map(String.init)
        let route = segments.joined(separator: "/")
        // Reads have a rate limit of their own (Drive's handle-errors guide lists 403 and 429
        // rate-limit answers for every method).
        if request.method == "GET", let limited = readRateLimited() { return limited }
        switch (request.method, route) {
        case ("GET", "drive/v3/about"): return handleAbout(request, email: email)
        case ("GET", "drive/v3/files"): return handleList(request, email: email)
        case ("POST", "drive/v3/files"): return handleCreateMetadata(request, email: email)
        case ("GET", "drive/v3/files/generateIds"): return handleGenerateIDs(request)
        case ("GET", "drive/v3/changes/startPageToken"): return handleStartPageToken(request, email: email)
        case ("GET", "drive/v3/changes"): return handleChanges(request, email: email)
        case ("POST", "upload/drive/v3/files"):
            switch request.query["uploadType"] {
            case "multipart": return handleMultipart(request, email: email)
            case "resumable": return handleStartResumable(request, email: email, baseURL: baseURL)
            case "media": return handleMediaCreate(request, email: email)
            default: return Self.invalid("uploadType must be media, multipart or resumable here.")
            }
        case ("PUT", "upload/drive/v3/files"): return handleResumablePut(request, email: email)
        default: break
        }
        if segments.count == 4, segments[0...2] == ["drive", "v3", "files"] {
            let id = segments[3]
            switch request.method {
            case "GET": return handleGet(request, id: id, email: email)
            case "PATCH": return handlePatch(request, id: id, email: email)
            case "DELETE": return handleDelete(id: id, email: email)
            default: break
            }
        }
        if segments.count == 5, segments[0...3] == ["upload", "drive", "v3", "files"], request.method == "PATCH" {
            return handleUploadUpdate(request, id: segments[4], email: email, baseURL: baseURL)
        }
        return .driveError(404, reason: "notFound", message: "No such endpoint: \(request.method) \(request.path)")
    }

    private func devicePage() -> EmulatorReply {
        let codes = pendingUserCodes()
        let text = """
            <html><body><h1>ivy-emulator sign-in</h1>
            <p>This is a fake Google. Approve a sign-in with <code>ivy-emulator approve</code>.</p>
            <p>Waiting: \(codes.isEmpty ? "none" : codes.joined(separator: ", "))</p></body></html>
            """
        return EmulatorReply(status: 200, headers: ["Content-Type": "text/html; charset=UTF-8"], body: Data(text.utf8))
    }
}
