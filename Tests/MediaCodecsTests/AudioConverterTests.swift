// AudioConverter: frequency, level, sample counts and timestamps across buffers, discontinuities, identity, errors.

import Foundation
import MediaCodecs
import OpenCoreMedia
import Testing

private typealias Format = AudioConverter.Format

/// A microphone's stream: buffers of `framesPerBuffer` frames of `signal(t)` (t in seconds from the first
/// sample) in every channel, stamped on a nanosecond host clock starting at `start`.
private struct Microphone {
    var format: Format
    var framesPerBuffer = 480
    var start = CMTime(value: 12_345_678_901, timescale: 1_000_000_000)
    var signal: (Double) -> Double
    private(set) var framesWritten: Int64 = 0

    init(_ format: Format, signal: @escaping (Double) -> Double) {
        self.format = format
        self.signal = signal
    }

    /// The input PTS of frame `index` of the stream.
    func time(ofFrame index: Int64) -> CMTime {
        start + CMTime(value: index * 1_000_000_000 / Int64(format.sampleRate), timescale: 1_000_000_000)
    }

    /// The next buffer; `skipping` frames are left out first (a dropped period).
    mutating func next(skipping skipped: Int64 = 0) throws -> CMSampleBuffer {
        framesWritten += skipped
        let data = CMBlockBuffer(length: framesPerBuffer * format.bytesPerFrame)
        let first = framesWritten
        data.withUnsafeMutableBytes { bytes in
            for frame in 0..<framesPerBuffer {
                let value = signal(Double(first + Int64(frame)) / Double(format.sampleRate))
                for channel in 0..<format.channelCount {
                    let index = frame * format.channelCount + channel
                    switch format.sample {
                    case .int16: bytes.storeBytes(of: Int16(value * 32767), toByteOffset: 2 * index, as: Int16.self)
                    case .int32:
                        bytes.storeBytes(of: Int32(value * 2_147_483_647), toByteOffset: 4 * index, as: Int32.self)
                    case .float32: bytes.storeBytes(of: Float(value), toByteOffset: 4 * index, as: Float.self)
                    }
                }
            }
        }
        framesWritten += Int64(framesPerBuffer)
        let timing = CMSampleTimingInfo(
            duration: CMTime(value: 1, timescale: CMTimeScale(format.sampleRate)),
            presentationTimeStamp: time(ofFrame: first), decodeTimeStamp: .invalid)
        return try CMSampleBuffer(
            dataBuffer: data,
            formatDescription: CMFormatDescription(audioStreamBasicDescription: format.audioStreamBasicDescription),
            numSamples: framesPerBuffer, sampleTimings: [timing], sampleSizes: [format.bytesPerFrame])
    }
}

/// Channel 0 of a converted buffer, as values in −1…1.
private func channelZero(of buffer: CMSampleBuffer, format: Format) throws -> [Double] {
    let data = try #require(buffer.dataBuffer)
    #expect(data.dataLength == buffer.numSamples * format.bytesPerFrame)
    return data.withUnsafeBytes { bytes in
        (0..<buffer.numSamples).map { frame in
            let offset = frame * format.bytesPerFrame
            switch format.sample {
            case .int16: return Double(bytes.load(fromByteOffset: offset, as: Int16.self)) / 32768
            case .int32: return Double(bytes.load(fromByteOffset: offset, as: Int32.self)) / 2_147_483_648
            case .float32: return Double(bytes.load(fromByteOffset: offset, as: Float.self))
            }
        }
    }
}

/// The RMS level in dBFS relative to a full-scale sine (a sine of amplitude a reads 20·log10(a)).
private func sineLevel(_ samples: ArraySlice<Double>) -> Double {
    let meanSquare = samples.reduce(0) { $0 + $1 * $1 } / Double(samples.count)
    return 20 * log10((2 * meanSquare).squareRoot())
}

/// The frequency of a sine from its rising zero crossings, interpolated between samples.
private func zeroCrossingFrequency(_ samples: ArraySlice<Double>, sampleRate: Double) -> Double {
    var crossings: [Double] = []
    var index = samples.startIndex
    while index + 1 < samples.endIndex {
        let (a, b) = (samples[index], samples[index + 1])
        if a < 0 && b >= 0 { crossings.append(Double(index) + a / (a - b)) }
        index += 1
    }
    guard let first = crossings.first, let last = crossings.last, crossings.count > 1 else { return 0 }
    return Double(crossings.count - 1) / ((last - first) / sampleRate)
}

@Suite struct AudioConverterTests {
    private let stereoFloat48k = Format(sampleRate: 48_000, channelCount: 2, sample: .float32)
    private let monoInt16At44k1 = Format(sampleRate: 44_100, channelCount: 1, sample: .int16)

    /// 48 kHz stereo Float32 → 44.1 kHz mono Int16 over 3 s of 10 ms buffers: a 997 Hz sine at −6 dBFS keeps its
    /// frequency and level, the output count is the input's × 441/480 less the resampler's delay, each buffer
    /// continues the last exactly, and the stream starts at the first input PTS.
    @Test func resamplesAndDownmixesAcrossBuffers() throws {
        let converter = try AudioConverter(
            from: stereoFloat48k.audioStreamBasicDescription, to: monoInt16At44k1.audioStreamBasicDescription)
        #expect(!converter.isIdentity)
        var microphone = Microphone(stereoFloat48k) { 0.5 * sin(2 * .pi * 997 * $0) }
        var outputs: [CMSampleBuffer] = []
        for _ in 0..<300 {
            try converter.convert(try microphone.next()) { outputs.append($0) }
        }
        let inputFrames = microphone.framesWritten
        let emitted = Int64(outputs.reduce(0) { $0 + $1.numSamples })
        // Exact within the delay: what came out plus what the resampler holds is the input's share, to a sample.
        let expected = Double(inputFrames) * 44_100 / 48_000
        let held = converter.delay
        #expect(held.timescale == 44_100 && held.value > 0 && held.value < 64, "delay \(held)")
        #expect(abs(Double(emitted + held.value) - expected) <= 1, "\(emitted) + \(held.value) vs \(expected)")

        // Format and timing of every buffer; each starts where the last ended, exactly.
        let description = try #require(outputs.first?.formatDescription?.audioStreamBasicDescription)
        #expect(description == monoInt16At44k1.audioStreamBasicDescription)
        #expect(
            outputs[0].presentationTimeStamp == microphone.start.convertScale(44_100, method: .roundHalfAwayFromZero))
        for (buffer, next) in zip(outputs, outputs.dropFirst()) {
            let timing = try #require(buffer.storedTimingEntries.first)
            #expect(buffer.storedTimingEntries.count == 1)
            #expect(timing.duration == CMTime(value: 1, timescale: 44_100) && timing.duration.timescale == 44_100)
            let end = buffer.presentationTimeStamp + buffer.duration
            #expect(
                end.value == next.presentationTimeStamp.value && end.timescale == next.presentationTimeStamp.timescale)
        }

        // Signal: skip the first 10 ms (the filter's start), measure the rest.
        var samples: [Double] = []
        for buffer in outputs { samples += try channelZero(of: buffer, format: monoInt16At44k1) }
        let steady = samples[441...]
        let frequency = zeroCrossingFrequency(steady, sampleRate: 44_100)
        #expect(abs(frequency - 997) < 0.5, "frequency \(frequency) Hz")
        let level = sineLevel(steady)
        #expect(abs(level - 20 * log10(0.5)) <= 0.5, "level \(level) dBFS")

        // Draining gives the rest: the total is the input's share to a sample.
        var tail: [CMSampleBuffer] = []
        try converter.finish { tail.append($0) }
        let total = emitted + Int64(tail.reduce(0) { $0 + $1.numSamples })
        #expect(abs(Double(total) - expected) <= 1, "\(total) vs \(expected)")
        #expect(tail.first?.presentationTimeStamp == outputs.last.map { $0.presentationTimeStamp + $0.duration })
    }

    /// Output timestamps are where the sound was: a click at input time T comes out at output time T (to a
    /// sample), and each buffer's PTS is its input PTS less the resampler's delay before it.
    @Test func outputTimestampsFollowTheInputTimeline() throws {
        let converter = try AudioConverter(
            from: stereoFloat48k.audioStreamBasicDescription, to: monoInt16At44k1.audioStreamBasicDescription)
        // A 1 kHz burst of 5 ms starting at 0.1237 s from the first sample.
        let onset = 0.1237
        var microphone = Microphone(stereoFloat48k) { t in
            t >= onset && t < onset + 0.005 ? 0.8 * sin(2 * .pi * 1000 * (t - onset) + .pi / 2) : 0
        }
        var outputs: [CMSampleBuffer] = []
        for _ in 0..<30 {
            let input = try microphone.next()
            let delayBefore = converter.delay
            let count = outputs.count
            try converter.convert(input) { outputs.append($0) }
            if outputs.count > count {
                let expected = input.presentationTimeStamp - delayBefore
                let gap = (outputs[count].presentationTimeStamp - expected).seconds
                #expect(abs(gap) <= 1.0 / 44_100, "buffer \(count): \(gap) s from input PTS − delay")
            }
        }
        // Find the burst's first loud sample and its time on the output timeline.
        var found: CMTime?
        search: for buffer in outputs {
            for (index, value) in try channelZero(of: buffer, format: monoInt16At44k1).enumerated()
            where abs(value) > 0.4 {
                found = buffer.presentationTimeStamp + CMTime(value: Int64(index), timescale: 44_100)
                break search
            }
        }
        let heard = try #require(found)
        let error = (heard - microphone.time(ofFrame: Int64((onset * 48_000).rounded(.up)))).seconds
        #expect(abs(error) <= 2.0 / 44_100, "the burst came out \(error * 1e6) µs off")
    }

    /// A dropped 10 ms period ends the run: the tail of the old run is emitted on the old timeline, then the
    /// new run starts exactly at the new input PTS; both runs are continuous inside.
    @Test func discontinuityRestartsTheTimeline() throws {
        let converter = try AudioConverter(
            from: stereoFloat48k.audioStreamBasicDescription, to: monoInt16At44k1.audioStreamBasicDescription)
        var microphone = Microphone(stereoFloat48k) { 0.25 * sin(2 * .pi * 440 * $0) }
        var before: [CMSampleBuffer] = []
        for _ in 0..<10 { try converter.convert(try microphone.next()) { before.append($0) } }
        var after: [CMSampleBuffer] = []
        let resumed = try microphone.next(skipping: 480)
        try converter.convert(resumed) { after.append($0) }
        for _ in 0..<10 { try converter.convert(try microphone.next()) { after.append($0) } }

        // The first buffer after the gap is the old run's tail, continuing it exactly.
        let tail = try #require(after.first)
        let lastBefore = try #require(before.last)
        #expect(tail.presentationTimeStamp == lastBefore.presentationTimeStamp + lastBefore.duration)
        #expect(tail.numSamples < 64)
        let restart = after[1]
        #expect(
            restart.presentationTimeStamp
                == resumed.presentationTimeStamp.convertScale(44_100, method: .roundHalfAwayFromZero))
        for (buffer, next) in zip(after.dropFirst(), after.dropFirst(2)) {
            #expect(buffer.presentationTimeStamp + buffer.duration == next.presentationTimeStamp)
        }
        // Jitter below the tolerance does not restart: a buffer 1 ms late continues the run.
        var late: [CMSampleBuffer] = []
        let next = try microphone.next()
        let shifted = try next.withNewTiming([
            CMSampleTimingInfo(
                duration: CMTime(value: 1, timescale: 48_000),
                presentationTimeStamp: next.presentationTimeStamp + CMTime(value: 1, timescale: 1000),
                decodeTimeStamp: .invalid)
        ])
        try converter.convert(shifted) { late.append($0) }
        #expect(late.count == 1)
        #expect(late.first?.presentationTimeStamp == after.last.map { $0.presentationTimeStamp + $0.duration })
    }

    /// Level is kept whatever the sample types and channel counts: mono → stereo copies at unity, stereo → mono
    /// averages (FFmpeg's own matrix would give float output +3 dB), integer and float samples agree.
    @Test(arguments: [
        (
            Format(sampleRate: 48_000, channelCount: 2, sample: .float32),
            Format(sampleRate: 48_000, channelCount: 1, sample: .float32)
        ),
        (
            Format(sampleRate: 48_000, channelCount: 1, sample: .int16),
            Format(sampleRate: 48_000, channelCount: 2, sample: .float32)
        ),
        (
            Format(sampleRate: 48_000, channelCount: 1, sample: .int32),
            Format(sampleRate: 16_000, channelCount: 1, sample: .int16)
        ),
        (
            Format(sampleRate: 48_000, channelCount: 2, sample: .int16),
            Format(sampleRate: 44_100, channelCount: 2, sample: .float32)
        ),
        (
            Format(sampleRate: 44_100, channelCount: 1, sample: .float32),
            Format(sampleRate: 48_000, channelCount: 2, sample: .int32)
        ),
    ])
    func levelIsKept(source: AudioConverter.Format, destination: AudioConverter.Format) throws {
        let converter = try AudioConverter(
            from: source.audioStreamBasicDescription, to: destination.audioStreamBasicDescription)
        var microphone = Microphone(source) { 0.5 * sin(2 * .pi * 997 * $0) }
        var samples: [Double] = []
        for _ in 0..<50 {
            try converter.convert(try microphone.next()) { buffer in
                #expect(
                    buffer.formatDescription?.audioStreamBasicDescription == destination.audioStreamBasicDescription)
                samples += (try? channelZero(of: buffer, format: destination)) ?? []
            }
        }
        let steady = samples[(destination.sampleRate / 100)...]
        #expect(
            abs(sineLevel(steady) - 20 * log10(0.5)) <= 0.5, "\(source) → \(destination): \(sineLevel(steady)) dBFS")
        let frequency = zeroCrossingFrequency(steady, sampleRate: Double(destination.sampleRate))
        #expect(abs(frequency - 997) < 1, "\(frequency) Hz")
    }

    /// The same format in and out is an identity: the very same sample buffer object comes back.
    @Test func identityPassesTheSameBuffer() throws {
        let format = stereoFloat48k.audioStreamBasicDescription
        #expect(!AudioConverter.needsConversion(from: format, to: format))
        #expect(AudioConverter.needsConversion(from: format, to: monoInt16At44k1.audioStreamBasicDescription))
        let converter = try AudioConverter(from: format, to: format)
        #expect(converter.isIdentity)
        var microphone = Microphone(stereoFloat48k) { sin($0) }
        let input = try microphone.next()
        var outputs: [CMSampleBuffer] = []
        try converter.convert(input) { outputs.append($0) }
        #expect(outputs.count == 1 && outputs[0] === input)
    }

    /// Formats outside interleaved Int16/Int32/Float32 PCM are errors at creation; a buffer of another format is
    /// an error when converting, and the converter goes on working.
    @Test func unsupportedFormatsAndMismatchesAreErrors() throws {
        let good = stereoFloat48k.audioStreamBasicDescription
        var nonInterleaved = good
        nonInterleaved.mFormatFlags |= kAudioFormatFlagIsNonInterleaved
        var bigEndian = good
        bigEndian.mFormatFlags |= kAudioFormatFlagIsBigEndian
        var aac = AudioStreamBasicDescription()
        aac.mFormatID = kAudioFormatMPEG4AAC
        aac.mSampleRate = 48_000
        aac.mChannelsPerFrame = 2
        aac.mFramesPerPacket = 1024
        let unsupported: [AudioStreamBasicDescription] = [
            nonInterleaved, bigEndian, aac,
            .linearPCM(sampleRate: 48_000, channels: 2, bitsPerChannel: 8, isFloat: false),
            .linearPCM(sampleRate: 48_000, channels: 2, bitsPerChannel: 64, isFloat: true),
            .linearPCM(sampleRate: 0, channels: 2, bitsPerChannel: 16, isFloat: false),
            .linearPCM(sampleRate: 44_100.5, channels: 2, bitsPerChannel: 16, isFloat: false),
            .linearPCM(sampleRate: 48_000, channels: 9, bitsPerChannel: 16, isFloat: false),
        ]
        for description in unsupported {
            let there = #expect(throws: MediaCodecsError.self) { try AudioConverter(from: description, to: good) }
            #expect(there?.kind == .unsupportedConversion, "\(description)")
            let back = #expect(throws: MediaCodecsError.self) { try AudioConverter(from: good, to: description) }
            #expect(back?.kind == .unsupportedConversion, "\(description)")
        }
        let converter = try AudioConverter(from: good, to: monoInt16At44k1.audioStreamBasicDescription)
        var wrong = Microphone(Format(sampleRate: 48_000, channelCount: 1, sample: .float32)) { sin($0) }
        let error = #expect(throws: MediaCodecsError.self) { try converter.convert(try wrong.next()) { _ in } }
        #expect(error?.kind == .formatMismatch)
        var right = Microphone(stereoFloat48k) { sin($0) }
        var count = 0
        try converter.convert(try right.next()) { _ in count += 1 }
        #expect(count == 1)
    }
}
