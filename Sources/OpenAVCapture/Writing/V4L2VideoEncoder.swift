// V4L2VideoEncoder: a writer's video encoder on a V4L2 memory-to-memory device, and what replaces it if it fails.

import CaptureDrivers
import MediaCodecs
import OpenCoreMedia
import OpenCoreVideo

/// A writer's H.264/HEVC encoder on a V4L2 stateful encoder (a Raspberry Pi's `bcm2835-codec`, a SoC's VPU; the
/// kernel's `vicodec` with FWHT in the tests), through ``V4L2MemoryToMemoryEncoder``.
///
/// - Pictures: the track's pixel format when the device takes it (NV12 `'420v'` as NV12, planar `'y420'` as YU12),
///   copied once into the device's memory-mapped buffer; any other format is converted first
///   (``PixelBufferConverter``, to the device's NV12 or YU12, video range) and the converted picture copied.
/// - Parameter sets before the first packet: opening codes one grey picture, drains it and takes the SPS/PPS
///   (VPS/SPS/PPS) from its packet as ``extradata``, then restarts the device, so the muxer's `avcC`/`hvcC` is
///   written from them before anything is muxed. That picture also proves the device codes at all: one that opens
///   but cannot code fails here, where the writer can still choose another encoder.
/// - The GOP is the configuration's ``VideoEncoder/Configuration/maxKeyFrameInterval``, the bit rate its
///   ``VideoEncoder/Configuration/averageBitRate``, B-frames off (decode time = presentation time).
/// - Packets carry times in 1/``VideoEncoder/Configuration/timescale`` s and the device's key-frame flag.
/// - A device that fails while encoding (an error from the driver, a drain that never ends) is replaced by the
///   encoder `replacement` gives (libx264, or the next hardware candidate), which codes every picture the device
///   had not given back yet, from a key frame that carries its own parameter sets in band; with Require the
///   replacement throws and so does this encoder.
///
/// Threading: thread-bound, like ``VideoEncoder``: one thread at a time (the writer's serial queue).
package final class V4L2VideoEncoder: VideoPacketEncoder {
    /// Gives the encoder that codes the rest after the device failed, or throws; told why the device failed.
    package typealias Replacement = (_ reason: String) throws(MediaCodecsError) -> VideoEncoder

    package let configuration: VideoEncoder.Configuration
    package let extradata: [UInt8]
    /// The device node.
    package let path: String
    /// The raw format the device is given pictures in.
    package let devicePictureFormat: V4L2PixelFormat
    /// The controls the device took (see ``V4L2MemoryToMemoryEncoder/appliedControls``).
    package let appliedControls: [String: Int32]
    /// Why the device was given up, once it was; then ``replacement`` codes.
    package private(set) var failure: String?
    /// The encoder coding in the device's place after it failed.
    package private(set) var replacement: VideoEncoder?
    /// Whether the track's pictures are converted before they are copied into the device.
    package var convertsPictures: Bool { converter != nil }

    private var device: V4L2MemoryToMemoryEncoder?
    private let converter: PixelBufferConverter?
    private let makeReplacement: Replacement
    private let codedFormat: V4L2PixelFormat
    /// Packets taken from the device, not yet received.
    private var ready: [EncodedPacket] = []
    /// Pictures sent whose packets have not come out: what a replacement codes if the device fails.
    private var uncoded: [(picture: CVPixelBuffer, time: CMTime)] = []
    private var lastTime: CMTime?
    private var isFinished = false
    /// Whether the replacement's first key frame still needs its parameter sets put in front of it.
    private var replacementNeedsParameterSets = true
    private var replacementSentPicture = false

    /// Opens the encoder at `path` for `configuration` coding `codedFormat` (`.h264`, `.hevc`; `.fwht` on vicodec,
    /// whose packets no muxer takes), taking pictures in one of `offeredPictureFormats` (the device's OUTPUT list).
    ///
    /// - Throws: ``MediaCodecsError`` of kind ``MediaCodecsError/Kind/unsupportedConfiguration`` when the device
    ///   refuses the formats or size, fails to code the first picture, or gives no parameter sets with it.
    package init(
        path: String, codedFormat: V4L2PixelFormat, offeredPictureFormats: [V4L2PixelFormat],
        configuration: VideoEncoder.Configuration, system: SystemCalls = .live, replacement: @escaping Replacement
    ) throws(MediaCodecsError) {
        let operation = "opening the V4L2 encoder \(path) for \(configuration.width)x\(configuration.height)"
        guard let format = Self.pictureFormat(for: configuration.pixelFormat, offered: offeredPictureFormats),
            let deviceType = format.mediaSubType
        else {
            throw MediaCodecsError(
                .unsupportedConfiguration, while: operation,
                message: "it takes neither NV12 nor YU12 (it offers "
                    + offeredPictureFormats.map(\.description).joined(separator: ", ") + ")")
        }
        self.path = path
        self.codedFormat = codedFormat
        self.configuration = configuration
        self.devicePictureFormat = format
        self.makeReplacement = replacement
        if deviceType == configuration.pixelFormat {
            converter = nil
        } else {
            converter = try PixelBufferConverter(
                from: .init(
                    pixelFormatType: configuration.pixelFormat, width: configuration.width,
                    height: configuration.height),
                to: .init(pixelFormatType: deviceType, width: configuration.width, height: configuration.height),
                matrix: configuration.streamMatrix)
        }
        let settings = V4L2EncoderSettings(
            pictureFormat: format, codedFormat: codedFormat, width: configuration.width,
            height: configuration.height, keyFrameInterval: configuration.maxKeyFrameInterval,
            averageBitRate: configuration.averageBitRate)
        do throws(V4L2EncoderError) {
            let opened = try V4L2MemoryToMemoryEncoder(path: path, settings: settings, system: system)
            extradata = try Self.parameterSets(
                priming: opened, pictureType: deviceType, codedFormat: codedFormat, operation: operation)
            appliedControls = opened.appliedControls
            device = opened
        } catch {
            throw MediaCodecsError(.unsupportedConfiguration, while: operation, message: error.description)
        }
    }

    // MARK: Encoding

    /// Sends one picture of the configuration's format and size. A device error is not thrown: the replacement
    /// takes over (see the type's description); only its own failure, or Require's refusal, is.
    ///
    /// - Throws: ``MediaCodecsError`` of kind ``MediaCodecsError/Kind/formatMismatch`` for a picture of another
    ///   format or size or a time not after the last, ``MediaCodecsError/Kind/invalidState`` after ``finish()``,
    ///   and what the replacement throws.
    package func send(
        _ pixelBuffer: CVPixelBuffer, presentationTime: CMTime, forcingKeyFrame: Bool
    ) throws(MediaCodecsError) {
        let operation = "encoding a frame at \(presentationTime.seconds) s with the V4L2 encoder \(path)"
        guard !isFinished else {
            throw MediaCodecsError(.invalidState, while: operation, message: "the encoder was finished")
        }
        try configuration.checkPicture(pixelBuffer, while: operation)
        guard presentationTime.isNumeric, lastTime.map({ presentationTime > $0 }) ?? true else {
            throw MediaCodecsError(
                .formatMismatch, while: operation, message: "presentation times must be numeric and increase")
        }
        lastTime = presentationTime
        if let replacement {
            try sendToReplacement(replacement, pixelBuffer, at: presentationTime, forcingKeyFrame: forcingKeyFrame)
            return
        }
        guard let device else {
            throw MediaCodecsError(
                .invalidState, while: operation, message: "the device failed and nothing replaced it: \(failure ?? "")")
        }
        uncoded.append((pixelBuffer, presentationTime))
        let picture = try converter?.convert(pixelBuffer) ?? pixelBuffer
        do throws(V4L2EncoderError) {
            if forcingKeyFrame { _ = try device.requestKeyFrame() }
            accept(try device.encode(picture, presentationTime: presentationTime))
        } catch {
            try replaceDevice(because: error.description)
        }
    }

    /// Drains the device: every packet still inside comes out (up to the one flagged LAST), then `.endOfStream`.
    package func finish() throws(MediaCodecsError) {
        guard !isFinished else { return }
        isFinished = true
        if let device {
            do throws(V4L2EncoderError) {
                accept(try device.finish())
                uncoded = []
                self.device = nil
            } catch {
                try replaceDevice(because: error.description)
            }
        }
        try replacement?.finish()
    }

    package func receivePacket() throws(MediaCodecsError) -> EncoderOutput {
        if !ready.isEmpty { return .packet(ready.removeFirst()) }
        if let replacement {
            guard case .packet(var packet) = try replacement.receivePacket() else {
                return isFinished ? .endOfStream : .needsInput
            }
            if replacementNeedsParameterSets, packet.isKeyFrame, !replacement.extradata.isEmpty {
                // The track's avcC/hvcC holds the device's parameter sets; the replacement's go in band, at the
                // key frame where its stream starts (FFmpeg's decoders take them there).
                replacementNeedsParameterSets = false
                packet.data = Self.joined(replacement.extradata, packet.data)
            }
            return .packet(packet)
        }
        return isFinished ? .endOfStream : .needsInput
    }

    // MARK: Failure

    /// Gives the device up and codes what it had not given back with the replacement.
    private func replaceDevice(because error: String) throws(MediaCodecsError) {
        device = nil
        let reason = "\(path) failed while encoding: \(error)"
        failure = reason
        let next = try makeReplacement(reason)
        replacement = next
        let pictures = uncoded
        uncoded = []
        for (picture, time) in pictures {
            try sendToReplacement(next, picture, at: time, forcingKeyFrame: false)
        }
    }

    private func sendToReplacement(
        _ replacement: VideoEncoder, _ picture: CVPixelBuffer, at time: CMTime, forcingKeyFrame: Bool
    ) throws(MediaCodecsError) {
        // Its first picture is a key frame: nothing before it in the track decodes into its references.
        let isFirst = !replacementSentPicture
        try replacement.send(picture, presentationTime: time, forcingKeyFrame: forcingKeyFrame || isFirst)
        replacementSentPicture = true
    }

    // MARK: Packets

    /// Queues the device's packets in the track's time base; their pictures need no replacement any more.
    private func accept(_ packets: [V4L2EncodedPacket]) {
        let timescale = configuration.timescale
        let duration = CMTime(value: Int64(timescale) / Int64(max(configuration.frameRate, 1)), timescale: timescale)
        for packet in packets {
            let time = packet.presentationTime.convertScale(timescale, method: .roundHalfAwayFromZero)
            ready.append(
                EncodedPacket(
                    data: CMBlockBuffer(copying: packet.data), presentationTime: time, decodeTime: time,
                    duration: duration, isKeyFrame: packet.isKeyFrame))
            uncoded.removeAll { $0.time <= packet.presentationTime }
        }
    }

    private static func joined(_ header: [UInt8], _ data: CMBlockBuffer) -> CMBlockBuffer {
        let block = CMBlockBuffer(length: header.count + data.dataLength)
        block.withUnsafeMutableBytes { destination in
            destination.copyBytes(from: header)
            data.withUnsafeBytes { source in
                UnsafeMutableRawBufferPointer(rebasing: destination[header.count...]).copyMemory(from: source)
            }
        }
        return block
    }

    // MARK: Opening

    /// The device format pictures go in: the track's own where the device takes it, else NV12, else YU12.
    static func pictureFormat(for pixelFormat: OSType, offered: [V4L2PixelFormat]) -> V4L2PixelFormat? {
        let own: V4L2PixelFormat? =
            switch pixelFormat {
            case kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange: .nv12
            case kCVPixelFormatType_420YpCbCr8Planar: .yuv420
            default: nil
            }
        if let own, offered.contains(own) { return own }
        return [V4L2PixelFormat.nv12, .yuv420].first { offered.contains($0) }
    }

    /// Codes one mid-grey picture, drains the device, and restarts it; the parameter sets of that picture's packet
    /// (none for FWHT). Throws when the device gives no packet, or an H.264/HEVC one without parameter sets.
    private static func parameterSets(
        priming device: V4L2MemoryToMemoryEncoder, pictureType: OSType, codedFormat: V4L2PixelFormat,
        operation: String
    ) throws(V4L2EncoderError) -> [UInt8] {
        let settings = device.settings
        guard let grey = CVPixelBuffer.filled(width: settings.width, height: settings.height, type: pictureType)
        else { throw .pictureMismatch("no \(settings.width)x\(settings.height) picture could be made") }
        var packets = try device.encode(grey, presentationTime: .zero)
        packets += try device.finish()
        guard let first = packets.first else {
            throw .pictureMismatch("the device gave no packet for its first picture")
        }
        _ = try device.reconfigure(width: settings.width, height: settings.height)
        guard codedFormat == .h264 || codedFormat == .hevc else { return [] }
        let sets = AnnexBProbe.parameterSets(first.data, hevc: codedFormat == .hevc)
        guard !sets.isEmpty else {
            throw .pictureMismatch("the device's first packet has no parameter sets for the movie's header")
        }
        return sets
    }
}

extension CVPixelBuffer {
    /// A mid-grey 4:2:0 picture (every sample 128), or nil when it cannot be made.
    fileprivate static func filled(width: Int, height: Int, type: OSType) -> CVPixelBuffer? {
        var created: CVPixelBuffer?
        guard CVPixelBufferCreate(nil, width, height, type, nil, &created) == kCVReturnSuccess, let created else {
            return nil
        }
        created.withLockedPlanes([]) { planes in
            for plane in planes { plane.bytes.initializeMemory(as: UInt8.self, repeating: 128) }
        }
        return created
    }
}
