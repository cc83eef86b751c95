import Foundation
import Synchronization

/// Records a session's audio into an audio file: AAC in `.m4a` (the default), linear PCM in `.wav`, `.aiff`,
/// `.aifc` and `.caf`, Apple Lossless in `.m4a` or `.caf` when ``audioSettings`` asks for it.
///
/// Recording works as in ``AVCaptureMovieFileOutput`` (same delegate order, limits, pause/resume without a gap,
/// switching files without losing a sample, `.fileAlreadyExists` with the existing file untouched); it starts at
/// the first audio buffer after the request. Only audio connections form to this output.
///
/// Settings when ``audioSettings`` is nil: the device's sample rate and channel count, and per file type
/// AAC at 64 kbit/s per channel (`.m4a`), 16-bit little-endian integers (`.wav`), 16-bit big-endian integers
/// (`.aiff`), 32-bit big-endian floats (`.aifc`, written in the AIFF-C form), 16-bit little-endian integers
/// (`.caf`). Keys set in ``audioSettings`` replace these.
///
/// Threading: thread safe, as ``AVCaptureFileOutput``.
open class AVCaptureAudioFileOutput: AVCaptureFileOutput, @unchecked Sendable {
    private struct Settings: @unchecked Sendable {
        var audioSettings: [String: Any]?
        var metadata: [AVMetadataItem] = []
    }

    private let settings = Mutex(Settings())

    public override init() { super.init() }

    /// The file types this output writes.
    open class func availableOutputFileTypes() -> [AVFileType] { [.m4a, .wav, .aiff, .aifc, .caf] }

    /// The audio settings files are written with (`AVFormatIDKey`, `AVSampleRateKey`, `AVNumberOfChannelsKey`,
    /// `AVEncoderBitRateKey`, the `AVLinearPCM…` keys), or nil for the per-type defaults above. Checked when a
    /// recording starts: settings the file type cannot hold end that recording with an error naming the key.
    open var audioSettings: [String: Any]? {
        get { settings.withLock { $0.audioSettings } }
        set { settings.withLock { $0.audioSettings = newValue } }
    }

    /// Metadata (title, creation date, …) written into the files. Read when a recording starts.
    open var metadata: [AVMetadataItem] {
        get { settings.withLock { $0.metadata } }
        set {
            settings.withLock { $0.metadata = newValue }
            metadataDidChange()
        }
    }

    /// Starts recording to `outputFileURL` as `fileType`, one of ``availableOutputFileTypes()``. AVCaptureOutput.h
    /// documents no exception for another type (only for a URL that is not a file URL), so another type is
    /// replaced by the one the URL's extension names (`.m4a` when none), logged once.
    open func startRecording(
        to outputFileURL: URL, outputFileType fileType: AVFileType,
        recordingDelegate delegate: any AVCaptureFileOutputRecordingDelegate
    ) {
        var type = fileType
        if !Self.availableOutputFileTypes().contains(fileType) {
            type = recordingFileType(for: outputFileURL)
            ToleratedMisuse.report(
                "AVCaptureAudioFileOutput.outputFileType",
                "AVCaptureAudioFileOutput: file type \(fileType.rawValue) is not one of availableOutputFileTypes();"
                    + " recording \(type.rawValue), as the file's extension says")
        }
        startRecording(to: outputFileURL, fileType: type, delegate: delegate)
    }

    // MARK: What the recording machinery asks

    /// The type the URL's extension names (`.m4a` when it names none of ours).
    override func recordingFileType(for url: URL) -> AVFileType {
        switch url.pathExtension.lowercased() {
        case "wav", "wave": .wav
        case "aif", "aiff": .aiff
        case "aifc": .aifc
        case "caf": .caf
        default: .m4a
        }
    }

    /// The settings a recording is made with: `audioSettings` over the file type's default encoding. The sample rate
    /// and channel count are present only when `audioSettings` asks for them: the recording engine takes the
    /// source's from its first buffer otherwise, and converts the sound when they are asked.
    override func recordingSettings(for connection: AVCaptureConnection, fileType: AVFileType) -> [String: Any] {
        let description = connection.inputPorts.first?.formatDescription?.audioStreamBasicDescription
        let custom = audioSettings ?? [:]
        let channels = custom[AVNumberOfChannelsKey] as? Int ?? Int(description?.mChannelsPerFrame ?? 2)
        // A new format replaces the default's format-specific keys rather than mixing with them.
        var result = custom[AVFormatIDKey] != nil ? [:] : Self.defaultEncoding(for: fileType, channels: channels)
        result.merge(custom) { _, new in new }
        return result
    }

    /// The encoding a file type gets by default.
    static func defaultEncoding(for fileType: AVFileType, channels: Int) -> [String: Any] {
        func pcm(bits: Int, float: Bool, bigEndian: Bool) -> [String: Any] {
            [
                AVFormatIDKey: kAudioFormatLinearPCM, AVLinearPCMBitDepthKey: bits, AVLinearPCMIsFloatKey: float,
                AVLinearPCMIsBigEndianKey: bigEndian,
            ]
        }
        switch fileType {
        case .wav, .caf: return pcm(bits: 16, float: false, bigEndian: false)
        case .aiff: return pcm(bits: 16, float: false, bigEndian: true)
        case .aifc: return pcm(bits: 32, float: true, bigEndian: true)
        default: return [AVFormatIDKey: kAudioFormatMPEG4AAC, AVEncoderBitRateKey: 64_000 * max(1, channels)]
        }
    }

    override var recordingFragmentIntervalAndMetadata: (CMTime, [AVMetadataItem]) {
        // A fragmented m4a is as crash-safe as a movie; other containers ignore the interval.
        (CMTime(value: 10, timescale: 1), settings.withLock { $0.metadata })
    }

    // MARK: Graph hooks

    override package func accepts(_ mediaType: AVMediaType) -> Bool { mediaType == .audio }
}
