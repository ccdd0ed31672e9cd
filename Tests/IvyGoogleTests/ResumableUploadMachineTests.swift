import IvyGoogle
import Testing

/// The resumable upload's rules as tables: the answers Drive gives, and the steps taken.
@Suite("Resumable upload rules")
struct ResumableUploadMachineTests {
    typealias Step = ResumableUpload.Step
    typealias Answer = ResumableUpload.Answer

    static let size: Int64 = 100
    static let server = DriveError(.server, status: 500, message: "backend error")
    static let dropped = DriveError(.network, message: "the connection was lost")
    static let rateLimited = DriveError(.rateLimited, status: 429, message: "slow down")
    static let forbidden = DriveError(.forbidden, status: 403, reason: "forbidden", message: "forbidden")
    static let full = DriveError(.driveFull, status: 403, reason: "storageQuotaExceeded", message: "full")
    static let unauthorized = DriveError(.unauthorized, status: 401, message: "expired")
    static let conflict = DriveError(.badRequest, status: 409, message: "exists")
    static let gone = DriveError(.notFound, status: 404, message: "gone")
    static let idNotUsable = DriveError(.badRequest, status: 400, reason: "fileIdNotUsable", message: "no")

    static func answered(_ status: Int, range: String? = nil, error: DriveError? = nil) -> Answer {
        .answered(status: status, range: range, error: error, retryAfter: nil)
    }

    /// Runs the machine through `answers` and returns every step it took, the first included.
    static func steps(_ answers: [Answer]) -> [Step] {
        var machine = ResumableUpload(size: size, maximumStalls: 2, context: "uploading clip_x.mp3")
        var steps = [machine.start()]
        for answer in answers { steps.append(machine.next(answer)) }
        return steps
    }

    struct Case: Sendable, CustomTestStringConvertible {
        let name: String
        let answers: [Answer]
        let steps: [Step]
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(
            name: "one PUT carries it all", answers: [.sessionStarted, answered(200)],
            steps: [.startSession(newID: false), .send(from: 0), .finish]),
        Case(
            name: "a dropped connection: back off, ask what arrived, send the rest",
            answers: [.sessionStarted, .dropped(dropped), .waited, answered(308, range: "bytes=0-41"), answered(201)],
            steps: [
                .startSession(newID: false), .send(from: 0), .backOff(dropped, retryAfter: nil), .askStatus,
                .send(from: 42), .finish,
            ]),
        Case(
            name: "a 5xx is waited out, then the session is asked",
            answers: [.sessionStarted, answered(500, error: server), .waited, answered(308)],
            steps: [
                .startSession(newID: false), .send(from: 0), .backOff(server, retryAfter: nil), .askStatus,
                .send(from: 0),
            ]),
        Case(
            name: "a rate limit is waited out on the same session",
            answers: [.sessionStarted, answered(429, error: rateLimited)],
            steps: [.startSession(newID: false), .send(from: 0), .backOff(rateLimited, retryAfter: nil)]),
        Case(
            name: "all bytes confirmed but no file yet: ask for the result",
            answers: [.sessionStarted, answered(308, range: "bytes=0-99"), answered(200)],
            steps: [.startSession(newID: false), .send(from: 0), .askStatus, .finish]),
        Case(
            name: "an expired session starts a new one for the same id, three at most",
            answers: [.sessionStarted, answered(404), .sessionStarted, answered(410), .sessionStarted, answered(404)],
            steps: [
                .startSession(newID: false), .send(from: 0), .startSession(newID: false), .send(from: 0),
                .startSession(newID: false), .send(from: 0),
                .fail(
                    DriveError(
                        .server,
                        message: "uploading clip_x.mp3: the upload session expired, three sessions in a row; "
                            + "the next sync tries again")),
            ]),
        Case(
            name: "another 4xx ends the session; a new one starts from byte 0",
            answers: [
                .sessionStarted, answered(308, range: "bytes=0-9"), answered(403, error: forbidden), .sessionStarted,
            ],
            steps: [
                .startSession(newID: false), .send(from: 0), .send(from: 10), .startSession(newID: false),
                .send(from: 0),
            ]),
        Case(
            name: "a full Drive and an expired token are no reason for a new session",
            answers: [.sessionStarted, answered(403, error: full)],
            steps: [.startSession(newID: false), .send(from: 0), .fail(full)]),
        Case(
            name: "a 401 fails the upload (the client refreshed already)",
            answers: [.sessionStarted, answered(401, error: unauthorized)],
            steps: [.startSession(newID: false), .send(from: 0), .fail(unauthorized)]),
        Case(
            name: "a 409 mid-session: the file with this id exists, read it",
            answers: [.sessionStarted, answered(409, error: conflict)],
            steps: [.startSession(newID: false), .send(from: 0), .readExisting]),
        Case(
            name: "a 409 read as gone mid-session fails: no loop",
            answers: [.sessionStarted, answered(409, error: conflict), .existingGone(gone)],
            steps: [.startSession(newID: false), .send(from: 0), .readExisting, .fail(gone)]),
        Case(
            name: "a 409 at the start whose file is gone: a new id, a new session, three at most",
            answers: [
                .sessionRefused(conflict), .existingGone(gone), .sessionRefused(conflict), .existingGone(gone),
                .sessionRefused(conflict), .existingGone(gone),
            ],
            steps: [
                .startSession(newID: false), .readExisting, .startSession(newID: true), .readExisting,
                .startSession(newID: true), .readExisting, .fail(gone),
            ]),
        Case(
            name: "an id Drive will not use is replaced once",
            answers: [.sessionRefused(idNotUsable), .sessionRefused(idNotUsable)],
            steps: [.startSession(newID: false), .startSession(newID: true), .fail(idNotUsable)]),
        Case(
            name: "a session refused otherwise fails the upload",
            answers: [.sessionRefused(server)],
            steps: [.startSession(newID: false), .fail(server)]),
        Case(
            name: "a Range ivy cannot resume from stops the upload",
            answers: [.sessionStarted, answered(308, range: "bytes=5-9")],
            steps: [
                .startSession(newID: false), .send(from: 0),
                .fail(
                    DriveError(
                        .server, status: 308,
                        message: "uploading clip_x.mp3: Drive confirmed \"bytes=5-9\" of a 100-byte upload, which "
                            + "cannot be; the upload was stopped and the next sync tries again")),
            ]),
        Case(
            name: "a session that never confirms more stops after the stalls allowed",
            answers: [
                .sessionStarted, answered(308, range: "bytes=0-9"), answered(308, range: "bytes=0-9"),
                answered(308, range: "bytes=0-9"), answered(308, range: "bytes=0-9"),
            ],
            steps: [
                .startSession(newID: false), .send(from: 0), .send(from: 10), .send(from: 10), .send(from: 10),
                .fail(
                    DriveError(
                        .server, status: 308,
                        message: "uploading clip_x.mp3: Drive stopped confirming the upload at byte 10 of 100; "
                            + "the next sync tries again")),
            ]),
    ]

    @Test("each answer leads to the step the rules say", arguments: cases)
    func table(_ example: Case) {
        #expect(Self.steps(example.answers) == example.steps)
    }

    @Test("a 308's Range: only bytes=0-N within the file counts")
    func ranges() {
        #expect(ResumableUpload.confirmedBytes(nil, size: 10) == 0)
        #expect(ResumableUpload.confirmedBytes("bytes=0-9", size: 10) == 10)
        #expect(ResumableUpload.confirmedBytes(" Bytes=0-3 ", size: 10) == 4)
        for bad in ["bytes=0-10", "bytes=1-3", "bytes=0-", "bytes=0-+3", "0-3", "bytes=0-99999999999999999999"] {
            #expect(ResumableUpload.confirmedBytes(bad, size: 10) == nil, "\(bad)")
        }
    }
}
