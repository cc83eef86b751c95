import CLinuxMedia
import SystemPackage

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The raw system calls a device driver makes, exactly as the kernel answers them: a result, and the errno when
/// the result says failure. `SystemCalls` is the only caller; tests replace this with a mock kernel that records
/// every call and plays a device.
///
/// Threading: implementations are thread safe.
package protocol KernelCalls: Sendable {
    /// open(2). Returns the descriptor or -1.
    func open(_ path: String, _ flags: Int32) -> (result: Int32, errno: Int32)
    /// close(2).
    func close(_ descriptor: Int32) -> (result: Int32, errno: Int32)
    /// ioctl(2) with one pointer argument.
    func ioctl(_ descriptor: Int32, _ request: UInt, _ argument: UnsafeMutableRawPointer) -> (result: Int32, errno: Int32)
    /// mmap(2) of a device's buffer, shared, for reading and writing. Returns nil for `MAP_FAILED`.
    func mmap(length: Int, descriptor: Int32, offset: Int) -> (result: UnsafeMutableRawPointer?, errno: Int32)
    /// munmap(2).
    func munmap(_ address: UnsafeMutableRawPointer, length: Int) -> (result: Int32, errno: Int32)
    /// poll(2).
    func poll(_ descriptors: UnsafeMutablePointer<pollfd>, count: Int, timeout: Int32) -> (result: Int32, errno: Int32)
    /// access(2): whether this process may open `path` with `mode` (`R_OK | W_OK`).
    func access(_ path: String, _ mode: Int32) -> (result: Int32, errno: Int32)
}

/// The Linux kernel itself.
package struct LinuxKernel: KernelCalls {
    package init() {}

    package func open(_ path: String, _ flags: Int32) -> (result: Int32, errno: Int32) {
        let result = Glibc.open(path, flags)
        return (result, result < 0 ? Glibc.errno : 0)
    }

    package func close(_ descriptor: Int32) -> (result: Int32, errno: Int32) {
        let result = Glibc.close(descriptor)
        return (result, result < 0 ? Glibc.errno : 0)
    }

    package func ioctl(_ descriptor: Int32, _ request: UInt, _ argument: UnsafeMutableRawPointer) -> (
        result: Int32, errno: Int32
    ) {
        let result = CLinuxMedia_ioctl(descriptor, request, argument)
        return (result, result < 0 ? Glibc.errno : 0)
    }

    package func mmap(length: Int, descriptor: Int32, offset: Int) -> (result: UnsafeMutableRawPointer?, errno: Int32) {
        let address = Glibc.mmap(nil, length, PROT_READ | PROT_WRITE, MAP_SHARED, descriptor, off_t(offset))
        guard let address, address != MAP_FAILED else { return (nil, Glibc.errno) }
        return (address, 0)
    }

    package func munmap(_ address: UnsafeMutableRawPointer, length: Int) -> (result: Int32, errno: Int32) {
        let result = Glibc.munmap(address, length)
        return (result, result < 0 ? Glibc.errno : 0)
    }

    package func poll(_ descriptors: UnsafeMutablePointer<pollfd>, count: Int, timeout: Int32) -> (
        result: Int32, errno: Int32
    ) {
        let result = Glibc.poll(descriptors, nfds_t(count), timeout)
        return (result, result < 0 ? Glibc.errno : 0)
    }

    package func access(_ path: String, _ mode: Int32) -> (result: Int32, errno: Int32) {
        let result = Glibc.access(path, mode)
        return (result, result < 0 ? Glibc.errno : 0)
    }
}

/// What a non-blocking call returned: a value, or "nothing now" (EAGAIN), which is not an error.
package enum IOResult<Value> {
    case value(Value)
    case wouldBlock
}

/// Every system call a driver makes goes through here (SwiftNIO's `System.swift`, reduced): EINTR is retried,
/// EAGAIN is the value `.wouldBlock`, EBADF and EFAULT trap (they mean our own bug: a closed descriptor, a bad
/// pointer), and every other failure is thrown as swift-system's `Errno`.
///
/// Value type; safe to use from any thread (the kernel it calls is thread safe).
package struct SystemCalls: Sendable {
    /// Who answers: the Linux kernel, or a test's mock.
    package let kernel: any KernelCalls

    package init(kernel: any KernelCalls) {
        self.kernel = kernel
    }

    /// The real kernel.
    package static let live = SystemCalls(kernel: LinuxKernel())

    /// Runs `call` until it does not fail with EINTR; traps on EBADF/EFAULT; returns the result or the errno.
    @inline(__always)
    private func retrying<Result>(
        _ what: @autoclosure () -> String, _ call: () -> (result: Result, errno: Int32),
        failed: (Result) -> Bool
    ) -> (Result, Errno?) {
        while true {
            let (result, code) = call()
            guard failed(result) else { return (result, nil) }
            let error = Errno(rawValue: code)
            if error == .interrupted { continue }
            precondition(
                error != .badFileDescriptor && error != .badAddress,
                "\(what()) failed with \(error): a closed descriptor or a bad pointer is a bug in the driver")
            return (result, error)
        }
    }

    /// open(2), close-on-exec and non-blocking (a driver polls before it dequeues).
    package func open(_ path: String, readWrite: Bool = true) throws(Errno) -> Int32 {
        let flags = (readWrite ? O_RDWR : O_RDONLY) | O_NONBLOCK | O_CLOEXEC
        let (descriptor, error) = retrying("open(\(path))", { kernel.open(path, flags) }, failed: { $0 < 0 })
        if let error { throw error }
        return descriptor
    }

    /// close(2). Never retried: Linux releases the descriptor even when close reports EINTR, and retrying could
    /// close a descriptor another thread just opened.
    package func close(_ descriptor: Int32) {
        let (result, code) = kernel.close(descriptor)
        precondition(
            result == 0 || Errno(rawValue: code) != .badFileDescriptor,
            "close(\(descriptor)): not open; a descriptor closed twice is a bug in the driver")
    }

    /// ioctl(2) with `argument` passed by pointer. EAGAIN (a non-blocking DQBUF with nothing done) is
    /// `.wouldBlock`.
    package func ioctl<Argument>(
        _ descriptor: Int32, _ request: V4L2Request, _ argument: inout Argument
    ) throws(Errno) -> IOResult<Int32> {
        let (result, error) = withUnsafeMutableBytes(of: &argument) { bytes in
            retrying(
                "ioctl(\(descriptor), VIDIOC_\(request.name))",
                { kernel.ioctl(descriptor, request.code, bytes.baseAddress!) }, failed: { $0 < 0 })
        }
        if let error {
            if error == .resourceTemporarilyUnavailable { return .wouldBlock }
            throw error
        }
        return .value(result)
    }

    /// mmap(2) of `length` bytes of the device at `offset` (the offset QUERYBUF gave).
    package func mmap(length: Int, descriptor: Int32, offset: Int) throws(Errno) -> UnsafeMutableRawPointer {
        let (address, error) = retrying(
            "mmap(\(descriptor))", { kernel.mmap(length: length, descriptor: descriptor, offset: offset) },
            failed: { (address: UnsafeMutableRawPointer?) in address == nil })
        if let error { throw error }
        return address!
    }

    /// munmap(2). Failing to unmap what we mapped is a bug, so it traps.
    package func munmap(_ address: UnsafeMutableRawPointer, length: Int) {
        let (result, code) = kernel.munmap(address, length: length)
        precondition(result == 0, "munmap failed with \(Errno(rawValue: code)): the mapping was not ours")
    }

    /// poll(2); returns how many descriptors have events (0 on timeout). EINTR is retried with the same timeout.
    package func poll(_ descriptors: inout [pollfd], timeout milliseconds: Int32) throws(Errno) -> Int {
        let count = descriptors.count
        let (result, error) = descriptors.withUnsafeMutableBufferPointer { buffer in
            retrying(
                "poll", { kernel.poll(buffer.baseAddress!, count: count, timeout: milliseconds) }, failed: { $0 < 0 })
        }
        if let error { throw error }
        return Int(result)
    }

    /// Whether this process may open `path` for reading and writing; the errno (EACCES, ENOENT) when not.
    package func accessError(_ path: String) -> Errno? {
        let (result, code) = kernel.access(path, R_OK | W_OK)
        return result == 0 ? nil : Errno(rawValue: code)
    }
}

/// A V4L2 ioctl request: its code and the name a trace shows (`VIDIOC_` left off).
///
/// Value type; safe to use from any thread.
package struct V4L2Request: Sendable, Hashable, CustomStringConvertible {
    package let code: UInt
    package let name: String

    package var description: String { name }

    /// The corresponding C constant is `VIDIOC_QUERYCAP`.
    package static let queryCapability = V4L2Request(code: CLinuxMedia_VIDIOC_QUERYCAP, name: "QUERYCAP")
    /// The corresponding C constant is `VIDIOC_ENUM_FMT`.
    package static let enumerateFormats = V4L2Request(code: CLinuxMedia_VIDIOC_ENUM_FMT, name: "ENUM_FMT")
    /// The corresponding C constant is `VIDIOC_ENUM_FRAMESIZES`.
    package static let enumerateFrameSizes = V4L2Request(
        code: CLinuxMedia_VIDIOC_ENUM_FRAMESIZES, name: "ENUM_FRAMESIZES")
    /// The corresponding C constant is `VIDIOC_ENUM_FRAMEINTERVALS`.
    package static let enumerateFrameIntervals = V4L2Request(
        code: CLinuxMedia_VIDIOC_ENUM_FRAMEINTERVALS, name: "ENUM_FRAMEINTERVALS")
    /// The corresponding C constant is `VIDIOC_G_FMT`.
    package static let getFormat = V4L2Request(code: CLinuxMedia_VIDIOC_G_FMT, name: "G_FMT")
    /// The corresponding C constant is `VIDIOC_S_FMT`.
    package static let setFormat = V4L2Request(code: CLinuxMedia_VIDIOC_S_FMT, name: "S_FMT")
    /// The corresponding C constant is `VIDIOC_G_PARM`.
    package static let getParameters = V4L2Request(code: CLinuxMedia_VIDIOC_G_PARM, name: "G_PARM")
    /// The corresponding C constant is `VIDIOC_S_PARM`.
    package static let setParameters = V4L2Request(code: CLinuxMedia_VIDIOC_S_PARM, name: "S_PARM")
    /// The corresponding C constant is `VIDIOC_REQBUFS`.
    package static let requestBuffers = V4L2Request(code: CLinuxMedia_VIDIOC_REQBUFS, name: "REQBUFS")
    /// The corresponding C constant is `VIDIOC_QUERYBUF`.
    package static let queryBuffer = V4L2Request(code: CLinuxMedia_VIDIOC_QUERYBUF, name: "QUERYBUF")
    /// The corresponding C constant is `VIDIOC_QBUF`.
    package static let queueBuffer = V4L2Request(code: CLinuxMedia_VIDIOC_QBUF, name: "QBUF")
    /// The corresponding C constant is `VIDIOC_DQBUF`.
    package static let dequeueBuffer = V4L2Request(code: CLinuxMedia_VIDIOC_DQBUF, name: "DQBUF")
    /// The corresponding C constant is `VIDIOC_STREAMON`.
    package static let streamOn = V4L2Request(code: CLinuxMedia_VIDIOC_STREAMON, name: "STREAMON")
    /// The corresponding C constant is `VIDIOC_STREAMOFF`.
    package static let streamOff = V4L2Request(code: CLinuxMedia_VIDIOC_STREAMOFF, name: "STREAMOFF")
    /// The corresponding C constant is `VIDIOC_G_INPUT`.
    package static let getInput = V4L2Request(code: CLinuxMedia_VIDIOC_G_INPUT, name: "G_INPUT")
    /// The corresponding C constant is `VIDIOC_QUERY_EXT_CTRL`.
    package static let queryExtendedControl = V4L2Request(
        code: CLinuxMedia_VIDIOC_QUERY_EXT_CTRL, name: "QUERY_EXT_CTRL")
    /// The corresponding C constant is `VIDIOC_QUERYMENU`.
    package static let queryMenu = V4L2Request(code: CLinuxMedia_VIDIOC_QUERYMENU, name: "QUERYMENU")
    /// The corresponding C constant is `VIDIOC_G_CTRL`.
    package static let getControl = V4L2Request(code: CLinuxMedia_VIDIOC_G_CTRL, name: "G_CTRL")
    /// The corresponding C constant is `VIDIOC_S_CTRL`.
    package static let setControl = V4L2Request(code: CLinuxMedia_VIDIOC_S_CTRL, name: "S_CTRL")

    /// The corresponding C constant is `VIDIOC_ENCODER_CMD`: a memory-to-memory encoder's stop (drain) and start.
    package static let encoderCommand = V4L2Request(code: CLinuxMedia_VIDIOC_ENCODER_CMD, name: "ENCODER_CMD")
    /// The corresponding C constant is `VIDIOC_S_SELECTION`: an encoder's visible area within its coded size.
    package static let setSelection = V4L2Request(code: CLinuxMedia_VIDIOC_S_SELECTION, name: "S_SELECTION")

    /// Every request a driver makes, for traces that show names rather than numbers.
    package static let all: [V4L2Request] = [
        .queryCapability, .enumerateFormats, .enumerateFrameSizes, .enumerateFrameIntervals, .getFormat, .setFormat,
        .getParameters, .setParameters, .requestBuffers, .queryBuffer, .queueBuffer, .dequeueBuffer, .streamOn,
        .streamOff, .getInput, .queryExtendedControl, .queryMenu, .getControl, .setControl, .encoderCommand,
        .setSelection,
    ]

    /// The request with this code, if we make it.
    package static func named(code: UInt) -> V4L2Request? { all.first { $0.code == code } }
}
