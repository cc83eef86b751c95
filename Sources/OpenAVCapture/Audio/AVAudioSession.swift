import Foundation
import Synchronization

/// The app's audio session, as iOS camera apps configure it before recording. Apple's `AVAudioSession`.
///
/// Linux has no per-app audio session: the sound server (PipeWire, or ALSA) routes every program's audio, and the
/// user chooses devices in the desktop's settings. So here the session keeps what the app sets (category, mode,
/// options, preferences, active) and reads them back, reports the default microphone's rate and channels, and
/// grants record permission when a microphone can be opened; it never changes routing, ducking or other programs'
/// sound. Every call succeeds unless the value is one Apple refuses too.
///
/// Threading: thread safe.
open class AVAudioSession: NSObject, @unchecked Sendable {
    /// What the app does with audio. Apple's `AVAudioSession.Category`.
    public struct Category: RawRepresentable, Hashable, Sendable {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public static let ambient = Category(rawValue: "AVAudioSessionCategoryAmbient")
        public static let soloAmbient = Category(rawValue: "AVAudioSessionCategorySoloAmbient")
        public static let playback = Category(rawValue: "AVAudioSessionCategoryPlayback")
        public static let record = Category(rawValue: "AVAudioSessionCategoryRecord")
        public static let playAndRecord = Category(rawValue: "AVAudioSessionCategoryPlayAndRecord")
        public static let multiRoute = Category(rawValue: "AVAudioSessionCategoryMultiRoute")
    }

    /// A specialisation of the category. Apple's `AVAudioSession.Mode`.
    public struct Mode: RawRepresentable, Hashable, Sendable {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public static let `default` = Mode(rawValue: "AVAudioSessionModeDefault")
        public static let voiceChat = Mode(rawValue: "AVAudioSessionModeVoiceChat")
        public static let videoChat = Mode(rawValue: "AVAudioSessionModeVideoChat")
        public static let gameChat = Mode(rawValue: "AVAudioSessionModeGameChat")
        public static let videoRecording = Mode(rawValue: "AVAudioSessionModeVideoRecording")
        public static let measurement = Mode(rawValue: "AVAudioSessionModeMeasurement")
        public static let moviePlayback = Mode(rawValue: "AVAudioSessionModeMoviePlayback")
        public static let spokenAudio = Mode(rawValue: "AVAudioSessionModeSpokenAudio")
    }

    /// How the category behaves with other audio. Apple's `AVAudioSession.CategoryOptions`.
    public struct CategoryOptions: OptionSet, Sendable {
        public let rawValue: UInt
        public init(rawValue: UInt) { self.rawValue = rawValue }
        public static let mixWithOthers = CategoryOptions(rawValue: 0x1)
        public static let duckOthers = CategoryOptions(rawValue: 0x2)
        public static let allowBluetooth = CategoryOptions(rawValue: 0x4)
        public static let defaultToSpeaker = CategoryOptions(rawValue: 0x8)
        public static let interruptSpokenAudioAndMixWithOthers = CategoryOptions(rawValue: 0x11)
        public static let allowBluetoothA2DP = CategoryOptions(rawValue: 0x20)
        public static let allowAirPlay = CategoryOptions(rawValue: 0x40)
    }

    /// Options for ``setActive(_:options:)``. Apple's `AVAudioSession.SetActiveOptions`.
    public struct SetActiveOptions: OptionSet, Sendable {
        public let rawValue: UInt
        public init(rawValue: UInt) { self.rawValue = rawValue }
        public static let notifyOthersOnDeactivation = SetActiveOptions(rawValue: 1)
    }

    /// Whether the app may record. Apple's `AVAudioSession.RecordPermission`.
    public enum RecordPermission: UInt, Sendable {
        case undetermined = 1970168948
        case denied = 1684369017
        case granted = 1735552628
    }

    private struct State {
        var category = Category.soloAmbient
        var mode = Mode.default
        var options: CategoryOptions = []
        var isActive = false
        var preferredSampleRate = 0.0
        var preferredIOBufferDuration = 0.0
    }

    private let state = Mutex(State())

    private override init() { super.init() }

    private static let shared = AVAudioSession()

    /// The app's session.
    open class func sharedInstance() -> AVAudioSession { shared }

    open var category: Category { state.withLock { $0.category } }
    open var mode: Mode { state.withLock { $0.mode } }
    open var categoryOptions: CategoryOptions { state.withLock { $0.options } }

    /// Sets the category; kept and read back (routing is the sound server's on Linux).
    open func setCategory(_ category: Category) throws { try setCategory(category, mode: mode, options: []) }

    /// Sets the category, mode and options; kept and read back.
    open func setCategory(_ category: Category, mode: Mode, options: CategoryOptions = []) throws {
        state.withLock {
            $0.category = category
            $0.mode = mode
            $0.options = options
        }
    }

    /// Sets the category and options; kept and read back.
    open func setCategory(_ category: Category, options: CategoryOptions = []) throws {
        try setCategory(category, mode: mode, options: options)
    }

    /// Sets the mode; kept and read back.
    open func setMode(_ mode: Mode) throws { state.withLock { $0.mode = mode } }

    /// Activates or deactivates the session: recorded (``isActive``), nothing else changes on Linux.
    open func setActive(_ active: Bool, options: SetActiveOptions = []) throws { state.withLock { $0.isActive = active } }

    /// Whether ``setActive(_:options:)`` last activated the session (ours: Apple's has no getter).
    open var isActive: Bool { state.withLock { $0.isActive } }

    /// Granted when the default microphone can be opened by this user, denied when there is one it cannot open,
    /// undetermined when there is none.
    open var recordPermission: RecordPermission {
        guard let microphone = AVCaptureDevice.default(for: .audio) else { return .undetermined }
        return AVCaptureDevice.authorizationStatus(for: .audio) == .authorized && microphone.isConnected ? .granted : .denied
    }

    /// Calls `response` with whether recording is allowed (``recordPermission`` is `.granted`); no one is asked.
    open func requestRecordPermission(_ response: @escaping @Sendable (Bool) -> Void) {
        let granted = recordPermission == .granted
        DispatchQueue.global().async { response(granted) }
    }

    /// The default microphone's sample rate (0 without one).
    open var sampleRate: Double {
        AVCaptureDevice.default(for: .audio)?.activeFormat.formatDescription.audioStreamBasicDescription?.mSampleRate ?? 0
    }

    /// The default microphone's channel count (0 without one).
    open var inputNumberOfChannels: Int {
        Int(AVCaptureDevice.default(for: .audio)?.activeFormat.formatDescription.audioStreamBasicDescription?.mChannelsPerFrame ?? 0)
    }

    /// Whether a microphone is present.
    open var isInputAvailable: Bool { AVCaptureDevice.default(for: .audio) != nil }

    /// The rate the app prefers (0 until set); kept, not applied (the sound server picks device rates).
    open var preferredSampleRate: Double { state.withLock { $0.preferredSampleRate } }
    open func setPreferredSampleRate(_ sampleRate: Double) throws { state.withLock { $0.preferredSampleRate = sampleRate } }

    /// The I/O buffer duration the app prefers (0 until set); kept, not applied.
    open var preferredIOBufferDuration: TimeInterval { state.withLock { $0.preferredIOBufferDuration } }
    open func setPreferredIOBufferDuration(_ duration: TimeInterval) throws {
        state.withLock { $0.preferredIOBufferDuration = duration }
    }
}
