import Foundation
import Hummingbird
import Synchronization

/// Checks the token on every request, counts the requests in flight, and logs every refused one (status, method,
/// path; never the token).
///
/// The token is accepted three ways: `Authorization: Bearer T` (scripts, Prometheus), the `avcapture_token` cookie
/// the page sets on its first visit (browsers: from then on the token travels in no URL), and `?token=T` (the first
/// visit's address, and HLS players, which cannot send headers).
///
/// Threading: a value; `Sendable`. The in-flight count is atomic.
struct GuardMiddleware<Context: RequestContext>: RouterMiddleware {
    let token: String?
    let inFlight: RequestsInFlight
    let log: @Sendable (String) -> Void

    /// The cookie's name.
    static var cookieName: String { "avcapture_token" }

    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws
        -> Response
    {
        inFlight.count.add(1, ordering: .relaxed)
        defer { inFlight.count.subtract(1, ordering: .relaxed) }
        let path = request.uri.path
        if let token, !token.isEmpty {
            guard let given = Self.credential(in: request), Self.constantTimeEqual(given, token) else {
                log("refused \(request.method) \(path): 401 missing or wrong token")
                throw HTTPError(
                    .unauthorized, message: "this server needs its token (Authorization: Bearer …, or ?token=…)")
            }
        }
        do {
            let response = try await next(request, context)
            if response.status.code >= 400 { log("refused \(request.method) \(path): \(response.status.code)") }
            return response
        } catch let error as HTTPError {
            log("refused \(request.method) \(path): \(error.status.code) \(error.body ?? "")")
            throw error
        } catch {
            log("failed \(request.method) \(path): \(error)")
            throw error
        }
    }

    /// The token a request carries: its bearer credential, its cookie, or its query parameter.
    static func credential(in request: Request) -> String? {
        if let authorization = request.headers[.authorization], authorization.hasPrefix("Bearer ") {
            return String(authorization.dropFirst(7))
        }
        if let cookie = cookieToken(request) { return cookie }
        return request.uri.queryParameters.get("token")
    }

    /// The value of the `avcapture_token` cookie (Hummingbird's cookie parsing), percent-decoded.
    static func cookieToken(_ request: Request) -> String? {
        request.cookies[cookieName]?.value.removingPercentEncoding
    }

    /// The cookie holding `token`, sent back only to this server: HttpOnly, so scripts cannot read it;
    /// SameSite=Strict, so other sites cannot make the browser use it; Secure over TLS, so it never travels in clear.
    static func cookie(_ token: String, secure: Bool) -> Cookie {
        Cookie(
            name: cookieName, value: token.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "",
            path: "/", secure: secure, httpOnly: true, sameSite: .strict)
    }

    /// Compares without stopping at the first difference, so the time taken does not reveal a prefix.
    static func constantTimeEqual(_ a: String, _ b: String) -> Bool {
        let (x, y) = (Array(a.utf8), Array(b.utf8))
        var difference = x.count ^ y.count
        for index in 0..<max(x.count, y.count) {
            difference |= Int((index < x.count ? x[index] : 0) ^ (index < y.count ? y[index] : 0))
        }
        return difference == 0
    }
}

/// The requests a server is answering now (open MJPEG streams included): its clients, for the metrics.
///
/// Threading: thread safe (atomic).
final class RequestsInFlight: Sendable {
    let count = Atomic<Int>(0)
}
