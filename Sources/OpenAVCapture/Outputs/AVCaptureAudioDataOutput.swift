import CaptureDrivers
import CaptureGraph
import Foundation
import Synchronization

/// Receives an audio data output's sample buffers, on the queue given to `setSampleBufferDelegate(_:queue:)`.
public protocol AVCaptureAudioDataOutputSampleBufferDelegate: NSObjectProtocol {
    /// A buffer of audio samples (about 10 ms), in order, with no gaps.
    func captureOutput(_ output: AVCaptureOutput, didOutput sampleBuffer: CMSampleBuffer, from connection: AVCaptureConnection)
}

extension AVCaptureAudioDataOutputSampleBufferDelegate {
    public func captureOutput(
        _ output: AVCaptureOutput, didOutput sampleBuffer: CMSampleBuffer, from connection: AVCaptureConnection
    ) {}
}

/// Delivers audio sample buffers to a delegate on a serial queue, in order, in the format `audioSettings` asks
/// for (converted with libswresample when it differs from the device's).
///
/// Audio is never dropped for a slow delegate until a full second is waiting; beyond that the newest buffers
/// are dropped and counted (`droppedBufferCount`), so a stuck delegate cannot exhaust memory.
///
/// Threading: thread safe. Settings are guarded by a mutex; delegate calls run on the delegate's queue.
open class AVCaptureAudioDataOutput: AVCaptureOutput, @unchecked Sendable {
    /// `@unchecked Sendable`: the delegate is only called on its queue, and settings values are plist-like
    /// values that are never mutated in place.
    private struct Settings: @unchecked Sendable {
        /// Typed, so each buffer reaches the delegate without a dynamic protocol cast.
        weak var delegate: (any AVCaptureAudioDataOutputSampleBufferDelegate)?
        var queue: DispatchQueue?
        var audioSettings: [String: Any] = [:]
        var mailbox: SampleBufferMailbox<Pending>?
    }

    /// A buffer waiting for the delegate. `@unchecked Sendable`: both are thread safe classes.
    private struct Pending: @unchecked Sendable {
        let sample: CMSampleBuffer
        let connection: AVCaptureConnection
    }

    private let settings = Mutex(Settings())
    /// A second of 10 ms buffers may wait for the delegate.
    /// Used only on the delegate queue (serial), hence not locked.
    private let converter = UncheckedSendable(AudioConverterBox())
    private let dropped = Atomic<Int>(0)
    /// The `sampleBuffers` sequences being iterated (ours); a second of audio may wait in each.
    private let streams = SampleBufferStreams(bufferSize: 100, preparing: 100)
    private let streamConverter = UncheckedSendable(AudioConverterBox())

    public override init() { super.init() }

    override package var hasWorkInFlight: Bool { settings.withLock { $0.mailbox }.map { !$0.isIdle } ?? false }

    /// Sets the delegate (held weakly) and the serial queue its method runs on.
    open func setSampleBufferDelegate(
        _ sampleBufferDelegate: (any AVCaptureAudioDataOutputSampleBufferDelegate)?, queue sampleBufferCallbackQueue: DispatchQueue?
    ) {
        precondition(
            sampleBufferDelegate == nil || sampleBufferCallbackQueue != nil,
            "AVCaptureAudioDataOutput: a delegate needs a serial queue (Apple raises NSInvalidArgumentException)")
        let queue = sampleBufferDelegate == nil ? nil : sampleBufferCallbackQueue
        // A second of 10 ms buffers may wait for the delegate.
        let mailbox = queue.map { queue in
            SampleBufferMailbox<Pending>(queue: queue, capacity: 100, limit: 100) { [weak self] in self?.handle($0) }
        }
        settings.withLock { settings in
            settings.delegate = sampleBufferDelegate
            settings.queue = queue
            settings.mailbox = mailbox
        }
    }

    /// The delegate, if it is still alive.
    open var sampleBufferDelegate: (any AVCaptureAudioDataOutputSampleBufferDelegate)? {
        settings.withLock { $0 }.delegate
    }

    /// The queue the delegate's method runs on.
    open var sampleBufferCallbackQueue: DispatchQueue? { settings.withLock { $0.queue } }

    /// The format buffers are delivered in (linear PCM only): `AVFormatIDKey` (`kAudioFormatLinearPCM`),
    /// `AVSampleRateKey`, `AVNumberOfChannelsKey` (1 or 2), `AVLinearPCMBitDepthKey` (16 or 32),
    /// `AVLinearPCMIsFloatKey`, `AVLinearPCMIsNonInterleaved` (false only), `AVLinearPCMIsBigEndianKey` (false
    /// only). Empty (or nil) delivers the device's format. What cannot be delivered as asked is brought to the nearest
    /// format that can and logged once (Apple documents no exception; see `AudioOutputFormat`).
    open var audioSettings: [String: Any]! {
        get { settings.withLock { $0 }.audioSettings }
        set {
            let requested = newValue ?? [:]
            let changes = AudioOutputFormat.resolved(requested).changes
            if !changes.isEmpty {
                ToleratedMisuse.report(
                    "AVCaptureAudioDataOutput.audioSettings",
                    "AVCaptureAudioDataOutput.audioSettings: " + changes.joined(separator: "; "))
            }
            settings.withLock { $0.audioSettings = requested }
        }
    }

    /// Settings for an `AVAssetWriterInput` recording this audio as AAC in `outputFileType` (Apple's defaults:
    /// the device's rate and channels, 64 kb/s per channel). `[AnyHashable: Any]`, as Apple's Swift signature has it
    /// (its keys are the `AV…Key` strings); cast with `as? [String: Any]` for `AVAssetWriterInput`.
    open func recommendedAudioSettingsForAssetWriter(writingTo outputFileType: AVFileType) -> [AnyHashable: Any]? {
        guard let layout = connection(with: .audio)?.inputPorts.first?.formatDescription?.audioStreamBasicDescription
        else { return nil }
        let channels = Int(layout.mChannelsPerFrame)
        if [.wav, .aiff, .aifc, .caf].contains(outputFileType) {
            return [
                AVFormatIDKey: kAudioFormatLinearPCM, AVSampleRateKey: layout.mSampleRate, AVNumberOfChannelsKey: channels,
                AVLinearPCMBitDepthKey: 16, AVLinearPCMIsFloatKey: false, AVLinearPCMIsBigEndianKey: outputFileType != .wav,
                AVLinearPCMIsNonInterleaved: false,
            ]
        }
        return [
            AVFormatIDKey: kAudioFormatMPEG4AAC, AVSampleRateKey: layout.mSampleRate, AVNumberOfChannelsKey: channels,
            AVEncoderBitRateKey: 64000 * channels,
        ]
    }

    /// The output's buffers as an asynchronous sequence (ours): `for await buffer in output.sampleBuffers { … }`,
    /// in the `audioSettings` format, with or without a delegate. A second of audio may wait; beyond that newer
    /// buffers are dropped and counted in `droppedBufferCount`.
    open var sampleBuffers: AsyncStream<CMSampleBuffer> { streams.makeStream() }

    /// Buffers dropped because the delegate fell a second behind (ours).
    open var droppedBufferCount: Int { dropped.load(ordering: .relaxed) }

    // MARK: Graph hooks

    override package func accepts(_ mediaType: AVMediaType) -> Bool { mediaType == .audio }

    override package func receive(_ sampleBuffer: CMSampleBuffer, from connection: AVCaptureConnection) {
        let current = settings.withLock { $0 }
        let (delegateObject, requested) = (current.delegate, current.audioSettings)
        if streams.isActive {
            let target = AudioOutputFormat.validated(requested)
            let box = streamConverter
            let accepted = streams.submit {
                var converted: [CMSampleBuffer] = []
                box.value.cache.convert(sampleBuffer, to: target) { converted.append($0) }
                return converted
            }
            if !accepted { dropped.add(1, ordering: .relaxed) }
        }
        guard delegateObject != nil, let mailbox = current.mailbox else { return }
        if !mailbox.post(Pending(sample: sampleBuffer, connection: connection)) { dropped.add(1, ordering: .relaxed) }
    }

    /// Converts and delivers one buffer, on the delegate's queue.
    private func handle(_ pending: Pending) {
        let current = settings.withLock { $0 }
        guard let delegate = current.delegate else { return }
        let target = AudioOutputFormat.validated(current.audioSettings)
        converter.value.cache.convert(pending.sample, to: target) { converted in
            delegate.captureOutput(self, didOutput: converted, from: pending.connection)
        }
    }

    override package func sessionDidStopRunning() {
        let (queue, box) = (settings.withLock { $0.queue }, converter)
        queue?.async { box.value.cache.reset() }
    }
}

/// An audio data output's requested format, resolved to one the output delivers.
///
/// AVCaptureAudioDataOutput.h documents no exception for `audioSettings`, so what cannot be delivered is not a
/// trap: an unknown key or a compressed format is ignored (linear PCM is delivered), a rate or channel count
/// outside what the converter makes is brought into range, a bit depth other than 16 or 32 becomes 16 (32 for
/// floating point), and planar or big-endian requests get interleaved little-endian samples. The setter logs
/// what it changed, once.
enum AudioOutputFormat {
    /// The requested format as a partial stream description (zero fields keep the device's).
    static func validated(_ settings: [String: Any]) -> AudioStreamBasicDescription { resolved(settings).format }

    /// The delivered format and, in words, each request that could not be honoured as asked.
    static func resolved(_ settings: [String: Any]) -> (format: AudioStreamBasicDescription, changes: [String]) {
        let known: Set<String> = [
            AVFormatIDKey, AVSampleRateKey, AVNumberOfChannelsKey, AVLinearPCMBitDepthKey, AVLinearPCMIsFloatKey,
            AVLinearPCMIsNonInterleaved, AVLinearPCMIsBigEndianKey,
        ]
        var changes = settings.keys.filter { !known.contains($0) }.sorted().map { "key \($0) is ignored" }
        var format = AudioStreamBasicDescription()
        if let id = settings[AVFormatIDKey], integerSetting(id).map(UInt32.init) != kAudioFormatLinearPCM {
            changes.append("AVFormatIDKey \(id) is delivered as linear PCM (encode with AVAssetWriter)")
        }
        if let rate = doubleSetting(settings[AVSampleRateKey]) {
            let delivered = rate.isNaN ? 48_000 : min(192_000, max(8000, rate))
            if delivered != rate { changes.append("AVSampleRateKey \(rate) is delivered as \(delivered)") }
            format.mSampleRate = delivered
        }
        if let channels = integerSetting(settings[AVNumberOfChannelsKey]) {
            let delivered = min(2, max(1, channels))
            if delivered != channels { changes.append("AVNumberOfChannelsKey \(channels) is delivered as \(delivered)") }
            format.mChannelsPerFrame = UInt32(delivered)
        }
        let isFloat = boolSetting(settings[AVLinearPCMIsFloatKey])
        if let bits = integerSetting(settings[AVLinearPCMBitDepthKey]) {
            let delivered = bits == 16 || bits == 32 ? bits : (isFloat == true ? 32 : 16)
            if delivered != bits { changes.append("AVLinearPCMBitDepthKey \(bits) is delivered as \(delivered)") }
            format.mBitsPerChannel = UInt32(delivered)
        }
        if let isFloat {
            format.mFormatFlags = isFloat ? kAudioFormatFlagIsFloat : kAudioFormatFlagIsSignedInteger
            if format.mBitsPerChannel == 0 { format.mBitsPerChannel = isFloat ? 32 : 16 }
            if isFloat && format.mBitsPerChannel != 32 {
                changes.append("floating-point samples are delivered as 32 bits")
                format.mBitsPerChannel = 32
            }
        }
        if boolSetting(settings[AVLinearPCMIsNonInterleaved]) == true {
            changes.append("samples are delivered interleaved")
        }
        if boolSetting(settings[AVLinearPCMIsBigEndianKey]) == true {
            changes.append("samples are delivered little-endian")
        }
        return (format, changes)
    }
}

/// A reference to the converter cache, so closures on the delegate queue can mutate it.
final class AudioConverterBox {
    var cache = AudioConverterCache()
}
