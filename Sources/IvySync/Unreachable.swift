import Foundation
package import IvyGoogle

/// A sync that could not reach Google says what to do next, and that nothing is lost.
package struct Unreachable: LocalizedError {
    package let errorDescription: String?

    /// `error` with that said when it means Google could not be reached (else `error` itself);
    /// `server`: the sign-in's servers when they are not Google's.
    package static func explained(_ error: any Error, server: GoogleEndpoints? = nil) -> any Error {
        guard GoogleError.isUnreachable(error) else { return error }
        if let server {
            return Unreachable(
                errorDescription: error.localizedDescription
                    + "; the server this sign-in was made at, \(server.oauth.absoluteString), does not answer: if it "
                    + "was ivy-emulator, start it again (with --state it listens on its old port when it can), or run "
                    + "`ivy login` against the one running now (every change here stays queued until then)")
        }
        return Unreachable(
            errorDescription: error.localizedDescription
                + "; Google could not be reached: check the network connection, then run `ivy sync` again "
                + "(every change here stays queued until then)")
    }
}
