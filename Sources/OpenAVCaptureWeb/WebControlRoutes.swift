import Foundation
import Hummingbird
import OpenAVCapture

/// The session's controls (`AVCaptureSession.controls`) on the web: `GET /controls` lists them, in the session's
/// order, each as its ``CaptureControlAppearance`` (index, kind, title, min, max, step, value, text, enabled); `POST
/// /controls/N` with `{"value": number}` moves control N as a person's change (the control's own `userDid…`
/// method, so a system slider moves its camera) and answers the control as it is then. Behind the server's token
/// like every route. The page shows each as a range input.
extension WebPreviewServer {
    func addControlRoutes(to router: Router<BasicRequestContext>) {
        router.get("controls") { [self] _, _ -> Response in
            let controls = layer.session?.controls ?? []
            let listed = controls.enumerated().compactMap { index, control in
                control.appearance.map { Self.document(index: index, $0) }
            }
            return try json(["controls": listed])
        }
        router.post("controls/:index") { [self] request, context -> Response in
            let text = try context.parameters.require("index")
            let controls = layer.session?.controls ?? []
            guard let index = Int(text), controls.indices.contains(index), controls[index].appearance != nil else {
                throw HTTPError(.notFound, message: "no control \(text); GET /controls lists them")
            }
            let fields = try await object(request)
            guard let value = (fields["value"] as? NSNumber)?.doubleValue, value.isFinite else {
                throw HTTPError(.badRequest, message: "send {\"value\": a number within the control's min and max}")
            }
            let control = controls[index]
            guard control.appearance?.isEnabled == true else {
                throw HTTPError(
                    .conflict, message: "control \(index) is disabled (or the session has no controls delegate)")
            }
            control.userDidSetAppearanceValue(value)
            guard let appearance = control.appearance else { throw HTTPError(.notFound, message: "the control went") }
            return try json(["control": Self.document(index: index, appearance)])
        }
    }

    /// The page shows the session's controls while the server runs: tells the session (which tells its controls
    /// delegate, as Apple's does), and returns what tells it they are hidden again.
    func engageControls() -> () -> Void {
        guard let session = layer.session, !session.controls.isEmpty else { return {} }
        session.userDidEngageControls()
        return { session.userDidDisengageControls() }
    }

    /// One control as the page reads it.
    static func document(index: Int, _ appearance: CaptureControlAppearance) -> [String: Any] {
        [
            "index": index, "kind": appearance.kind.rawValue, "title": appearance.title, "min": appearance.minimum,
            "max": appearance.maximum, "step": appearance.step.map { $0 as Any } ?? NSNull(),
            "value": appearance.value, "text": appearance.valueText, "enabled": appearance.isEnabled,
        ]
    }
}
