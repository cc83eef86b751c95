import Foundation
import OpenCoreMedia
import Synchronization

/// "Virtual Microphone": a `CaptureBackend` that delivers `VirtualMicrophoneSynth`'s tone and beeps in 10 ms
/// periods on the host clock, with a settable clock error and faults on demand.
///
/// Timing: sample index 0 is at host time 0 and the sample clock runs at `48000 · (1 + ppm · 10⁻⁶)` samples per
/// host second (`VirtualSampleClock`), so with `ppm` 0 the beeps start at whole host seconds. Period n holds samples
/// `[n · 480, (n + 1) · 480)`; it is delivered once its last sample has been "recorded", stamped with the host time
/// of its first sample (exactly `n · 480 / 48000` s at timescale 48000 when `ppm` is 0, nanoseconds otherwise).
/// Periods are contiguous: no gaps, no overlaps. Each buffer holds 480 interleaved frames in a `CMBlockBuffer`,
/// with one timing entry (1/48000 s per sample) and one format description per stream.
///
/// Threading: thread safe (`Sendable`; mutable parts behind mutexes). `start` and `stop` are serialized by the
/// caller; the sink runs on the capture thread.
package final class VirtualMicrophone: VirtualDevice {
    /// Samples per second of every format.
    package static let sampleRate = 48_000
    /// Frames per period: 10 ms.
    package static let periodFrameCount = 480

    package let identity: DeviceIdentity
    package let formats: [DeviceFormat]
    package let lifecycle = VirtualDeviceLifecycle()
    package let registry: DeviceRegistry?
    private let clockError = Mutex<Double>(0)

    /// A virtual microphone. Discovery uses `VirtualDeviceDriver.shared`'s; tests make their own and pass a
    /// `registry` of their own (nil: report to `DeviceRegistry.shared`).
    package init(registry: DeviceRegistry? = nil) {
        identity = DeviceIdentity(
            uniqueID: "virtual:microphone", modelID: "OpenAVCapture Virtual Microphone",
            localizedName: "Virtual Microphone", manufacturer: "OpenAVCapture", kind: .microphone,
            position: .unspecified, media: .audio, origin: .virtual)
        formats = [
            .audio(AudioFormat(sampleRate: 48_000, channels: 1, sampleFormat: .float32)),
            .audio(AudioFormat(sampleRate: 48_000, channels: 2, sampleFormat: .float32)),
            .audio(AudioFormat(sampleRate: 48_000, channels: 1, sampleFormat: .int16)),
            .audio(AudioFormat(sampleRate: 48_000, channels: 2, sampleFormat: .int16)),
        ]
        self.registry = registry
    }

    // MARK: CaptureBackend

    package var controls: (any CameraControlling)? { nil }
    package var clock: CMClock { .hostTimeClock }
    package var isAccessible: Bool { true }

    /// Valid for any of the microphone's formats (the frame duration is ignored: periods are 10 ms); invalid
    /// otherwise.
    package func validate(_ configuration: StreamConfiguration) -> ConfigurationValidity {
        formats.contains(configuration.format)
            ? .valid : .invalid("\(identity.localizedName) has no format \(configuration.format)")
    }

    /// Starts streaming. Throws `.disconnected` after an unplug and `.busy` while busy; traps for a format the
    /// microphone lacks, which `validate` reports first.
    package func start(_ configuration: StreamConfiguration, sink: @escaping StreamSink) throws(DeviceFault) {
        guard formats.contains(configuration.format), case .audio(let format) = configuration.format else {
            preconditionFailure("VirtualMicrophone.start: no format \(configuration.format); validate first")
        }
        let formatDescription: CMFormatDescription
        do {
            formatDescription = try CMFormatDescription(audioStreamBasicDescription: format.streamDescription)
        } catch {
            preconditionFailure("VirtualMicrophone: cannot describe \(format): \(error)")
        }
        let stream = VirtualMicrophoneStream(
            format: format, clock: VirtualSampleClock(sampleRate: Self.sampleRate, ppm: ppm),
            clockMode: lifecycle.clockMode, formatDescription: formatDescription, sink: sink)
        try lifecycle.start(
            name: "OpenAVCapture \(identity.localizedName)", pacedBy: stream.clockMode.manualClock, prepare: {},
            body: { thread in stream.run(on: thread) })
        VirtualUnplugSchedule.streamDidStart(self)
    }

    package func stop() {
        lifecycle.stop()
    }

    // MARK: Test controls

    /// How fast the sample clock runs against the host clock, in parts per million (positive: fast); 0 by default.
    /// Takes effect at the next `start`.
    package var ppm: Double {
        get { clockError.withLock { $0 } }
        set { clockError.withLock { $0 = newValue } }
    }

    /// The host time of sample `index` under `clock`: exact at the sample rate's timescale when the clock is exact,
    /// rounded to the nanosecond otherwise.
    package static func hostTime(ofSample index: Int64, clock: VirtualSampleClock) -> CMTime {
        if clock.ppm == 0 { return CMTime(value: index, timescale: Int32(clock.sampleRate)) }
        return CMTime(value: Int64((clock.hostSeconds(ofSample: index) * 1e9).rounded()), timescale: 1_000_000_000)
    }
}

/// One run of the microphone's stream, made by `start` on the caller's thread.
///
/// Threading: `Sendable` parts only; `run` is the capture thread's body.
private struct VirtualMicrophoneStream: Sendable {
    let format: AudioFormat
    let clock: VirtualSampleClock
    let clockMode: VirtualClockMode
    let formatDescription: CMFormatDescription
    let sink: StreamSink

    func run(on thread: VirtualCaptureThread) {
        let synth = VirtualMicrophoneSynth(sampleRate: clock.sampleRate, channelCount: format.channels)
        let frames = VirtualMicrophone.periodFrameCount
        let bytesPerFrame = format.channels * Int(format.sampleFormat.bitsPerSample / 8)
        let sampleDuration = CMTime(value: 1, timescale: Int32(clock.sampleRate))
        let rate = clock.actualRate
        // The first period that starts at or after now.
        let position = Double(CMClock.hostNanosecondsNow()) * rate / 1e9
        let firstIndex = Int64((position / Double(frames)).rounded(.up))

        func time(_ index: Int64) -> CMTime {
            VirtualMicrophone.hostTime(ofSample: index * Int64(frames), clock: clock)
        }
        func due(_ index: Int64) -> Int64 {
            // When the period's last sample has been recorded: where the next period starts.
            Int64((clock.hostSeconds(ofSample: (index + 1) * Int64(frames)) * 1e9).rounded(.up))
        }

        func deliver(_ index: Int64, _ sequence: UInt64) {
            let block = CMBlockBuffer(length: frames * bytesPerFrame)
            block.withUnsafeMutableBytes { bytes in
                guard let base = bytes.baseAddress else { return }
                let start = index * Int64(frames)
                switch format.sampleFormat {
                case .float32:
                    let samples = base.bindMemory(to: Float.self, capacity: frames * format.channels)
                    synth.render(startingAt: start, frameCount: frames, into: samples)
                case .int16:
                    let samples = base.bindMemory(to: Int16.self, capacity: frames * format.channels)
                    synth.render(startingAt: start, frameCount: frames, into: samples)
                case .int32:
                    preconditionFailure("the virtual microphone has no Int32 format")
                }
            }
            let timing = CMSampleTimingInfo(
                duration: sampleDuration, presentationTimeStamp: time(index), decodeTimeStamp: .invalid)
            let sample: CMSampleBuffer
            do {
                sample = try CMSampleBuffer(
                    dataBuffer: block, formatDescription: formatDescription, numSamples: frames,
                    sampleTimings: [timing], sampleSizes: [bytesPerFrame])
            } catch {
                // One timing entry and one size for a positive count are always consistent.
                preconditionFailure("VirtualMicrophone: \(error)")
            }
            sink(.output(sample, sequence: sequence))
        }

        let pacer = VirtualStreamPacer(
            firstIndex: firstIndex, clockMode: clockMode,
            itemNanoseconds: Int64((Double(frames) / rate * 1e9).rounded(.up)), due: due, deliver: deliver,
            drop: { index, sequence, reason in
                sink(.dropped(sequence: sequence, presentationTime: time(index), reason: reason))
            })
        if let fault = pacer.run(on: thread) { sink(.fault(fault)) }
    }
}
