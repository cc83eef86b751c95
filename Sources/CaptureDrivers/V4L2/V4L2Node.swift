import CLinuxMedia
import OpenCoreMedia
import SystemPackage

/// One open V4L2 device node (`/dev/videoN`): its descriptor, and the ioctls a capture driver makes, typed. The
/// descriptor has one owner, this object, and is closed when it goes.
///
/// Every call goes through `SystemCalls`, so a test can play the kernel. Errors are the kernel's `Errno`,
/// uninterpreted: the caller has the context to explain them (libcamera's rule).
///
/// Threading: thread safe as the kernel is (each ioctl is atomic); the streaming calls are made by one capture
/// thread at a time.
package final class V4L2Node: Sendable {
    package let path: String
    package let descriptor: Int32
    package let system: SystemCalls

    /// Opens `path` read-write and non-blocking.
    package init(path: String, system: SystemCalls) throws(Errno) {
        self.path = path
        self.system = system
        self.descriptor = try system.open(path)
    }

    deinit { system.close(descriptor) }

    @discardableResult
    func ioctl<Argument>(_ request: V4L2Request, _ argument: inout Argument) throws(Errno) -> IOResult<Int32> {
        try system.ioctl(descriptor, request, &argument)
    }

    // MARK: Identity and formats

    /// VIDIOC_QUERYCAP.
    package func capability() throws(Errno) -> V4L2Capability {
        var capability = v4l2_capability()
        try ioctl(.queryCapability, &capability)
        return V4L2Capability(capability)
    }

    /// The pixel formats of the capture queue of `type` (VIDIOC_ENUM_FMT until EINVAL).
    package func pixelFormats(_ type: V4L2BufferType) throws(Errno) -> [V4L2PixelFormat] {
        var formats: [V4L2PixelFormat] = []
        for index in 0..<UInt32(1024) {
            var description = v4l2_fmtdesc()
            description.index = index
            description.type = type.rawValue
            do {
                try ioctl(.enumerateFormats, &description)
            } catch .invalidArgument {
                break
            }
            formats.append(V4L2PixelFormat(rawValue: description.pixelformat))
        }
        return formats
    }

    /// The frame sizes of a pixel format (VIDIOC_ENUM_FRAMESIZES). A driver without the ioctl (ENOTTY, EINVAL at
    /// index 0) reports none.
    package func frameSizes(of pixelFormat: V4L2PixelFormat) throws(Errno) -> [V4L2FrameSize] {
        var sizes: [V4L2FrameSize] = []
        for index in 0..<UInt32(1024) {
            var size = v4l2_frmsizeenum()
            size.index = index
            size.pixel_format = pixelFormat.rawValue
            do {
                try ioctl(.enumerateFrameSizes, &size)
            } catch .invalidArgument, .inappropriateIOCTLForDevice {
                break
            }
            switch size.type {
            case V4L2_FRMSIZE_TYPE_DISCRETE.rawValue:
                sizes.append(.discrete(width: size.discrete.width, height: size.discrete.height))
            default:
                // Stepwise and continuous (step 1) come once, at index 0.
                let step = size.stepwise
                sizes.append(
                    .stepwise(
                        minWidth: step.min_width, maxWidth: step.max_width, widthStep: max(1, step.step_width),
                        minHeight: step.min_height, maxHeight: step.max_height, heightStep: max(1, step.step_height)))
                return sizes
            }
        }
        return sizes
    }

    /// The frame intervals of a pixel format at a size (VIDIOC_ENUM_FRAMEINTERVALS).
    package func frameIntervals(of pixelFormat: V4L2PixelFormat, width: UInt32, height: UInt32) throws(Errno)
        -> [V4L2FrameInterval]
    {
        var intervals: [V4L2FrameInterval] = []
        for index in 0..<UInt32(1024) {
            var interval = v4l2_frmivalenum()
            interval.index = index
            interval.pixel_format = pixelFormat.rawValue
            interval.width = width
            interval.height = height
            do {
                try ioctl(.enumerateFrameIntervals, &interval)
            } catch .invalidArgument, .inappropriateIOCTLForDevice {
                break
            }
            switch interval.type {
            case V4L2_FRMIVAL_TYPE_DISCRETE.rawValue:
                if let time = CMTime(interval.discrete) { intervals.append(.discrete(time)) }
            default:
                if let shortest = CMTime(interval.stepwise.min), let longest = CMTime(interval.stepwise.max) {
                    intervals.append(.stepwise(shortest: shortest, longest: longest))
                }
                return intervals
            }
        }
        return intervals
    }

    // MARK: Configuring

    /// VIDIOC_S_FMT on the capture queue of `type` (`fmt.pix`, or `fmt.pix_mp` on a multi-planar queue); returns
    /// what the driver chose (it may adjust the size, never silently the pixel format on a conforming driver: the
    /// caller checks).
    package func setFormat(
        _ pixelFormat: V4L2PixelFormat, width: UInt32, height: UInt32, type: V4L2BufferType
    ) throws(Errno) -> V4L2ChosenFormat {
        var format = v4l2_format()
        format.type = type.rawValue
        guard type.isMultiplanar else {
            format.fmt.pix.width = width
            format.fmt.pix.height = height
            format.fmt.pix.pixelformat = pixelFormat.rawValue
            format.fmt.pix.field = V4L2_FIELD_NONE.rawValue
            try ioctl(.setFormat, &format)
            let pix = format.fmt.pix
            return V4L2ChosenFormat(
                pixelFormat: V4L2PixelFormat(rawValue: pix.pixelformat), width: pix.width, height: pix.height,
                planes: [V4L2PlaneFormat(bytesPerLine: Int(pix.bytesperline), sizeImage: Int(pix.sizeimage))],
                colorimetry: V4L2Colorimetry(
                    colorspace: pix.colorspace, transferFunction: pix.xfer_func, yCbCrEncoding: pix.ycbcr_enc,
                    quantization: pix.quantization))
        }
        format.fmt.pix_mp.width = width
        format.fmt.pix_mp.height = height
        format.fmt.pix_mp.pixelformat = pixelFormat.rawValue
        format.fmt.pix_mp.field = V4L2_FIELD_NONE.rawValue
        try ioctl(.setFormat, &format)
        let pix = format.fmt.pix_mp
        let planes = withUnsafeBytes(of: pix.plane_fmt) { bytes in
            bytes.bindMemory(to: v4l2_plane_pix_format.self).prefix(min(Int(pix.num_planes), Int(VIDEO_MAX_PLANES)))
                .map { V4L2PlaneFormat(bytesPerLine: Int($0.bytesperline), sizeImage: Int($0.sizeimage)) }
        }
        return V4L2ChosenFormat(
            pixelFormat: V4L2PixelFormat(rawValue: pix.pixelformat), width: pix.width, height: pix.height,
            planes: planes,
            colorimetry: V4L2Colorimetry(
                colorspace: pix.colorspace, transferFunction: UInt32(pix.xfer_func),
                yCbCrEncoding: UInt32(pix.ycbcr_enc), quantization: UInt32(pix.quantization)))
    }

    /// VIDIOC_S_PARM with a time per frame; returns what the driver chose, or nil when it cannot set frame rates.
    package func setFrameDuration(_ duration: CMTime, type: V4L2BufferType) throws(Errno) -> CMTime? {
        var parameters = v4l2_streamparm()
        parameters.type = type.rawValue
        parameters.parm.capture.timeperframe = v4l2_fract(
            numerator: UInt32(clamping: duration.value), denominator: UInt32(clamping: duration.timescale))
        do {
            try ioctl(.setParameters, &parameters)
        } catch .inappropriateIOCTLForDevice {
            return nil
        }
        guard parameters.parm.capture.capability & UInt32(V4L2_CAP_TIMEPERFRAME) != 0 else { return nil }
        return CMTime(parameters.parm.capture.timeperframe)
    }

    // MARK: Streaming

    /// VIDIOC_REQBUFS with memory-mapped buffers; returns how many the driver allocated (0 frees them).
    package func requestBuffers(_ count: UInt32, type: V4L2BufferType) throws(Errno) -> Int {
        var request = v4l2_requestbuffers()
        request.count = count
        request.type = type.rawValue
        request.memory = V4L2_MEMORY_MMAP.rawValue
        try ioctl(.requestBuffers, &request)
        return Int(request.count)
    }

    /// VIDIOC_QUERYBUF: where each memory plane of buffer `index` is (its mmap offset) and how long it is; one entry
    /// on a single-planar queue, `planeCount` on a multi-planar one (the kernel fills the `planes` array).
    package func queryBuffer(_ index: Int, type: V4L2BufferType, planeCount: Int) throws(Errno)
        -> [(offset: Int, length: Int)]
    {
        guard type.isMultiplanar else {
            var buffer = Self.emptyBuffer(index: index, type: type)
            try ioctl(.queryBuffer, &buffer)
            return [(Int(buffer.m.offset), Int(buffer.length))]
        }
        return try withPlanes(planeCount) { planes throws(Errno) in
            var buffer = Self.emptyBuffer(index: index, type: type, planes: planes)
            try ioctl(.queryBuffer, &buffer)
            return planes.prefix(Int(buffer.length)).map { (Int($0.m.mem_offset), Int($0.length)) }
        }
    }

    /// VIDIOC_QBUF: hands buffer `index` (with its `planeCount` memory planes on a multi-planar queue) to the
    /// kernel to fill.
    package func queue(_ index: Int, type: V4L2BufferType, planeCount: Int) throws(Errno) {
        guard type.isMultiplanar else {
            var buffer = Self.emptyBuffer(index: index, type: type)
            try ioctl(.queueBuffer, &buffer)
            return
        }
        try withPlanes(planeCount) { planes throws(Errno) in
            var buffer = Self.emptyBuffer(index: index, type: type, planes: planes)
            try ioctl(.queueBuffer, &buffer)
        }
    }

    /// VIDIOC_DQBUF: the next filled buffer, or `.wouldBlock` when none is done yet. On a multi-planar queue the
    /// kernel reports each plane in an array the size of `planeCount`; what the frame needs of it is copied out.
    package func dequeue(type: V4L2BufferType, planeCount: Int) throws(Errno) -> IOResult<V4L2DequeuedBuffer> {
        guard type.isMultiplanar else {
            var buffer = Self.emptyBuffer(index: 0, type: type)
            switch try ioctl(.dequeueBuffer, &buffer) {
            case .value: return .value(V4L2DequeuedBuffer(buffer, planes: nil))
            case .wouldBlock: return .wouldBlock
            }
        }
        return try withPlanes(planeCount) { planes throws(Errno) in
            var buffer = Self.emptyBuffer(index: 0, type: type, planes: planes)
            switch try ioctl(.dequeueBuffer, &buffer) {
            case .value:
                let count = min(Int(buffer.length), planes.count)
                return .value(V4L2DequeuedBuffer(buffer, planes: UnsafeBufferPointer(rebasing: planes[..<count])))
            case .wouldBlock: return .wouldBlock
            }
        }
    }

    /// VIDIOC_STREAMON.
    package func streamOn(_ type: V4L2BufferType) throws(Errno) {
        var type = Int32(bitPattern: type.rawValue)
        try ioctl(.streamOn, &type)
    }

    /// VIDIOC_STREAMOFF: the kernel gives every buffer back.
    package func streamOff(_ type: V4L2BufferType) throws(Errno) {
        var type = Int32(bitPattern: type.rawValue)
        try ioctl(.streamOff, &type)
    }

    static func emptyBuffer(
        index: Int, type: V4L2BufferType, planes: UnsafeMutableBufferPointer<v4l2_plane>? = nil
    ) -> v4l2_buffer {
        var buffer = v4l2_buffer()
        buffer.index = UInt32(index)
        buffer.type = type.rawValue
        buffer.memory = V4L2_MEMORY_MMAP.rawValue
        if let planes {
            // On a multi-planar queue `length` is the size of the planes array and `m.planes` points to it.
            buffer.length = UInt32(planes.count)
            buffer.m.planes = planes.baseAddress
        }
        return buffer
    }

    /// Runs `body` with a zeroed array of `count` planes on the stack (no allocation: DQBUF runs once a frame).
    func withPlanes<Value>(
        _ count: Int, _ body: (UnsafeMutableBufferPointer<v4l2_plane>) throws(Errno) -> Value
    ) throws(Errno) -> Value {
        precondition((1...Int(VIDEO_MAX_PLANES)).contains(count), "a V4L2 buffer has 1...\(VIDEO_MAX_PLANES) planes")
        let result: Result<Value, Errno> = withUnsafeTemporaryAllocation(of: v4l2_plane.self, capacity: count) {
            planes in
            planes.initialize(repeating: v4l2_plane())
            defer { planes.deinitialize() }
            do throws(Errno) {
                return .success(try body(planes))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    // MARK: Controls

    /// Every control (VIDIOC_QUERY_EXT_CTRL with `V4L2_CTRL_FLAG_NEXT_CTRL`), class headings left out, and so is a
    /// control whose range no driver gives: minimum above maximum, or beyond 32 bits for a type that has 32 (the
    /// V4L2 fuzz target's lying kernel made the exposure range trap). At most 1024, in increasing ID order: a
    /// kernel that answers the same ID again ends the list.
    package func controls() throws(Errno) -> [V4L2ControlInfo] {
        var controls: [V4L2ControlInfo] = []
        var query = v4l2_query_ext_ctrl()
        query.id = UInt32(V4L2_CTRL_FLAG_NEXT_CTRL)
        var last: UInt32?
        let thirtyTwoBits = Int64(Int32.min)...Int64(Int32.max)
        while controls.count < 1024 {
            do {
                try ioctl(.queryExtendedControl, &query)
            } catch .invalidArgument, .inappropriateIOCTLForDevice {
                break
            }
            if let last, query.id <= last { break }
            last = query.id
            let sane =
                query.minimum <= query.maximum
                && (query.type == V4L2_CTRL_TYPE_INTEGER64.rawValue
                    || thirtyTwoBits.contains(query.minimum) && thirtyTwoBits.contains(query.maximum))
            if query.type != V4L2_CTRL_TYPE_CTRL_CLASS.rawValue, sane { controls.append(V4L2ControlInfo(query)) }
            query.id |= UInt32(V4L2_CTRL_FLAG_NEXT_CTRL)
        }
        return controls
    }

    /// The items of a menu control (VIDIOC_QUERYMENU), by value; holes in the range are skipped.
    package func menuItems(of control: V4L2ControlInfo) throws(Errno) -> [Int64: String] {
        guard control.minimum <= control.maximum, control.maximum - control.minimum < 256 else { return [:] }
        var items: [Int64: String] = [:]
        for value in control.minimum...control.maximum {
            var menu = v4l2_querymenu()
            menu.id = control.id
            menu.index = UInt32(truncatingIfNeeded: value)
            do {
                try ioctl(.queryMenu, &menu)
            } catch .invalidArgument {
                continue
            }
            items[value] = control.type == V4L2_CTRL_TYPE_INTEGER_MENU.rawValue
                ? String(menu.value) : cString(menu.name)
        }
        return items
    }

    /// VIDIOC_G_CTRL.
    package func value(of control: UInt32) throws(Errno) -> Int32 {
        var value = v4l2_control(id: control, value: 0)
        try ioctl(.getControl, &value)
        return value.value
    }

    /// VIDIOC_S_CTRL; returns the value the driver kept (it clamps to the control's range and step).
    @discardableResult
    package func setValue(_ newValue: Int32, of control: UInt32) throws(Errno) -> Int32 {
        var value = v4l2_control(id: control, value: newValue)
        try ioctl(.setControl, &value)
        return value.value
    }
}

/// What VIDIOC_QUERYCAP says about a node.
///
/// Value type; safe to use from any thread.
package struct V4L2Capability: Sendable, Hashable {
    /// The kernel driver's name (`uvcvideo`, `vivid`).
    package var driver: String
    /// The device's name (`HD Pro Webcam C920`).
    package var card: String
    /// Where it is attached (`usb-0000:00:14.0-1`, `platform:vivid-000`).
    package var busInfo: String
    /// The capabilities of this node (`device_caps`), or of the whole device when the driver gives no node caps.
    package var deviceCapabilities: UInt32

    package init(driver: String, card: String, busInfo: String, deviceCapabilities: UInt32) {
        self.driver = driver
        self.card = card
        self.busInfo = busInfo
        self.deviceCapabilities = deviceCapabilities
    }

    init(_ capability: v4l2_capability) {
        driver = cString(capability.driver)
        card = cString(capability.card)
        busInfo = cString(capability.bus_info)
        deviceCapabilities =
            capability.capabilities & UInt32(V4L2_CAP_DEVICE_CAPS) != 0
            ? capability.device_caps : capability.capabilities
    }

    /// A video capture node that streams through mmap, single- or multi-planar: the nodes we open. Metadata,
    /// output and radio nodes are left out.
    package var isStreamingVideoCapture: Bool { captureBufferType != nil }

    /// The queue we capture from: the single-planar one where the node has it (a node with both streams the same
    /// frames either way, and single-planar is the simpler), else the multi-planar one (most SoC and ISP drivers);
    /// nil for a node that is not a streaming video capture node.
    package var captureBufferType: V4L2BufferType? {
        guard deviceCapabilities & UInt32(V4L2_CAP_STREAMING) != 0 else { return nil }
        if deviceCapabilities & UInt32(V4L2_CAP_VIDEO_CAPTURE) != 0 { return .videoCapture }
        if deviceCapabilities & UInt32(V4L2_CAP_VIDEO_CAPTURE_MPLANE) != 0 { return .videoCaptureMultiplanar }
        return nil
    }

    /// Attached by USB (an external camera) rather than built in.
    package var isUSB: Bool { busInfo.hasPrefix("usb-") }
}

/// Which of a capture node's two queue APIs a call is for: the single-planar one (`fmt.pix`, one memory buffer per
/// frame) or the multi-planar one (`fmt.pix_mp`, a `planes` array in every buffer call, one mmap per plane).
///
/// Value type; safe to use from any thread.
package struct V4L2BufferType: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    package let rawValue: UInt32
    package init(rawValue: UInt32) { self.rawValue = rawValue }

    /// The corresponding C constant is `V4L2_BUF_TYPE_VIDEO_CAPTURE`.
    package static let videoCapture = Self(rawValue: V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue)
    /// The corresponding C constant is `V4L2_BUF_TYPE_VIDEO_CAPTURE_MPLANE`.
    package static let videoCaptureMultiplanar = Self(rawValue: V4L2_BUF_TYPE_VIDEO_CAPTURE_MPLANE.rawValue)

    /// The corresponding C constant is `V4L2_BUF_TYPE_VIDEO_OUTPUT`: the queue a memory-to-memory device takes
    /// its input from.
    package static let videoOutput = Self(rawValue: V4L2_BUF_TYPE_VIDEO_OUTPUT.rawValue)
    /// The corresponding C constant is `V4L2_BUF_TYPE_VIDEO_OUTPUT_MPLANE`.
    package static let videoOutputMultiplanar = Self(rawValue: V4L2_BUF_TYPE_VIDEO_OUTPUT_MPLANE.rawValue)

    package var isMultiplanar: Bool { self == .videoCaptureMultiplanar || self == .videoOutputMultiplanar }

    /// Whether the application fills this queue's buffers (an output queue) rather than the kernel.
    package var isOutput: Bool { self == .videoOutput || self == .videoOutputMultiplanar }

    package var description: String { (isMultiplanar ? "multi-planar " : "") + (isOutput ? "output" : "capture") }
}

/// One memory plane of a format as S_FMT set it: its row length and how many bytes a frame takes in it.
///
/// Value type; safe to use from any thread.
package struct V4L2PlaneFormat: Sendable, Hashable {
    package var bytesPerLine: Int
    package var sizeImage: Int

    package init(bytesPerLine: Int, sizeImage: Int) {
        self.bytesPerLine = bytesPerLine
        self.sizeImage = sizeImage
    }
}

/// What VIDIOC_S_FMT chose, from either queue API: one plane entry per memory buffer of a frame (one on a
/// single-planar queue).
///
/// Value type; safe to use from any thread.
package struct V4L2ChosenFormat: Sendable, Hashable {
    package var pixelFormat: V4L2PixelFormat
    package var width: UInt32
    package var height: UInt32
    package var planes: [V4L2PlaneFormat]
    /// What colour the numbers are, as the driver says.
    package var colorimetry: V4L2Colorimetry

    package init(
        pixelFormat: V4L2PixelFormat, width: UInt32, height: UInt32, planes: [V4L2PlaneFormat],
        colorimetry: V4L2Colorimetry = V4L2Colorimetry()
    ) {
        self.pixelFormat = pixelFormat
        self.width = width
        self.height = height
        self.planes = planes
        self.colorimetry = colorimetry
    }
}

/// A buffer VIDIOC_DQBUF returned, as the capture thread needs it: no pointer into the call's `planes` array.
///
/// Value type; safe to use from any thread.
package struct V4L2DequeuedBuffer: Sendable {
    package var index: Int
    package var sequence: UInt32
    package var flags: UInt32
    package var timestamp: timeval
    /// The frame's bytes in its first memory plane, from where the image starts (what a compressed frame is).
    package var bytesUsed: Int
    /// Where the image starts in each memory plane (`data_offset`, set by a few multi-planar drivers), for at most
    /// three planes (the most any format we deliver has); all zero on a single-planar queue.
    package var dataOffsets: (Int, Int, Int)

    package init(
        index: Int, sequence: UInt32, flags: UInt32, timestamp: timeval, bytesUsed: Int,
        dataOffsets: (Int, Int, Int) = (0, 0, 0)
    ) {
        self.index = index
        self.sequence = sequence
        self.flags = flags
        self.timestamp = timestamp
        self.bytesUsed = bytesUsed
        self.dataOffsets = dataOffsets
    }

    init(_ buffer: v4l2_buffer, planes: UnsafeBufferPointer<v4l2_plane>?) {
        guard let planes, let first = planes.first else {
            self.init(
                index: Int(buffer.index), sequence: buffer.sequence, flags: buffer.flags,
                timestamp: buffer.timestamp, bytesUsed: Int(buffer.bytesused))
            return
        }
        func offset(_ plane: Int) -> Int { plane < planes.count ? Int(planes[plane].data_offset) : 0 }
        self.init(
            index: Int(buffer.index), sequence: buffer.sequence, flags: buffer.flags, timestamp: buffer.timestamp,
            bytesUsed: Int(first.bytesused) - min(Int(first.data_offset), Int(first.bytesused)),
            dataOffsets: (offset(0), offset(1), offset(2)))
    }

    /// Whether the image starts at the beginning of every memory plane (the case of nearly every driver).
    package var startsAtPlaneStarts: Bool { dataOffsets == (0, 0, 0) }

    /// Where the image starts in memory plane `plane`.
    package func dataOffset(ofPlane plane: Int) -> Int {
        switch plane {
        case 0: dataOffsets.0
        case 1: dataOffsets.1
        case 2: dataOffsets.2
        default: 0
        }
    }
}

/// One entry of VIDIOC_ENUM_FRAMESIZES.
package enum V4L2FrameSize: Sendable, Hashable {
    case discrete(width: UInt32, height: UInt32)
    case stepwise(
        minWidth: UInt32, maxWidth: UInt32, widthStep: UInt32, minHeight: UInt32, maxHeight: UInt32,
        heightStep: UInt32)
}

/// One entry of VIDIOC_ENUM_FRAMEINTERVALS, as frame durations.
package enum V4L2FrameInterval: Sendable, Hashable {
    case discrete(CMTime)
    case stepwise(shortest: CMTime, longest: CMTime)
}

/// One control, as VIDIOC_QUERY_EXT_CTRL describes it.
///
/// Value type; safe to use from any thread.
package struct V4L2ControlInfo: Sendable, Hashable {
    package var id: UInt32
    package var type: UInt32
    package var name: String
    package var minimum: Int64
    package var maximum: Int64
    package var step: UInt64
    package var defaultValue: Int64
    package var flags: UInt32

    package init(
        id: UInt32, type: UInt32, name: String, minimum: Int64, maximum: Int64, step: UInt64, defaultValue: Int64,
        flags: UInt32 = 0
    ) {
        self.id = id
        self.type = type
        self.name = name
        self.minimum = minimum
        self.maximum = maximum
        self.step = step
        self.defaultValue = defaultValue
        self.flags = flags
    }

    init(_ query: v4l2_query_ext_ctrl) {
        self.init(
            id: query.id, type: query.type, name: cString(query.name), minimum: query.minimum,
            maximum: query.maximum, step: query.step, defaultValue: query.default_value, flags: query.flags)
    }

    /// Whether the control can be set now (not read-only, not disabled).
    package var isWritable: Bool {
        flags & UInt32(V4L2_CTRL_FLAG_READ_ONLY | V4L2_CTRL_FLAG_DISABLED) == 0
    }
}

extension CMTime {
    /// A V4L2 fraction of seconds (`timeperframe`), nil when it is not a positive number.
    init?(_ fraction: v4l2_fract) {
        guard fraction.numerator > 0, fraction.denominator > 0, fraction.denominator <= UInt32(Int32.max) else {
            return nil
        }
        self.init(value: Int64(fraction.numerator), timescale: Int32(fraction.denominator))
    }
}

/// A fixed-size C character array (a tuple in Swift) as a string, up to its first NUL.
func cString<Tuple>(_ tuple: Tuple) -> String {
    withUnsafeBytes(of: tuple) { bytes in
        let end = bytes.firstIndex(of: 0) ?? bytes.count
        return String(decoding: bytes[..<end], as: UTF8.self)
    }
}
