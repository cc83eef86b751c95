import ArgumentParser
import Foundation
import OpenAVCapture
import OpenAVCaptureWeb

/// `serve --rtsp`: the camera also served over RTSP (AVCaptureRTSPServer), to NVRs and players.
struct RTSPOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "Also serve the camera over RTSP at rtsp://HOST:PORT/live (H.264 and AAC, RTP over TCP or UDP).",
            valueName: "host:port"))
    var rtsp: String?
    @Option(help: "The RTSP user clients must give (Digest); required with a non-loopback --rtsp.") var rtspUser:
        String?
    @Option(
        help: ArgumentHelp(
            "The RTSP user's password; read from the environment variable AVCAPTURE_RTSP_PASSWORD when not given.",
            valueName: "password"))
    var rtspPassword: String?
    @Option(help: "RTSP clients playing at once; more are refused (453).") var rtspMaxClients = 16
    @Option(
        help: ArgumentHelp(
            "Bytes of stream waiting for one RTSP client before it is dropped as stalled (at least 65536).",
            valueName: "bytes"))
    var rtspClientQueue = 1 << 20
    @Option(
        help: ArgumentHelp(
            "Seconds an RTSP client may send nothing (no request, no RTCP report) before its session ends.",
            valueName: "seconds"))
    var rtspSessionTimeout = 60

    /// The password given, or the environment's.
    var password: String? { rtspPassword ?? ProcessInfo.processInfo.environment["AVCAPTURE_RTSP_PASSWORD"] }

    func validate() throws {
        guard let rtsp else {
            if rtspUser != nil || rtspPassword != nil {
                throw ValidationError("--rtsp-user and --rtsp-password need --rtsp")
            }
            return
        }
        guard ServeCommand.parseListen(rtsp) != nil else {
            throw ValidationError("--rtsp '\(rtsp)' is not HOST:PORT, e.g. 127.0.0.1:8554 or [::1]:8554")
        }
        if rtspUser != nil, (password ?? "").isEmpty {
            throw ValidationError("--rtsp-user needs a password: --rtsp-password or AVCAPTURE_RTSP_PASSWORD")
        }
        guard (1...256).contains(rtspMaxClients) else { throw ValidationError("--rtsp-max-clients must be 1 ... 256") }
        guard rtspClientQueue >= 65536 else { throw ValidationError("--rtsp-client-queue must be at least 65536") }
        guard (1...3600).contains(rtspSessionTimeout) else {
            throw ValidationError("--rtsp-session-timeout must be 1 ... 3600 seconds")
        }
    }

    /// Starts the RTSP server on `session` when `--rtsp` was given, and prints its address.
    func startServer(session: AVCaptureSession) throws -> AVCaptureRTSPServer? {
        guard let rtsp, let (host, port) = ServeCommand.parseListen(rtsp) else { return nil }
        let configuration = AVCaptureRTSPServer.Configuration(
            host: host, port: port, user: rtspUser, password: rtspUser == nil ? nil : password,
            maximumClients: rtspMaxClients, clientQueueBytes: rtspClientQueue,
            sessionTimeoutSeconds: rtspSessionTimeout)
        do {
            let server = try AVCaptureRTSPServer(
                session: session, configuration: configuration, log: { Terminal.error("avcapture serve: \($0)") })
            let url = try server.start()
            PreviewApp.say("serving RTSP on \(url.absoluteString)")
            return server
        } catch {
            throw ToolFailure(.unavailable, "\(error)")
        }
    }
}
