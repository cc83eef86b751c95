import CLinuxMedia
import Dispatch
import Foundation
import OpenCoreMedia
import OpenCoreVideo
import Synchronization
import SystemPackage

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Where starting a stream failed: the step and the kernel's errno, for the camera to explain.
struct V4L2StartFailure: Error {
    enum Step: String {
        case open, setFormat = "S_FMT", setFrameRate = "S_PARM", requestBuffers = "REQBUFS", map = "mmap"
        case queue = "QBUF", streamOn = "STREAMON", wrap = "wrap"
    }
    let step: Step
    let errno: Errno
}

/// One run of a V4L2 camera: the open node, its mapped buffers and the capture thread that dequeues them.
///
/// Made by `start` on the caller's thread (every step that can fail happens there, so `start` throws), then run by
/// one capture thread: `poll` on the node and on a wake-up event, `DQBUF`, wrap, hand to the sink, and `QBUF` every
/// buffer its consumers have let go. Raw frames are pixel buffers wrapping the mapped memory (from a
/// `CVPixelBufferRecycler`, so nothing is allocated per frame); compressed frames are block buffers around it.
/// A buffer goes back to the kernel only when released; when consumers hold so many that the kernel would be left
/// short, raw frames are handed out as copies instead (`V4L2SpareFrames`), so one slow output does not starve the
/// camera for the others. Consumers holding every buffer and every copy starve the kernel: the frames it then skips
/// are reported as `.outOfBuffers`; gaps in the kernel's sequence numbers while it had buffers are
/// `.discontinuity`.
///
/// Threading: `run` is the capture thread's body; `requestStop` and `join` are for other threads.
final class V4L2CaptureStream: @unchecked Sendable {

    let node: V4L2Node
    let buffers: V4L2MappedBuffers
    /// The node's queue we stream from, single- or multi-planar.
    let bufferType: V4L2BufferType
    private let pixelFormat: V4L2PixelFormat
    /// The memory planes of every buffer, as S_FMT set them (one on a single-planar queue).
    private let planeFormats: [V4L2PlaneFormat]
    /// The colour the driver reported for the format; attached to every pixel buffer.
    private let colorimetry: V4L2Colorimetry
    private let width: Int
    private let height: Int
    private let pixelBuffers: CVPixelBufferRecycler?
    /// Copies of raw frames for when the kernel runs short (nil for compressed frames, which their consumers copy).
    private let spares: V4L2SpareFrames?
    private let formatDescription: CMFormatDescription
    private let frameDuration: CMTime
    private let sink: StreamSink
    /// Called on the capture thread when the stream ends by itself (a fault), before the fault is sent.
    private let onFault: @Sendable (DeviceFault) -> Void
    private let wake: WakeEvent
    private let finished = DispatchSemaphore(value: 0)
    private let stopRequested = Atomic<Bool>(false)
    private let finishedFlag = Atomic<Bool>(false)
    private let threadID = Mutex<pthread_t?>(nil)

    /// Opens and configures the node's queue of `type` and starts streaming: open, S_FMT, S_PARM, REQBUFS,
    /// QUERYBUF + mmap each (each memory plane on a multi-planar queue), QBUF each, STREAMON. Does not start the
    /// thread.
    init(
        path: String, system: SystemCalls, type: V4L2BufferType, pixelFormat: V4L2PixelFormat, width: Int32,
        height: Int32, frameDuration: CMTime, sink: @escaping StreamSink,
        onFault: @escaping @Sendable (DeviceFault) -> Void
    ) throws(V4L2StartFailure) {
        func attempt<T>(_ step: V4L2StartFailure.Step, _ body: () throws(Errno) -> T) throws(V4L2StartFailure) -> T {
            do { return try body() } catch { throw V4L2StartFailure(step: step, errno: error) }
        }
        let node = try attempt(.open) { () throws(Errno) in try V4L2Node(path: path, system: system) }
        let chosen = try attempt(.setFormat) { () throws(Errno) in
            try node.setFormat(pixelFormat, width: UInt32(width), height: UInt32(height), type: type)
        }
        // A driver that picks another format or size would make the frames lie about their format; one that puts a
        // frame in other memory planes than the format has would leave image planes without memory.
        guard chosen.pixelFormat == pixelFormat, chosen.width == UInt32(width), chosen.height == UInt32(height),
            chosen.planes.count == (type.isMultiplanar ? pixelFormat.memoryPlaneCount : 1)
        else { throw V4L2StartFailure(step: .setFormat, errno: .invalidArgument) }
        let planeCount = chosen.planes.count
        _ = try attempt(.setFrameRate) { () throws(Errno) in try node.setFrameDuration(frameDuration, type: type) }
        let count = try attempt(.requestBuffers) { () throws(Errno) in
            try node.requestBuffers(V4L2Camera.requestedBufferCount, type: type)
        }
        guard count >= 2, count <= V4L2MappedBuffers.maximumCount else {
            throw V4L2StartFailure(step: .requestBuffers, errno: .noMemory)
        }
        let buffers = try attempt(.map) { () throws(Errno) in
            try V4L2MappedBuffers(node: node, count: count, type: type, planeCount: planeCount)
        }
        // The range the driver reports picks Apple's video- or full-range pixel format ('420v' or '420f', …).
        let fullRange = chosen.colorimetry.isFullRange
        let subType = pixelFormat.mediaSubType(fullRange: fullRange) ?? 0
        if pixelFormat.isCompressed {
            pixelBuffers = nil
            spares = nil
        } else {
            do {
                let images = try buffers.wrapPixelBuffers(
                    pixelFormat: pixelFormat, fullRange: fullRange, width: Int(width), height: Int(height),
                    planes: chosen.planes)
                // Set once: the buffers are reused in place and keep their attachments.
                for image in images { chosen.colorimetry.attach(to: image) }
                pixelBuffers = CVPixelBufferRecycler(images)
                spares = images.first.flatMap(V4L2SpareFrames.init(like:))
            } catch {
                throw V4L2StartFailure(step: .wrap, errno: .invalidArgument)
            }
        }
        do {
            formatDescription = try CMFormatDescription(
                videoCodecType: .init(rawValue: subType), width: Int(width), height: Int(height))
        } catch {
            throw V4L2StartFailure(step: .wrap, errno: .invalidArgument)
        }
        for index in 0..<count {
            try attempt(.queue) { () throws(Errno) in try node.queue(index, type: type, planeCount: planeCount) }
        }
        try attempt(.streamOn) { () throws(Errno) in try node.streamOn(type) }
        do {
            wake = try WakeEvent()
        } catch {
            _ = try? node.streamOff(type)
            throw V4L2StartFailure(step: .streamOn, errno: error)
        }
        self.node = node
        self.buffers = buffers
        self.bufferType = type
        self.pixelFormat = pixelFormat
        self.planeFormats = chosen.planes
        self.colorimetry = chosen.colorimetry
        self.width = Int(width)
        self.height = Int(height)
        self.frameDuration = frameDuration
        self.sink = sink
        self.onFault = onFault
    }

    // MARK: Other threads

    /// Whether the capture thread has ended (stopped, or by itself after a fault).
    var isFinished: Bool { finishedFlag.load(ordering: .acquiring) }

    /// Starts the capture thread.
    func startThread(name: String) {
        let thread = Thread { [self] in
            threadID.withLock { $0 = pthread_self() }
            run()
            finishedFlag.store(true, ordering: .releasing)
            finished.signal()
        }
        thread.name = name
        thread.start()
    }

    /// Asks the thread to end without a further event, and waits until it has (unless called from the capture
    /// thread itself, a sink calling back, which cannot wait for itself).
    func stop() {
        stopRequested.store(true, ordering: .relaxed)
        wake.signal()
        let isCaptureThread = threadID.withLock { id in id.map { pthread_equal($0, pthread_self()) != 0 } ?? false }
        guard !isCaptureThread else { return }
        finished.wait()
        finished.signal()
    }

    // MARK: The capture thread

    /// How long the thread waits for a frame before it calls the device stalled.
    private var stallMilliseconds: Int32 {
        Int32(clamping: Int64(10_000 + 10 * frameDuration.seconds * 1000))
    }

    private func run() {
        var state = CaptureState(bufferCount: buffers.count)
        let samples = CMSampleBufferRecycler(capacity: buffers.count + 2)
        var descriptors = [
            pollfd(fd: node.descriptor, events: Int16(POLLIN), revents: 0),
            pollfd(fd: wake.descriptor, events: Int16(POLLIN), revents: 0),
        ]
        var fault: DeviceFault?
        var waitedMilliseconds: Int64 = 0
        streaming: while !stopRequested.load(ordering: .relaxed) {
            do {
                try requeueReturned(&state, samples)
            } catch {
                fault = Self.fault(for: error)
                break streaming
            }
            if state.queuedCount == 0 { state.kernelStarved = true }
            // With nothing queued the kernel cannot wake us: look for returned buffers every few milliseconds.
            let timeout: Int32 = state.queuedCount == 0 ? 4 : 250
            let ready: Int
            do {
                ready = try node.system.poll(&descriptors, timeout: timeout)
            } catch {
                fault = .io(error)
                break streaming
            }
            if descriptors[1].revents != 0 || stopRequested.load(ordering: .relaxed) { break streaming }
            if ready == 0 {
                if state.queuedCount > 0 {
                    waitedMilliseconds += Int64(timeout)
                    if waitedMilliseconds >= Int64(stallMilliseconds) {
                        fault = .stalled
                        break streaming
                    }
                }
                continue
            }
            waitedMilliseconds = 0
            let events = descriptors[0].revents
            guard events & Int16(POLLIN | POLLERR | POLLHUP | POLLNVAL) != 0 else { continue }
            do {
                let dequeued = try dequeueAll(&state, samples)
                // POLLERR with nothing to dequeue: the queue is in error or the device is gone, and DQBUF said
                // neither; do not spin.
                if !dequeued && events & Int16(POLLERR | POLLHUP | POLLNVAL) != 0 {
                    fault = .disconnected
                    break streaming
                }
            } catch {
                fault = Self.fault(for: error)
                break streaming
            }
        }
        // The kernel gives every buffer back, and REQBUFS(0) releases the queue for the next opener; buffers
        // consumers still hold stay mapped (the kernel orphans them) until they are released.
        _ = try? node.streamOff(bufferType)
        _ = try? node.requestBuffers(0, type: bufferType)
        if let fault, !stopRequested.load(ordering: .relaxed) {
            onFault(fault)
            sink(.fault(fault))
        }
    }

    /// ENODEV, EIO, ENXIO and EPIPE mid-stream mean the device went away (unplugged, driver unbound).
    static func fault(for error: Errno) -> DeviceFault {
        switch error {
        case .operationNotSupportedByDevice, .ioError, .noSuchAddressOrDevice, .brokenPipe: .disconnected
        default: .io(error)
        }
    }

    /// Gives back to the kernel every buffer its consumers have let go.
    private func requeueReturned(_ state: inout CaptureState, _ samples: CMSampleBufferRecycler) throws(Errno) {
        if let pixelBuffers {
            samples.releaseIdleImages()
            while let index = pixelBuffers.firstReturnedBuffer() { try requeue(index, &state) }
        }
        // Compressed frames, and raw frames wrapped on their own (an image not at the start of its planes).
        var returned = buffers.takeReturned()
        while returned != 0 {
            let index = returned.trailingZeroBitCount
            returned &= returned - 1
            try requeue(index, &state)
        }
    }

    private func requeue(_ index: Int, _ state: inout CaptureState) throws(Errno) {
        try node.queue(index, type: bufferType, planeCount: planeFormats.count)
        state.queued[index] = true
        state.queuedCount += 1
    }

    /// Dequeues every finished buffer and delivers it. Returns whether anything was dequeued.
    private func dequeueAll(_ state: inout CaptureState, _ samples: CMSampleBufferRecycler) throws(Errno) -> Bool {
        var any = false
        while true {
            guard case .value(let buffer) = try node.dequeue(type: bufferType, planeCount: planeFormats.count) else {
                return any
            }
            any = true
            let index = buffer.index
            guard index < buffers.count, state.queued[index] else { continue }
            state.queued[index] = false
            state.queuedCount -= 1
            // What consumers let go of since the last look goes back first: the kernel's count decides whether
            // this frame is lent or copied.
            try requeueReturned(&state, samples)
            deliver(buffer, &state, samples)
        }
    }

    private func deliver(
        _ buffer: V4L2DequeuedBuffer, _ state: inout CaptureState, _ samples: CMSampleBufferRecycler
    ) {
        let index = buffer.index
        let time = Self.presentationTime(of: buffer)
        let sequence = state.sequence(for: buffer.sequence)
        // Frames the kernel skipped: for want of buffers if it ran out since the last frame, else the device's.
        if let last = state.lastDelivered, sequence > last.sequence + 1 {
            let missing = sequence - last.sequence - 1
            let reason: DropReason = state.kernelStarved ? .outOfBuffers : .discontinuity
            let step = (time - last.time).seconds / Double(missing + 1)
            for k in 1...min(missing, 1000) {
                let dropTime = last.time + CMTime(seconds: step * Double(k), preferredTimescale: time.timescale)
                sink(.dropped(sequence: last.sequence + k, presentationTime: dropTime, reason: reason))
            }
        }
        state.kernelStarved = state.queuedCount == 0
        state.lastDelivered = (sequence, time)
        if buffer.flags & UInt32(V4L2_BUF_FLAG_ERROR) != 0 {
            // The driver says the frame is damaged: give the buffer back, tell the sink.
            if (try? requeue(index, &state)) == nil { state.queued[index] = false }
            sink(.dropped(sequence: sequence, presentationTime: time, reason: .discontinuity))
            return
        }
        let timing = CMSampleTimingInfo(duration: frameDuration, presentationTimeStamp: time, decodeTimeStamp: .invalid)
        if let pixelBuffers, buffer.startsAtPlaneStarts {
            let lent = pixelBuffers.handOut(index)
            // The kernel short of buffers: a copy goes out, and the buffer goes back at the next look.
            let copy = state.queuedCount < V4L2SpareFrames.kernelReserve ? spares?.copy(lent) : nil
            let image = copy ?? lent
            let sample = samples.sampleBuffer(imageBuffer: image, formatDescription: formatDescription, timing: timing)
            sink(.output(sample, sequence: sequence))
        } else if pixelBuffers != nil {
            // A driver that starts the image `data_offset` into a plane (a few multi-planar ones): this frame gets
            // a pixel buffer of its own over the same memory, whose release marks the buffer returned.
            let image: CVPixelBuffer
            do {
                image = try buffers.wrapPixelBuffer(
                    index, pixelFormat: pixelFormat, fullRange: colorimetry.isFullRange, width: width, height: height,
                    planes: planeFormats, dataOffset: buffer.dataOffset(ofPlane:), release: { [buffers] in buffers.markReturned(index) })
            } catch {
                // The offset leaves no room for the image: the frame is damaged.
                if (try? requeue(index, &state)) == nil { state.queued[index] = false }
                sink(.dropped(sequence: sequence, presentationTime: time, reason: .discontinuity))
                return
            }
            colorimetry.attach(to: image)
            let sample = samples.sampleBuffer(imageBuffer: image, formatDescription: formatDescription, timing: timing)
            sink(.output(sample, sequence: sequence))
        } else {
            let block = buffers.wrapBlockBuffer(index, offset: buffer.dataOffsets.0, length: buffer.bytesUsed)
            let sample: CMSampleBuffer
            do {
                sample = try CMSampleBuffer(
                    dataBuffer: block, formatDescription: formatDescription, numSamples: 1, sampleTimings: [timing],
                    sampleSizes: [block.dataLength])
            } catch {
                preconditionFailure("a one-sample compressed buffer with one timing and one size is consistent")
            }
            CompressedFrameSync.mark(sample, isKeyFrame: Self.keyFrameFlag(buffer.flags))
            sink(.output(sample, sequence: sequence))
        }
    }

    /// What the driver says of a compressed frame: a key frame, not one, or nothing (uvcvideo sets neither flag, so
    /// the bitstream is read).
    static func keyFrameFlag(_ flags: UInt32) -> Bool? {
        if flags & UInt32(V4L2_BUF_FLAG_KEYFRAME) != 0 { return true }
        if flags & UInt32(V4L2_BUF_FLAG_PFRAME | V4L2_BUF_FLAG_BFRAME) != 0 { return false }
        return nil
    }

    /// The buffer's time on the host clock: its own timestamp when the driver stamps with CLOCK_MONOTONIC (every
    /// current driver) and the stamp is one a clock can give, the time now otherwise (a stamp beyond Int64's
    /// nanoseconds trapped the capture thread: found by the V4L2 fuzz target).
    static func presentationTime(of buffer: V4L2DequeuedBuffer) -> CMTime {
        let source = buffer.flags & UInt32(V4L2_BUF_FLAG_TIMESTAMP_MASK)
        let (seconds, microseconds) = (Int64(buffer.timestamp.tv_sec), Int64(buffer.timestamp.tv_usec))
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        let stamped =
            source == UInt32(V4L2_BUF_FLAG_TIMESTAMP_MONOTONIC) && seconds >= 0 && !overflow
            && (0..<1_000_000).contains(microseconds) && whole <= Int64.max - 999_999_000
        let nanoseconds = stamped ? whole + microseconds * 1000 : CMClock.hostNanosecondsNow()
        return CMTime(value: nanoseconds, timescale: CMClock.nanosecondsPerSecond)
    }
}

/// What the capture thread tracks between frames.
private struct CaptureState {
    /// Which buffers the kernel holds.
    var queued: [Bool]
    var queuedCount: Int
    /// Whether the kernel has had no buffer to fill since the last frame.
    var kernelStarved = false
    var lastDelivered: (sequence: UInt64, time: CMTime)?
    /// The kernel's 32-bit sequence, extended to 64 bits across wraps, counted from the first frame.
    private var firstKernelSequence: UInt32?
    private var lastKernelSequence: UInt32 = 0
    private var extended: UInt64 = 0

    init(bufferCount: Int) {
        queued = Array(repeating: true, count: bufferCount)
        queuedCount = bufferCount
    }

    /// Our sequence number for a frame with kernel sequence `kernel`: 0 for the first frame.
    mutating func sequence(for kernel: UInt32) -> UInt64 {
        guard firstKernelSequence != nil else {
            firstKernelSequence = kernel
            lastKernelSequence = kernel
            return 0
        }
        extended &+= UInt64(kernel &- lastKernelSequence)
        lastKernelSequence = kernel
        return extended
    }
}
