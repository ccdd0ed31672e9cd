import Foundation
import IvyGoogle
import Testing

/// The one rule for which OAuth client ivy uses: login's options, then the environment, then
/// the settings, then the client built into a release (issue 31).
@Suite("Which OAuth client: option, environment, settings, built-in")
struct ClientResolutionTests {
    struct Case: Sendable, CustomTestStringConvertible {
        let name: String
        let option: PartialClient
        let environment: PartialClient
        let settings: PartialClient
        let builtIn: ClientCredentials?
        let expected: ClientResolution
        var testDescription: String { name }
    }

    static let option = PartialClient(id: "option.apps", secret: "option-secret")
    static let environment = PartialClient(id: "env.apps", secret: "env-secret")
    static let settings = PartialClient(id: "settings.apps", secret: "settings-secret")
    static let builtIn = ClientCredentials(id: "built-in.apps", secret: "built-in-secret")
    static func chosen(_ id: String, _ secret: String, _ source: ClientSource) -> ClientResolution {
        ClientResolution(credentials: ClientCredentials(id: id, secret: secret), source: source)
    }
    static let nothing = PartialClient()

    static let cases: [Case] = [
        Case(
            name: "all four: the option", option: option, environment: environment, settings: settings,
            builtIn: builtIn, expected: chosen("option.apps", "option-secret", .option)),
        Case(
            name: "no option: the environment", option: nothing, environment: environment, settings: settings,
            builtIn: builtIn, expected: chosen("env.apps", "env-secret", .environment)),
        Case(
            name: "settings and built-in: the settings", option: nothing, environment: nothing, settings: settings,
            builtIn: builtIn, expected: chosen("settings.apps", "settings-secret", .settings)),
        Case(
            name: "only built-in: built-in", option: nothing, environment: nothing, settings: nothing,
            builtIn: builtIn, expected: chosen("built-in.apps", "built-in-secret", .builtIn)),
        Case(
            name: "nothing at all: none", option: nothing, environment: nothing, settings: nothing, builtIn: nil,
            expected: ClientResolution(credentials: nil, source: .none)),
        Case(
            name: "empty environment values count as unset", option: nothing,
            environment: PartialClient(id: "", secret: ""), settings: nothing, builtIn: builtIn,
            expected: chosen("built-in.apps", "built-in-secret", .builtIn)),
        Case(
            name: "the option's id with the settings' secret, as login --client-id alone has always done",
            option: PartialClient(id: "option.apps"), environment: nothing, settings: settings, builtIn: builtIn,
            expected: chosen("option.apps", "settings-secret", .option)),
        Case(
            name: "IVY_CLIENT_ID alone overrides only the id", option: nothing,
            environment: PartialClient(id: "env.apps"), settings: settings, builtIn: nil,
            expected: chosen("env.apps", "settings-secret", .environment)),
        Case(
            name: "half a client given: the built-in secret never goes with another id", option: nothing,
            environment: nothing, settings: PartialClient(id: "settings.apps"), builtIn: builtIn,
            expected: ClientResolution(
                credentials: nil, source: .none,
                incomplete: "a client id is given (the setting client_id) but no client secret")),
        Case(
            name: "a secret alone: none, not the built-in id with it", option: PartialClient(secret: "s"),
            environment: nothing, settings: nothing, builtIn: builtIn,
            expected: ClientResolution(
                credentials: nil, source: .none,
                incomplete: "a client secret is given (--client-secret) but no client id"
            )),
    ]

    @Test("the first source that gives a client wins", arguments: cases)
    func resolve(_ given: Case) {
        let resolution = ClientResolution.resolve(
            option: given.option, environment: given.environment, settings: given.settings, builtIn: given.builtIn)
        #expect(resolution == given.expected)
    }

    @Test("half a client is an error that names the half and where it is given, not a missing client")
    func incomplete() {
        let resolution = ClientResolution.resolve(
            option: PartialClient(), environment: PartialClient(id: "stray.apps"), settings: PartialClient(),
            builtIn: ClientCredentials(id: "built-in.apps", secret: "built-in-secret"))
        let error = #expect(throws: GoogleError.self) { try resolution.required() }
        let text = error?.localizedDescription ?? ""
        #expect(text.hasPrefix("a client id is given (IVY_CLIENT_ID) but no client secret"), "\(text)")
        #expect(text.contains("unset the half that is given"), "\(text)")
        #expect(!text.contains("built-in-secret"))
    }

    @Test("no client is an error that says a release has one and how to give another")
    func missing() {
        let error = #expect(throws: GoogleError.self) {
            try ClientResolution(credentials: nil, source: .none).required()
        }
        let text = error?.localizedDescription ?? ""
        #expect(text.contains("has none built in") && text.contains("ivy config set client_id"), "\(text)")
    }

    @Test("client_source names", arguments: ClientSource.allCases)
    func names(_ source: ClientSource) {
        #expect(["option", "environment", "settings", "built-in", "none"].contains(source.rawValue))
    }
}
