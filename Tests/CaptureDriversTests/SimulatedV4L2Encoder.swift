import CLinuxMedia
import CaptureDrivers
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A kernel that plays one stateful H.264 memory-to-memory encoder, single-planar, the way a SoC's VPU does that
/// gives its parameter sets in a buffer of their own (`HEADER_MODE_SEPARATE`, the only mode it has): the cases
/// vicodec (FWHT, no parameter sets) cannot show. Records every call by name and the controls set; keeps the bytes
/// of every picture queued.
///
/// Coding: each picture queued on OUTPUT becomes, as soon as a CAPTURE buffer is free, a packet of one NAL unit
/// (`00 00 00 01`, type 5 for a key frame every `GOP_SIZE` pictures, else 1, then the picture's first luma byte);
/// ahead of the first, a packet of SPS and PPS alone. `V4L2_ENC_CMD_STOP` flags the packet of the last picture
/// queued (or an empty buffer) `V4L2_BUF_FLAG_LAST`.
///
/// Threading: thread safe; one lock guards everything.
final class SimulatedV4L2Encoder: KernelCalls, @unchecked Sendable {
    static let parameterSets: [UInt8] = [0, 0, 0, 1, 0x67, 0x64, 0, 0x1F, 0, 0, 0, 1, 0x68, 0xEE, 0x3C, 0x80]
    /// Row padding the mock's raw format has: a copy that ignores `bytesperline` puts chroma in the wrong place.
    static let rowPadding: UInt32 = 64

    private struct Queue {
        var buffers: [UnsafeMutableRawPointer] = []
        var length = 0
        var queued: [(index: Int, bytesUsed: Int, timestamp: timeval)] = []
        var done: [v4l2_buffer] = []
        var streaming = false
    }

    private struct State {
        var trace: [String] = []
        var controls: [UInt32: Int32] = [:]
        var width: UInt32 = 0
        var height: UInt32 = 0
        var output = Queue()
        var capture = Queue()
        var pictures: [[UInt8]] = []
        var coded = 0
        var sentHeaders = false
        var stopping = false
        var lastSent = false
        var crop: v4l2_rect?
    }

    private let lock = NSLock()
    private var state = State()
    let path = "/dev/video11"
    /// Whether the device takes a visible area smaller than its coded size (VIDIOC_S_SELECTION), as real H.264
    /// encoders do for 1080 lines coded as 1088; ENOTTY when not.
    let takesCrop: Bool

    /// The parameter sets the device gives ahead of its first picture.
    let headerBytes: [UInt8]
    /// Codes a picture as the device read it (rows `bytesPerLine` apart, chroma after the luma rows) into a slice,
    /// a key frame when told; nil: the one-byte packets above.
    let coder: (@Sendable (_ picture: [UInt8], _ bytesPerLine: Int, _ key: Bool) -> [UInt8])?

    init(
        takesCrop: Bool = false, parameterSets: [UInt8] = SimulatedV4L2Encoder.parameterSets,
        coder: (@Sendable (_ picture: [UInt8], _ bytesPerLine: Int, _ key: Bool) -> [UInt8])? = nil
    ) {
        self.takesCrop = takesCrop
        self.headerBytes = parameterSets
        self.coder = coder
    }

    /// The visible area S_SELECTION set.
    var crop: v4l2_rect? { withState { $0.crop } }
    /// The controls the device has (its QUERY_EXT_CTRL list).
    let controlIDs: [UInt32] = [
        UInt32(V4L2_CID_MPEG_VIDEO_GOP_SIZE), UInt32(V4L2_CID_MPEG_VIDEO_H264_I_PERIOD),
        UInt32(V4L2_CID_MPEG_VIDEO_BITRATE), UInt32(V4L2_CID_MPEG_VIDEO_REPEAT_SEQ_HEADER),
    ]

    var system: SystemCalls { SystemCalls(kernel: self) }

    private func withState<Result>(_ body: (inout State) -> Result) -> Result {
        lock.lock()
        defer { lock.unlock() }
        return body(&state)
    }
    var trace: [String] { withState { $0.trace } }
    var controls: [UInt32: Int32] { withState { $0.controls } }
    /// The bytes of each picture as the driver read them from its OUTPUT buffer.
    var pictures: [[UInt8]] { withState { $0.pictures } }
    /// The raw format's row length at the size set.
    var bytesPerLine: Int { withState { Int($0.width + Self.rowPadding) } }

    func open(_ path: String, _ flags: Int32) -> (result: Int32, errno: Int32) {
        path == self.path ? (1000, 0) : (-1, ENOENT)
    }
    func close(_ descriptor: Int32) -> (result: Int32, errno: Int32) { (0, 0) }
    func access(_ path: String, _ mode: Int32) -> (result: Int32, errno: Int32) { (0, 0) }
    func munmap(_ address: UnsafeMutableRawPointer, length: Int) -> (result: Int32, errno: Int32) { (0, 0) }

    func mmap(length: Int, descriptor: Int32, offset: Int) -> (result: UnsafeMutableRawPointer?, errno: Int32) {
        withState { state in
            // Offsets: OUTPUT buffers from 0, CAPTURE buffers from 1 << 20, one page apart.
            let isCapture = offset >= 1 << 20
            let index = (offset - (isCapture ? 1 << 20 : 0)) / 4096
            let queue = isCapture ? state.capture : state.output
            guard queue.buffers.indices.contains(index), length == queue.length else { return (nil, EINVAL) }
            return (queue.buffers[index], 0)
        }
    }

    func poll(_ descriptors: UnsafeMutablePointer<pollfd>, count: Int, timeout: Int32) -> (result: Int32, errno: Int32)
    {
        withState { state in
            let ready = !state.capture.done.isEmpty || !state.output.done.isEmpty || state.lastSent
            descriptors[0].revents = ready ? Int16(POLLIN) : 0
            return (ready ? 1 : 0, 0)
        }
    }

    func ioctl(
        _ descriptor: Int32, _ request: UInt, _ argument: UnsafeMutableRawPointer
    ) -> (result: Int32, errno: Int32) {
        withState { state in
            let name = V4L2Request.named(code: request)?.name ?? "?"
            state.trace.append(name)
            return answer(name, argument, &state)
        }
    }

    private func answer(_ name: String, _ argument: UnsafeMutableRawPointer, _ state: inout State) -> (Int32, Int32) {
        switch name {
        case "QUERYCAP":
            let capability = argument.assumingMemoryBound(to: v4l2_capability.self)
            capability.pointee = v4l2_capability()
            withUnsafeMutableBytes(of: &capability.pointee.driver) { $0.copyBytes(from: "mock-vpu".utf8) }
            capability.pointee.capabilities = UInt32(V4L2_CAP_VIDEO_M2M | V4L2_CAP_STREAMING)
            return (0, 0)
        case "ENUM_FMT":
            let description = argument.assumingMemoryBound(to: v4l2_fmtdesc.self)
            let formats: [V4L2PixelFormat] =
                description.pointee.type == V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue ? [.h264] : [.nv12, .yuv420]
            guard Int(description.pointee.index) < formats.count else { return (-1, EINVAL) }
            description.pointee.pixelformat = formats[Int(description.pointee.index)].rawValue
            return (0, 0)
        case "S_FMT":
            let format = argument.assumingMemoryBound(to: v4l2_format.self)
            // Sizes are rounded to whole macroblocks, as H.264 encoders do.
            state.width = (format.pointee.fmt.pix.width + 15) / 16 * 16
            state.height = (format.pointee.fmt.pix.height + 15) / 16 * 16
            format.pointee.fmt.pix.width = state.width
            format.pointee.fmt.pix.height = state.height
            if format.pointee.type == V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue {
                format.pointee.fmt.pix.pixelformat = V4L2PixelFormat.h264.rawValue
                format.pointee.fmt.pix.sizeimage = 65536
            } else {
                let line = state.width + Self.rowPadding
                format.pointee.fmt.pix.bytesperline = line
                format.pointee.fmt.pix.sizeimage = line * state.height * 3 / 2
            }
            return (0, 0)
        case "QUERY_EXT_CTRL":
            let query = argument.assumingMemoryBound(to: v4l2_query_ext_ctrl.self)
            let after = query.pointee.id & ~UInt32(V4L2_CTRL_FLAG_NEXT_CTRL)
            guard let next = controlIDs.sorted().first(where: { $0 > after }) else { return (-1, EINVAL) }
            query.pointee = v4l2_query_ext_ctrl()
            query.pointee.id = next
            query.pointee.type = V4L2_CTRL_TYPE_INTEGER.rawValue
            query.pointee.minimum = 0
            query.pointee.maximum = 1 << 30
            query.pointee.step = 1
            return (0, 0)
        case "S_CTRL":
            let control = argument.assumingMemoryBound(to: v4l2_control.self)
            guard controlIDs.contains(control.pointee.id) else { return (-1, EINVAL) }
            state.controls[control.pointee.id] = control.pointee.value
            state.trace[state.trace.count - 1] = "S_CTRL(\(control.pointee.id))"
            return (0, 0)
        case "REQBUFS":
            let request = argument.assumingMemoryBound(to: v4l2_requestbuffers.self)
            let isCapture = request.pointee.type == V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
            let length = isCapture ? 65536 : Int((state.width + Self.rowPadding) * state.height * 3 / 2)
            for buffer in (isCapture ? state.capture : state.output).buffers { buffer.deallocate() }
            var queue = Queue()
            queue.length = length
            queue.buffers = (0..<Int(request.pointee.count)).map { _ in
                let buffer = UnsafeMutableRawPointer.allocate(byteCount: max(length, 1), alignment: 64)
                buffer.initializeMemory(as: UInt8.self, repeating: 0, count: max(length, 1))
                return buffer
            }
            if isCapture { state.capture = queue } else { state.output = queue }
            return (0, 0)
        case "QUERYBUF":
            let buffer = argument.assumingMemoryBound(to: v4l2_buffer.self)
            let isCapture = buffer.pointee.type == V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
            buffer.pointee.m.offset = UInt32((isCapture ? 1 << 20 : 0) + Int(buffer.pointee.index) * 4096)
            buffer.pointee.length = UInt32(isCapture ? state.capture.length : state.output.length)
            return (0, 0)
        case "QBUF":
            let buffer = argument.assumingMemoryBound(to: v4l2_buffer.self).pointee
            if buffer.type == V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue {
                state.capture.queued.append((Int(buffer.index), 0, timeval()))
            } else {
                state.output.queued.append((Int(buffer.index), Int(buffer.bytesused), buffer.timestamp))
            }
            code(&state)
            return (0, 0)
        case "DQBUF":
            let buffer = argument.assumingMemoryBound(to: v4l2_buffer.self)
            let isCapture = buffer.pointee.type == V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
            if isCapture {
                guard !state.capture.done.isEmpty else { return (-1, state.lastSent ? EPIPE : EAGAIN) }
                buffer.pointee = state.capture.done.removeFirst()
                if buffer.pointee.flags & UInt32(V4L2_BUF_FLAG_LAST) != 0 { state.lastSent = true }
            } else {
                guard !state.output.done.isEmpty else { return (-1, EAGAIN) }
                buffer.pointee = state.output.done.removeFirst()
            }
            return (0, 0)
        case "S_SELECTION":
            guard takesCrop else { return (-1, ENOTTY) }
            let selection = argument.assumingMemoryBound(to: v4l2_selection.self)
            guard selection.pointee.type == V4L2_BUF_TYPE_VIDEO_OUTPUT.rawValue,
                selection.pointee.target == UInt32(V4L2_SEL_TGT_CROP),
                selection.pointee.r.width <= state.width, selection.pointee.r.height <= state.height
            else { return (-1, EINVAL) }
            state.crop = selection.pointee.r
            return (0, 0)
        case "STREAMON":
            // Streaming again after a drain starts a new stream, as a real encoder does: parameter sets first,
            // then a key frame.
            if argument.load(as: UInt32.self) == V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue {
                state.stopping = false
                state.lastSent = false
                state.sentHeaders = false
                state.coded = 0
            }
            return (0, 0)
        case "STREAMOFF":
            return (0, 0)
        case "ENCODER_CMD":
            state.stopping = true
            code(&state)
            return (0, 0)
        default:
            return (-1, ENOTTY)
        }
    }

    /// Codes queued pictures into free CAPTURE buffers, the parameter sets first.
    private func code(_ state: inout State) {
        func emit(_ bytes: [UInt8], timestamp: timeval, flags: UInt32, _ state: inout State) {
            let target = state.capture.queued.removeFirst()
            state.capture.buffers[target.index].copyMemory(from: bytes, byteCount: bytes.count)
            var buffer = v4l2_buffer()
            buffer.index = UInt32(target.index)
            buffer.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
            buffer.memory = V4L2_MEMORY_MMAP.rawValue
            buffer.bytesused = UInt32(bytes.count)
            buffer.timestamp = timestamp
            buffer.flags = flags
            buffer.sequence = UInt32(state.capture.done.count)
            state.capture.done.append(buffer)
        }
        while !state.capture.queued.isEmpty {
            if !state.sentHeaders, !state.output.queued.isEmpty {
                emit(headerBytes, timestamp: timeval(), flags: 0, &state)
                state.sentHeaders = true
                continue
            }
            guard !state.output.queued.isEmpty else {
                if state.stopping, !state.capture.done.contains(where: { $0.flags & UInt32(V4L2_BUF_FLAG_LAST) != 0 }),
                    !state.lastSent
                {
                    emit([], timestamp: timeval(), flags: UInt32(V4L2_BUF_FLAG_LAST), &state)
                }
                return
            }
            let picture = state.output.queued.removeFirst()
            let bytes = state.output.buffers[picture.index]
            state.pictures.append(Array(UnsafeRawBufferPointer(start: bytes, count: picture.bytesUsed)))
            let gop = Int(state.controls[UInt32(V4L2_CID_MPEG_VIDEO_GOP_SIZE)] ?? 30)
            let isKey = state.coded % max(gop, 1) == 0
            state.coded += 1
            var flags = UInt32(isKey ? V4L2_BUF_FLAG_KEYFRAME : V4L2_BUF_FLAG_PFRAME)
            if state.stopping, state.output.queued.isEmpty { flags |= UInt32(V4L2_BUF_FLAG_LAST) }
            let firstByte = picture.bytesUsed > 0 ? bytes.load(as: UInt8.self) : 0
            let slice =
                coder?(state.pictures[state.pictures.count - 1], Int(state.width + Self.rowPadding), isKey)
                ?? [0, 0, 0, 1, isKey ? 0x65 : 0x41, firstByte]
            emit(slice, timestamp: picture.timestamp, flags: flags, &state)
            var done = v4l2_buffer()
            done.index = UInt32(picture.index)
            done.type = V4L2_BUF_TYPE_VIDEO_OUTPUT.rawValue
            done.memory = V4L2_MEMORY_MMAP.rawValue
            state.output.done.append(done)
        }
    }

    deinit {
        for buffer in state.output.buffers + state.capture.buffers { buffer.deallocate() }
    }
}
