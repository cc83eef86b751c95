import CLinuxMedia
import OpenCoreMedia
import OpenCoreVideo
import SystemPackage

/// A V4L2 stateful memory-to-memory encoder (the Raspberry Pi's `bcm2835-codec`, a SoC's VPU, the kernel's
/// `vicodec`), driven as the kernel's encoder interface says (dev-encoder.rst): CAPTURE's coded format first, then
/// OUTPUT's raw one, the controls, buffers on both queues, STREAMON; pictures in, packets out; a drain
/// (`V4L2_ENC_CMD_STOP` until the packet flagged `V4L2_BUF_FLAG_LAST`) on `finish`.
///
/// What FFmpeg's `h264_v4l2m2m` gets wrong, done here: the GOP is set through `V4L2_CID_MPEG_VIDEO_GOP_SIZE` (and
/// `…_H264_I_PERIOD`) where the driver has them; parameter sets are asked for with the first frame
/// (`HEADER_MODE_JOINED_WITH_1ST_FRAME`) and on every key frame (`REPEAT_SEQ_HEADER`), and a packet holding only
/// parameter sets (a driver that gives them apart) is joined to the picture after it, so the first packet a muxer
/// sees carries them. Pictures are copied once, into the OUTPUT queue's memory-mapped buffers (see docs/devices.md
/// on why no DMABUF or USERPTR import yet).
///
/// Errors are values (`V4L2EncoderError`) that say what to do; the device's own errors are in them.
///
/// Threading: thread-bound. One thread at a time calls `encode`, `finish` and `reconfigure`; the object may move
/// between threads between calls.
package final class V4L2MemoryToMemoryEncoder {
    package let path: String
    package private(set) var settings: V4L2EncoderSettings
    /// The controls the driver took, by name, with the value it kept (what was honoured, for logs and tests).
    package private(set) var appliedControls: [String: Int32] = [:]
    /// The controls the driver has (VIDIOC_QUERY_EXT_CTRL), by id.
    private var availableControls: Set<UInt32> = []

    private let node: V4L2Node
    private let outputType: V4L2BufferType
    private let captureType: V4L2BufferType
    private var stream: Stream?
    /// Presentation times of the pictures queued and not yet coded, by the microsecond stamp handed to the driver.
    private var pendingTimes: [Int64: CMTime] = [:]
    /// Parameter sets given in a packet of their own, waiting for the picture they go before.
    private var heldParameterSets: [UInt8] = []

    /// The buffers of one negotiated format; dropped (unmapped) when the format changes.
    private struct Stream {
        let pictureFormat: V4L2ChosenFormat
        let output: V4L2MappedBuffers
        let capture: V4L2MappedBuffers
        var freeOutput: [Int]
        var draining = false
    }

    /// Opens the encoder at `path` and negotiates `settings`; throws when the node is no encoder, lacks a format,
    /// or will not take the size.
    package init(path: String, settings: V4L2EncoderSettings, system: SystemCalls = .live) throws(V4L2EncoderError) {
        self.path = path
        self.settings = settings
        let opened: V4L2Node
        do {
            opened = try V4L2Node(path: path, system: system)
        } catch {
            throw .cannotOpen(path: path, error)
        }
        node = opened
        let capability = try Self.device("QUERYCAP") { () throws(Errno) in try opened.capability() }
        guard let queues = capability.memoryToMemoryQueues else { throw .notAMemoryToMemoryDevice(path: path) }
        (outputType, captureType) = queues
        try start()
    }

    deinit {
        // Releasing the buffers before the descriptor closes is the kernel's business; streaming stops with close.
        stream = nil
    }

    // MARK: Encoding

    /// Queues `picture` (in `settings.pictureFormat`, at the settings' size) stamped `presentationTime`, and returns
    /// the packets the device has finished since the last call (none, one, or a few: a device works a picture or
    /// two behind).
    package func encode(
        _ picture: CVPixelBuffer, presentationTime: CMTime
    ) throws(V4L2EncoderError)
        -> [V4L2EncodedPacket]
    {
        guard var current = stream, !current.draining else { throw .notRunning }
        var packets = try collectPackets(waitMilliseconds: 0)
        try reclaimOutputBuffers(into: &current)
        // Every OUTPUT buffer is with the device: wait for one to come back, taking the packets that come too.
        while current.freeOutput.isEmpty {
            packets += try collectPackets(waitMilliseconds: 1000)
            try reclaimOutputBuffers(into: &current)
        }
        let index = current.freeOutput.removeLast()
        let bytesUsed = try V4L2PictureCopy.copy(
            picture, into: current.output.mappings[index], format: current.pictureFormat, width: settings.width,
            height: settings.height)
        let stamp = presentationTime.microsecondStamp(after: pendingTimes.keys.max())
        pendingTimes[stamp] = presentationTime
        stream = current
        try Self.device("QBUF(OUTPUT)") { () throws(Errno) in
            try node.queueOutput(index, type: outputType, bytesUsed: bytesUsed, timestamp: timeval(microseconds: stamp))
        }
        return packets + (try collectPackets(waitMilliseconds: 0))
    }

    /// Asks for the next picture queued to be coded as a key frame (`V4L2_CID_MPEG_VIDEO_FORCE_KEY_FRAME`); false
    /// when the driver has no such control (its GOP alone places key frames then).
    package func requestKeyFrame() throws(V4L2EncoderError) -> Bool {
        let control = UInt32(V4L2_CID_MPEG_VIDEO_FORCE_KEY_FRAME)
        guard availableControls.contains(control) else { return false }
        _ = try Self.device("S_CTRL(force_key_frame)") { () throws(Errno) in try node.setValue(1, of: control) }
        return true
    }

    /// Drains the encoder: tells it to stop (`V4L2_ENC_CMD_STOP`) and returns every packet still inside, up to the
    /// one flagged `V4L2_BUF_FLAG_LAST`; then stops both queues. `reconfigure` starts it again.
    package func finish(timeoutSeconds: Int = 10) throws(V4L2EncoderError) -> [V4L2EncodedPacket] {
        guard stream != nil, stream?.draining == false else { return [] }
        stream?.draining = true
        try Self.device("ENCODER_CMD(STOP)") { () throws(Errno) in try node.stopEncoding() }
        var packets: [V4L2EncodedPacket] = []
        var waited = 0
        while true {
            guard try Self.device("poll", { () throws(Errno) in try node.waitUntilReadable(milliseconds: 100) })
            else {
                waited += 100
                if waited >= timeoutSeconds * 1000 { throw .drainTimedOut(seconds: timeoutSeconds) }
                continue
            }
            let (ready, last) = try dequeuePackets()
            packets += ready
            if last { break }
        }
        try stopStreaming()
        return packets
    }

    /// Encodes at a new size from here on (a resolution change): drains what is inside (the packets are returned),
    /// stops, frees the buffers, and negotiates again. The next packet is a key frame with new parameter sets.
    package func reconfigure(width: Int, height: Int) throws(V4L2EncoderError) -> [V4L2EncodedPacket] {
        let drained = try finish()
        stream = nil
        _ = try? node.requestBuffers(0, type: outputType)
        _ = try? node.requestBuffers(0, type: captureType)
        settings.width = width
        settings.height = height
        try start()
        return drained
    }

    // MARK: Negotiation

    private func start() throws(V4L2EncoderError) {
        try checkOffered(settings.codedFormat, on: captureType)
        try checkOffered(settings.pictureFormat, on: outputType)
        // The coded format first: an encoder derives what its OUTPUT queue takes from it.
        let coded = try Self.device("S_FMT(CAPTURE)") { () throws(Errno) in
            try node.setFormat(
                settings.codedFormat, width: UInt32(settings.width), height: UInt32(settings.height),
                type: captureType)
        }
        guard coded.pixelFormat == settings.codedFormat else {
            throw .formatNotOffered(settings.codedFormat, queue: captureType.description, offered: [coded.pixelFormat])
        }
        let picture = try Self.device("S_FMT(OUTPUT)") { () throws(Errno) in
            try node.setFormat(
                settings.pictureFormat, width: UInt32(settings.width), height: UInt32(settings.height),
                type: outputType)
        }
        guard picture.pixelFormat == settings.pictureFormat else {
            throw .formatNotOffered(
                settings.pictureFormat, queue: outputType.description, offered: [picture.pixelFormat])
        }
        if picture.width != settings.width || picture.height != settings.height {
            try cropVisibleArea(codedWidth: Int(picture.width), codedHeight: Int(picture.height))
        }
        try applyControls()
        let count = UInt32(settings.bufferCount)
        let outputCount = try Self.device("REQBUFS(OUTPUT)") { () throws(Errno) in
            try node.requestBuffers(count, type: outputType)
        }
        let captureCount = try Self.device("REQBUFS(CAPTURE)") { () throws(Errno) in
            try node.requestBuffers(count, type: captureType)
        }
        let output = try Self.device("mmap(OUTPUT)") { () throws(Errno) in
            try V4L2MappedBuffers(
                node: node, count: min(outputCount, V4L2MappedBuffers.maximumCount), type: outputType,
                planeCount: picture.planes.count)
        }
        let capture = try Self.device("mmap(CAPTURE)") { () throws(Errno) in
            try V4L2MappedBuffers(
                node: node, count: min(captureCount, V4L2MappedBuffers.maximumCount), type: captureType,
                planeCount: coded.planes.count)
        }
        for index in 0..<capture.count {
            try Self.device("QBUF(CAPTURE)") { () throws(Errno) in
                try node.queue(index, type: captureType, planeCount: coded.planes.count)
            }
        }
        try Self.device("STREAMON") { () throws(Errno) in
            try node.streamOn(outputType)
            try node.streamOn(captureType)
        }
        stream = Stream(
            pictureFormat: picture, output: output, capture: capture, freeOutput: Array((0..<output.count).reversed()))
        pendingTimes = [:]
        heldParameterSets = []
    }

    /// A device that codes whole blocks (1920x1080 as 1920x1088, as most H.264 encoders do) takes the picture in
    /// a larger buffer and is told the visible part with VIDIOC_S_SELECTION (`V4L2_SEL_TGT_CROP` on OUTPUT), as the
    /// encoder interface says. A coded size smaller than the picture, or a crop the device changes (vicodec's
    /// smallest is 640x360), is `sizeNotTaken`.
    private func cropVisibleArea(codedWidth: Int, codedHeight: Int) throws(V4L2EncoderError) {
        let refused = V4L2EncoderError.sizeNotTaken(
            requested: "\(settings.width)x\(settings.height)", taken: "\(codedWidth)x\(codedHeight)")
        guard codedWidth >= settings.width, codedHeight >= settings.height else { throw refused }
        var selection = v4l2_selection()
        // The single-planar type names the queue for either API (the kernel maps it: videodev2.h, S_SELECTION).
        selection.type = outputType.isMultiplanar ? V4L2_BUF_TYPE_VIDEO_OUTPUT.rawValue : outputType.rawValue
        selection.target = UInt32(V4L2_SEL_TGT_CROP)
        selection.r = v4l2_rect(left: 0, top: 0, width: UInt32(settings.width), height: UInt32(settings.height))
        do {
            try node.ioctl(.setSelection, &selection)
        } catch {
            throw refused  // No crop (ENOTTY, EINVAL): the device codes only its own sizes.
        }
        guard selection.r.width == settings.width, selection.r.height == settings.height else { throw refused }
    }

    private func checkOffered(_ format: V4L2PixelFormat, on type: V4L2BufferType) throws(V4L2EncoderError) {
        let offered = try Self.device("ENUM_FMT(\(type))") { () throws(Errno) in try node.pixelFormats(type) }
        guard offered.contains(format) else {
            throw .formatNotOffered(format, queue: type.description, offered: offered)
        }
    }

    /// Sets each control the settings ask for that the driver has; records what it kept.
    private func applyControls() throws(V4L2EncoderError) {
        let available = Set(((try? node.controls()) ?? []).map(\.id))
        availableControls = available
        var wanted: [(String, UInt32, Int32)] = [
            // Parameter sets with the first frame and again at every key frame, so a muxer (or a segment) never
            // starts without them.
            (
                "header_mode", UInt32(V4L2_CID_MPEG_VIDEO_HEADER_MODE),
                Int32(V4L2_MPEG_VIDEO_HEADER_MODE_JOINED_WITH_1ST_FRAME.rawValue)
            ),
            ("repeat_sequence_header", UInt32(V4L2_CID_MPEG_VIDEO_REPEAT_SEQ_HEADER), 1),
            // Pictures come out in the order they went in, so a packet's decode time is its presentation time.
            ("b_frames", UInt32(V4L2_CID_MPEG_VIDEO_B_FRAMES), 0),
        ]
        if let interval = settings.keyFrameInterval {
            wanted.append(("gop_size", UInt32(V4L2_CID_MPEG_VIDEO_GOP_SIZE), Int32(clamping: interval)))
            wanted.append(("h264_i_period", UInt32(V4L2_CID_MPEG_VIDEO_H264_I_PERIOD), Int32(clamping: interval)))
        }
        if let bitRate = settings.averageBitRate {
            wanted.append(("bitrate", UInt32(V4L2_CID_MPEG_VIDEO_BITRATE), Int32(clamping: bitRate)))
        }
        appliedControls = [:]
        for (name, id, value) in wanted where available.contains(id) {
            appliedControls[name] = try Self.device("S_CTRL(\(name))") { () throws(Errno) in
                try node.setValue(value, of: id)
            }
        }
    }

    // MARK: Buffers

    /// Takes back the OUTPUT buffers the device has finished reading.
    private func reclaimOutputBuffers(into current: inout Stream) throws(V4L2EncoderError) {
        while case .value(let buffer) = try Self.device(
            "DQBUF(OUTPUT)",
            { () throws(Errno) in
                try node.dequeue(type: outputType, planeCount: current.pictureFormat.planes.count)
            })
        {
            current.freeOutput.append(buffer.index)
        }
    }

    /// The packets ready now, after waiting up to `waitMilliseconds` for the first.
    private func collectPackets(waitMilliseconds: Int32) throws(V4L2EncoderError) -> [V4L2EncodedPacket] {
        if waitMilliseconds > 0 {
            _ = try Self.device("poll") { () throws(Errno) in try node.waitUntilReadable(milliseconds: waitMilliseconds)
            }
        }
        return try dequeuePackets().packets
    }

    /// Dequeues every finished CAPTURE buffer, copies its packet out and gives the buffer back; whether the last
    /// one of a drain (`V4L2_BUF_FLAG_LAST`, or EPIPE once it was taken) came.
    private func dequeuePackets() throws(V4L2EncoderError) -> (packets: [V4L2EncodedPacket], last: Bool) {
        guard let current = stream else { return ([], true) }
        var packets: [V4L2EncodedPacket] = []
        while true {
            let result: IOResult<V4L2DequeuedBuffer>
            do {
                result = try node.dequeue(type: captureType, planeCount: 1)
            } catch .brokenPipe {
                return (packets, true)  // The LAST buffer was dequeued before: the drain is over.
            } catch {
                throw .device(operation: "DQBUF(CAPTURE)", error)
            }
            guard case .value(let buffer) = result else { return (packets, false) }
            let isLast = buffer.flags & UInt32(V4L2_BUF_FLAG_LAST) != 0
            if buffer.flags & UInt32(V4L2_BUF_FLAG_ERROR) == 0, buffer.bytesUsed > 0,
                let packet = packet(from: buffer, in: current.capture)
            {
                packets.append(packet)
            }
            if isLast { return (packets, true) }
            try Self.device("QBUF(CAPTURE)") { () throws(Errno) in
                try node.queue(buffer.index, type: captureType, planeCount: 1)
            }
        }
    }

    /// The packet in `buffer`, or nil when it held only parameter sets (kept for the next picture).
    private func packet(from buffer: V4L2DequeuedBuffer, in capture: V4L2MappedBuffers) -> V4L2EncodedPacket? {
        let mapping = capture.mappings[buffer.index][0]
        let start = buffer.dataOffset(ofPlane: 0)
        let length = min(buffer.bytesUsed, mapping.length - start)
        var bytes = Array(UnsafeRawBufferPointer(start: mapping.address + start, count: length))
        let isAnnexB = settings.codedFormat == .h264 || settings.codedFormat == .hevc
        if isAnnexB, !AnnexBProbe.containsPicture(bytes, hevc: settings.codedFormat == .hevc) {
            heldParameterSets += bytes
            return nil
        }
        if !heldParameterSets.isEmpty {
            bytes = heldParameterSets + bytes
            heldParameterSets = []
        }
        let stamp = Int64(buffer.timestamp.tv_sec) * 1_000_000 + Int64(buffer.timestamp.tv_usec)
        let time = pendingTimes.removeValue(forKey: stamp) ?? CMTime(value: stamp, timescale: 1_000_000)
        // The buffer's frame-type flags where the driver sets them; vicodec's encoder (and others) sets none, and
        // then the packet itself says.
        let typeFlags = UInt32(V4L2_BUF_FLAG_KEYFRAME | V4L2_BUF_FLAG_PFRAME | V4L2_BUF_FLAG_BFRAME)
        let isKeyFrame =
            buffer.flags & typeFlags != 0
            ? buffer.flags & UInt32(V4L2_BUF_FLAG_KEYFRAME) != 0
            : AnnexBProbe.isKeyPicture(bytes, codedFormat: settings.codedFormat)
        return V4L2EncodedPacket(
            data: bytes, presentationTime: time, isKeyFrame: isKeyFrame, sequence: buffer.sequence)
    }

    private func stopStreaming() throws(V4L2EncoderError) {
        try Self.device("STREAMOFF") { () throws(Errno) in
            try node.streamOff(outputType)
            try node.streamOff(captureType)
        }
        pendingTimes = [:]
    }

    /// Runs one device call, its failure named for the error value.
    private static func device<Value>(
        _ operation: String, _ call: () throws(Errno) -> Value
    )
        throws(V4L2EncoderError) -> Value
    {
        do {
            return try call()
        } catch {
            throw .device(operation: operation, error)
        }
    }
}

extension CMTime {
    /// The time in whole microseconds (what a V4L2 buffer's timestamp holds), made larger than `previous` so two
    /// pictures closer than a microsecond still get stamps of their own.
    fileprivate func microsecondStamp(after previous: Int64?) -> Int64 {
        let microseconds = timescale > 0 ? value * 1_000_000 / Int64(timescale) : 0
        guard let previous, microseconds <= previous else { return microseconds }
        return previous + 1
    }
}

extension timeval {
    fileprivate init(microseconds: Int64) {
        self.init(tv_sec: Int(microseconds / 1_000_000), tv_usec: Int(microseconds % 1_000_000))
    }
}
