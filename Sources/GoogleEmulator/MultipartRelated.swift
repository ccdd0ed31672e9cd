package import Foundation

/// The body of a Drive `uploadType=multipart` upload: a JSON metadata part, then the media.
///
/// Parsing works on bytes, never on text, so media with CRLFs, `--` runs or any byte value
/// survives unchanged. A media part sent with `Content-Transfer-Encoding: base64` (as some
/// Google client libraries do) is decoded.
package struct MultipartRelated: Sendable, Equatable {
    /// The first part's body: the file's metadata as JSON.
    package var metadata: Data
    /// The second part's body: the file's content.
    package var media: Data
    /// The second part's `Content-Type`, if it had one.
    package var mediaType: String?

    package init(metadata: Data, media: Data, mediaType: String?) {
        self.metadata = metadata
        self.media = media
        self.mediaType = mediaType
    }

    /// Splits a `multipart/related` body into its two parts, or throws if it is not exactly that.
    ///
    /// `contentType` is the request's `Content-Type` header, which carries the boundary.
    package static func parse(body: Data, contentType: String) throws(MultipartError) -> MultipartRelated {
        let boundary = try boundary(of: contentType)
        let parts = try split(Array(body), boundary: Array(boundary.utf8))
        guard parts.count == 2 else {
            throw MultipartError("Expected 2 parts (metadata and media) in the multipart body, found \(parts.count)")
        }
        let metadata = try Part(parts[0], number: 1)
        let media = try Part(parts[1], number: 2)
        var content = Data(media.body)
        if media.header("content-transfer-encoding")?.lowercased() == "base64" {
            // The decoder rejects line breaks unless told to skip them, and senders wrap at 76.
            guard let decoded = Data(base64Encoded: content, options: .ignoreUnknownCharacters) else {
                throw MultipartError("The media part is marked base64 but is not valid base64")
            }
            content = decoded
        }
        return MultipartRelated(metadata: Data(metadata.body), media: content, mediaType: media.header("content-type"))
    }

    /// The `boundary` parameter of a `multipart/related` content type.
    private static func boundary(of contentType: String) throws(MultipartError) -> String {
        let pieces = contentType.split(separator: ";", omittingEmptySubsequences: false)
        let mediaType = pieces.first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() } ?? ""
        guard mediaType == "multipart/related" else {
            throw MultipartError("Content-Type must be multipart/related for a multipart upload, not '\(contentType)'")
        }
        for parameter in pieces.dropFirst() {
            guard let equals = parameter.firstIndex(of: "=") else { continue }
            let name = parameter[..<equals].trimmingCharacters(in: .whitespaces).lowercased()
            guard name == "boundary" else { continue }
            var value = parameter[parameter.index(after: equals)...].trimmingCharacters(in: .whitespaces)
            if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") {
                value = String(value.dropFirst().dropLast())
            }
            guard !value.isEmpty else { break }
            return value
        }
        throw MultipartError("The multipart/related Content-Type has no boundary parameter")
    }

    /// The bodies between the delimiters of `--boundary`, per RFC 2046: text before the first
    /// delimiter and after the closing one is ignored, and each later delimiter starts with a
    /// line break, which belongs to the delimiter rather than the preceding part.
    ///
    /// RFC 2046 says CRLF, but Google's Python client (google-api-python-client's discovery.py
    /// flattens the body with Python's email generator) sends bare LFs, and Drive takes them.
    /// The first boundary line tells which a body uses, and only that line break before a
    /// boundary ends a part: a bare LF and the boundary inside CRLF media stay media.
    private static func split(_ body: [UInt8], boundary: [UInt8]) throws(MultipartError) -> [ArraySlice<UInt8>] {
        let dashes = Array("--".utf8)
        let crlf = Array("\r\n".utf8)
        let lf = Array("\n".utf8)
        let delimiter = dashes + boundary
        guard
            var position = body.starts(with: delimiter)
                ? 0 : find(lf + delimiter, in: body[...], from: 0).map({ $0 + 1 })
        else {
            throw MultipartError("The multipart body does not contain its boundary")
        }
        var lineBreak: [UInt8]?
        var parts: [ArraySlice<UInt8>] = []
        while true {
            position += delimiter.count
            if body[position...].starts(with: dashes) { return parts }
            if position == body.count {
                throw MultipartError("The multipart body has no closing boundary")
            }
            // Transport padding: whitespace may follow a delimiter before its line break.
            while position < body.count, body[position] == 0x20 || body[position] == 0x09 { position += 1 }
            let ending = lineBreak ?? (body[position...].starts(with: crlf) ? crlf : lf)
            guard body[position...].starts(with: ending) else {
                throw MultipartError("A multipart boundary line is not followed by a line break")
            }
            lineBreak = ending
            position += ending.count
            guard let end = find(ending + delimiter, in: body[...], from: position) else {
                throw MultipartError("The multipart body has no closing boundary")
            }
            parts.append(body[position..<end])
            position = end + ending.count
        }
    }

    /// The index in `haystack` where `needle` first occurs at or after `start`.
    private static func find(_ needle: [UInt8], in haystack: ArraySlice<UInt8>, from start: Int) -> Int? {
        guard let first = needle.first, haystack.count >= needle.count else { return nil }
        var index = max(start, haystack.startIndex)
        let last = haystack.endIndex - needle.count
        while index <= last {
            if haystack[index] == first, haystack[index..<index + needle.count].elementsEqual(needle) {
                return index
            }
            index += 1
        }
        return nil
    }

    /// One part: its headers and body.
    private struct Part {
        var headers: [(name: String, value: String)]
        var body: ArraySlice<UInt8>

        init(_ bytes: ArraySlice<UInt8>, number: Int) throws(MultipartError) {
            // The headers end at the first empty line, its line breaks CRLF or LF; a part with
            // no headers starts right at it.
            var lineStart = bytes.startIndex
            var bodyStart: Int?
            while lineStart < bytes.endIndex {
                guard let newline = bytes[lineStart...].firstIndex(of: 0x0A) else { break }
                let line = bytes[lineStart..<newline]
                if line.isEmpty || line.elementsEqual([0x0D]) {
                    bodyStart = newline + 1
                    break
                }
                lineStart = newline + 1
            }
            guard let bodyStart else {
                throw MultipartError("Part \(number) of the multipart body has no blank line after its headers")
            }
            body = bytes[bodyStart...]
            // Split on the LF byte: as a Swift string CRLF is one character, which no "\n" splits.
            headers = bytes[bytes.startIndex..<lineStart].split(separator: 0x0A)
                .map { String(decoding: $0, as: UTF8.self) }
                .compactMap { line in
                    guard let colon = line.firstIndex(of: ":") else { return nil }
                    return (
                        line[..<colon].trimmingCharacters(in: .whitespaces).lowercased(),
                        line[line.index(after: colon)...].trimmingCharacters(in: .whitespacesAndNewlines)
                    )
                }
        }

        func header(_ name: String) -> String? {
            headers.first { $0.name == name }?.value
        }
    }
}

/// Why a multipart upload body was rejected; `message` is what the emulator answers with.
package struct MultipartError: Error, Equatable, Sendable {
    package let message: String

    package init(_ message: String) {
        self.message = message
    }
}
