// AudioTimeStretcher: interleaved Float32 sound made longer or shorter, its pitch kept (atempo) or moved (varispeed).

import CFFmpeg

/// Stretches sound in time by a factor with a libavfilter graph: slow motion's 8× makes 1 s of sound last 8 s.
///
/// Keeping the pitch (Apple's `.spectral` and `.timeDomain`): `atempo`, FFmpeg's time-domain overlap-add
/// stretcher (WSOLA-like: it cuts the sound into overlapping windows and lays them out at the new pace, aligned for
/// the best correlation). Its tempo runs 0.5…100 per instance in FFmpeg 5.1, so a tempo below 0.5 is a chain
/// (1/8 = 0.5 × 0.5 × 0.5). Moving the pitch (`.varispeed`): `asetrate` relabels the samples at rate ÷ factor, and
/// `aresample` brings them back to the rate, as a tape played slower.
///
/// Input and output: interleaved native-endian Float32 at one rate and channel count (`aformat` at the end of the
/// graph keeps it so). The output's length is the input's times the factor, give or take the filters' rounding
/// (a few milliseconds); callers that need an exact length pad or cut the end.
///
/// Wraps `avfilter_graph_alloc`, `avfilter_graph_create_filter`, `avfilter_graph_parse_ptr`,
/// `avfilter_graph_config`, `av_buffersrc_add_frame`, `av_buffersink_get_frame` and their frees; the stretcher is
/// the one owner of its graph and frame.
///
/// Threading: thread-bound; use it from one thread at a time. Not `Sendable`.
package final class AudioTimeStretcher {
    /// How the pitch follows the stretch.
    ///
    /// Threading: a value; `Sendable`.
    package enum Pitch: Sendable {
        /// The pitch stays (`atempo`).
        case kept
        /// The pitch moves with the speed (`asetrate` + `aresample`).
        case varispeed
    }

    package let sampleRate: Int
    package let channelCount: Int
    /// Output duration ÷ input duration (8 for 8× slow motion).
    package let factor: Double
    /// The filter chain between the source and the sink, as FFmpeg's graph syntax.
    package let filterDescription: String

    private var graph: UnsafeMutablePointer<AVFilterGraph>?
    private var source: UnsafeMutablePointer<AVFilterContext>?
    private var sink: UnsafeMutablePointer<AVFilterContext>?
    private var frame: UnsafeMutablePointer<AVFrame>?
    private var inputFrames: Int64 = 0
    private var isFinished = false

    /// A stretcher by `factor` (0.01…100) for sound of `sampleRate` and `channelCount` (1…8).
    ///
    /// - Throws: ``MediaCodecsError`` of kind ``MediaCodecsError/Kind/unsupportedConfiguration`` for a factor or
    ///   format out of range, ``MediaCodecsError/Kind/allocationFailed``, ``MediaCodecsError/Kind/ffmpeg`` when
    ///   libavfilter refuses the graph.
    package init(sampleRate: Int, channelCount: Int, factor: Double, pitch: Pitch) throws(MediaCodecsError) {
        let operation = "creating a ×\(factor) audio stretcher"
        guard factor >= 0.01, factor <= 100, (1...8).contains(channelCount), sampleRate >= 1000 else {
            throw MediaCodecsError(
                .unsupportedConfiguration, while: operation,
                message: "the factor must be 0.01…100, channels 1…8, the rate at least 1 kHz")
        }
        self.sampleRate = sampleRate
        self.channelCount = channelCount
        self.factor = factor
        let layout = Self.layoutName(channelCount)
        var chain: [String]
        switch pitch {
        case .kept:
            chain = Self.tempoChain(1 / factor).map { "atempo=\($0)" }
        case .varispeed:
            chain = ["asetrate=\(Double(sampleRate) / factor)", "aresample=\(sampleRate)"]
        }
        chain.append("aformat=sample_fmts=flt:sample_rates=\(sampleRate):channel_layouts=\(layout)")
        filterDescription = chain.joined(separator: ",")
        try build(layout: layout, operation: operation)
    }

    deinit {
        avfilter_graph_free(&graph)
        av_frame_free(&frame)
    }

    /// Tempos in atempo's range whose product is `tempo`.
    static func tempoChain(_ tempo: Double) -> [Double] {
        var remaining = tempo
        var chain: [Double] = []
        while remaining < 0.5 {
            chain.append(0.5)
            remaining /= 0.5
        }
        while remaining > 100 {
            chain.append(100)
            remaining /= 100
        }
        chain.append(remaining)
        return chain
    }

    private static func layoutName(_ channels: Int) -> String {
        switch channels {
        case 1: "mono"
        case 2: "stereo"
        default: "\(channels)c"
        }
    }

    private func build(layout: String, operation: String) throws(MediaCodecsError) {
        guard let graph = avfilter_graph_alloc(), let frame = av_frame_alloc() else {
            throw MediaCodecsError(.allocationFailed, while: operation, message: "avfilter_graph_alloc gave NULL")
        }
        self.graph = graph
        self.frame = frame
        let arguments = "sample_rate=\(sampleRate):sample_fmt=flt:channel_layout=\(layout):time_base=1/\(sampleRate)"
        var status = avfilter_graph_create_filter(&source, avfilter_get_by_name("abuffer"), "in", arguments, nil, graph)
        guard status >= 0 else { throw .ffmpeg(status, while: "\(operation) (abuffer)") }
        status = avfilter_graph_create_filter(&sink, avfilter_get_by_name("abuffersink"), "out", nil, nil, graph)
        guard status >= 0 else { throw .ffmpeg(status, while: "\(operation) (abuffersink)") }
        // The parser's open ends: its input "in" is fed by our source, its output "out" feeds our sink.
        // avfilter_graph_parse_ptr takes both lists and hands back what it did not link; those are freed after.
        var outputs = avfilter_inout_alloc()
        var inputs = avfilter_inout_alloc()
        guard let openOutput = outputs, let openInput = inputs else {
            avfilter_inout_free(&outputs)
            avfilter_inout_free(&inputs)
            throw MediaCodecsError(.allocationFailed, while: operation, message: "avfilter_inout_alloc gave NULL")
        }
        openOutput.pointee.name = av_strdup("in")
        openOutput.pointee.filter_ctx = source
        openOutput.pointee.pad_idx = 0
        openOutput.pointee.next = nil
        openInput.pointee.name = av_strdup("out")
        openInput.pointee.filter_ctx = sink
        openInput.pointee.pad_idx = 0
        openInput.pointee.next = nil
        status = avfilter_graph_parse_ptr(graph, filterDescription, &inputs, &outputs, nil)
        avfilter_inout_free(&inputs)
        avfilter_inout_free(&outputs)
        guard status >= 0 else { throw .ffmpeg(status, while: "\(operation) (parsing \(filterDescription))") }
        status = avfilter_graph_config(graph, nil)
        guard status >= 0 else { throw .ffmpeg(status, while: "\(operation) (configuring \(filterDescription))") }
    }

    /// Stretches `frameCount` interleaved frames at `samples`; returns the stretched frames ready so far
    /// (interleaved), which lag the input by the filter's window.
    ///
    /// - Throws: ``MediaCodecsError`` of kind ``MediaCodecsError/Kind/ffmpeg`` when filtering fails,
    ///   ``MediaCodecsError/Kind/invalidState`` after ``finish()``.
    package func process(_ samples: UnsafeBufferPointer<Float>, frameCount: Int) throws(MediaCodecsError) -> [Float] {
        let operation = "stretching sound with \(filterDescription)"
        guard !isFinished else {
            throw MediaCodecsError(.invalidState, while: operation, message: "the stretcher was finished")
        }
        guard frameCount > 0, let frame else { return [] }
        frame.pointee.nb_samples = Int32(frameCount)
        frame.pointee.format = AV_SAMPLE_FMT_FLT.rawValue
        frame.pointee.sample_rate = Int32(sampleRate)
        av_channel_layout_default(&frame.pointee.ch_layout, Int32(channelCount))
        frame.pointee.pts = inputFrames
        var status = av_frame_get_buffer(frame, 0)
        guard status >= 0, let data = frame.pointee.data.0 else { throw .ffmpeg(status, while: operation) }
        UnsafeMutableRawPointer(data).copyMemory(
            from: samples.baseAddress!, byteCount: frameCount * channelCount * MemoryLayout<Float>.size)
        inputFrames += Int64(frameCount)
        status = av_buffersrc_add_frame(source, frame)
        av_frame_unref(frame)
        guard status >= 0 else { throw .ffmpeg(status, while: operation) }
        return try drain(operation: operation)
    }

    /// Ends the input; returns the last stretched frames.
    package func finish() throws(MediaCodecsError) -> [Float] {
        guard !isFinished else { return [] }
        isFinished = true
        let operation = "finishing \(filterDescription)"
        let status = av_buffersrc_add_frame(source, nil)
        guard status >= 0 else { throw .ffmpeg(status, while: operation) }
        return try drain(operation: operation)
    }

    private func drain(operation: String) throws(MediaCodecsError) -> [Float] {
        guard let frame else { return [] }
        var output: [Float] = []
        while true {
            let status = av_buffersink_get_frame(sink, frame)
            if status == CFFmpeg_AVERROR_EAGAIN() || status == CFFmpeg_AVERROR_EOF() { return output }
            guard status >= 0 else { throw .ffmpeg(status, while: operation) }
            let count = Int(frame.pointee.nb_samples) * channelCount
            if count > 0, let data = frame.pointee.data.0 {
                UnsafeRawPointer(data).withMemoryRebound(to: Float.self, capacity: count) { floats in
                    output.append(contentsOf: UnsafeBufferPointer(start: floats, count: count))
                }
            }
            av_frame_unref(frame)
        }
    }
}
