package import Foundation

/// An HTTP request as the emulator's handlers see it, free of the server framework.
package struct EmulatedRequest: Sendable {
    package var method: String
    package var path: String
    package var query: [String: String]
    /// Header names in lower case.
    package var headers: [String: String]
    package var body: Data
    /// True when the connection is dropped after `body` (a fault cut the upload short).
    package var truncated: Bool = false

    package init(method: String, path: String, query: [String: String], headers: [String: String], body: Data) {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
    }

    /// Form fields of an `application/x-www-form-urlencoded` body, then of the query.
    package var form: [String: String] {
        var fields = query
        for pair in String(decoding: body, as: UTF8.self).split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
            guard let key = parts.first?.formDecoded else { continue }
            fields[key] = (parts.count > 1 ? parts[1] : "").formDecoded ?? ""
        }
        return fields
    }

    package var jsonBody: [String: Any]? {
        (try? JSONSerialization.jsonObject(with: body)) as? [String: Any]
    }
}

extension String {
    /// Percent-decoding with `+` as space, as forms are encoded.
    var formDecoded: String? {
        replacingOccurrences(of: "+", with: " ").removingPercentEncoding
    }
}
