// AudioConverter: sample rate, channel count and sample format conversion of PCM sample buffers with libswresample.

import CFFmpeg
import OpenCoreMedia
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Converts interleaved linear PCM sample buffers to another sample rate, channel count or sample format, with
/// libswresample, keeping timestamps exact and continuous.
///
/// The capture graph puts one between a microphone (48 kHz, 1–2 channels, Int16, Int32 or Float32) and an
/// output whose `audioSettings` ask for something else. When ``needsConversion(from:to:)`` says no, the
/// converter is an identity and ``convert(_:emit:)`` passes the very same `CMSampleBuffer` on.
///
/// Formats: interleaved, packed, native-endian linear PCM (``Format``): signed 16-bit, signed 32-bit or 32-bit
/// float samples (`AV_SAMPLE_FMT_S16`, `S32`, `FLT`), 1 to 8 channels (FFmpeg's default layout for the count),
/// whole sample rates from 1 Hz to 768 kHz.
///
/// Channels: mono → stereo copies the channel to both sides at unity gain; stereo → mono is the average
/// (L + R) / 2, so a centred source keeps its level and nothing clips (`swr_set_matrix`). Other counts use
/// libswresample's matrix, normalised so that no output exceeds full scale (`rematrix_maxval` 1). FFmpeg's own
/// stereo → mono matrix would be +3 dB for float output and 0 dB for integer output; ours is the same for both.
///
/// Timestamps: the output is one continuous timeline per run. A run starts with the first buffer (or the first
/// after a discontinuity, ``finish(emit:)`` or ``reset()``): its input presentation time, converted to the
/// output rate's timescale (rounded to the nearest output sample), is the run's anchor. Every output buffer
/// has one timing entry of duration 1/outputRate and the PTS
///
///     anchor + (output samples emitted earlier in the run) / outputRate
///
/// in the output rate's timescale, so each buffer's PTS + duration equals the next one's exactly. libswresample
/// aligns output sample 0 with input sample 0 and holds back its filter delay, so this equals
///
///     (this buffer's input PTS) − (the resampler's delay before this buffer, `swr_get_delay`)
///
/// to within the anchor's rounding: each output buffer starts where its first sample really was in the input.
///
/// Discontinuities: a buffer whose input PTS is more than `discontinuityTolerance` away from where the run
/// expects it (anchor + input samples consumed / inputRate) ends the run: the resampler is drained, the tail
/// emitted on the old timeline, the resampler reset, and a new run anchored at the new buffer. Gaps (a dropped
/// period), overlaps and clock drift beyond the tolerance all count.
///
/// Wraps `swr_alloc_set_opts2` with `av_channel_layout_default`, `av_opt_set_double`, `swr_set_matrix`,
/// `swr_init`, `swr_get_out_samples`, `swr_convert`, `swr_get_delay`, `swr_close` and `swr_free`. The converter
/// is the `SwrContext`'s one owner and frees it in `deinit`.
///
/// Cost: about 4 µs per 10 ms buffer (48 kHz stereo Float32 → 44.1 kHz mono Int16, release build). Each output
/// buffer costs six allocations: its samples (`malloc`, freed when the `CMBlockBuffer` dies) and the block and
/// sample buffers' own objects.
///
/// Threading: thread-bound; use it from one thread at a time (a serial queue is fine). Not `Sendable`. Debug
/// builds trap when two threads use it at once. The buffers it emits are ordinary sample buffers.
package final class AudioConverter {
    /// Interleaved linear PCM: the formats this type converts.
    ///
    /// Threading: a value; `Sendable`.
    package struct Format: Hashable, Sendable, CustomStringConvertible {
        /// A sample's type.
        package enum Sample: Hashable, Sendable {
            /// Signed 16-bit integers (`AV_SAMPLE_FMT_S16`).
            case int16
            /// Signed 32-bit integers (`AV_SAMPLE_FMT_S32`).
            case int32
            /// 32-bit floats, full scale ±1 (`AV_SAMPLE_FMT_FLT`).
            case float32
        }

        /// Frames per second.
        package var sampleRate: Int
        /// Channels per frame, interleaved.
        package var channelCount: Int
        /// The samples' type.
        package var sample: Sample

        /// A format from its parts.
        package init(sampleRate: Int, channelCount: Int, sample: Sample) {
            self.sampleRate = sampleRate
            self.channelCount = channelCount
            self.sample = sample
        }

        /// The format an audio stream description describes, or `nil` when it is not interleaved, packed,
        /// native-endian linear PCM of a supported sample type, with a whole sample rate and 1 to 8 channels.
        package init?(_ description: AudioStreamBasicDescription) {
            let flags = description.mFormatFlags
            guard description.mFormatID == kAudioFormatLinearPCM, flags & kAudioFormatFlagIsBigEndian == 0,
                flags & kAudioFormatFlagIsNonInterleaved == 0 || description.mChannelsPerFrame == 1,
                description.mFramesPerPacket == 1,
                (1...8).contains(description.mChannelsPerFrame),
                description.mSampleRate.isFinite, description.mSampleRate == description.mSampleRate.rounded(),
                (1...768_000).contains(description.mSampleRate)
            else { return nil }
            let sample: Sample
            switch (flags & kAudioFormatFlagIsFloat != 0, description.mBitsPerChannel) {
            case (true, 32): sample = .float32
            case (false, 16) where flags & kAudioFormatFlagIsSignedInteger != 0: sample = .int16
            case (false, 32) where flags & kAudioFormatFlagIsSignedInteger != 0: sample = .int32
            default: return nil
            }
            let format = Format(
                sampleRate: Int(description.mSampleRate), channelCount: Int(description.mChannelsPerFrame),
                sample: sample)
            guard description.mBytesPerFrame == UInt32(format.bytesPerFrame),
                description.mBytesPerPacket == UInt32(format.bytesPerFrame)
            else { return nil }
            self = format
        }

        /// Bytes per sample of one channel.
        package var bytesPerSample: Int { sample == .int16 ? 2 : 4 }
        /// Bytes per frame: one sample of every channel.
        package var bytesPerFrame: Int { bytesPerSample * channelCount }

        /// The stream description of the format.
        package var audioStreamBasicDescription: AudioStreamBasicDescription {
            .linearPCM(
                sampleRate: Float64(sampleRate), channels: UInt32(channelCount),
                bitsPerChannel: UInt32(bytesPerSample * 8), isFloat: sample == .float32)
        }

        /// libswresample's sample format.
        var ffmpegSampleFormat: AVSampleFormat {
            switch sample {
            case .int16: AV_SAMPLE_FMT_S16
            case .int32: AV_SAMPLE_FMT_S32
            case .float32: AV_SAMPLE_FMT_FLT
            }
        }

        /// "48000 Hz 2 ch float32".
        package var description: String { "\(sampleRate) Hz \(channelCount) ch \(sample)" }
    }

    /// The format every input buffer must have.
    package let source: Format
    /// The format of every output buffer.
    package let destination: Format
    /// The format description every output buffer carries (the input's own, for an identity).
    package let outputFormatDescription: CMFormatDescription
    /// How far an input PTS may stray from where the run expects it before it counts as a discontinuity.
    package let discontinuityTolerance: CMTime
    /// Whether the converter passes buffers through untouched.
    package let isIdentity: Bool

    /// The resampler; `nil` for an identity. This object is its only owner.
    private var resampler: OpaquePointer?
    /// The current run, `nil` before the first buffer and after a reset.
    private var run: Run?
    #if DEBUG
        /// Set while a call runs: debug builds trap on concurrent use.
        private let isBusy = Atomic<Bool>(false)
    #endif

    /// One continuous stretch of input: where it started and how far it has come.
    private struct Run {
        /// The first input buffer's PTS.
        var anchor: CMTime
        /// The anchor in output samples (timescale = the output rate).
        var anchorOutputValue: Int64
        /// Input frames consumed since the anchor.
        var consumedFrames: Int64 = 0
        /// Output frames emitted since the anchor.
        var emittedFrames: Int64 = 0
    }

    /// A converter from `source` to `destination` stream descriptions.
    ///
    /// - Parameters:
    ///   - discontinuityTolerance: how far an input PTS may stray from the run's timeline (2 ms by default: more
    ///     than a host-clock stamp's jitter, less than any ALSA period, so a dropped period always restarts the
    ///     run; drift against the host clock restarts it after 2 ms have accumulated).
    /// - Throws: ``MediaCodecsError`` of kind ``MediaCodecsError/Kind/unsupportedConversion`` when either side is
    ///   not a supported ``Format``, ``MediaCodecsError/Kind/allocationFailed`` or ``MediaCodecsError/Kind/ffmpeg``
    ///   when libswresample cannot be set up.
    package init(
        from source: AudioStreamBasicDescription, to destination: AudioStreamBasicDescription,
        discontinuityTolerance: CMTime = CMTime(value: 2, timescale: 1000)
    ) throws(MediaCodecsError) {
        let operation = "creating an audio converter"
        guard let sourceFormat = Format(source) else {
            throw MediaCodecsError(
                .unsupportedConversion, while: operation,
                message: "the source \(source) is not interleaved Int16, Int32 or Float32 PCM with 1 to 8 channels")
        }
        guard let destinationFormat = Format(destination) else {
            throw MediaCodecsError(
                .unsupportedConversion, while: operation,
                message: "the destination \(destination) is not interleaved Int16, Int32 or Float32 PCM with 1 to 8 "
                    + "channels")
        }
        guard discontinuityTolerance.isNumeric, discontinuityTolerance.timescale > 0,
            discontinuityTolerance >= .zero
        else {
            throw MediaCodecsError(
                .unsupportedConversion, while: operation, message: "the discontinuity tolerance must be a time ≥ 0")
        }
        do {
            outputFormatDescription = try CMFormatDescription(
                audioStreamBasicDescription: destinationFormat.audioStreamBasicDescription)
        } catch {
            throw MediaCodecsError(
                .allocationFailed, while: operation, message: "the output format description failed: \(error)")
        }
        self.source = sourceFormat
        self.destination = destinationFormat
        self.discontinuityTolerance = discontinuityTolerance
        self.isIdentity = sourceFormat == destinationFormat
        if !isIdentity {
            resampler = try Self.makeResampler(from: sourceFormat, to: destinationFormat)
        }
    }

    deinit {
        swr_free(&resampler)
    }

    /// Whether buffers of `source` must be converted to give `destination`: false when both describe the same
    /// ``Format`` (the graph then passes buffers through).
    package static func needsConversion(
        from source: AudioStreamBasicDescription, to destination: AudioStreamBasicDescription
    ) -> Bool {
        Format(source) != Format(destination) || Format(source) == nil
    }

    // MARK: Converting

    /// Converts `input` and hands every resulting buffer to `emit`, in order: none (the resampler is still
    /// filling), one, or two after a discontinuity (the previous run's tail, then the new run's start).
    ///
    /// An identity converter emits `input` itself.
    ///
    /// - Throws: ``MediaCodecsError`` of kind ``MediaCodecsError/Kind/formatMismatch`` when `input` does not
    ///   carry ``source``'s format, a numeric PTS and its data; ``MediaCodecsError/Kind/allocationFailed`` or
    ///   ``MediaCodecsError/Kind/ffmpeg`` when conversion fails. After an error the next buffer starts a new run.
    package func convert(_ input: CMSampleBuffer, emit: (CMSampleBuffer) -> Void) throws(MediaCodecsError) {
        #if DEBUG
            precondition(
                !isBusy.exchange(true, ordering: .acquiring),
                "AudioConverter is thread-bound: it was used from two threads at once")
            defer { isBusy.store(false, ordering: .releasing) }
        #endif
        guard !isIdentity else {
            emit(input)
            return
        }
        guard let description = input.formatDescription?.audioStreamBasicDescription,
            Format(description) == source
        else {
            throw MediaCodecsError(
                .formatMismatch, while: conversionOperation,
                message: "the buffer's format is \(String(describing: input.formatDescription))")
        }
        let presentationTime = input.presentationTimeStamp
        guard presentationTime.isNumeric, presentationTime.timescale > 0 else {
            throw MediaCodecsError(
                .formatMismatch, while: conversionOperation, message: "the buffer has no numeric PTS")
        }
        let frameCount = input.numSamples
        guard frameCount > 0 else { return }
        guard let dataBuffer = input.dataBuffer, input.dataIsReady,
            dataBuffer.dataLength >= frameCount * source.bytesPerFrame
        else {
            throw MediaCodecsError(
                .formatMismatch, while: conversionOperation,
                message: "the buffer's data is missing, not ready or shorter than \(frameCount) frames")
        }

        if let run, abs((presentationTime - expectedTime(of: run)).seconds) > discontinuityTolerance.seconds {
            try drain(emit: emit)
            try restartResampler()
        }
        if run == nil {
            run = Run(
                anchor: presentationTime,
                anchorOutputValue: presentationTime.convertScale(
                    Int32(destination.sampleRate), method: .roundHalfAwayFromZero
                ).value)
        }
        // CMBlockBuffer.withUnsafeBytes rethrows untyped errors: carry ours out of the closure instead.
        var failure: MediaCodecsError?
        dataBuffer.withUnsafeBytes { bytes in
            do throws(MediaCodecsError) {
                try resample(from: bytes.baseAddress, frameCount: frameCount, emit: emit)
            } catch {
                failure = error
            }
        }
        if let failure {
            // The resampler's state is unknown after a failure: start afresh with the next buffer.
            try? restartResampler()
            throw failure
        }
    }

    /// Ends the current run: drains the samples the resampler still holds (its filter delay) into a last
    /// buffer on the run's timeline, hands it to `emit`, and resets, so the next buffer starts a new run.
    ///
    /// Call it at the end of a stream (stopping, a file's end). An identity converter does nothing.
    package func finish(emit: (CMSampleBuffer) -> Void) throws(MediaCodecsError) {
        #if DEBUG
            precondition(
                !isBusy.exchange(true, ordering: .acquiring),
                "AudioConverter is thread-bound: it was used from two threads at once")
            defer { isBusy.store(false, ordering: .releasing) }
        #endif
        guard !isIdentity else { return }
        try drain(emit: emit)
        try restartResampler()
    }

    /// Drops the samples the resampler holds and forgets the run, without emitting anything.
    package func reset() throws(MediaCodecsError) {
        #if DEBUG
            precondition(
                !isBusy.exchange(true, ordering: .acquiring),
                "AudioConverter is thread-bound: it was used from two threads at once")
            defer { isBusy.store(false, ordering: .releasing) }
        #endif
        guard !isIdentity else { return }
        try restartResampler()
    }

    /// What the resampler holds back right now, in output samples (`swr_get_delay` at the output rate): how
    /// far the output lags the input.
    package var delay: CMTime {
        guard let resampler else { return .zero }
        return CMTime(value: swr_get_delay(resampler, Int64(destination.sampleRate)), timescale: outputTimescale)
    }

    // MARK: Internals

    private var outputTimescale: CMTimeScale { CMTimeScale(destination.sampleRate) }

    /// What errors while converting say was being done; built only when an error is.
    private var conversionOperation: String { "converting audio from \(source) to \(destination)" }

    /// Where the run expects the next input buffer: anchor + consumed frames / input rate.
    private func expectedTime(of run: Run) -> CMTime {
        // Both terms exact; the sum is computed by CMTime's arithmetic in a common timescale.
        run.anchor + CMTime(value: run.consumedFrames, timescale: CMTimeScale(source.sampleRate))
    }

    /// Resamples `frameCount` input frames (or drains, when `input` is nil) and emits what comes out.
    private func resample(
        from input: UnsafeRawPointer?, frameCount: Int, emit: (CMSampleBuffer) -> Void
    ) throws(MediaCodecsError) {
        guard let resampler, var run else { return }
        let capacity = swr_get_out_samples(resampler, Int32(frameCount))
        guard capacity >= 0 else { throw .ffmpeg(capacity, while: "\(conversionOperation) (swr_get_out_samples)") }
        guard capacity > 0 else {
            run.consumedFrames += Int64(frameCount)
            self.run = run
            return
        }
        let byteCount = Int(capacity) * destination.bytesPerFrame
        // malloc, not UnsafeMutableRawPointer.allocate: running out of memory is an error value, not a trap.
        guard let memory = malloc(byteCount) else {
            throw MediaCodecsError(.allocationFailed, while: conversionOperation, message: "\(byteCount) bytes")
        }
        var outputPlane: UnsafeMutablePointer<UInt8>? = memory.assumingMemoryBound(to: UInt8.self)
        var inputPlane: UnsafePointer<UInt8>? = input?.assumingMemoryBound(to: UInt8.self)
        let produced = withUnsafeMutablePointer(to: &outputPlane) { outputPlanes in
            withUnsafeMutablePointer(to: &inputPlane) { inputPlanes in
                swr_convert(
                    resampler, outputPlanes, capacity, input == nil ? nil : inputPlanes,
                    input == nil ? 0 : Int32(frameCount))
            }
        }
        guard produced >= 0 else {
            free(memory)
            throw .ffmpeg(produced, while: "\(conversionOperation) (swr_convert)")
        }
        if input != nil { run.consumedFrames += Int64(frameCount) }
        guard produced > 0 else {
            free(memory)
            self.run = run
            return
        }
        let presentationTime = CMTime(value: run.anchorOutputValue + run.emittedFrames, timescale: outputTimescale)
        run.emittedFrames += Int64(produced)
        self.run = run
        let data = CMBlockBuffer(
            wrapping: memory, length: Int(produced) * destination.bytesPerFrame, release: { free($0) })
        let timing = CMSampleTimingInfo(
            duration: CMTime(value: 1, timescale: outputTimescale), presentationTimeStamp: presentationTime,
            decodeTimeStamp: .invalid)
        let output: CMSampleBuffer
        do {
            output = try CMSampleBuffer(
                dataBuffer: data, formatDescription: outputFormatDescription, numSamples: Int(produced),
                sampleTimings: [timing], sampleSizes: [destination.bytesPerFrame])
        } catch {
            throw MediaCodecsError(
                .allocationFailed, while: conversionOperation, message: "the sample buffer failed: \(error)")
        }
        emit(output)
    }

    /// Flushes the resampler's held samples into a last buffer of the current run, if there is a run.
    private func drain(emit: (CMSampleBuffer) -> Void) throws(MediaCodecsError) {
        guard run != nil else { return }
        try resample(from: nil, frameCount: 0, emit: emit)
    }

    /// Forgets the run and returns the resampler to its initial state (`swr_close`, the matrix again, `swr_init`).
    private func restartResampler() throws(MediaCodecsError) {
        run = nil
        guard let resampler else { return }
        swr_close(resampler)
        try Self.configure(resampler, from: source, to: destination)
    }

    /// A configured, initialised resampler.
    private static func makeResampler(
        from source: Format, to destination: Format
    ) throws(MediaCodecsError)
        -> OpaquePointer
    {
        let operation = "creating a resampler from \(source) to \(destination)"
        var sourceLayout = AVChannelLayout()
        var destinationLayout = AVChannelLayout()
        av_channel_layout_default(&sourceLayout, Int32(source.channelCount))
        av_channel_layout_default(&destinationLayout, Int32(destination.channelCount))
        // Default layouts are native-order masks and own no memory; uninit anyway, as the API asks.
        defer {
            av_channel_layout_uninit(&sourceLayout)
            av_channel_layout_uninit(&destinationLayout)
        }
        var resampler: OpaquePointer?
        let status = swr_alloc_set_opts2(
            &resampler, &destinationLayout, destination.ffmpegSampleFormat, Int32(destination.sampleRate),
            &sourceLayout, source.ffmpegSampleFormat, Int32(source.sampleRate), 0, nil)
        guard status >= 0 else {
            swr_free(&resampler)
            throw .ffmpeg(status, while: operation)
        }
        guard let created = resampler else {
            throw MediaCodecsError(.allocationFailed, while: operation, message: "swr_alloc_set_opts2 gave NULL")
        }
        do throws(MediaCodecsError) {
            try configure(created, from: source, to: destination)
        } catch {
            swr_free(&resampler)
            throw error
        }
        return created
    }

    /// Sets the channel matrix and initialises a resampler whose options are set.
    private static func configure(
        _ resampler: OpaquePointer, from source: Format, to destination: Format
    )
        throws(MediaCodecsError)
    {
        let operation = "initialising the resampler from \(source) to \(destination)"
        var status: Int32 = 0
        switch (source.channelCount, destination.channelCount) {
        case (1, 2):
            // matrix[out][in], stride = input channels: both outputs take the one input at unity.
            let matrix: [Double] = [1, 1]
            status = swr_set_matrix(resampler, matrix, 1)
        case (2, 1):
            let matrix: [Double] = [0.5, 0.5]
            status = swr_set_matrix(resampler, matrix, 2)
        default:
            status = av_opt_set_double(UnsafeMutableRawPointer(resampler), "rematrix_maxval", 1, 0)
        }
        guard status >= 0 else { throw .ffmpeg(status, while: "\(operation) (setting the channel matrix)") }
        status = swr_init(resampler)
        guard status >= 0 else { throw .ffmpeg(status, while: operation) }
    }
}
