import CLinuxMedia
import Foundation
import OpenCoreMedia
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A kernel that plays one V4L2 camera, single-planar or (with `multiplanar`) multi-planar as SoC drivers are, for trace tests and benchmarks (the real driver, no hardware): it answers the calls `SystemCalls` makes as a V4L2 driver
/// would (QUERYCAP, ENUM_*, S_FMT, REQBUFS, QUERYBUF, mmap, QBUF, DQBUF, STREAMON/OFF, controls), records every call
/// by name, and fails calls with the errno a test scripts.
///
/// Frames: while streaming, every `poll` is one frame period of the simulated device: it fills the first queued
/// buffer (byte 0 = the frame's sequence number, low byte; the rest a fixed pattern; byte 0 of a further memory plane
/// is `0x80 + plane`) and marks it done; with no
/// buffer queued the frame is lost, as a real driver loses it, and its sequence number skipped. Descriptors that are
/// not the mock's (the capture thread's wake-up eventfd) are polled for real.
///
/// Multi-planar: QUERYCAP says `V4L2_CAP_VIDEO_CAPTURE_MPLANE`; every queue call must name the multi-planar buffer
/// type (EINVAL otherwise, as the kernel answers), S_FMT takes and fills `fmt.pix_mp`, QUERYBUF/QBUF/DQBUF need a
/// `planes` array as long as the format's memory planes, and each plane of each buffer is mapped on its own.
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
        var pixelFormat = V4L2PixelFormat(rawValue: 0)
        /// The memory planes of the format S_FMT set: row length and image size.
        var planes: [(bytesPerLine: UInt32, sizeImage: UInt32)] = []
        var timePerFrame = v4l2_fract(numerator: 1, denominator: 30)
        /// What S_FMT reports as the format's colour (all `…_DEFAULT` unless a test says otherwise).
        var colorimetry = V4L2Colorimetry()
        /// By buffer, then memory plane.
        var buffers: [[UnsafeMutableRawPointer]] = []
        /// Buffers freed by REQBUFS while mapped: each is freed when unmapped.
        var orphaned: Set<UnsafeMutableRawPointer> = []
        var planeLengths: [Int] = []
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
    /// Whether the device is multi-planar (`V4L2_BUF_TYPE_VIDEO_CAPTURE_MPLANE`) rather than single-planar.
    package let multiplanar: Bool
    /// Where the image starts in a buffer's first plane (`data_offset`), on a multi-planar device.
    package let dataOffset: Int
    private var bufferType: UInt32 {
        multiplanar ? V4L2_BUF_TYPE_VIDEO_CAPTURE_MPLANE.rawValue : V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
    }
    /// Spacing of mmap offsets: each buffer has room for `VIDEO_MAX_PLANES` planes' offsets.
    private static let offsetStride = 4096
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

    /// Rewrites the answers the driver reads, before it reads them: a broken or hostile kernel, for the V4L2 fuzz
    /// target. Called under the kernel's lock after each successful request that returns data (`_IOC_READ`) but the
    /// extended controls (whose `controls` pointer a real kernel never changes), with the request code and the
    /// argument's `_IOC_SIZE` bytes; it must not call the kernel. Single-planar only: a multi-planar buffer's
    /// `m.planes` is a pointer the driver follows. Nil: a well-behaved kernel.
    private let answerTamperer: (@Sendable (UInt, UnsafeMutableRawBufferPointer) -> Void)?

    package init(
        path: String = "/dev/video0", card: String = "Mock Camera", busInfo: String = "usb-0000:00:14.0-1",
        formats: [Format], controls: [Control] = [], skippedSequences: Set<UInt32> = [], recordsTrace: Bool = true,
        multiplanar: Bool = false, dataOffset: Int = 0,
        tamperingWith answerTamperer: (@Sendable (UInt, UnsafeMutableRawBufferPointer) -> Void)? = nil
    ) {
        precondition(dataOffset == 0 || multiplanar, "only multi-planar buffers carry a data offset")
        precondition(answerTamperer == nil || !multiplanar, "tampered answers are single-planar only")
        self.answerTamperer = answerTamperer
        self.recordsTrace = recordsTrace
        self.multiplanar = multiplanar
        self.dataOffset = dataOffset
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
        for buffer in state.buffers.joined() { buffer.deallocate() }
        for buffer in state.orphaned { buffer.deallocate() }
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

    /// The colorspace, transfer function, Y'CbCr encoding and quantization S_FMT reports from now on.
    package func setColorimetry(_ colorimetry: V4L2Colorimetry) { withState { $0.colorimetry = colorimetry } }

    /// The memory of mapped buffer `index` (of its memory plane `plane`).
    package func bufferAddress(_ index: Int, plane: Int = 0) -> UnsafeMutableRawPointer? {
        withState { state in
            state.buffers.indices.contains(index) && state.buffers[index].indices.contains(plane)
                ? state.buffers[index][plane] : nil
        }
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
            guard state.openDescriptors.remove(descriptor) != nil else { return (-1, EBADF) }
            // The last descriptor closed frees the queue (vb2 does, for its owner): a start that failed after
            // REQBUFS leaves nothing behind. Buffers still mapped stay, orphaned.
            if state.openDescriptors.isEmpty && !state.buffers.isEmpty {
                if state.mappedCount == 0 { for buffer in state.buffers.joined() { buffer.deallocate() } }
                state.buffers = []
                state.queued = []
                state.done = []
                state.isStreaming = false
            }
            return (0, 0)
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
            let (index, plane) = (offset / Self.offsetStride).quotientAndRemainder(dividingBy: Int(VIDEO_MAX_PLANES))
            guard state.buffers.indices.contains(index), state.planeLengths.indices.contains(plane),
                length == state.planeLengths[plane]
            else { return (nil, EINVAL) }
            state.mappedCount += 1
            return (state.buffers[index][plane], 0)
        }
    }

    package func munmap(_ address: UnsafeMutableRawPointer, length: Int) -> (result: Int32, errno: Int32) {
        withState { state in
            if recordsTrace { state.trace.append("munmap") }
            state.mappedCount -= 1
            if state.orphaned.remove(address) != nil { address.deallocate() }
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
        let compressed = state.pixelFormat.isCompressed
        let used = compressed ? Self.compressedFrameLength : Int(state.planes[0].sizeImage) - dataOffset
        let bytes = (state.buffers[index][0] + dataOffset).assumingMemoryBound(to: UInt8.self)
        bytes[0] = UInt8(truncatingIfNeeded: sequence)
        for offset in 1..<min(used, 64) { bytes[offset] = UInt8(truncatingIfNeeded: offset) }
        for plane in state.buffers[index].indices.dropFirst() {
            state.buffers[index][plane].storeBytes(of: 0x80 + UInt8(plane), as: UInt8.self)
        }
        state.done.append((index, sequence, used))
    }

    package func ioctl(_ descriptor: Int32, _ request: UInt, _ argument: UnsafeMutableRawPointer) -> (result: Int32, errno: Int32)
    {
        withState { state in
            let name = V4L2Request.named(code: request)?.name ?? "ioctl(\(request))"
            if let errno = record(name, &state) { return (-1, errno) }
            guard state.openDescriptors.contains(descriptor) else { return (-1, EBADF) }
            if state.isGone { return (-1, ENODEV) }
            let answered = answer(request, argument, &state)
            if answered.0 == 0, let answerTamperer, request >> 30 & 2 != 0,
                ![CLinuxMedia_VIDIOC_G_EXT_CTRLS, CLinuxMedia_VIDIOC_S_EXT_CTRLS, CLinuxMedia_VIDIOC_TRY_EXT_CTRLS]
                    .contains(request)
            {
                // _IOC_DIR is bits 30-31 (2: the kernel writes), _IOC_SIZE bits 16-29.
                let size = Int(request >> 16 & 0x3fff)
                answerTamperer(request, UnsafeMutableRawBufferPointer(start: argument, count: size))
            }
            return answered
        }
    }

    private func answer(_ request: UInt, _ argument: UnsafeMutableRawPointer, _ state: inout State) -> (Int32, Int32) {
        switch request {
        case CLinuxMedia_VIDIOC_QUERYCAP:
            var capability = v4l2_capability()
            copy(card, into: &capability.card)
            copy("mock", into: &capability.driver)
            copy(busInfo, into: &capability.bus_info)
            let capture = multiplanar ? V4L2_CAP_VIDEO_CAPTURE_MPLANE : V4L2_CAP_VIDEO_CAPTURE
            capability.capabilities = UInt32(capture | V4L2_CAP_STREAMING) | UInt32(V4L2_CAP_DEVICE_CAPS)
            capability.device_caps = UInt32(capture | V4L2_CAP_STREAMING)
            argument.assumingMemoryBound(to: v4l2_capability.self).pointee = capability
        case CLinuxMedia_VIDIOC_ENUM_FMT:
            let description = argument.assumingMemoryBound(to: v4l2_fmtdesc.self)
            let index = Int(description.pointee.index)
            guard description.pointee.type == bufferType, formats.indices.contains(index) else { return (-1, EINVAL) }
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
            guard format.pointee.type == bufferType else { return (-1, EINVAL) }
            let (pix, pixMP) = (format.pointee.fmt.pix, format.pointee.fmt.pix_mp)
            let requested =
                multiplanar ? (pixMP.pixelformat, pixMP.width, pixMP.height) : (pix.pixelformat, pix.width, pix.height)
            guard let offered = formats.first(where: { $0.pixelFormat.rawValue == requested.0 }),
                multiplanar || offered.pixelFormat.memoryPlaneCount == 1
            else { return (-1, EINVAL) }
            let (width, height) = (requested.1, requested.2)
            var planes = Self.planes(of: offered.pixelFormat, width: width, height: height)
            if multiplanar {
                planes[0].sizeImage += UInt32(dataOffset)
                var pix = format.pointee.fmt.pix_mp
                pix.num_planes = UInt8(planes.count)
                withUnsafeMutableBytes(of: &pix.plane_fmt) { bytes in
                    let entries = bytes.bindMemory(to: v4l2_plane_pix_format.self)
                    for (index, plane) in planes.enumerated() {
                        entries[index].bytesperline = plane.bytesPerLine
                        entries[index].sizeimage = plane.sizeImage
                    }
                }
                pix.colorspace = state.colorimetry.colorspace
                pix.xfer_func = UInt8(truncatingIfNeeded: state.colorimetry.transferFunction)
                pix.ycbcr_enc = UInt8(truncatingIfNeeded: state.colorimetry.yCbCrEncoding)
                pix.quantization = UInt8(truncatingIfNeeded: state.colorimetry.quantization)
                format.pointee.fmt.pix_mp = pix
            } else {
                format.pointee.fmt.pix.bytesperline = planes[0].bytesPerLine
                format.pointee.fmt.pix.sizeimage = planes[0].sizeImage
                format.pointee.fmt.pix.colorspace = state.colorimetry.colorspace
                format.pointee.fmt.pix.xfer_func = state.colorimetry.transferFunction
                format.pointee.fmt.pix.ycbcr_enc = state.colorimetry.yCbCrEncoding
                format.pointee.fmt.pix.quantization = state.colorimetry.quantization
            }
            state.pixelFormat = offered.pixelFormat
            state.planes = planes
        case CLinuxMedia_VIDIOC_S_PARM:
            let parameters = argument.assumingMemoryBound(to: v4l2_streamparm.self)
            guard parameters.pointee.type == bufferType else { return (-1, EINVAL) }
            state.timePerFrame = parameters.pointee.parm.capture.timeperframe
            parameters.pointee.parm.capture.capability = UInt32(V4L2_CAP_TIMEPERFRAME)
        case CLinuxMedia_VIDIOC_REQBUFS:
            let request = argument.assumingMemoryBound(to: v4l2_requestbuffers.self)
            guard request.pointee.type == bufferType else { return (-1, EINVAL) }
            guard !state.isStreaming else { return (-1, EBUSY) }
            // Buffers still mapped stay alive until unmapped, as vb2's do: the mock frees its list when none is
            // mapped, else keeps it for munmap (it leaked it, which the V4L2 fuzz target's LeakSanitizer showed).
            if state.mappedCount == 0 {
                for buffer in state.buffers.joined() { buffer.deallocate() }
            } else {
                state.orphaned.formUnion(state.buffers.joined())
            }
            state.buffers = []
            state.queued = []
            state.done = []
            let count = Int(request.pointee.count)
            state.planeLengths = state.planes.map { (Int($0.sizeImage) + 4095) / 4096 * 4096 }
            for _ in 0..<count {
                state.buffers.append(
                    state.planeLengths.map { UnsafeMutableRawPointer.allocate(byteCount: $0, alignment: 4096) })
            }
        case CLinuxMedia_VIDIOC_QUERYBUF:
            let buffer = argument.assumingMemoryBound(to: v4l2_buffer.self)
            let index = Int(buffer.pointee.index)
            guard state.buffers.indices.contains(index), let planes = planesArray(buffer.pointee, state) else {
                return (-1, EINVAL)
            }
            func offset(_ plane: Int) -> UInt32 { UInt32((index * Int(VIDEO_MAX_PLANES) + plane) * Self.offsetStride) }
            if let planes {
                for plane in state.planeLengths.indices {
                    planes[plane].m.mem_offset = offset(plane)
                    planes[plane].length = UInt32(state.planeLengths[plane])
                }
                buffer.pointee.length = UInt32(state.planeLengths.count)
            } else {
                buffer.pointee.m.offset = offset(0)
                buffer.pointee.length = UInt32(state.planeLengths[0])
            }
        case CLinuxMedia_VIDIOC_QBUF:
            let buffer = argument.assumingMemoryBound(to: v4l2_buffer.self).pointee
            let index = Int(buffer.index)
            guard planesArray(buffer, state) != nil, state.buffers.indices.contains(index),
                !state.queued.contains(index),
                !state.done.contains(where: { $0.index == index })
            else { return (-1, EINVAL) }
            state.queued.append(index)
        case CLinuxMedia_VIDIOC_DQBUF:
            let buffer = argument.assumingMemoryBound(to: v4l2_buffer.self)
            guard let planes = planesArray(buffer.pointee, state) else { return (-1, EINVAL) }
            guard !state.done.isEmpty else { return (-1, EAGAIN) }
            let (index, sequence, used) = state.done.removeFirst()
            buffer.pointee.index = UInt32(index)
            buffer.pointee.sequence = sequence
            if let planes {
                // Multi-planar: each plane says what it holds; the buffer's own `bytesused` stays unset.
                for plane in state.planes.indices {
                    planes[plane].bytesused = plane == 0 ? UInt32(dataOffset + used) : state.planes[plane].sizeImage
                    planes[plane].data_offset = plane == 0 ? UInt32(dataOffset) : 0
                    planes[plane].length = UInt32(state.planeLengths[plane])
                }
                buffer.pointee.length = UInt32(state.planes.count)
            } else {
                buffer.pointee.bytesused = UInt32(used)
            }
            buffer.pointee.flags = UInt32(V4L2_BUF_FLAG_TIMESTAMP_MONOTONIC)
            let now = CMClock.hostNanosecondsNow()
            buffer.pointee.timestamp = timeval(tv_sec: Int(now / 1_000_000_000), tv_usec: Int(now % 1_000_000_000 / 1000))
        case CLinuxMedia_VIDIOC_STREAMON:
            guard argument.load(as: Int32.self) == Int32(bitPattern: bufferType), !state.buffers.isEmpty else {
                return (-1, EINVAL)
            }
            state.isStreaming = true
            state.sequence = 0
        case CLinuxMedia_VIDIOC_STREAMOFF:
            guard argument.load(as: Int32.self) == Int32(bitPattern: bufferType) else { return (-1, EINVAL) }
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

    /// A buffer call's `planes` array: `.some(nil)` on a single-planar device (the call must name its type), the
    /// array on a multi-planar one (the call must pass one as long as the format's planes, in `length`); nil when
    /// the call is malformed for this device (EINVAL).
    private func planesArray(_ buffer: v4l2_buffer, _ state: State) -> UnsafeMutablePointer<v4l2_plane>?? {
        guard buffer.type == bufferType, buffer.memory == V4L2_MEMORY_MMAP.rawValue else { return nil }
        guard multiplanar else { return .some(nil) }
        guard let planes = buffer.m.planes, Int(buffer.length) >= state.planes.count,
            buffer.length <= UInt32(VIDEO_MAX_PLANES)
        else { return nil }
        return .some(planes)
    }

    /// The memory planes of a format at a size, as a driver lays them out: row length and image size each.
    static func planes(of pixelFormat: V4L2PixelFormat, width: UInt32, height: UInt32)
        -> [(bytesPerLine: UInt32, sizeImage: UInt32)]
    {
        switch pixelFormat {
        case .nv12m: return [(width, width * height), (width, width * height / 2)]
        case .yuv420m:
            return [(width, width * height), (width / 2, width * height / 4), (width / 2, width * height / 4)]
        case .nv12, .yuv420: return [(width, width * height * 3 / 2)]
        case .p010: return [(width * 2, width * 2 * height * 3 / 2)]
        case .mjpeg, .jpeg, .h264: return [(0, width * height)]
        case .yuyv, .uyvy: return [(width * 2, width * 2 * height)]
        case .rgb24, .bgr24: return [(width * 3, width * 3 * height)]
        default: return [(width, width * height)]
        }
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
