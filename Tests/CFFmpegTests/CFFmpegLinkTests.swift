import CFFmpeg
import Testing

/// The shim links against FFmpeg 5.1's libraries and its macro replacements agree with FFmpeg.
@Suite struct CFFmpegLinkTests {
    @Test func librariesAreFFmpeg5_1() {
        // FFmpeg 5.1: libavformat 59, libavcodec 59, libavutil 57, libswscale 6, libswresample 4.
        #expect(avformat_version() >> 16 == 59)
        #expect(avcodec_version() >> 16 == 59)
        #expect(avutil_version() >> 16 == 57)
        #expect(swscale_version() >> 16 == 6)
        #expect(swresample_version() >> 16 == 4)
    }

    @Test func errorCodesAndTheirMessages() {
        #expect(CFFmpeg_AVERROR(EAGAIN) == -EAGAIN)
        #expect(CFFmpeg_AVERROR_EAGAIN() == -EAGAIN)
        // AVERROR_EOF is FFERRTAG('E','O','F',' '), negated.
        #expect(CFFmpeg_AVERROR_EOF() == -Int32(bitPattern: CFFmpeg_MKTAG(69, 79, 70, 32)))
        let capacity = CFFmpeg_errorStringCapacity()
        var buffer = [CChar](repeating: 0, count: capacity)
        let message = buffer.withUnsafeMutableBufferPointer { pointer in
            String(cString: CFFmpeg_errorString(CFFmpeg_AVERROR_EOF(), pointer.baseAddress, capacity))
        }
        #expect(message == "End of file")
    }

    @Test func timestampConstants() {
        #expect(CFFmpeg_AV_NOPTS_VALUE() == Int64.min)
        let timeBase = CFFmpeg_AV_TIME_BASE_Q()
        #expect(timeBase.num == 1 && timeBase.den == 1_000_000)
    }

    @Test func encoderLookupAndFramePlanes() throws {
        // The codecs the recording issue depends on are present in Debian's build.
        #expect(avcodec_find_encoder_by_name("libx264") != nil)
        #expect(avcodec_find_encoder_by_name("aac") != nil)

        var frame: UnsafeMutablePointer<AVFrame>? = av_frame_alloc()
        defer { av_frame_free(&frame) }
        let allocated = try #require(frame)
        allocated.pointee.format = AV_PIX_FMT_NV12.rawValue
        allocated.pointee.width = 64
        allocated.pointee.height = 48
        #expect(av_frame_get_buffer(allocated, 0) == 0)
        #expect(CFFmpeg_frameData(allocated, 0) != nil)
        #expect(CFFmpeg_frameData(allocated, 1) != nil)
        #expect(CFFmpeg_frameData(allocated, 2) == nil)
        #expect(CFFmpeg_frameLinesize(allocated, 0) >= 64)
        #expect(CFFmpeg_frameData(allocated, CFFmpeg_frameMaxPlanes()) == nil)
    }

    @Test func loggingBridgeReachesTheCallback() {
        av_log_set_level(AV_LOG_INFO)
        av_log_set_callback { _, level, format, arguments in
            guard level == AV_LOG_WARNING, let format, let arguments else { return }
            var line = [CChar](repeating: 0, count: 256)
            var printPrefix: Int32 = 1
            av_log_format_line2(nil, level, format, arguments, &line, 256, &printPrefix)
            let text = line.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
            if text == "bridged 42" { CapturedLog.sawMessage = true }
        }
        defer { CFFmpeg_useDefaultLogCallback() }
        CFFmpeg_log(nil, AV_LOG_WARNING, "bridged 42")
        #expect(CapturedLog.sawMessage)
    }
}

/// Written by FFmpeg's log callback, which cannot capture context; read once on the test's thread.
private enum CapturedLog {
    nonisolated(unsafe) static var sawMessage = false
}
