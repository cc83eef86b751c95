import CLinuxMedia
import Foundation
import OpenCoreMedia
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A kernel that plays one V4L2 camera, for trace tests and benchmarks (the real driver, no hardware): it answers the calls `SystemCalls` makes as a V4L2 driver
/// would (QUERYCAP, ENUM_*, S_FMT, REQBUFS, QUERYBUF, mmap, QBUF, DQBUF, STREAMON/OFF, controls), records every call
/// by name, and fails calls with the errno a test scripts.
///
/// Frames: while streaming, every `poll` is one frame period of the simulated device: it fills the first queued
/// buffer (byte 0 = the frame's sequence number, low byte; the rest a fixed pattern) and marks it done; with no
/// buffer queued the frame is lost, as a real driver loses it, and its sequence number skipped. Descriptors that are
/// not the mock's (the capture thread's wake-up eventfd) are polled for real.
///
/// Threading: thread safe; one mutex guards everything.
package final class SimulatedV4L2Kernel: KernelCalls, @unchecked Sendable {
    package struct Format {
        package var pixelFormat: V4L2PixelFormat
        package var sizes: [V4L2FrameSize]
        /// Frame durations offered at every size (discrete).
        package var durations: [CMTime]

        package init(pixelFormat: V4L2PixelFormat, sizes: [V4L2FrameSize], durations: [CMTime]) {
            self.pixelFormat = pixelFormat
            self.sizes = sizes
            self.durations = durations
        }
    }

    package struct Control {
        package var info: V4L2ControlInfo
        package var value: Int64
        package var menu: [Int64: String] = [:]

        package init(info: V4L2ControlInfo, value: Int64, menu: [Int64: String] = [:]) {
            self.info = info
            self.value = value
            self.menu = menu
        }
    }

    private struct State {
        var trace: [String] = []
        var failures: [String: [Int32]] = [:]
        var openDescriptors: Set<Int32> = []
        var nextDescriptor: Int32 = 1000
        var format = v4l2_pix_format()
        var timePerFrame = v4l2_fract(numerator: 1, denominator: 30)
        var buffers: [UnsafeMutableRawPointer] = []
        var bufferLength = 0
        var queued: [Int] = []
        var done: [(index: Int, sequence: UInt32, bytesUsed: Int)] = []
        var isStreaming = false
        var sequence: UInt32 = 0
        var controls: [UInt32: Control] = [:]
        var mappedCount = 0
        /// Set by `disconnect()`: every device call fails with ENODEV and poll reports POLLERR|POLLHUP.
        var isGone = false
    }

    package let path: String
    package let card: String
    package let busInfo: String
    package let formats: [Format]
    /// Sequence numbers the device skips (a discontinuity), whatever the buffers.
    package let skippedSequences: Set<UInt32>
    /// Bytes a compressed frame uses in its buffer.
    package static let compressedFrameLength = 1234
    /// Whether calls are recorded (benchmarks turn it off: the growing list would allocate).
    private let recordsTrace: Bool
    private let lock = NSLock()
    private var state: State

    /// Runs `body` with the state under the lock. (Not `Mutex`: its `sending` closure cannot take the raw ioctl
    /// argument pointers the mock writes through.)
    private func withState<Result>(_ body: (inout State) -> Result) -> Result {
        lock.lock()
        defer { lock.unlock() }
        return body(&state)
    }

    package init(
        path: String = "/dev/video0", card: String = "Mock Camera", busInfo: String = "usb-0000:00:14.0-1",
        formats: [Format], controls: [Control] = [], skippedSequences: Set<UInt32> = [], recordsTrace: Bool = true
    ) {
        self.recordsTrace = recordsTrace
        self.path = path
        self.card = card
        self.busInfo = busInfo
        self.formats = formats
        self.skippedSequences = skippedSequences
        var initial = State()
        for control in controls { initial.controls[control.info.id] = control }
        state = initial
    }

    deinit {
        for buffer in state.buffers { buffer.deallocate() }
    }

    package var system: SystemCalls { SystemCalls(kernel: self) }

    /// Every call so far, by name (`open`, `S_FMT`, `mmap`, …).
    package var trace: [String] { withState { $0.trace } }

    package func clearTrace() { withState { $0.trace = [] } }

    /// The next `count` calls named `call` fail with `errno` (then it works again).
    package func fail(_ call: String, with errno: Int32, times count: Int = 1) {
        withState { $0.failures[call, default: []] += Array(repeating: errno, count: count) }
    }

    /// The device goes away: calls fail with ENODEV, poll says POLLERR|POLLHUP.
    package func disconnect() { withState { $0.isGone = true } }

    /// The memory of mapped buffer `index`.
    package func bufferAddress(_ index: Int) -> UnsafeMutableRawPointer? {
        withState { $0.buffers.indices.contains(index) ? $0.buffers[index] : nil }
    }

    package var isStreaming: Bool { withState { $0.isStreaming } }
    /// How many frame periods the device has gone through since STREAMON (frames filled or lost).
    package var sequencesProduced: UInt32 { withState { $0.sequence } }
    package var openDescriptorCount: Int { withState { $0.openDescriptors.count } }
    package var mappedCount: Int { withState { $0.mappedCount } }
    package func controlValue(_ id: Int32) -> Int64? { withState { $0.controls[UInt32(bitPattern: id)]?.value } }

    /// Records `call` and returns the scripted errno for it, if any.
    private func record(_ call: String, _ state: inout State) -> Int32? {
        if recordsTrace { state.trace.append(call) }
        guard !state.failures.isEmpty, var queue = state.failures[call], !queue.isEmpty else { return nil }
        let errno = queue.removeFirst()
        state.failures[call] = queue
        return errno
    }

    // MARK: KernelCalls

    package func open(_ path: String, _ flags: Int32) -> (result: Int32, errno: Int32) {
        withState { state in
            if let errno = record("open", &state) { return (-1, errno) }
            guard path == self.path, !state.isGone else { return (-1, ENOENT) }
            let descriptor = state.nextDescriptor
            state.nextDescriptor += 1
            state.openDescriptors.insert(descriptor)
            return (descriptor, 0)
        }
    }

    package func close(_ descriptor: Int32) -> (result: Int32, errno: Int32) {
        withState { state in
            if recordsTrace { state.trace.append("close") }
            return state.openDescriptors.remove(descriptor) == nil ? (-1, EBADF) : (0, 0)
        }
    }

    package func access(_ path: String, _ mode: Int32) -> (result: Int32, errno: Int32) {
        withState { state in
            if let errno = record("access", &state) { return (-1, errno) }
            return path == self.path ? (0, 0) : (-1, ENOENT)
        }
    }

    package func mmap(length: Int, descriptor: Int32, offset: Int) -> (result: UnsafeMutableRawPointer?, errno: Int32) {
        withState { state in
            if let errno = record("mmap", &state) { return (nil, errno) }
            let index = offset / 4096
            guard state.buffers.indices.contains(index), length == state.bufferLength else { return (nil, EINVAL) }
            state.mappedCount += 1
            return (state.buffers[index], 0)
        }
    }

    package func munmap(_ address: UnsafeMutableRawPointer, length: Int) -> (result: Int32, errno: Int32) {
        withState { state in
            if recordsTrace { state.trace.append("munmap") }
            state.mappedCount -= 1
            return (0, 0)
        }
    }

    package func poll(_ descriptors: UnsafeMutablePointer<pollfd>, count: Int, timeout: Int32) -> (
        result: Int32, errno: Int32
    ) {
        // Allocation-free (benchmarks count mallocs): the mock's descriptors are answered under the lock, the
        // others (the wake-up eventfd, numbered below 1000) polled for real one by one.
        var ready: Int32 = 0
        let scripted: Int32? = withState { state in
            if let errno = record("poll", &state) { return errno }
            for index in 0..<count where state.openDescriptors.contains(descriptors[index].fd) {
                if state.isGone {
                    descriptors[index].revents = Int16(POLLERR | POLLHUP)
                } else {
                    if state.isStreaming { produceFrame(&state) }
                    descriptors[index].revents = state.done.isEmpty ? 0 : Int16(POLLIN)
                }
                if descriptors[index].revents != 0 { ready += 1 }
            }
            return nil
        }
        if let scripted { return (-1, scripted) }
        for index in 0..<count where descriptors[index].fd < 1000 {
            let waited = Glibc.poll(descriptors + index, 1, ready > 0 ? 0 : min(timeout, 5))
            if waited > 0 { ready += 1 }
        }
        return (ready, 0)
    }

    /// One frame period: the next sequence number, into the first queued buffer if there is one.
    private func produceFrame(_ state: inout State) {
        var sequence = state.sequence
        while skippedSequences.contains(sequence) { sequence += 1 }
        state.sequence = sequence + 1
        guard !state.queued.isEmpty else { return }
        let index = state.queued.removeFirst()
        let compressed = V4L2PixelFormat(rawValue: state.format.pixelformat).isCompressed
        let used = compressed ? Self.compressedFrameLength : Int(state.format.sizeimage)
        let bytes = state.buffers[index].assumingMemoryBound(to: UInt8.self)
        bytes[0] = UInt8(truncatingIfNeeded: sequence)
        for offset in 1..<min(used, 64) { bytes[offset] = UInt8(truncatingIfNeeded: offset) }
        state.done.append((index, sequence, used))
    }

    package func ioctl(_ descriptor: Int32, _ request: UInt, _ argument: UnsafeMutableRawPointer) -> (result: Int32, errno: Int32)
    {
        withState { state in
            let name = V4L2Request.named(code: request)?.name ?? "ioctl(\(request))"
            if let errno = record(name, &state) { return (-1, errno) }
            guard state.openDescriptors.contains(descriptor) else { return (-1, EBADF) }
            if state.isGone { return (-1, ENODEV) }
            return answer(request, argument, &state)
        }
    }

    private func answer(_ request: UInt, _ argument: UnsafeMutableRawPointer, _ state: inout State) -> (Int32, Int32) {
        switch request {
        case CLinuxMedia_VIDIOC_QUERYCAP:
            var capability = v4l2_capability()
            copy(card, into: &capability.card)
            copy("mock", into: &capability.driver)
            copy(busInfo, into: &capability.bus_info)
            capability.capabilities = UInt32(V4L2_CAP_VIDEO_CAPTURE | V4L2_CAP_STREAMING) | UInt32(V4L2_CAP_DEVICE_CAPS)
            capability.device_caps = UInt32(V4L2_CAP_VIDEO_CAPTURE | V4L2_CAP_STREAMING)
            argument.assumingMemoryBound(to: v4l2_capability.self).pointee = capability
        case CLinuxMedia_VIDIOC_ENUM_FMT:
            let description = argument.assumingMemoryBound(to: v4l2_fmtdesc.self)
            let index = Int(description.pointee.index)
            guard formats.indices.contains(index) else { return (-1, EINVAL) }
            description.pointee.pixelformat = formats[index].pixelFormat.rawValue
        case CLinuxMedia_VIDIOC_ENUM_FRAMESIZES:
            let size = argument.assumingMemoryBound(to: v4l2_frmsizeenum.self)
            guard let format = formats.first(where: { $0.pixelFormat.rawValue == size.pointee.pixel_format }),
                format.sizes.indices.contains(Int(size.pointee.index))
            else { return (-1, EINVAL) }
            switch format.sizes[Int(size.pointee.index)] {
            case .discrete(let width, let height):
                size.pointee.type = V4L2_FRMSIZE_TYPE_DISCRETE.rawValue
                size.pointee.discrete = v4l2_frmsize_discrete(width: width, height: height)
            case .stepwise(let minWidth, let maxWidth, let widthStep, let minHeight, let maxHeight, let heightStep):
                size.pointee.type = V4L2_FRMSIZE_TYPE_STEPWISE.rawValue
                size.pointee.stepwise = v4l2_frmsize_stepwise(
                    min_width: minWidth, max_width: maxWidth, step_width: widthStep, min_height: minHeight,
                    max_height: maxHeight, step_height: heightStep)
            }
        case CLinuxMedia_VIDIOC_ENUM_FRAMEINTERVALS:
            let interval = argument.assumingMemoryBound(to: v4l2_frmivalenum.self)
            guard let format = formats.first(where: { $0.pixelFormat.rawValue == interval.pointee.pixel_format }),
                format.durations.indices.contains(Int(interval.pointee.index))
            else { return (-1, EINVAL) }
            let duration = format.durations[Int(interval.pointee.index)]
            interval.pointee.type = V4L2_FRMIVAL_TYPE_DISCRETE.rawValue
            interval.pointee.discrete = v4l2_fract(
                numerator: UInt32(duration.value), denominator: UInt32(duration.timescale))
        case CLinuxMedia_VIDIOC_S_FMT:
            guard !state.isStreaming, state.buffers.isEmpty else { return (-1, EBUSY) }
            let format = argument.assumingMemoryBound(to: v4l2_format.self)
            var pix = format.pointee.fmt.pix
            guard let offered = formats.first(where: { $0.pixelFormat.rawValue == pix.pixelformat }) else {
                return (-1, EINVAL)
            }
            let bytesPerPixel: UInt32 =
                switch offered.pixelFormat {
                case .yuyv, .uyvy: 2
                case .rgb24, .bgr24: 3
                default: 1
                }
            pix.bytesperline = offered.pixelFormat.isCompressed ? 0 : pix.width * bytesPerPixel
            pix.sizeimage =
                switch offered.pixelFormat {
                case .nv12, .yuv420: pix.width * pix.height * 3 / 2
                case .mjpeg, .jpeg, .h264: pix.width * pix.height
                default: pix.bytesperline * pix.height
                }
            format.pointee.fmt.pix = pix
            state.format = pix
        case CLinuxMedia_VIDIOC_S_PARM:
            let parameters = argument.assumingMemoryBound(to: v4l2_streamparm.self)
            state.timePerFrame = parameters.pointee.parm.capture.timeperframe
            parameters.pointee.parm.capture.capability = UInt32(V4L2_CAP_TIMEPERFRAME)
        case CLinuxMedia_VIDIOC_REQBUFS:
            let request = argument.assumingMemoryBound(to: v4l2_requestbuffers.self)
            guard !state.isStreaming else { return (-1, EBUSY) }
            // Buffers still mapped are orphaned, as vb2 does; the mock frees its list only when none is mapped.
            if state.mappedCount == 0 { for buffer in state.buffers { buffer.deallocate() } }
            state.buffers = []
            state.queued = []
            state.done = []
            let count = Int(request.pointee.count)
            state.bufferLength = (Int(state.format.sizeimage) + 4095) / 4096 * 4096
            for _ in 0..<count {
                state.buffers.append(UnsafeMutableRawPointer.allocate(byteCount: state.bufferLength, alignment: 4096))
            }
        case CLinuxMedia_VIDIOC_QUERYBUF:
            let buffer = argument.assumingMemoryBound(to: v4l2_buffer.self)
            let index = Int(buffer.pointee.index)
            guard state.buffers.indices.contains(index) else { return (-1, EINVAL) }
            buffer.pointee.m.offset = UInt32(index * 4096)
            buffer.pointee.length = UInt32(state.bufferLength)
        case CLinuxMedia_VIDIOC_QBUF:
            let index = Int(argument.assumingMemoryBound(to: v4l2_buffer.self).pointee.index)
            guard state.buffers.indices.contains(index), !state.queued.contains(index),
                !state.done.contains(where: { $0.index == index })
            else { return (-1, EINVAL) }
            state.queued.append(index)
        case CLinuxMedia_VIDIOC_DQBUF:
            guard !state.done.isEmpty else { return (-1, EAGAIN) }
            let (index, sequence, used) = state.done.removeFirst()
            let buffer = argument.assumingMemoryBound(to: v4l2_buffer.self)
            buffer.pointee.index = UInt32(index)
            buffer.pointee.sequence = sequence
            buffer.pointee.bytesused = UInt32(used)
            buffer.pointee.flags = UInt32(V4L2_BUF_FLAG_TIMESTAMP_MONOTONIC)
            let now = CMClock.hostNanosecondsNow()
            buffer.pointee.timestamp = timeval(tv_sec: Int(now / 1_000_000_000), tv_usec: Int(now % 1_000_000_000 / 1000))
        case CLinuxMedia_VIDIOC_STREAMON:
            guard !state.buffers.isEmpty else { return (-1, EINVAL) }
            state.isStreaming = true
            state.sequence = 0
        case CLinuxMedia_VIDIOC_STREAMOFF:
            state.isStreaming = false
            state.queued = []
            state.done = []
        case CLinuxMedia_VIDIOC_QUERY_EXT_CTRL:
            let query = argument.assumingMemoryBound(to: v4l2_query_ext_ctrl.self)
            let next = query.pointee.id & UInt32(V4L2_CTRL_FLAG_NEXT_CTRL) != 0
            let id = query.pointee.id & ~UInt32(V4L2_CTRL_FLAG_NEXT_CTRL)
            let candidates = state.controls.keys.sorted()
            guard let found = next ? candidates.first(where: { $0 > id }) : candidates.first(where: { $0 == id })
            else { return (-1, EINVAL) }
            let info = state.controls[found]!.info
            var answer = v4l2_query_ext_ctrl()
            answer.id = info.id
            answer.type = info.type
            copy(info.name, into: &answer.name)
            answer.minimum = info.minimum
            answer.maximum = info.maximum
            answer.step = info.step
            answer.default_value = info.defaultValue
            answer.flags = info.flags
            query.pointee = answer
        case CLinuxMedia_VIDIOC_QUERYMENU:
            let menu = argument.assumingMemoryBound(to: v4l2_querymenu.self)
            guard let control = state.controls[menu.pointee.id],
                let name = control.menu[Int64(menu.pointee.index)]
            else { return (-1, EINVAL) }
            copy(name, into: &menu.pointee.name)
        case CLinuxMedia_VIDIOC_G_CTRL:
            let control = argument.assumingMemoryBound(to: v4l2_control.self)
            guard let value = state.controls[control.pointee.id]?.value else { return (-1, EINVAL) }
            control.pointee.value = Int32(value)
        case CLinuxMedia_VIDIOC_S_CTRL:
            let control = argument.assumingMemoryBound(to: v4l2_control.self)
            guard let info = state.controls[control.pointee.id]?.info else { return (-1, EINVAL) }
            let value = min(info.maximum, max(info.minimum, Int64(control.pointee.value)))
            state.controls[control.pointee.id]?.value = value
            control.pointee.value = Int32(value)
        default:
            return (-1, ENOTTY)
        }
        return (0, 0)
    }

    private func copy<Tuple>(_ text: String, into tuple: inout Tuple) {
        withUnsafeMutableBytes(of: &tuple) { bytes in
            bytes.initializeMemory(as: UInt8.self, repeating: 0)
            for (offset, byte) in text.utf8.prefix(bytes.count - 1).enumerated() { bytes[offset] = byte }
        }
    }
}

extension SimulatedV4L2Kernel.Format {
    /// A format at `sizes` with 30, 15 and 5 fps.
    package static func discrete(_ pixelFormat: V4L2PixelFormat, _ sizes: [(UInt32, UInt32)]) -> Self {
        Self(
            pixelFormat: pixelFormat, sizes: sizes.map { .discrete(width: $0.0, height: $0.1) },
            durations: [CMTime(value: 1, timescale: 30), CMTime(value: 1, timescale: 15), CMTime(value: 1, timescale: 5)])
    }
}
