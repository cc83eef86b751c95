import CPipeWire
import OpenCoreMedia
import OpenCoreVideo

/// Turns what a node's EnumFormat params offer into device formats, and a chosen device format back into the
/// fixed format a stream asks for.
///
/// A camera node lists its modes one param per size (PipeWire's V4L2 and libcamera nodes) or offers ranges (a
/// GStreamer or screen source): ranges become the usual capture sizes inside them plus the node's preferred size,
/// and a rate range becomes one frame-duration range. One `DeviceFormat` per pixel format or codec and size,
/// ascending by size, the raw ones first (NV12, YUY2, I420, UYVY), then MJPEG, then H.264: as the V4L2 driver
/// orders them, so presets pick a format no one has to decode.
///
/// Value type; safe to use from any thread.
package enum PipeWireFormats {
    /// The sizes a node with a size range is offered at, where the range allows them.
    static let commonSizes: [(Int32, Int32)] = [
        (320, 240), (640, 480), (1280, 720), (1920, 1080), (3840, 2160),
    ]

    /// What a format is streamed as: the shim's media and pixels, and the CoreMedia subtype delivered.
    package struct Encoding: Sendable, Hashable {
        var media: UInt32
        var pixels: UInt32

        /// Raw pixels or a codec, in listing order.
        static let listed: [Encoding] = [
            Encoding(media: CPipeWire_MEDIA_VIDEO_RAW.rawValue, pixels: CPipeWire_PIXELS_NV12.rawValue),
            Encoding(media: CPipeWire_MEDIA_VIDEO_RAW.rawValue, pixels: CPipeWire_PIXELS_YUY2.rawValue),
            Encoding(media: CPipeWire_MEDIA_VIDEO_RAW.rawValue, pixels: CPipeWire_PIXELS_I420.rawValue),
            Encoding(media: CPipeWire_MEDIA_VIDEO_RAW.rawValue, pixels: CPipeWire_PIXELS_UYVY.rawValue),
            Encoding(media: CPipeWire_MEDIA_VIDEO_MJPG.rawValue, pixels: 0),
            Encoding(media: CPipeWire_MEDIA_VIDEO_H264.rawValue, pixels: 0),
        ]

        /// The CoreMedia code frames arrive as (PipeWire says nothing of range: video range, as V4L2's default).
        var mediaSubType: FourCharCode {
            switch (media, pixels) {
            case (CPipeWire_MEDIA_VIDEO_MJPG.rawValue, _): kCMVideoCodecType_JPEG
            case (CPipeWire_MEDIA_VIDEO_H264.rawValue, _): kCMVideoCodecType_H264
            case (_, CPipeWire_PIXELS_YUY2.rawValue): kCVPixelFormatType_422YpCbCr8_yuvs
            case (_, CPipeWire_PIXELS_UYVY.rawValue): kCVPixelFormatType_422YpCbCr8
            case (_, CPipeWire_PIXELS_I420.rawValue): kCVPixelFormatType_420YpCbCr8Planar
            default: kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange
            }
        }

        init(media: UInt32, pixels: UInt32) {
            self.media = media
            self.pixels = pixels
        }

        /// The encoding of a device format's subtype; nil for one a PipeWire node never gave.
        init?(mediaSubType: FourCharCode) {
            guard let match = Self.listed.first(where: { $0.mediaSubType == mediaSubType }) else { return nil }
            self = match
        }

        var isCompressed: Bool { media != CPipeWire_MEDIA_VIDEO_RAW.rawValue }
    }

    /// The video formats of a camera node's params, in listing order, without repeats.
    package static func videoFormats(from params: [CPipeWire_Format]) -> [DeviceFormat] {
        var rangesBySize: [Encoding: [SizeKey: [FrameDurationRange]]] = [:]
        for param in params {
            let encodings = encodings(of: param)
            let sizes = sizes(of: param)
            let ranges = frameDurationRanges(of: param)
            for encoding in encodings {
                for size in sizes {
                    var known = rangesBySize[encoding, default: [:]][size, default: []]
                    for range in ranges where !known.contains(range) { known.append(range) }
                    rangesBySize[encoding, default: [:]][size] = known
                }
            }
        }
        return Encoding.listed.flatMap { encoding -> [DeviceFormat] in
            let sizes = rangesBySize[encoding] ?? [:]
            return sizes.keys.sorted().map { size in
                let ranges = sizes[size]!.sorted { $0.minFrameDuration < $1.minFrameDuration }
                return .video(
                    VideoFormat(
                        width: size.width, height: size.height, mediaSubType: encoding.mediaSubType,
                        frameDurationRanges: ranges, fieldOfView: 0, maxZoomFactor: 1))
            }
        }
    }

    /// The audio formats a microphone node is offered in: 32-bit float and 16-bit integer, at the node's rate and
    /// channel count (PipeWire converts anything else, so these are what a capture stream asks for, not what the
    /// hardware does).
    package static func audioFormats(from params: [CPipeWire_Format], node: PipeWireNode) -> [DeviceFormat] {
        let raw = params.filter { $0.media == CPipeWire_MEDIA_AUDIO_RAW }
        let rate = raw.lazy.map(\.audio_rate).first { $0 > 0 }.map(Double.init) ?? node.audioRate ?? 48_000
        let channels = raw.lazy.map(\.audio_channels).first { $0 > 0 }.map(Int.init) ?? node.audioChannels ?? 2
        return [AudioSampleFormat.float32, .int16].map {
            .audio(AudioFormat(sampleRate: rate, channels: min(max(channels, 1), 8), sampleFormat: $0))
        }
    }

    /// The fixed format a stream asks a node for.
    package static func streamRequest(for format: DeviceFormat, frameDuration: CMTime) -> CPipeWire_StreamFormat? {
        var request = CPipeWire_StreamFormat()
        switch format {
        case .video(let video) where video.mediaSubType == kCVPixelFormatType_32BGRA:
            // A screen node (the ScreenCast portal's): BGRx or BGRA at its size, at the rate it damages; the
            // screen grabber paces the frames, so no rate is asked for.
            request.media = CPipeWire_MEDIA_VIDEO_RAW
            request.pixels = CPipeWire_PIXELS_BGRX
            request.width = UInt32(video.width)
            request.height = UInt32(video.height)
        case .video(let video):
            guard let encoding = Encoding(mediaSubType: video.mediaSubType) else { return nil }
            request.media = CPipeWire_Media(rawValue: encoding.media)
            request.pixels = CPipeWire_Pixels(rawValue: encoding.pixels)
            request.width = UInt32(video.width)
            request.height = UInt32(video.height)
            // The rate as the node listed it: 30/1, not 1/30 s rescaled (nodes compare fractions exactly).
            let rate = frameDuration.isNumeric && frameDuration.value > 0 ? frameDuration : CMTime(value: 1, timescale: 30)
            request.rate_num = UInt32(clamping: Int64(rate.timescale))
            request.rate_den = UInt32(clamping: rate.value)
        case .audio(let audio):
            request.media = CPipeWire_MEDIA_AUDIO_RAW
            request.samples = audio.sampleFormat == .int16 ? CPipeWire_SAMPLES_S16 : CPipeWire_SAMPLES_F32
            request.audio_rate = UInt32(audio.sampleRate)
            request.audio_channels = UInt32(audio.channels)
        }
        return request
    }

    // MARK: Flattening one param

    struct SizeKey: Hashable, Comparable {
        var width: Int32
        var height: Int32
        static func < (lhs: Self, rhs: Self) -> Bool {
            (Int64(lhs.width) * Int64(lhs.height), lhs.width) < (Int64(rhs.width) * Int64(rhs.height), rhs.width)
        }
    }

    static func encodings(of param: CPipeWire_Format) -> [Encoding] {
        switch param.media {
        case CPipeWire_MEDIA_VIDEO_RAW:
            let pixels = withUnsafeBytes(of: param.pixels) { Array($0.bindMemory(to: CPipeWire_Pixels.self)) }
            return pixels.prefix(Int(param.pixels_count)).map {
                Encoding(media: CPipeWire_MEDIA_VIDEO_RAW.rawValue, pixels: $0.rawValue)
            }
        case CPipeWire_MEDIA_VIDEO_MJPG, CPipeWire_MEDIA_VIDEO_H264:
            return [Encoding(media: param.media.rawValue, pixels: 0)]
        default:
            return []
        }
    }

    static func sizes(of param: CPipeWire_Format) -> [SizeKey] {
        let widths = withUnsafeBytes(of: param.widths) { Array($0.bindMemory(to: UInt32.self)) }
        let heights = withUnsafeBytes(of: param.heights) { Array($0.bindMemory(to: UInt32.self)) }
        let count = Int(param.sizes_count)
        let listed = (0..<count).map { SizeKey(width: Int32(clamping: widths[$0]), height: Int32(clamping: heights[$0])) }
            .filter { $0.width > 0 && $0.height > 0 }
        guard param.size_is_range, listed.count == 3 else { return listed }
        let (minimum, maximum, preferred) = (listed[0], listed[1], listed[2])
        let common = commonSizes.map { SizeKey(width: $0.0, height: $0.1) }.filter {
            $0.width >= minimum.width && $0.width <= maximum.width && $0.height >= minimum.height
                && $0.height <= maximum.height
        }
        return common.contains(preferred) ? common : common + [preferred]
    }

    static func frameDurationRanges(of param: CPipeWire_Format) -> [FrameDurationRange] {
        let numerators = withUnsafeBytes(of: param.rate_nums) { Array($0.bindMemory(to: UInt32.self)) }
        let denominators = withUnsafeBytes(of: param.rate_dens) { Array($0.bindMemory(to: UInt32.self)) }
        // A rate of n/d frames per second is a duration of d/n seconds; 0/1 means "variable" (a screen).
        let durations: [CMTime?] = (0..<Int(param.rates_count)).map { index in
            let (num, den) = (numerators[index], denominators[index])
            guard num > 0, den > 0, num <= Int32.max else { return nil }
            return CMTime(value: Int64(den), timescale: Int32(num))
        }
        let variable = FrameDurationRange(minFrameRate: 1, maxFrameRate: 30)
        if param.rate_is_range, durations.count == 3 {
            let fastest = durations[1] ?? CMTime(value: 1, timescale: 30)
            let slowest = durations[0] ?? CMTime(value: 1, timescale: 1)
            return [FrameDurationRange(minFrameDuration: fastest, maxFrameDuration: max(fastest, slowest))]
        }
        let fixed = durations.map { $0.map { FrameDurationRange(minFrameDuration: $0, maxFrameDuration: $0) } ?? variable }
        return fixed.isEmpty ? [variable] : fixed
    }
}
