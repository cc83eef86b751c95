import CPipeWire
import Dispatch
import Foundation
import OpenCoreMedia
import OpenCoreVideo
import Synchronization
import SystemPackage

/// One capture stream from a PipeWire node (`pw_stream` through the shim): connected to the node by its serial,
/// asking for one fixed format, its buffers turned into sample buffers on PipeWire's loop thread.
///
/// Frames in MemFd (and DmaBuf) memory are lent downstream as pixel or block buffers over the shim's own mapping,
/// and go back to the node when released, as V4L2's mmap buffers do: a consumer that holds them all makes the node
/// wait. Memory only PipeWire can map (private MemPtr memory) is copied. Audio is copied into block buffers (a
/// period is a few kilobytes) and stamped by an `ALSAPeriodClock` from the graph's time.
///
/// Timestamps: a frame's header meta time where it is on the host clock (PipeWire's V4L2 nodes stamp with the
/// kernel's CLOCK_MONOTONIC time), else the graph cycle's CLOCK_MONOTONIC time.
///
/// Threading: `start` and `stop` from the device's caller; the sink runs on PipeWire's loop thread. `stop` from
/// inside the sink (the loop thread) returns at once and lets the stream go on a queue of its own.
final class PipeWireCaptureStream: @unchecked Sendable {
    /// How long a node may take to agree on the format before start gives up.
    static let negotiationTimeout: DispatchTimeInterval = .seconds(5)

    private let connection: PipeWireConnection
    private let node: PipeWireNode
    private let format: DeviceFormat
    private let frameDuration: CMTime
    private let sink: StreamSink
    private let cursorSink: (@Sendable (PipeWireCursorUpdate) -> Void)?
    private let request: CPipeWire_StreamFormat
    private let negotiated = DispatchSemaphore(value: 0)

    /// The shim's stream; the shim serializes its use on the loop lock.
    private struct Handle: @unchecked Sendable {
        let pointer: OpaquePointer
    }

    private struct State {
        var handle: Handle?
        var agreed: CPipeWire_StreamFormat?
        var failure: String?
        var isFinished = false
        var loopThread: pthread_t?
        var delivery = DeliveryState()
    }

    /// What the loop thread tracks between buffers.
    struct DeliveryState {
        var sequence: UInt64 = 0
        var lastHeaderSequence: UInt64?
        var audioClock: ALSAPeriodClock?
    }

    private let state = Mutex(State())
    private let formatDescription: CMFormatDescription

    /// A stream for `format` from `node`; `start` connects it. `cursorSink` hears each video buffer's cursor meta
    /// (a screen cast's, in cursor mode metadata) on the loop thread, before its frame reaches `sink`.
    init(
        connection: PipeWireConnection, node: PipeWireNode, format: DeviceFormat, frameDuration: CMTime,
        sink: @escaping StreamSink, cursorSink: (@Sendable (PipeWireCursorUpdate) -> Void)? = nil
    ) throws(DeviceFault) {
        guard let request = PipeWireFormats.streamRequest(for: format, frameDuration: frameDuration) else {
            throw .explained(.io(.invalidArgument), advice: "\(node.localizedName) has no such format")
        }
        self.connection = connection
        self.node = node
        self.format = format
        self.frameDuration = frameDuration
        self.sink = sink
        self.cursorSink = cursorSink
        self.request = request
        do {
            switch format {
            case .video(let video):
                formatDescription = try CMFormatDescription(
                    videoCodecType: .init(rawValue: video.mediaSubType), width: Int(video.width),
                    height: Int(video.height))
            case .audio(let audio):
                formatDescription = try CMFormatDescription(audioStreamBasicDescription: audio.streamDescription)
            }
        } catch {
            throw .explained(.io(.invalidArgument), advice: "\(node.localizedName): \(error)")
        }
    }

    deinit {
        if let handle = state.withLock({ $0.handle }) { CPipeWire_stream_destroy(handle.pointer) }
    }

    /// Connects to the node and waits until it has agreed on the format. Throws, explained, when the node refuses or
    /// never answers.
    func start() throws(DeviceFault) {
        var callbacks = CPipeWire_StreamCallbacks()
        callbacks.context = Unmanaged.passUnretained(self).toOpaque()
        callbacks.state_changed = { context, state, error in
            guard let context else { return }
            let stream = Unmanaged<PipeWireCaptureStream>.fromOpaque(context).takeUnretainedValue()
            stream.stateChanged(state, error: error.map { String(cString: $0) })
        }
        callbacks.format_changed = { context, format in
            guard let context, let format else { return }
            Unmanaged<PipeWireCaptureStream>.fromOpaque(context).takeUnretainedValue().formatChanged(format.pointee)
        }
        callbacks.process = { context in
            guard let context else { return }
            Unmanaged<PipeWireCaptureStream>.fromOpaque(context).takeUnretainedValue().process()
        }
        var error: Int32 = 0
        let handle = CPipeWire_stream_connect(
            connection.handle, node.target, "OpenAVCapture \(node.localizedName)", request, 4, callbacks, &error)
        guard let handle else {
            throw error == -EPIPE ? .disconnected : .io(Errno(rawValue: -error))
        }
        let stored = Handle(pointer: handle)
        state.withLock { $0.handle = stored }
        let answered = negotiated.wait(timeout: .now() + Self.negotiationTimeout) == .success
        let (agreed, failure) = state.withLock { ($0.agreed, $0.failure) }
        if let agreed, failure == nil, Self.matches(agreed, request) { return }
        destroy()
        if !connection.isAlive { throw .disconnected }
        let wanted = Self.describe(request)
        let reason =
            if let failure { "PipeWire said: \(failure)" } else if let agreed {
                "it offered \(Self.describe(agreed)) instead"
            } else if answered { "it did not say why" } else {
                "it did not answer within \(Self.negotiationTimeout)"
            }
        throw .explained(
            .io(.protocolNotSupported),
            advice:
                "\(node.localizedName) did not agree to stream \(wanted): \(reason). Choose one of the formats "
                + "`avcapture formats` lists for it; if it lists none, the node's program may be stuck.")
    }

    /// Stops the stream. No sink call happens after it returns (unless called from the sink itself).
    func stop() {
        let onLoopThread = state.withLock { state in
            state.isFinished = true
            return state.loopThread.map { pthread_equal($0, pthread_self()) != 0 } ?? false
        }
        if onLoopThread {
            // The shim cannot destroy a stream from its own callback: finish on another thread.
            DispatchQueue.global().async { [self] in destroy() }
        } else {
            destroy()
        }
    }

    private func destroy() {
        if let handle = state.withLock({ state in defer { state.handle = nil }; return state.handle }) {
            CPipeWire_stream_destroy(handle.pointer)
        }
    }

    // MARK: PipeWire's loop thread

    private func stateChanged(_ newState: CPipeWire_StreamState, error: String?) {
        guard newState == CPipeWire_STREAM_ERROR else { return }
        let wasNegotiating = state.withLock { state in
            defer { state.failure = error ?? "stream error" }
            return state.agreed == nil
        }
        if wasNegotiating {
            negotiated.signal()
        } else {
            failOnLoopThread(
                .explained(.io(.ioError), advice: "PipeWire stopped \(node.localizedName): \(error ?? "an error")"))
        }
    }

    private func formatChanged(_ format: CPipeWire_StreamFormat) {
        let first = state.withLock { state in
            state.loopThread = pthread_self()
            defer { state.agreed = format }
            return state.agreed == nil
        }
        if first { negotiated.signal() }
    }

    /// The node went away or the stream broke: the sink hears it once, and nothing after, on the loop thread (so
    /// never while a frame is being delivered).
    func fail(_ fault: DeviceFault) {
        connection.onLoopThread { [self] in failOnLoopThread(fault) }
    }

    private func failOnLoopThread(_ fault: DeviceFault) {
        let proceed = state.withLock { state in
            defer { state.isFinished = true }
            return !state.isFinished
        }
        guard proceed else { return }
        sink(.fault(fault))
        // The device stops itself after a fault, as the contract says.
        stop()
    }

    private func process() {
        let stored = state.withLock { state -> Handle? in
            state.loopThread = pthread_self()
            return state.isFinished ? nil : state.handle
        }
        guard let handle = stored?.pointer else { return }
        var buffer = CPipeWire_Buffer()
        while CPipeWire_stream_dequeue(handle, &buffer) == 0 {
            deliver(buffer, from: handle)
        }
    }

    private func deliver(_ buffer: CPipeWire_Buffer, from handle: OpaquePointer) {
        var delivery = state.withLock { $0.delivery }
        defer { state.withLock { $0.delivery = delivery } }
        let lease = PipeWireBufferLease(handle: handle, buffer: buffer.handle, connection: connection)
        switch format {
        case .audio(let audio):
            deliverAudio(buffer, lease: lease, format: audio, delivery: &delivery)
        case .video(let video):
            cursorSink?(PipeWireCursorUpdate(buffer))
            // A buffer with no picture on a stream that reads cursors is the pointer moving (or leaving) over an
            // unchanged screen (mutter sends such buffers): not a lost frame.
            if buffer.plane_sizes.0 == 0 && cursorSink != nil {
                lease.giveBack()
                return
            }
            let time = Self.videoTime(of: buffer)
            reportSkipped(buffer, time: time, delivery: &delivery)
            let sequence = delivery.sequence
            delivery.sequence += 1
            guard !buffer.is_corrupted,
                let sample = PipeWireFrameWrapper.sample(
                    buffer, lease: lease, video: video, formatDescription: formatDescription, frameDuration: frameDuration,
                    time: time)
            else {
                lease.giveBack()
                sink(.dropped(sequence: sequence, presentationTime: time, reason: .discontinuity))
                return
            }
            sink(.output(sample, sequence: sequence))
        }
    }

    /// Frames the node's header sequence says it skipped since the last one.
    private func reportSkipped(_ buffer: CPipeWire_Buffer, time: CMTime, delivery: inout DeliveryState) {
        guard buffer.has_header else { return }
        defer { delivery.lastHeaderSequence = buffer.header_sequence }
        guard let last = delivery.lastHeaderSequence, buffer.header_sequence > last + 1,
            buffer.header_sequence - last <= 1000
        else { return }
        for index in 1..<(buffer.header_sequence - last) {
            let skippedTime = time - CMTimeMultiply(frameDuration, multiplier: Int32(buffer.header_sequence - last - index))
            sink(.dropped(sequence: delivery.sequence, presentationTime: skippedTime, reason: .discontinuity))
            delivery.sequence += 1
        }
    }

    private func deliverAudio(
        _ buffer: CPipeWire_Buffer, lease: PipeWireBufferLease, format: AudioFormat, delivery: inout DeliveryState
    ) {
        defer { lease.giveBack() }
        let bytesPerFrame = Int(format.streamDescription.mBytesPerFrame)
        guard let data = buffer.planes.0, bytesPerFrame > 0 else { return }
        let frames = Int(buffer.plane_sizes.0) / bytesPerFrame
        guard frames > 0 else { return }
        let block = CMBlockBuffer(length: frames * bytesPerFrame)
        block.withUnsafeMutableBytes { $0.copyMemory(from: UnsafeRawBufferPointer(start: data, count: $0.count)) }
        var clock = delivery.audioClock ?? ALSAPeriodClock(sampleRate: format.sampleRate, periodFrames: frames)
        let duration = Int64(Double(frames) / format.sampleRate * 1e9)
        let cycle = buffer.graph_now > 0 ? buffer.graph_now : CMClock.hostNanosecondsNow()
        let stamp = clock.stamp(frames: frames, measured: cycle - buffer.delay_ns - duration)
        delivery.audioClock = clock
        let timing = CMSampleTimingInfo(
            duration: CMTime(value: 1, timescale: Int32(format.sampleRate)),
            presentationTimeStamp: CMClock.hostTime(nanoseconds: stamp.hostNanoseconds), decodeTimeStamp: .invalid)
        guard
            let sample = try? CMSampleBuffer(
                dataBuffer: block, formatDescription: formatDescription, numSamples: frames, sampleTimings: [timing],
                sampleSizes: [bytesPerFrame])
        else { return }
        sink(.output(sample, sequence: delivery.sequence))
        delivery.sequence += 1
    }

    // MARK: Helpers

    /// The frame's time on the host clock: the header's when it is one (within two seconds of now), else the graph
    /// cycle's, else now.
    static func videoTime(of buffer: CPipeWire_Buffer) -> CMTime {
        let now = CMClock.hostNanosecondsNow()
        if buffer.has_header, buffer.header_pts > 0, abs(buffer.header_pts - now) < 2_000_000_000 {
            return CMClock.hostTime(nanoseconds: buffer.header_pts)
        }
        return CMClock.hostTime(nanoseconds: buffer.graph_now > 0 ? buffer.graph_now : now)
    }

    /// Whether the node agreed to what was asked (the rate aside: nodes may fix it within what they offered).
    static func matches(_ agreed: CPipeWire_StreamFormat, _ request: CPipeWire_StreamFormat) -> Bool {
        guard agreed.media == request.media else { return false }
        if request.media == CPipeWire_MEDIA_AUDIO_RAW {
            return agreed.samples == request.samples && agreed.audio_rate == request.audio_rate
                && agreed.audio_channels == request.audio_channels
        }
        // BGRx and BGRA are asked for together (a screen node's choice) and read alike.
        let screenPixels: Set<UInt32> = [CPipeWire_PIXELS_BGRX.rawValue, CPipeWire_PIXELS_BGRA.rawValue]
        let samePixels =
            agreed.pixels == request.pixels
            || (screenPixels.contains(agreed.pixels.rawValue) && screenPixels.contains(request.pixels.rawValue))
        return agreed.width == request.width && agreed.height == request.height
            && (request.media != CPipeWire_MEDIA_VIDEO_RAW || samePixels)
    }

    static func describe(_ format: CPipeWire_StreamFormat) -> String {
        switch format.media {
        case CPipeWire_MEDIA_AUDIO_RAW:
            let samples = format.samples == CPipeWire_SAMPLES_S16 ? "S16" : "F32"
            return "\(samples) \(format.audio_rate) Hz \(format.audio_channels) ch"
        case CPipeWire_MEDIA_VIDEO_MJPG: return "MJPEG \(format.width)x\(format.height)"
        case CPipeWire_MEDIA_VIDEO_H264: return "H.264 \(format.width)x\(format.height)"
        default:
            let names = [CPipeWire_PIXELS_YUY2: "YUY2", CPipeWire_PIXELS_NV12: "NV12", CPipeWire_PIXELS_I420: "I420",
                         CPipeWire_PIXELS_UYVY: "UYVY"]
            let rate = format.rate_den > 0 ? "@\(format.rate_num)/\(format.rate_den)" : ""
            return "\(names[format.pixels] ?? "raw") \(format.width)x\(format.height)\(rate)"
        }
    }
}

/// A buffer taken from a stream, to be given back exactly once: when the frame lent downstream is released, or at
/// once when it was copied. Holds the connection, whose loop the shim locks to give it back.
///
/// Threading: thread safe.
final class PipeWireBufferLease: Sendable {
    // The shim's stream and lease; it locks its loop to use them.
    nonisolated(unsafe) private let handle: OpaquePointer
    nonisolated(unsafe) private let buffer: UnsafeMutableRawPointer?
    private let connection: PipeWireConnection
    private let isGivenBack = Atomic<Bool>(false)

    init(handle: OpaquePointer, buffer: UnsafeMutableRawPointer?, connection: PipeWireConnection) {
        self.handle = handle
        self.buffer = buffer
        self.connection = connection
    }

    func giveBack() {
        guard !isGivenBack.exchange(true, ordering: .acquiringAndReleasing) else { return }
        withExtendedLifetime(connection) { CPipeWire_stream_queue(handle, buffer) }
    }

    deinit { giveBack() }
}
