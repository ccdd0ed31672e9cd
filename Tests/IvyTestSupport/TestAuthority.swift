import Foundation

/// A certificate authority's certificate (PEM) for tests of `IVY_CA_FILE`: parsed and trusted,
/// never used to sign anything here (its key is not kept).
package enum TestAuthority {
    package static let pem = """
        -----BEGIN CERTIFICATE-----
        MIIBlDCCATmgAwIBAgIUcUKTDCnVE3rdrJg+WVvb5LtoPmcwCgYIKoZIzj0EAwIw
        HjEcMBoGA1UEAwwTaXZ5IHRlc3QgZml4dHVyZSBDQTAgFw0yNjEyMDcwNzAwMTha
        GA8yMTI2MTExMzA3MDAxOFowHjEcMBoGA1UEAwwTaXZ5IHRlc3QgZml4dHVyZSBD
        QTBZMBMGByqGSM49AgEGCCqGSM49AwEHA0IABM2KzeU3SdNWy2YWb8zSksT4PaWA
        w40eGYDV9StqggWLms2LgkGANcVjYD7lp3XOMkzKxLIU9kAY1K8TyNOl4yejUzBR
        MB0GA1UdDgQWBBQAzMqDWn579svuMw3oNODW/2spcTAfBgNVHSMEGDAWgBQAzMqD
        Wn579svuMw3oNODW/2spcTAPBgNVHRMBAf8EBTADAQH/MAoGCCqGSM49BAMCA0kA
        MEYCIQD7PFzgTM0u+RUDRnooqq6GrExDpdMMatqCLIml1/0WgAIhALxnO6Q5N+in
        xzZ5Hn2F3bX0Np7FUrbzlE67YOs/Jrqy
        -----END CERTIFICATE-----

        """

    /// Writes the certificate to `directory/name` and returns the file's path.
    package static func write(in directory: String, name: String = "ca.pem") throws -> String {
        let path = directory + "/" + name
        try Data(pem.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }
}
