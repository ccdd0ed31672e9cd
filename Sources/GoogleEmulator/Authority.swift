import Crypto
package import Foundation
import NIOSSL
import SwiftASN1
import X509

/// The certificate authority an emulator serving TLS signs its own certificate with: a P-256
/// key and a self-signed CA certificate, made for each run (or kept in `--state`, so a
/// restarted emulator is trusted by whatever trusted it before). A client trusts the emulator
/// by trusting `certificatePEM` (`IVY_CA_FILE`); nothing else on the machine does.
package struct EmulatorAuthority: Sendable, Codable, Equatable {
    /// The CA certificate, PEM.
    package let certificatePEM: String
    /// The CA's private key, PEM (PKCS #8). Kept in the 0600 state file only, never beside
    /// the certificate a client is given.
    let privateKeyPEM: String

    /// The names the emulator's certificate is good for: every way a client on this machine
    /// reaches it.
    static let dnsNames = ["localhost"]
    static let addresses: [[UInt8]] = [[127, 0, 0, 1], [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]]

    /// Validity runs from two days before `now` (a client's clock a little behind) to 20 years
    /// on: ivy-soak runs a device's commands under libfaketime, one of them 400 days ahead, and
    /// a certificate that has expired on that clock would fail the handshake, not the sync.
    static let backdate: TimeInterval = 2 * 86_400
    static let lifetime: TimeInterval = 20 * 365 * 86_400

    /// A new authority, its key from the system's randomness.
    package static func make(now: Date = Date()) throws -> EmulatorAuthority {
        let key = P256.Signing.PrivateKey()
        let name = try DistinguishedName {
            OrganizationName("ivy-emulator")
            CommonName("ivy-emulator certificate authority \(Int(now.timeIntervalSince1970))")
        }
        let publicKey = Certificate.PublicKey(key.publicKey)
        let certificate = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: publicKey,
            notValidBefore: now - backdate, notValidAfter: now + lifetime, issuer: name, subject: name,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
                SubjectKeyIdentifier(hash: publicKey)
            },
            issuerPrivateKey: Certificate.PrivateKey(key))
        return EmulatorAuthority(
            certificatePEM: try certificate.serializeAsPEM().pemString, privateKeyPEM: key.pemRepresentation)
    }

    /// A server certificate for 127.0.0.1, ::1 and localhost signed by this authority, with
    /// its new key: what the emulator presents.
    func serverIdentity(now: Date = Date()) throws -> ServerIdentity {
        let issuer = try Certificate(pemEncoded: certificatePEM)
        let issuerKey = try P256.Signing.PrivateKey(pemRepresentation: privateKeyPEM)
        return try Self.leaf(
            issuer: issuer.subject, issuerKey: issuerKey, issuerPublicKey: issuer.publicKey, now: now)
    }

    /// A certificate for the same names signed by a key no client trusts: what the emulator
    /// presents when a wire fault makes its handshake fail (`HandshakeRefusal.untrusted`).
    static func strangerIdentity(now: Date = Date()) throws -> ServerIdentity {
        let key = P256.Signing.PrivateKey()
        let name = try DistinguishedName { CommonName("not the ivy-emulator certificate authority") }
        return try leaf(issuer: name, issuerKey: key, issuerPublicKey: Certificate.PublicKey(key.publicKey), now: now)
    }

    private static func leaf(
        issuer: DistinguishedName, issuerKey: P256.Signing.PrivateKey, issuerPublicKey: Certificate.PublicKey,
        now: Date
    ) throws -> ServerIdentity {
        let key = P256.Signing.PrivateKey()
        let publicKey = Certificate.PublicKey(key.publicKey)
        let names =
            dnsNames.map { GeneralName.dnsName($0) }
            + addresses.map { GeneralName.ipAddress(ASN1OctetString(contentBytes: $0[...])) }
        let certificate = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: publicKey,
            notValidBefore: now - backdate, notValidAfter: now + lifetime, issuer: issuer,
            subject: try DistinguishedName { CommonName("localhost") },
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                try ExtendedKeyUsage([.serverAuth])
                SubjectAlternativeNames(names)
                SubjectKeyIdentifier(hash: publicKey)
                AuthorityKeyIdentifier(keyIdentifier: SubjectKeyIdentifier(hash: issuerPublicKey).keyIdentifier)
            },
            issuerPrivateKey: Certificate.PrivateKey(issuerKey))
        return ServerIdentity(
            certificate: try NIOSSLCertificate(
                bytes: Array(try certificate.serializeAsPEM().pemString.utf8), format: .pem),
            key: try NIOSSLPrivateKey(bytes: Array(key.pemRepresentation.utf8), format: .pem))
    }
}

/// A certificate and its key, as the TLS server presents them.
struct ServerIdentity: Sendable {
    let certificate: NIOSSLCertificate
    let key: NIOSSLPrivateKey

    /// A server configuration presenting this identity, offering HTTP/2 and HTTP/1.1 by ALPN.
    var configuration: TLSConfiguration {
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: [.certificate(certificate)], privateKey: .privateKey(key))
        configuration.applicationProtocols = ["h2", "http/1.1"]
        return configuration
    }
}
