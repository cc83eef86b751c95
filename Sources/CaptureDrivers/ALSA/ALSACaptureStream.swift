import Dispatch
import Foundation
import OpenCoreMedia
import Synchronization
import SystemPackage

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// One run of an ALSA microphone: the capture thread that polls the PCM and turns each period into a
/// `CMSampleBuffer`.
///
/// The thread waits in `poll` on the PCM's descriptors and on a pipe that `stop` writes to, and checks a stop flag
/// before each read, so a stop is noticed at once. Each period of `periodFrames` frames is read into a `CMBlockBuffer` of its own and stamped by an
/// `ALSAPeriodClock` from the status timestamp. An overrun (`EPIPE`) or a suspend (`ESTRPIPE`) is recovered
/// (`snd_pcm_prepare`/`snd_pcm_resume`, `snd_pcm_start`) and the periods lost meanwhile are reported as
/// `.dropped(…, .discontinuity)`; a PCM that delivers nothing for `silenceLimit` is restarted the same way, so the
/// stream never hangs. `ENODEV` (unplugged) ends the stream with `.fault(.disconnected)`, any other error with
/// `.fault(.io(errno))`.
///
/// Threading: thread safe; `stop` may be called from any thread, once, and returns after the last event.
final class ALSACaptureStream: Sendable {
    /// How long a running PCM may stay silent before it is restarted.
    static let silenceLimit: Int64 = 2_000_000_000

    private let pcm: ALSAPCM
    private let parameters: ALSANegotiatedParameters
    private let formatDescription: CMFormatDescription
    private let sink: StreamSink
    /// `stop` writes a byte into `wakeWrite`; the thread polls `wakeRead`.
    private let wakeRead: Int32
    private let wakeWrite: Int32
    private let finished = DispatchSemaphore(value: 0)
    /// Checked before every read: a PCM that always has frames ready (the `file` plugin) never reaches `poll`.
    private let isStopping = Atomic<Bool>(false)

    /// A stream of `pcm`, configured with `parameters` and not yet started.
    init(
        pcm: ALSAPCM, parameters: ALSANegotiatedParameters, formatDescription: CMFormatDescription,
        sink: @escaping StreamSink
    ) throws(Errno) {
        var descriptors: [Int32] = [-1, -1]
        guard pipe(&descriptors) == 0 else { throw Errno(rawValue: errno) }
        // Not inherited by processes the application spawns. (One byte into an empty pipe never blocks.)
        _ = fcntl(descriptors[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(descriptors[1], F_SETFD, FD_CLOEXEC)
        self.pcm = pcm
        self.parameters = parameters
        self.formatDescription = formatDescription
        self.sink = sink
        wakeRead = descriptors[0]
        wakeWrite = descriptors[1]
    }

    deinit {
        close(wakeRead)
        close(wakeWrite)
    }

    /// Starts the PCM and the capture thread.
    func start(threadName: String) throws(Errno) {
        try pcm.start()
        let thread = Thread { [self] in
            run()
            finished.signal()
        }
        thread.name = threadName
        thread.start()
    }

    /// Asks the thread to end and waits until it has.
    func stop() {
        isStopping.store(true, ordering: .relaxed)
        var byte: UInt8 = 1
        _ = write(wakeWrite, &byte, 1)
        finished.wait()
        finished.signal()
    }

    // MARK: The capture thread

    private struct Progress {
        var sequence: UInt64 = 0
        /// An overrun or restart happened since the last period: its frames are a discontinuity.
        var lostFrames = false
        /// Host time of the last period delivered (or of the start).
        var lastDelivery = CMClock.hostNanosecondsNow()
    }

    private func run() {
        var clock = ALSAPeriodClock(sampleRate: parameters.format.sampleRate, periodFrames: parameters.periodFrames)
        var progress = Progress()
        var period: CMBlockBuffer?
        var filledFrames = 0
        var periodStart: Int64 = 0
        do throws(Errno) {
            var descriptors = try pcm.pollDescriptors()
            descriptors.append(pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0))
            while !isStopping.load(ordering: .relaxed) {
                let available: Int
                do {
                    available = try pcm.available()
                } catch let error where Self.isRecoverable(error) {
                    try pcm.recover(from: error)
                    progress.lostFrames = true
                    (period, filledFrames) = (nil, 0)
                    continue
                }
                if available > 0 {
                    if filledFrames == 0 {
                        periodStart = try measuredStart()
                        period = CMBlockBuffer(length: parameters.periodFrames * parameters.bytesPerFrame)
                    }
                    let wanted = min(available, parameters.periodFrames - filledFrames)
                    var result: Result<Int, Errno> = .success(0)
                    period!.withUnsafeMutableBytes { bytes in
                        let start = bytes.baseAddress! + filledFrames * parameters.bytesPerFrame
                        result = Result { () throws(Errno) in try pcm.read(into: start, frames: wanted) }
                    }
                    let got: Int
                    do {
                        got = try result.get()
                    } catch let error where Self.isRecoverable(error) {
                        try pcm.recover(from: error)
                        progress.lostFrames = true
                        (period, filledFrames) = (nil, 0)
                        continue
                    }
                    filledFrames += got
                    if filledFrames == parameters.periodFrames, let full = period {
                        deliver(full, measuredStart: periodStart, clock: &clock, progress: &progress)
                        (period, filledFrames) = (nil, 0)
                    }
                    if got > 0 { continue }
                }
                // Nothing (or not enough) ready: wait for the PCM or for `stop`.
                for index in descriptors.indices { descriptors[index].revents = 0 }
                let ready = poll(&descriptors, nfds_t(descriptors.count), 250)
                if ready < 0 && errno != EINTR { throw Errno(rawValue: errno) }
                if descriptors[descriptors.count - 1].revents != 0 { return }
                if CMClock.hostNanosecondsNow() - progress.lastDelivery > Self.silenceLimit {
                    // A PCM that stopped delivering without an error (a plugin whose server went away and came
                    // back, a driver that lost its interrupt): start it again rather than wait forever.
                    try pcm.restart()
                    progress.lostFrames = true
                    progress.lastDelivery = CMClock.hostNanosecondsNow()
                    (period, filledFrames) = (nil, 0)
                }
            }
        } catch {
            let unplugged = error == .operationNotSupportedByDevice || error == .noSuchFileOrDirectory
            sink(.fault(unplugged ? .disconnected : .io(error)))
        }
    }

    /// Overruns and suspends are recovered; everything else ends the stream.
    private static func isRecoverable(_ error: Errno) -> Bool {
        error == .brokenPipe || error.rawValue == ESTRPIPE
    }

    /// The host time at which the next frame to read was captured: the status timestamp less the frames that
    /// were waiting at that instant. Falls back to the host clock now when the PCM gives no timestamp or one on
    /// another clock (an old plugin stamping with `gettimeofday`).
    private func measuredStart() throws(Errno) -> Int64 {
        let status = try pcm.status()
        let now = CMClock.hostNanosecondsNow()
        let waiting = Int64(Double(status.available) / parameters.format.sampleRate * 1e9)
        if let stamp = status.timestampNanoseconds, abs(stamp - now) < 5_000_000_000 { return stamp - waiting }
        return now - waiting
    }

    private func deliver(
        _ block: CMBlockBuffer, measuredStart: Int64, clock: inout ALSAPeriodClock, progress: inout Progress
    ) {
        let frames = parameters.periodFrames
        let stamp = clock.stamp(frames: frames, measured: measuredStart, afterLoss: progress.lostFrames)
        let periodNanoseconds = Double(frames) / parameters.format.sampleRate * 1e9
        if progress.lostFrames {
            // What the overrun lost, as whole periods (at least one: something was lost), stamped back from here.
            let periods = max(1, min(10_000, Int((Double(stamp.skippedFrames) / Double(frames)).rounded())))
            for index in 0..<periods {
                let time = Double(stamp.hostNanoseconds) - Double(periods - index) * periodNanoseconds
                sink(
                    .dropped(
                        sequence: progress.sequence, presentationTime: CMClock.hostTime(nanoseconds: Int64(time)),
                        reason: .discontinuity))
                progress.sequence += 1
            }
            progress.lostFrames = false
        }
        let timing = CMSampleTimingInfo(
            duration: CMTime(value: 1, timescale: Int32(parameters.format.sampleRate)),
            presentationTimeStamp: CMClock.hostTime(nanoseconds: stamp.hostNanoseconds), decodeTimeStamp: .invalid)
        let sample: CMSampleBuffer
        do {
            sample = try CMSampleBuffer(
                dataBuffer: block, formatDescription: formatDescription, numSamples: frames, sampleTimings: [timing],
                sampleSizes: [parameters.bytesPerFrame])
        } catch {
            // One timing entry and one size for a positive count are always consistent.
            preconditionFailure("ALSACaptureStream: \(error)")
        }
        sink(.output(sample, sequence: progress.sequence))
        progress.sequence += 1
        progress.lastDelivery = CMClock.hostNanosecondsNow()
    }
}
