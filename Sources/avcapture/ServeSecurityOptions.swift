import ArgumentParser
import Foundation
import OpenAVCaptureWeb

/// `serve`'s HTTPS and its rule for the network: `--tls-cert`/`--tls-key`, and `--insecure` to serve beyond
/// loopback in clear.
struct ServeSecurityOptions: ParsableArguments {
    @Option(help: "Serve HTTPS with this PEM certificate (chain); needs --tls-key.") var tlsCert: String?
    @Option(help: "The PEM private key of --tls-cert.") var tlsKey: String?
    @Flag(help: "Allow listening beyond loopback without TLS (the token and the pictures cross the network in clear).")
    var insecure = false

    func validate() throws {
        guard (tlsCert == nil) == (tlsKey == nil) else {
            throw ValidationError("--tls-cert and --tls-key go together: the certificate and its private key")
        }
        for path in [tlsCert, tlsKey].compactMap({ $0 }) where !FileManager.default.isReadableFile(atPath: path) {
            throw ValidationError("cannot read \(path)")
        }
    }

    /// The server's configuration with these choices applied.
    func apply(to configuration: inout WebPreviewServer.Configuration) {
        if let tlsCert, let tlsKey { configuration.tls = TLSFiles(certificatePath: tlsCert, privateKeyPath: tlsKey) }
        configuration.allowsCleartextNetwork = insecure
    }
}
