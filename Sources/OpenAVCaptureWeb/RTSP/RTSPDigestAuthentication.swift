import MediaCodecs

/// RTSP Digest authentication (RFC 2617 as RTSP/1.0 uses it; what `rtsp://user:pass@host/…` makes every NVR,
/// FFmpeg, GStreamer and VLC send): the server challenges with a realm and a nonce, the client answers with
/// `MD5(MD5(user:realm:password):nonce:MD5(method:uri))`, so the password never crosses the network.
///
/// The nonce is per connection (each one gets a fresh random one), so an answer seen on one connection is worth
/// nothing on another. `qop=auth` is accepted when the client offers it; it is not asked for, since RTSP/1.0 clients
/// commonly speak the RFC 2069 form.
///
/// Threading: a value; `Sendable`.
struct RTSPDigestAuthentication: Sendable {
    static let realm = "OpenAVCapture"

    let user: String
    let password: String
    let nonce: String

    init(user: String, password: String) {
        self.user = user
        self.password = password
        nonce = (0..<4).map { _ in String(UInt32.random(in: .min ... .max), radix: 16) }.joined()
    }

    /// The `WWW-Authenticate` value of a 401.
    var challenge: String { "Digest realm=\"\(Self.realm)\", nonce=\"\(nonce)\"" }

    /// Whether `request` carries a correct answer to this challenge.
    func accepts(_ request: RTSPRequest) -> Bool {
        guard let header = request.header("Authorization"), header.lowercased().hasPrefix("digest ") else {
            return false
        }
        let parameters = Self.parameters(String(header.dropFirst(7)))
        guard parameters["username"] == user, parameters["realm"] == Self.realm, parameters["nonce"] == nonce,
            let uri = parameters["uri"], let response = parameters["response"]?.lowercased()
        else { return false }
        let ha1 = md5Hex("\(user):\(Self.realm):\(password)")
        let ha2 = md5Hex("\(request.method):\(uri)")
        if let qop = parameters["qop"] {
            guard qop == "auth", let count = parameters["nc"], let clientNonce = parameters["cnonce"] else {
                return false
            }
            return response == md5Hex("\(ha1):\(nonce):\(count):\(clientNonce):\(qop):\(ha2)")
        }
        return response == md5Hex("\(ha1):\(nonce):\(ha2)")
    }

    /// `name="value", name=value, …` as a dictionary (names lowercased).
    static func parameters(_ text: String) -> [String: String] {
        var result: [String: String] = [:]
        var rest = Substring(text)
        while !rest.isEmpty {
            rest = rest.drop { $0 == " " || $0 == "," || $0 == "\t" }
            guard let equals = rest.firstIndex(of: "=") else { break }
            let name = rest[..<equals].trimmingSpaces.lowercased()
            rest = rest[rest.index(after: equals)...].drop { $0 == " " }
            var value: Substring
            if rest.first == "\"" {
                rest = rest.dropFirst()
                let close = rest.firstIndex(of: "\"") ?? rest.endIndex
                value = rest[..<close]
                rest = close < rest.endIndex ? rest[rest.index(after: close)...] : ""
            } else {
                let comma = rest.firstIndex(of: ",") ?? rest.endIndex
                value = rest[..<comma]
                rest = rest[comma...]
            }
            result[name] = value.trimmingSpaces
        }
        return result
    }
}
