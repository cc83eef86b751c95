import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import NIOSSL
import OpenAVCapture

/// A certificate chain and its private key in PEM files, for ``WebPreviewServer`` to serve HTTPS with
/// (HummingbirdTLS over swift-nio-ssl, TLS 1.2 and 1.3).
///
/// Threading: a value; `Sendable`.
public struct TLSFiles: Sendable, Equatable {
    /// The server's certificate, followed by any intermediates, PEM.
    public var certificatePath: String
    /// Its private key, PEM.
    public var privateKeyPath: String

    public init(certificatePath: String, privateKeyPath: String) {
        (self.certificatePath, self.privateKeyPath) = (certificatePath, privateKeyPath)
    }

    /// Hummingbird's HTTP/1.1 server wrapped in TLS with these files. Throws, naming the file, when one cannot be
    /// read or does not hold what it should, or when the key does not match the certificate.
    func serverBuilder() throws(PreviewError) -> HTTPServerBuilder {
        let chain: [NIOSSLCertificate]
        do {
            chain = try NIOSSLCertificate.fromPEMFile(certificatePath)
        } catch {
            throw PreviewError("cannot read a PEM certificate from \(certificatePath) (--tls-cert): \(error)")
        }
        guard !chain.isEmpty else { throw PreviewError("\(certificatePath) (--tls-cert) holds no PEM certificate") }
        let key: NIOSSLPrivateKey
        do {
            key = try NIOSSLPrivateKey(file: privateKeyPath, format: .pem)
        } catch {
            throw PreviewError("cannot read a PEM private key from \(privateKeyPath) (--tls-key): \(error)")
        }
        let configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key))
        do {
            // Building the context checks that the key belongs to the certificate.
            _ = try NIOSSLContext(configuration: configuration)
            return try .tls(.http1(), tlsConfiguration: configuration)
        } catch {
            throw PreviewError(
                "the key in \(privateKeyPath) does not go with the certificate in \(certificatePath): \(error)")
        }
    }
}
