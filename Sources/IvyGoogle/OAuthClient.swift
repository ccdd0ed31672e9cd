/// Where the OAuth client ivy signs in with came from.
package enum ClientSource: String, Sendable, CaseIterable {
    /// `ivy login --client-id/--client-secret`.
    case option
    /// IVY_CLIENT_ID and IVY_CLIENT_SECRET.
    case environment
    /// The settings `client_id` and `client_secret`.
    case settings
    /// The client `scripts/package --client-id` built into this release.
    case builtIn = "built-in"
    /// No usable client.
    case none

    /// The source for people: "(from …)".
    package var phrase: String {
        switch self {
        case .option: "the command line"
        case .environment: "the environment"
        case .settings: "settings"
        case .builtIn: "built into this release"
        case .none: "nowhere"
        }
    }
}

/// An id and a secret, either of which a source may lack.
package struct PartialClient: Sendable, Equatable {
    package var id: String?
    package var secret: String?

    package init(id: String? = nil, secret: String? = nil) {
        self.id = id
        self.secret = secret
    }

    /// IVY_CLIENT_ID and IVY_CLIENT_SECRET.
    package static func from(environment: [String: String]) -> PartialClient {
        PartialClient(id: environment["IVY_CLIENT_ID"], secret: environment["IVY_CLIENT_SECRET"])
    }
}

/// The OAuth client to use and where it came from: the one place that decides.
package struct ClientResolution: Sendable, Equatable {
    package var credentials: ClientCredentials?
    package var source: ClientSource

    package init(credentials: ClientCredentials?, source: ClientSource) {
        self.credentials = credentials
        self.source = source
    }

    /// Each half from the first of the command line, the environment and the settings that
    /// gives it (so `IVY_CLIENT_ID` alone overrides only the id, as it always has); the source
    /// named is the id's. Only when none of them gives either half is the release's built-in
    /// client used: its secret never goes with another client's id. Empty values count as unset.
    package static func resolve(
        option: PartialClient, environment: PartialClient, settings: PartialClient, builtIn: ClientCredentials?
    ) -> ClientResolution {
        let layers: [(ClientSource, PartialClient)] = [
            (.option, option), (.environment, environment), (.settings, settings),
        ]
        func given(_ value: String?) -> String? { value.flatMap { $0.isEmpty ? nil : $0 } }
        let id = layers.lazy.compactMap { source, client in given(client.id).map { (source, $0) } }.first
        let secret = layers.lazy.compactMap { given($0.1.secret) }.first
        switch (id, secret) {
        case (let (source, id)?, let secret?):
            return ClientResolution(credentials: ClientCredentials(id: id, secret: secret), source: source)
        case (nil, nil):
            if let builtIn, !builtIn.id.isEmpty, !builtIn.secret.isEmpty {
                return ClientResolution(credentials: builtIn, source: .builtIn)
            }
            return ClientResolution(credentials: nil, source: .none)
        default:
            return ClientResolution(credentials: nil, source: .none)
        }
    }

    /// The client, or the error that says how to give one.
    package func required() throws(GoogleError) -> ClientCredentials {
        guard let credentials else { throw GoogleError.missingCredentials }
        return credentials
    }
}
