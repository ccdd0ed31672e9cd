package import Foundation
package import IvyCore

/// The rules of a resumable MP3 upload, with no effects: told each answer Drive gave, it says
/// what to do next. `DriveClient.uploadMP3` is the loop that does it: it sends the requests,
/// waits the back-offs and reads the file a 409 names.
///
/// After a dropped connection, a 5xx or a rate limit the session is asked what arrived and
/// only the rest is sent; a session that expired or answered another 4xx starts over
/// (Google: "For any 4xx errors (including 403) during a resumable upload, restart the
/// upload"), at most three sessions in all. A 409 means a file with this upload's own id
/// exists: an earlier attempt finished though its answer was lost, so it is read rather than
/// made again.
package struct ResumableUpload: Sendable, Equatable {
    /// What to do next.
    package enum Step: Sendable, Equatable {
        /// Start a session (POST `uploadType=resumable`); with `newID`, under a fresh
        /// pre-generated id first.
        case startSession(newID: Bool)
        /// Send the file's next chunk, from this byte.
        case send(from: Int64)
        /// Ask the session how much of the file it holds (`Content-Range: bytes */size`).
        case askStatus
        /// Wait as the retry budget allows after this failure (at least `retryAfter`), or fail
        /// with it when the budget is spent; then ask the status.
        case backOff(DriveError, retryAfter: Duration?)
        /// Read the file Drive made with this upload's id.
        case readExisting
        /// The last answer is the created file.
        case finish
        case fail(DriveError)
    }

    /// What happened to the last step.
    package enum Answer: Sendable, Equatable {
        case sessionStarted
        /// Starting a session failed with this error (after the client's own retries).
        case sessionRefused(DriveError)
        /// A `send` or `askStatus` was answered: its status, its `Range` header, the error the
        /// answer stands for (4xx and 5xx) and its `Retry-After`.
        case answered(status: Int, range: String?, error: DriveError?, retryAfter: Duration?)
        /// A `send` or `askStatus` got no answer worth reading (a dropped connection, a timeout).
        case dropped(DriveError)
        /// The back-off is over.
        case waited
        /// The file a 409 named is gone (deleted since, by another device's replace).
        case existingGone(DriveError)
    }

    package static let maximumSessions = 3

    /// The most of the file one PUT carries: 8 MiB, rclone's default for Drive (backend/drive,
    /// `chunk_size`, "Upload chunk size. Must a power of 2 >= 256k", default 8M) and Google's
    /// Go client's. A sync killed mid-upload sends at most this much again (plus what Drive
    /// had not kept of the chunk before it), and a 50 MB clip takes 7 PUTs. Google requires
    /// every chunk but the last to be a multiple of 256 KiB (Drive's "Upload file data" guide,
    /// developers.google.com/drive/api/guides/manage-uploads, "Upload in chunks": "Create
    /// chunks in multiples of 256 KB (256 x 1024 bytes) in size, except for the final chunk
    /// that completes the upload").
    package static let defaultChunk: Int64 = 8 << 20
    /// Google's unit of a chunk: 256 KiB.
    package static let chunkUnit: Int64 = 256 << 10

    /// A chunk size Google accepts: a whole number of 256 KiB units, at least one.
    package static func chunk(_ bytes: Int64) -> Int64 {
        max(chunkUnit, bytes / chunkUnit * chunkUnit)
    }

    /// How old a kept session may be and still be resumed: 6 days. Drive ends a session a week
    /// after it began (the guide's "Resume an interrupted upload": a session URI "expires after
    /// one week"); a day's margin leaves no upload resumed into a session about to end.
    package static let keptSessionMaximumAge: Milliseconds = 6 * 86_400_000

    /// Whether a session an earlier run kept may carry on this upload: the same bytes (md5
    /// and size), less than 6 days old, and still on the sign-in's own server
    /// (`sessionURL`: a library edited to send the file elsewhere sends it nowhere). The
    /// session's URL, or why a new session is started.
    package static func resumable(
        _ kept: UploadSessionRecord, md5: String, size: Int64, now: Milliseconds, drive: URL, context: String
    ) -> Result<URL, Abandoned> {
        guard kept.md5 == md5, kept.size == size else { return .failure(.changed) }
        guard now - kept.startedAt < keptSessionMaximumAge else { return .failure(.old) }
        do {
            return .success(try sessionURL(kept.uri, drive: drive, context: context))
        } catch {
            return .failure(.elsewhere)
        }
    }

    /// Why a kept session was not resumed.
    package enum Abandoned: String, Sendable, Equatable, Error {
        case changed = "the clip's audio changed since the upload began"
        case old = "the upload session is 6 days old or more"
        case elsewhere = "the kept upload session is not on this sign-in's server"
    }

    let size: Int64
    /// How many 308 answers in a row may leave the confirmed part where it was.
    let maximumStalls: Int
    /// "uploading clip_….mp3", for messages.
    let context: String

    private(set) var sessions = 0
    private(set) var offset: Int64 = 0
    private var stalls = 0
    private var triedNewID = false
    private var readingAtStart = false
    private var ended = "the upload session expired"

    package init(size: Int64, maximumStalls: Int, context: String) {
        self.size = size
        self.maximumStalls = maximumStalls
        self.context = context
    }

    /// The first step.
    package mutating func start() -> Step {
        sessions = 1
        return .startSession(newID: false)
    }

    /// The first step of an upload that goes on in a session an earlier run opened: ask it
    /// what it holds, and send from there. What the earlier run recorded is not trusted: a
    /// chunk it sent may not have been kept, so only Drive's answer says where to go on.
    package mutating func resume() -> Step {
        sessions = 1
        offset = 0
        return .askStatus
    }

    package mutating func next(_ answer: Answer) -> Step {
        switch answer {
        case .sessionStarted:
            offset = 0
            stalls = 0
            return .send(from: 0)
        case .sessionRefused(let error):
            if error.status == 409 {
                readingAtStart = true
                return .readExisting
            }
            // Drive will not create a file with that id; a fresh one works, once.
            if DriveClient.idNotUsable(error), sessions == 1, !triedNewID {
                triedNewID = true
                return .startSession(newID: true)
            }
            return .fail(error)
        case .existingGone(let error):
            // Made, then deleted since (another device replaced it): upload it again.
            guard readingAtStart, sessions < Self.maximumSessions else { return .fail(error) }
            sessions += 1
            return .startSession(newID: true)
        case .dropped(let error):
            return .backOff(error, retryAfter: nil)
        case .waited:
            return .askStatus
        case .answered(let status, let range, let error, let retryAfter):
            return answered(status, range: range, error: error, retryAfter: retryAfter)
        }
    }

    private mutating func answered(
        _ status: Int, range: String?, error: DriveError?, retryAfter: Duration?
    ) -> Step {
        switch status {
        case 200, 201:
            return .finish
        case 308:
            // No Range means nothing stored; one that is not `bytes=0-N` within the file is an
            // answer ivy cannot resume from.
            guard let confirmed = Self.confirmedBytes(range, size: size) else {
                return .fail(
                    DriveError(
                        .server, status: 308,
                        message: "\(context): Drive confirmed \(Self.quoted(range)) of a \(size)-byte upload, which "
                            + "cannot be; the upload was stopped and the next sync tries again"))
            }
            // A 308 that does not move the confirmed part forward is a stall; a few are normal
            // (the status query after a dropped connection), an answer that never moves forward
            // must not keep ivy sending for ever.
            if confirmed > offset {
                stalls = 0
            } else {
                stalls += 1
                guard stalls <= maximumStalls else {
                    return .fail(
                        DriveError(
                            .server, status: 308,
                            message: "\(context): Drive stopped confirming the upload at byte \(confirmed) of \(size); "
                                + "the next sync tries again"))
                }
            }
            offset = confirmed
            // Everything arrived yet the upload is not finished: ask for its result.
            return offset == size ? .askStatus : .send(from: offset)
        case 404, 410:
            ended = "the upload session expired"
            return startAgain()
        case 409:
            readingAtStart = false
            return .readExisting
        default:
            let error = error ?? DriveError(.unexpected, status: status, message: "\(context): HTTP \(status)")
            if Self.endsSession(status, error) {
                ended = "Drive ended the upload session (\(status)\(error.reason.map { " \($0)" } ?? ""))"
                return startAgain()
            }
            guard error.isRetryable else { return .fail(error) }
            return .backOff(error, retryAfter: retryAfter)
        }
    }

    /// A new session for the same file id, unless three have ended already.
    private mutating func startAgain() -> Step {
        guard sessions < Self.maximumSessions else {
            return .fail(
                DriveError(.server, message: "\(context): \(ended), three sessions in a row; the next sync tries again")
            )
        }
        sessions += 1
        return .startSession(newID: false)
    }

    /// A 4xx that means this session is dead and a new one may succeed. Not a rate limit
    /// (wait, then ask the same session), not an expired token (refreshed already), and not
    /// what no new session can fix (a full Drive, a project or sign-in not set up for Drive).
    static func endsSession(_ status: Int, _ error: DriveError) -> Bool {
        (400..<500).contains(status) && status != 401 && ![.rateLimited, .driveFull, .setup].contains(error.kind)
    }

    /// How many bytes a 308's `Range` confirms: `bytes=0-42` means 43 arrived, no header means
    /// none. Nil for anything else: not that form, not starting at 0, past `size`, or a
    /// number too long for Int64.
    package static func confirmedBytes(_ header: String?, size: Int64) -> Int64? {
        guard let header else { return 0 }
        let text = header.trimmingCharacters(in: .whitespaces)
        guard text.lowercased().hasPrefix("bytes=0-") else { return nil }
        let digits = text.dropFirst("bytes=0-".count)
        guard !digits.isEmpty, digits.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }), let last = Int64(digits), last < size
        else { return nil }
        return last + 1
    }

    /// Where the session a `Location` header names is, when ivy may send it the file and the
    /// sign-in's token: the same scheme, host and port as the sign-in's Drive server `drive`
    /// (https, or plain http only to a loopback server the sign-in was made at, as
    /// `GoogleEndpoints` allows no other). Google's session URI is on that server:
    /// `https://www.googleapis.com/upload/drive/v3/files?uploadType=resumable&upload_id=…`
    /// (Drive's "Upload file data" guide, developers.google.com/drive/api/guides/manage-uploads,
    /// "Perform a resumable upload": the initiating request's answer has "a Location header
    /// that specifies the resumable session URI"), and nothing in Google's documentation
    /// lets it point elsewhere. Any other answer (another port, another host, plain http,
    /// another scheme, user info, no URL) is Drive misbehaving or someone tampering: the
    /// upload fails closed, with nothing sent there, and the change stays queued.
    package static func sessionURL(_ location: String?, drive: URL, context: String) throws(DriveError) -> URL {
        guard let location, !location.isEmpty else {
            throw DriveError(.unexpected, message: "\(context): the upload session has no Location")
        }
        let own = origin(drive)
        guard let url = URL(string: location, relativeTo: drive)?.absoluteURL, let target = origin(url),
            url.user == nil, url.password == nil, let own, target == own
        else {
            let shown = URL(string: location).flatMap(origin).map(\.shown) ?? quoted(URLText.masked(location))
            throw DriveError(
                .unexpected,
                message: "\(context): Drive's answer sends the file to \(shown), not to this sign-in's server "
                    + "\(own?.shown ?? drive.absoluteString), so nothing was sent there and the change stays queued "
                    + "for the next sync (an answer like that comes from a fault at Google or from someone "
                    + "tampering with the connection)")
        }
        return url
    }

    /// A URL's scheme, host and port (the scheme's own when none is given), lower-cased.
    struct Origin: Equatable {
        var scheme: String
        var host: String
        var port: Int

        var shown: String { "\(scheme)://\(host.contains(":") ? "[\(host)]" : host):\(port)" }
    }

    static func origin(_ url: URL) -> Origin? {
        guard let scheme = url.scheme?.lowercased(), let host = url.host?.lowercased(), !host.isEmpty else {
            return nil
        }
        let known = ["https": 443, "http": 80]
        guard let port = url.port ?? known[scheme] else { return nil }
        return Origin(scheme: scheme, host: host, port: port)
    }

    /// A server's header, quoted and cut short for a message.
    static func quoted(_ header: String?) -> String {
        guard let header else { return "nothing" }
        return "\"" + String(header.prefix(60)) + (header.count > 60 ? "…" : "") + "\""
    }
}
