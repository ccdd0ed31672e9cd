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

    /// Where one half of a client comes from, as a person sets it.
    package func halfName(_ half: String) -> String {
        switch self {
        case .option: "--client-\(half)"
        case .environment: "IVY_CLIENT_\(half.uppercased())"
        default: "the setting client_\(half)"
        }
    }

    /// The source for people, as it reads in brackets after the client: "(from settings)",
    /// "(built into this release)".
    package var phrase: String {
        switch self {
        case .option: "from the command line"
        case .environment: "from the environment"
        case .settings: "from settings"
        case .builtIn: "built into this release"
        case .none: "from nowhere"
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
    /// Which half of a client is given, and where, when the other is given nowhere: such a
    /// half also keeps a release's built-in client from being used, so it is what to fix.
    package var incomplete: String?

    package init(credentials: ClientCredentials?, source: ClientSource, incomplete: String? = nil) {
        self.credentials = credentials
        self.source = source
        self.incomplete = incomplete
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
        let secret = layers.lazy.compactMap { source, client in given(client.secret).map { (source, $0) } }.first
        switch (id, secret) {
        case (let (source, id)?, let (_, secret)?):
            return ClientResolution(credentials: ClientCredentials(id: id, secret: secret), source: source)
        case (nil, nil):
            if let builtIn, !builtIn.id.isEmpty, !builtIn.secret.isEmpty {
                return ClientResolution(credentials: builtIn, source: .builtIn)
            }
            return ClientResolution(credentials: nil, source: .none)
        case (let (source, _)?, nil):
            return ClientResolution(
                credentials: nil, source: .none,
                incomplete: "a client id is given (\(source.halfName("id"))) but no client secret")
        case (nil, let (source, _)?):
            return ClientResolution(
                credentials: nil, source: .none,
                incomplete: "a client secret is given (\(source.halfName("secret"))) but no client id")
        }
    }

    /// What to do about half a client: the one fix `status`, `doctor` and `login` give.
    package static let halfClientFix =
        "give the other half too (`ivy config set client_id ID` and `ivy config set client_secret --from-file FILE`, "
        + "FILE holding the secret or - for standard input; or IVY_CLIENT_ID and IVY_CLIENT_SECRET), or unset the "
        + "half that is given to use the client built into a release of ivy"

    /// Half a client given: which half, where, and the fix, as `status`, `doctor` and `login`
    /// all say it; nil otherwise.
    package var problem: String? { incomplete.map { "\($0): \(Self.halfClientFix)" } }

    /// The client, or the error that says how to give one.
    package func required() throws(GoogleError) -> ClientCredentials {
        guard let credentials else {
            if let incomplete { throw GoogleError.incompleteCredentials(incomplete) }
            throw GoogleError.missingCredentials
        }
        return credentials
    }
}
