// The streams of a muxer: video and audio from encoders, passthrough streams from format descriptions, their
// transforms, display sizes and metadata, all set before the file is started.

import CFFmpeg
import Foundation
import OpenCoreMedia

extension Muxer {
    /// Shows video `stream` at `width` × `height` (the track header's size, before its transform) rather than its
    /// encoded size; written into the finished movie (see ``TrackHeaderDisplaySize``). Movies only.
    /// Call it before ``start(atSourceTime:)``: the stream's pixel aspect ratio becomes unknown, so no `pasp` box
    /// (1:1 from the encoder) contradicts the header, and readers derive the shape from the header's size.
    package func setDisplaySize(width: Double, height: Double, forStream stream: Int) {
        precondition(fileType.isMovie, "a display size is a movie track's header: \(fileType) has none")
        precondition(state == .configuring, "a track's display size is set before the muxer starts")
        displaySizes[stream] = (width, height)
        if let parameters = context?.pointee.streams[stream]?.pointee.codecpar {
            parameters.pointee.sample_aspect_ratio = AVRational(num: 0, den: 1)
        }
    }

    /// Adds a video track for `encoder`'s packets, shown with `transform`; returns its stream index. A libavcodec
    /// encoder gives its own codec parameters; any other (a V4L2 device) is described by its configuration and
    /// ``VideoPacketEncoder/extradata``, which must hold its parameter sets already.
    ///
    /// - Throws: ``MediaCodecsError`` of kind ``MediaCodecsError/Kind/unsupportedConfiguration`` when the container
    ///   cannot hold the codec, ``MediaCodecsError/Kind/invalidState`` after ``start(atSourceTime:)``.
    package func addVideoStream(
        from encoder: any VideoPacketEncoder, transform: TrackTransform = .identity
    )
        throws(MediaCodecsError) -> Int
    {
        let index: Int
        if let software = encoder as? VideoEncoder {
            index = try addStream(timeBase: software.timeBase, kind: "video") { software.copyParameters(to: $0) }
        } else {
            let configuration = encoder.configuration
            let extradata = encoder.extradata
            index = try addStream(timeBase: AVRational(num: 1, den: configuration.timescale), kind: "video") {
                Self.describeDeviceStream($0, configuration: configuration, extradata: extradata)
            }
        }
        guard let stream = context?.pointee.streams[index] else { return index }
        if encoder.configuration.codec == .hevc {
            // Apple plays HEVC only as 'hvc1' (parameter sets out of band), not FFmpeg's default 'hev1'.
            stream.pointee.codecpar.pointee.codec_tag = CFFmpeg_MKTAG(0x68, 0x76, 0x63, 0x31)
        }
        stream.pointee.avg_frame_rate = AVRational(num: Int32(encoder.configuration.frameRate), den: 1)
        try setTransform(transform, on: stream)
        transforms[index] = transform
        videoStreams.insert(index)
        return index
    }

    /// The codec parameters of a stream coded by a device: codec, size, rate, the colour tags and pixel aspect
    /// ratio ``VideoEncoder`` sets from the same configuration (``VideoEncoder/Configuration/streamDescription``;
    /// video range), and the parameter sets as extradata.
    private static func describeDeviceStream(
        _ parameters: UnsafeMutablePointer<AVCodecParameters>, configuration: VideoEncoder.Configuration,
        extradata: [UInt8]
    ) -> Int32 {
        let description = configuration.streamDescription
        parameters.pointee.codec_type = AVMEDIA_TYPE_VIDEO
        parameters.pointee.codec_id = configuration.codec == .hevc ? AV_CODEC_ID_HEVC : AV_CODEC_ID_H264
        parameters.pointee.width = Int32(configuration.width)
        parameters.pointee.height = Int32(configuration.height)
        parameters.pointee.format = AV_PIX_FMT_YUV420P.rawValue
        parameters.pointee.bit_rate = Int64(configuration.averageBitRate)
        parameters.pointee.sample_aspect_ratio = description.pixelAspectRatio
        parameters.pointee.field_order = AV_FIELD_PROGRESSIVE
        parameters.pointee.color_range = AVCOL_RANGE_MPEG
        parameters.pointee.color_space = description.matrix
        parameters.pointee.color_primaries = description.primaries
        parameters.pointee.color_trc = description.transfer
        guard !extradata.isEmpty else { return 0 }
        guard let bytes = av_mallocz(extradata.count + Int(AV_INPUT_BUFFER_PADDING_SIZE)) else {
            return CFFmpeg_AVERROR(ENOMEM)
        }
        extradata.withUnsafeBytes { bytes.copyMemory(from: $0.baseAddress!, byteCount: extradata.count) }
        parameters.pointee.extradata = bytes.assumingMemoryBound(to: UInt8.self)
        parameters.pointee.extradata_size = Int32(extradata.count)
        return 0
    }

    /// Sets a track's own tags (`AVStream.metadata`), before ``start(atSourceTime:)``. In a QuickTime movie
    /// libavformat 5.1 writes `title` as the track's user data name (`udta`/`name`) and `language` (ISO 639-2) in
    /// its media header; it writes no other track-level tag.
    ///
    /// - Throws: ``MediaCodecsError/Kind/invalidState`` after ``start(atSourceTime:)`` or for an unknown stream.
    package func setStreamMetadata(_ metadata: [(key: String, value: String)], stream index: Int)
        throws(MediaCodecsError)
    {
        guard state == .configuring, let context, index >= 0, index < Int(context.pointee.nb_streams),
            let stream = context.pointee.streams[index]
        else {
            throw MediaCodecsError(
                .invalidState, while: "setting the tags of track \(index) of \(path)",
                message: "tracks are tagged before writing starts")
        }
        for (key, value) in metadata { av_dict_set(&stream.pointee.metadata, key, value, 0) }
    }

    /// Adds an audio track for `encoder`'s packets; returns its stream index.
    ///
    /// - Throws: as ``addVideoStream(from:transform:)``.
    package func addAudioStream(from encoder: AudioEncoder) throws(MediaCodecsError) -> Int {
        try addStream(timeBase: encoder.timeBase, kind: "audio") { encoder.copyParameters(to: $0) }
    }

    /// Adds a track for packets copied from `stream` of a file (passthrough: no encoder), shown with `transform`
    /// and counted in `stream`'s time base; returns its stream index. The codec parameters are rebuilt from what
    /// the demuxer described: codec, size or rate and channels, and the out-of-band header (`avcC`, `hvcC`,
    /// AudioSpecificConfig).
    ///
    /// - Throws: as ``addVideoStream(from:transform:)``; ``MediaCodecsError/Kind/unsupportedConfiguration`` for a
    ///   codec FFmpeg does not know.
    package func addStream(
        copying stream: Demuxer.Stream, transform: TrackTransform = .identity
    )
        throws(MediaCodecsError) -> Int
    {
        guard let descriptor = avcodec_descriptor_get_by_name(stream.codecName) else {
            throw MediaCodecsError(
                .unsupportedConfiguration, while: "adding a copied stream to \(path)",
                message: "FFmpeg does not know the codec \(stream.codecName)")
        }
        let isVideo = stream.mediaType == .video
        let index = try addStream(timeBase: stream.timeBase, kind: isVideo ? "video" : "audio") { parameters in
            parameters.pointee.codec_type = isVideo ? AVMEDIA_TYPE_VIDEO : AVMEDIA_TYPE_AUDIO
            parameters.pointee.codec_id = descriptor.pointee.id
            parameters.pointee.bit_rate = Int64(stream.bitRate)
            if isVideo {
                parameters.pointee.width = Int32(stream.width)
                parameters.pointee.height = Int32(stream.height)
                parameters.pointee.format = av_get_pix_fmt(stream.pixelFormatName).rawValue
            } else {
                parameters.pointee.sample_rate = Int32(stream.sampleRate)
                av_channel_layout_default(&parameters.pointee.ch_layout, Int32(stream.channelCount))
                if stream.codecName == "aac" { parameters.pointee.frame_size = 1024 }
            }
            if !stream.extradata.isEmpty {
                let size = stream.extradata.count
                guard let bytes = av_mallocz(size + Int(AV_INPUT_BUFFER_PADDING_SIZE)) else {
                    return CFFmpeg_AVERROR(ENOMEM)
                }
                stream.extradata.withUnsafeBytes { bytes.copyMemory(from: $0.baseAddress!, byteCount: size) }
                parameters.pointee.extradata = bytes.assumingMemoryBound(to: UInt8.self)
                parameters.pointee.extradata_size = Int32(size)
            }
            return 0
        }
        guard let avStream = context?.pointee.streams[index] else { return index }
        if stream.codecName == "hevc" {
            // As addVideoStream: Apple plays HEVC only as 'hvc1'.
            avStream.pointee.codecpar.pointee.codec_tag = CFFmpeg_MKTAG(0x68, 0x76, 0x63, 0x31)
        }
        if isVideo {
            try setTransform(transform, on: avStream)
            transforms[index] = transform
            videoStreams.insert(index)
        }
        return index
    }

    /// Adds a track for already compressed packets described by `formatDescription` (a writer input with nil
    /// output settings): the codec from its subtype or format ID, the size or rate and channels, the `avcC`/`hvcC`
    /// atom or magic cookie. Counted in 1/90000 s for video, 1/rate for audio.
    ///
    /// - Throws: ``MediaCodecsError/Kind/unsupportedConfiguration`` for a format without a codec FFmpeg knows, and
    ///   as ``addStream(copying:transform:)``.
    package func addStream(describedBy formatDescription: CMFormatDescription, transform: TrackTransform = .identity)
        throws(MediaCodecsError) -> Int
    {
        let isVideo = formatDescription.mediaType == .video
        let code = formatDescription.mediaSubType.rawValue
        let asbd = formatDescription.audioStreamBasicDescription
        let codecName: String? =
            isVideo
            ? VideoDecoder.decoderName(for: code)
            : AudioDecoder.decoderName(for: code)
                ?? (code == kAudioFormatLinearPCM ? asbd.flatMap(Self.pcmCodecName) : nil)
        guard let codecName else {
            throw MediaCodecsError(
                .unsupportedConfiguration, while: "adding a passthrough stream to \(path)",
                message: "no FFmpeg codec for '\(fourCharCodeString(code))'")
        }
        let dimensions = formatDescription.dimensions
        let rate = Int(asbd?.mSampleRate ?? 0)
        let stream = Demuxer.Stream(
            index: 0, mediaType: isVideo ? .video : .audio, codecName: codecName, codecTag: 0,
            width: isVideo ? Int(dimensions.width) : 0, height: isVideo ? Int(dimensions.height) : 0,
            sampleRate: rate, channelCount: Int(asbd?.mChannelsPerFrame ?? 0),
            timeBase: AVRational(num: 1, den: isVideo ? 90_000 : Int32(max(rate, 1))), startTime: .invalid,
            duration: .invalid, frameCount: 0, frameRate: 0, bitRate: 0, transform: transform, metadata: [:],
            extradata: compressedFormatExtradata(formatDescription), pixelFormatName: isVideo ? "yuv420p" : "")
        return try addStream(copying: stream, transform: transform)
    }

    /// FFmpeg's PCM codec for an interleaved linear PCM description.
    private static func pcmCodecName(_ asbd: AudioStreamBasicDescription) -> String? {
        let isFloat = asbd.mFormatFlags & kAudioFormatFlagIsFloat != 0
        let endian = asbd.mFormatFlags & kAudioFormatFlagIsBigEndian != 0 ? "be" : "le"
        switch (isFloat, asbd.mBitsPerChannel) {
        case (false, 16): return "pcm_s16" + endian
        case (false, 24): return "pcm_s24" + endian
        case (false, 32): return "pcm_s32" + endian
        case (true, 32): return "pcm_f32" + endian
        default: return nil
        }
    }

    private func addStream(
        timeBase: AVRational, kind: String, parameters: (UnsafeMutablePointer<AVCodecParameters>) -> Int32
    ) throws(MediaCodecsError) -> Int {
        let operation = "adding a \(kind) stream to \(path)"
        guard state == .configuring, let context else {
            throw MediaCodecsError(.invalidState, while: operation, message: "the file was started")
        }
        guard let stream = avformat_new_stream(context, nil) else {
            throw MediaCodecsError(.allocationFailed, while: operation, message: "avformat_new_stream gave NULL")
        }
        let status = parameters(stream.pointee.codecpar)
        guard status >= 0 else { throw .ffmpeg(status, while: operation) }
        let codecID = stream.pointee.codecpar.pointee.codec_id
        guard avformat_query_codec(context.pointee.oformat, codecID, FF_COMPLIANCE_NORMAL) == 1 else {
            let name = String(cString: avcodec_get_name(codecID))
            throw MediaCodecsError(
                .unsupportedConfiguration, while: operation,
                message: "a \(fileType.rawValue) file cannot hold \(name)")
        }
        stream.pointee.time_base = timeBase
        sizeBound.addStream(extradataBytes: Int(stream.pointee.codecpar.pointee.extradata_size))
        return Int(stream.pointee.index)
    }

    func setTransform(
        _ transform: TrackTransform, on stream: UnsafeMutablePointer<AVStream>
    )
        throws(MediaCodecsError)
    {
        guard transform != .identity else { return }
        // av_display_rotation_set lives in libavutil/display.h, which the shim does not include; the matrix is
        // written directly in the same layout.
        guard let bytes = av_stream_new_side_data(stream, AV_PKT_DATA_DISPLAYMATRIX, 36) else {
            throw MediaCodecsError(
                .allocationFailed, while: "setting a track matrix", message: "av_stream_new_side_data gave NULL")
        }
        let matrix = transform.displayMatrix
        UnsafeMutableRawPointer(bytes).withMemoryRebound(to: Int32.self, capacity: 9) { destination in
            for index in 0..<9 { destination[index] = matrix[index] }
        }
    }
}
