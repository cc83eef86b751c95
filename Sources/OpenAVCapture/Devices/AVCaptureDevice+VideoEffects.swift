import Synchronization

/// Video HDR, Center Stage and Portrait Effect: camera features of Apple's hardware and system. No camera here has
/// an HDR format, a Center Stage field of view or the portrait effect, so the formats say they are unsupported and
/// the features are never active; the settings Apple lets an app make are kept and follow Apple's rules.
extension AVCaptureDevice {
    /// Who may turn Center Stage on or off. Apple's `AVCaptureDevice.CenterStageControlMode`.
    ///
    /// Value type; safe to use from any thread.
    public enum CenterStageControlMode: Int, Sendable {
        /// Only the user (Control Center) turns it on or off; the default.
        case user = 0
        /// Only the app does.
        case app = 1
        /// Both do.
        case cooperative = 2
    }

    /// The HDR settings of each device, and the class-level Center Stage settings. Guarded by their mutexes.
    private static let hdrSettings = Mutex<[ObjectIdentifier: (automatic: Bool, enabled: Bool)]>([:])
    private static let centerStage = Mutex<(mode: CenterStageControlMode, enabled: Bool)>((.user, false))

    /// Whether the device turns video HDR on and off by itself (true by default). Needs the configuration lock.
    public var automaticallyAdjustsVideoHDREnabled: Bool {
        get { Self.hdrSettings.withLock { $0[ObjectIdentifier(self)]?.automatic ?? true } }
        set {
            requireLock("automaticallyAdjustsVideoHDREnabled")
            Self.hdrSettings.withLock { settings in
                let enabled = settings[ObjectIdentifier(self)]?.enabled ?? false
                // Back to automatic: the device decides, and with no HDR format it decides off.
                settings[ObjectIdentifier(self)] = (newValue, newValue ? false : enabled)
            }
        }
    }

    /// Whether the device streams high dynamic range video: false here, as no format supports it.
    ///
    /// AVCaptureDevice.h: it "may only be set if you first set automaticallyAdjustsVideoHDREnabled to NO, otherwise
    /// an NSGenericException is thrown", and set to true only when `activeFormat.isVideoHDRSupported`, "otherwise an
    /// NSGenericException is thrown"; both trap here, as does setting without the configuration lock.
    public var isVideoHDREnabled: Bool {
        get { Self.hdrSettings.withLock { $0[ObjectIdentifier(self)]?.enabled ?? false } }
        set {
            requireLock("isVideoHDREnabled")
            precondition(
                !automaticallyAdjustsVideoHDREnabled,
                "AVCaptureDevice: set automaticallyAdjustsVideoHDREnabled to false before isVideoHDREnabled (Apple"
                    + " raises NSGenericException)")
            precondition(
                !newValue || activeFormat.isVideoHDRSupported,
                "AVCaptureDevice: \(localizedName)'s active format has no video HDR (activeFormat.isVideoHDRSupported"
                    + " is false; Apple raises NSGenericException)")
            Self.hdrSettings.withLock { $0[ObjectIdentifier(self)] = (false, newValue) }
        }
    }

    /// Whether Center Stage is framing this camera now: never here (no format supports it).
    public var isCenterStageActive: Bool { isCenterStageEnabledForThisFormat && Self.isCenterStageEnabled }

    private var isCenterStageEnabledForThisFormat: Bool { activeFormat.isCenterStageSupported }

    /// Who may turn Center Stage on or off; `.user` by default.
    public class var centerStageControlMode: CenterStageControlMode {
        get { centerStage.withLock { $0.mode } }
        set { centerStage.withLock { $0.mode = newValue } }
    }

    /// Whether Center Stage is turned on for the app. Apple's documentation: setting it while
    /// ``centerStageControlMode`` is `.user` "results in the system throwing an exception"; that traps here too.
    /// Turned on, it is still never active here, as no camera format supports it.
    public class var isCenterStageEnabled: Bool {
        get { centerStage.withLock { $0.enabled } }
        set {
            centerStage.withLock { state in
                precondition(
                    state.mode != .user,
                    "AVCaptureDevice.isCenterStageEnabled: the control mode is .user; set centerStageControlMode to"
                        + " .app or .cooperative first (Apple raises an exception)")
                state.enabled = newValue
            }
        }
    }

    /// Whether the portrait effect (background blur) is on for the app: a user setting on Apple's platforms
    /// (read-only), never on here.
    public class var isPortraitEffectEnabled: Bool { false }

    /// Whether the portrait effect is applied to this camera's frames now: never here.
    public var isPortraitEffectActive: Bool { false }
}

extension AVCaptureDevice.Format {
    /// Whether the format can frame with Center Stage: no format here.
    public var isCenterStageSupported: Bool { false }
    /// Whether the format can apply the portrait effect: no format here.
    public var isPortraitEffectSupported: Bool { false }
}
