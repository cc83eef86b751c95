import Foundation

extension ScreenCastPortal.CursorModes {
    /// The cursor mode a session asks for so that its stream gives the cursor as `capturingCursor` says, of the
    /// modes the portal offers (`available`): embedded when capturing (the compositor draws it in), hidden when not;
    /// metadata where the portal does not offer that mode (the cursor is then drawn here from the stream's cursor
    /// meta, or left out). nil when the portal offers no mode (a portal before version 2: its own default).
    ///
    /// `OPENAV_SCREENCAST_CURSOR=metadata` in `environment` asks for metadata whenever the portal offers it, so the
    /// tests can check the drawing on a compositor that also embeds.
    package static func forCapture(
        capturingCursor: Bool, available: Self, environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> Self? {
        let forced = environment["OPENAV_SCREENCAST_CURSOR"]?.lowercased() == "metadata"
        let ordered: [Self] =
            forced
            ? [.metadata, capturingCursor ? .embedded : .hidden]
            : [capturingCursor ? .embedded : .hidden, .metadata]
        return ordered.first { available.contains($0) }
    }

    /// Whether a stream in this mode gives the cursor as `capturingCursor` says, with no session of another mode:
    /// metadata serves both (the cursor is drawn or not here).
    package func serves(capturingCursor: Bool) -> Bool {
        self == .metadata || self == (capturingCursor ? .embedded : .hidden)
    }
}
