import CaptureDrivers
import CaptureGraph
import Foundation
import MediaCodecs
import Synchronization

/// Keeps the last seconds of a session's video and audio, encoded, in a bounded memory ring, and on a trigger
/// writes a movie that begins ``preRollDuration`` before it. Beyond Apple: ours, a file output beside
/// ``AVCaptureMovieFileOutput`` (a dash camera, a doorbell, a lab rig that records what led up to an event).
///
/// While the session runs the output encodes continuously, once (H.264 with a key frame every second, AAC), and
/// keeps the packets in the ring. A trigger is ``startRecording(to:recordingDelegate:)`` (the API),
/// or the sound passing ``setAudioLevelTrigger(threshold:fileURL:recordingDelegate:)``'s level; the file then
/// starts at the latest key frame at or before `trigger − preRollDuration` (so up to one second earlier; from the
/// oldest frame held when the ring holds less) and takes the live packets as they come, as they are: nothing is
/// encoded twice. It ends after ``postRollDuration`` (measured from the trigger), or at ``stopRecording()`` when
/// the post-roll is `.invalid`; its sound ends with its pictures (the drain waits for the audio encoder's delay).
/// A level crossing while a file records moves its end to `crossing + postRollDuration`. A trigger while a file
/// records finishes it and starts another from the ring (their pre-rolls may overlap).
///
/// Memory bound: the ring's payload bytes never exceed ``maximumBufferedBytes`` (default 24 MiB; 10 s at 10 Mb/s,
/// 1080p30's rate, is 12.5 MB); when the pre-roll does not fit, the oldest second goes first and the file starts
/// later than asked. ``largestBufferedBytes`` reports the most held. Packets cost about 100 bytes of bookkeeping
/// each besides (300 a second at 30 fps with AAC).
///
/// Files: QuickTime (`.mov`, or MPEG-4 for `.mp4`/`.m4v`), written as fragments every 10 s and finished as a
/// fast-start movie. The delegate hears didStart (when the file is opened with its pre-roll), willFinish and
/// didFinish (`error` nil when the post-roll or a stop ended it). Pause and resume are not offered (they trap).
///
/// Settings are read when the session starts streaming to the output (the ring and the encoder are made then).
///
/// Threading: thread safe. Requests return at once and take effect in order with the samples on the output's
/// serial queue; delegate callbacks come on an internal serial queue.
open class AVCapturePreEventFileOutput: AVCaptureFileOutput, @unchecked Sendable {
    struct Configuration: Sendable {
        var preRoll = CMTime(value: 10, timescale: 1)
        var postRoll = CMTime.invalid
        var maximumBytes = 24 << 20
        var videoBitRate: Int?
        var levelTrigger: LevelTrigger?
    }

    struct LevelTrigger: @unchecked Sendable {
        let threshold: Float
        let fileURL: @Sendable () -> URL
        let delegate: any AVCaptureFileOutputRecordingDelegate
    }

    private let configuration = Mutex(Configuration())
    private let queue: DispatchQueue
    private let held = Mutex((bytes: 0, largest: 0, duration: CMTime.zero))
    private let core: PreEventCore
    private let mailbox: SampleBufferMailbox<PreEventCore.Work>
    private let videoInFlight = Atomic<Int>(0)

    public override init() {
        let queue = DispatchQueue(label: "OpenAVCapture.AVCapturePreEventFileOutput")
        let core = PreEventCore(queue: queue)
        self.queue = queue
        self.core = core
        mailbox = SampleBufferMailbox(queue: queue, capacity: 1024, limit: 1024) { core.handle($0) }
        super.init()
        core.output = self
    }

    // MARK: Settings

    /// How much is kept before a trigger: the file starts at the latest key frame at or before `trigger − this`.
    /// Default 10 s. A time that is not a number of seconds ≥ 0 means no pre-roll (logged once).
    public var preRollDuration: CMTime {
        get { configuration.withLock { $0.preRoll } }
        set {
            var preRoll = newValue
            if !(newValue.isNumeric && newValue >= .zero) {
                ToleratedMisuse.report(
                    "AVCapturePreEventFileOutput.preRollDuration",
                    "AVCapturePreEventFileOutput: pre-roll \(newValue.seconds) s is not a time ≥ 0; no pre-roll is kept")
                preRoll = .zero
            }
            configuration.withLock { $0.preRoll = preRoll }
        }
    }

    /// How long a file goes on after its trigger, or `.invalid` (the default) until ``stopRecording()``.
    public var postRollDuration: CMTime {
        get { configuration.withLock { $0.postRoll } }
        set { configuration.withLock { $0.postRoll = newValue } }
    }

    /// The most payload bytes the ring holds (default 24 MiB). At least 4 KiB.
    public var maximumBufferedBytes: Int {
        get { configuration.withLock { $0.maximumBytes } }
        set { configuration.withLock { $0.maximumBytes = max(4 << 10, newValue) } }
    }

    /// The H.264 bit rate, or nil for the encoder's default (about 0.16 bit per pixel per frame).
    public var videoBitRate: Int? {
        get { configuration.withLock { $0.videoBitRate } }
        set { configuration.withLock { $0.videoBitRate = newValue } }
    }

    /// Triggers a file whenever the sound's peak in a buffer reaches `threshold` dBFS (e.g. −20) while no file
    /// records: it is written to `fileURL()` and told to `delegate` (held strongly until removed).
    public func setAudioLevelTrigger(
        threshold: Float, fileURL: @escaping @Sendable () -> URL,
        recordingDelegate delegate: any AVCaptureFileOutputRecordingDelegate
    ) {
        configuration.withLock {
            $0.levelTrigger = LevelTrigger(threshold: threshold, fileURL: fileURL, delegate: delegate)
        }
    }

    /// Stops triggering on the sound's level.
    public func removeAudioLevelTrigger() { configuration.withLock { $0.levelTrigger = nil } }

    // MARK: What the ring holds

    /// The payload bytes the ring holds now.
    public var bufferedBytes: Int { held.withLock { $0.bytes } }
    /// The most payload bytes the ring has held; never above ``maximumBufferedBytes``.
    public var largestBufferedBytes: Int { held.withLock { $0.largest } }
    /// The time from the first picture held to the newest.
    public var bufferedDuration: CMTime { held.withLock { $0.duration } }

    // MARK: Triggers

    /// Triggers a file at `outputFileURL` beginning ``preRollDuration`` before now (see the type). An existing
    /// file is refused with `.fileAlreadyExists`.
    public override func startRecording(
        to outputFileURL: URL, recordingDelegate delegate: any AVCaptureFileOutputRecordingDelegate
    ) {
        fileState.withLock { state in
            state.isRecording = true
            state.outputFileURL = outputFileURL
            state.recordedDuration = .zero
            state.recordedFileSize = 0
        }
        post(.trigger(PreEventCore.Trigger(url: outputFileURL, delegate: delegate, connections: connections)))
    }

    /// Ends the file under way after the frames received so far; the ring goes on.
    public override func stopRecording() { post(.stop) }

    /// Not offered: a pre-event file is one stretch of time, so the file goes on (logged once). Stop the file and
    /// trigger another instead.
    public override func pauseRecording() {
        ToleratedMisuse.report(
            "AVCapturePreEventFileOutput.pauseRecording",
            "AVCapturePreEventFileOutput cannot pause; the file goes on (stop it and trigger another)")
    }

    /// Not offered (see ``pauseRecording()``); nothing is paused, so nothing resumes.
    public override func resumeRecording() {
        ToleratedMisuse.report(
            "AVCapturePreEventFileOutput.resumeRecording",
            "AVCapturePreEventFileOutput cannot pause, so there is nothing to resume")
    }

    // MARK: For the core (its queue)

    var currentConfiguration: Configuration { configuration.withLock { $0 } }

    func updateHeld(bytes: Int, largest: Int, duration: CMTime) {
        held.withLock { $0 = (bytes, largest, duration) }
    }

    func frameHandled() { videoInFlight.subtract(1, ordering: .relaxed) }

    override package var hasWorkInFlight: Bool { !mailbox.isIdle || videoInFlight.load(ordering: .relaxed) > 0 }

    private func post(_ work: PreEventCore.Work) {
        if !mailbox.post(work) {
            let item = UncheckedSendable(work)
            queue.async { [core] in core.handle(item.value) }
        }
    }

    // MARK: Graph hooks

    override package func accepts(_ mediaType: AVMediaType) -> Bool { mediaType == .video || mediaType == .audio }

    override package func receive(_ sampleBuffer: CMSampleBuffer, from connection: AVCaptureConnection) {
        let isVideo = sampleBuffer.imageBuffer != nil
        if isVideo {
            // As the movie output: at most 8 frames wait for the encoder; more are dropped (it is behind).
            guard videoInFlight.add(1, ordering: .relaxed).newValue <= 8 else {
                videoInFlight.subtract(1, ordering: .relaxed)
                return
            }
        } else if sampleBuffer.formatDescription?.mediaType != .audio {
            return
        }
        let sound = isVideo ? sampleBuffer : AudioChannelGain.apply(to: sampleBuffer, channels: connection.audioChannels)
        if !mailbox.post(.sample(sound, isVideo: isVideo)), isVideo { videoInFlight.subtract(1, ordering: .relaxed) }
    }

    override package func videoDemand(for connection: AVCaptureConnection) -> VideoFormatDemand? {
        VideoFormatDemand(pixelFormats: VideoEncoder.nativePixelFormats(for: .h264), evenDimensions: true)
    }

    override package func takesCompressedVideo(_ format: CMFormatDescription, from connection: AVCaptureConnection)
        -> Bool
    { false }

    /// Every frame, recording or not: the ring holds the seconds before a trigger.
    override package func wantsVideoFrames(from connection: AVCaptureConnection) -> Bool { true }

    override package func receiveDrop(
        presentationTime: CMTime, reason: DropReason, format: CMFormatDescription?, from connection: AVCaptureConnection
    ) {}

    override package func sessionDidStopRunning() { post(.sessionStopped) }

    override package func inputDidFail(_ error: AVError, connection: AVCaptureConnection) {
        post(.inputFailed(AVCaptureFileOutput.isVideo(connection) ? error : nil))
    }
}

/// The pre-event output's machinery: the encoder, the ring and the file being written.
///
/// Threading: confined to the output's serial queue (`handle(_:)` runs only there); `@unchecked Sendable` so the
/// mailbox's handler can hold it.
final class PreEventCore: @unchecked Sendable {
    /// `@unchecked Sendable`: the delegate and connections are only passed along.
    struct Trigger: @unchecked Sendable {
        let url: URL
        let delegate: any AVCaptureFileOutputRecordingDelegate
        let connections: [AVCaptureConnection]
    }

    /// `@unchecked Sendable`: buffers are thread safe; the enum only carries them across.
    enum Work: @unchecked Sendable {
        case sample(CMSampleBuffer, isVideo: Bool)
        case trigger(Trigger)
        case stop
        case sessionStopped
        /// The camera failed (nil: the microphone, which the file does without).
        case inputFailed(AVError?)
    }

    /// A file being written.
    final class EventFile {
        let trigger: Trigger
        let muxer: Muxer
        let videoStream: Int?
        let audioStream: Int?
        let start: CMTime
        /// Where the file ends (source time), or invalid until a stop or the post-roll says.
        var end: CMTime
        var lastVideoEnd: CMTime = .invalid
        var isDraining = false

        init(trigger: Trigger, muxer: Muxer, videoStream: Int?, audioStream: Int?, start: CMTime, end: CMTime) {
            self.trigger = trigger
            self.muxer = muxer
            self.videoStream = videoStream
            self.audioStream = audioStream
            self.start = start
            self.end = end
        }
    }

    weak var output: AVCapturePreEventFileOutput?
    private let queue: DispatchQueue
    private let callbackQueue = DispatchQueue(label: "OpenAVCapture.AVCapturePreEventFileOutput.callbacks")
    private let finishingQueue = DispatchQueue(label: "OpenAVCapture.AVCapturePreEventFileOutput.finishing")
    private var encoder: LiveMediaEncoder?
    private var ring: EncodedMediaRing?
    private var configuration = AVCapturePreEventFileOutput.Configuration()
    private var event: EventFile?
    /// A trigger that came before the ring held a key frame: the file opens with the first one.
    private var waitingTrigger: (Trigger, CMTime)?
    private var latestTime: CMTime = .invalid
    private var hasAudio = false

    init(queue: DispatchQueue) { self.queue = queue }

    func handle(_ work: Work) {
        dispatchPrecondition(condition: .onQueue(queue))
        switch work {
        case .sample(let buffer, let isVideo):
            if isVideo { output?.frameHandled() }
            prepare()
            if isVideo { handleVideo(buffer) } else { handleAudio(buffer) }
        case .trigger(let trigger):
            open(trigger, at: latestTime)
        case .stop:
            waitingTrigger.map { report(noData: $0.0) }
            waitingTrigger = nil
            if let event { endEvent(event, at: event.lastVideoEnd) }
        case .sessionStopped:
            waitingTrigger.map { report(noData: $0.0) }
            waitingTrigger = nil
            if let event { finish(event, error: nil) }
            ring?.removeAll()
            ring = nil
            encoder = nil
        case .inputFailed(let error):
            guard let error, let event else { return }
            finish(
                event,
                error: AVError(error.code, error.localizedDescription, extra: [AVErrorRecordingSuccessfullyFinishedKey: true]))
        }
    }

    /// Makes the encoder and the ring with the settings of the moment, at the first sample.
    private func prepare() {
        guard ring == nil, let output else { return }
        configuration = output.currentConfiguration
        let hasVideo = output.connection(with: .video) != nil
        hasAudio = output.connection(with: .audio) != nil
        encoder = LiveMediaEncoder(
            settings: .init(videoBitRate: configuration.videoBitRate), owner: ObjectIdentifier(output))
        ring = EncodedMediaRing(capacityBytes: configuration.maximumBytes, duration: configuration.preRoll, hasVideo: hasVideo)
    }

    // MARK: Samples

    private func handleVideo(_ buffer: CMSampleBuffer) {
        let packets: [EncodedPacket]
        do {
            packets = try encoder?.encode(picture: buffer) ?? []
        } catch {
            if let event { finish(event, error: AVError(error, writing: event.trigger.url.path)) }
            return
        }
        latestTime = max(latestTime.isNumeric ? latestTime : buffer.presentationTimeStamp, buffer.presentationTimeStamp)
        for packet in packets {
            ring?.append(packet, isVideo: true)
            if let (trigger, time) = waitingTrigger, packet.isKeyFrame {
                waitingTrigger = nil
                open(trigger, at: time)
                continue
            }
            guard let event else { continue }
            let time = packet.presentationTime
            if event.end.isNumeric, !(time < event.end) {
                // The picture is complete; the sound catches up to it (or gives up half a second later).
                if !event.isDraining {
                    endEvent(event, at: event.end)
                } else if !(time < event.end + CMTime(value: 1, timescale: 2)) {
                    finish(event, error: nil)
                }
                continue
            }
            write(packet, to: event, isVideo: true)
        }
        publishHeld()
    }

    private func handleAudio(_ buffer: CMSampleBuffer) {
        if let trigger = output?.currentConfiguration.levelTrigger, Self.peakLevel(of: buffer) >= trigger.threshold {
            let time = buffer.presentationTimeStamp
            if let event {
                // Sound goes on passing the level: the file goes on for the post-roll from here.
                let postRoll = output?.currentConfiguration.postRoll ?? .invalid
                if !event.isDraining, postRoll.isNumeric, event.end.isNumeric {
                    event.end = max(event.end, time + postRoll)
                }
            } else if waitingTrigger == nil {
                let url = trigger.fileURL()
                output?.fileState.withLock { state in
                    state.isRecording = true
                    state.outputFileURL = url
                }
                open(Trigger(url: url, delegate: trigger.delegate, connections: output?.connections ?? []), at: time)
            }
        }
        let packets: [EncodedPacket]
        do {
            packets = try encoder?.encode(sound: buffer) ?? []
        } catch {
            return  // A sound the encoder refuses is left out; the pictures go on.
        }
        for packet in packets {
            ring?.append(packet, isVideo: false)
            guard let event else { continue }
            let end = packet.presentationTime + (packet.duration.isNumeric ? packet.duration : .zero)
            if event.end.isNumeric, !(packet.presentationTime < event.end) {
                if event.isDraining { finish(event, error: nil) }
                continue
            }
            if end > event.start { write(packet, to: event, isVideo: false) }
        }
    }

    // MARK: Files

    /// Opens a file for `trigger` at source time `time`: the ring from the key frame `preRoll` before, then live.
    private func open(_ trigger: Trigger, at time: CMTime) {
        if let event { endEvent(event, at: event.lastVideoEnd, thenFinish: true) }
        guard let ring, let encoder, time.isNumeric,
            let first = ring.packets(forTriggerAt: time).first(where: { $0.isKeyFrame || !ring.hasVideo })
        else {
            waitingTrigger = (trigger, time)
            return
        }
        let held = ring.packets(forTriggerAt: time)
        let fileType: Muxer.FileType =
            switch trigger.url.pathExtension.lowercased() {
            case "mp4": .mp4
            case "m4v": .m4v
            default: .mov
            }
        let muxer: Muxer
        var videoStream: Int?
        var audioStream: Int?
        do {
            var options = Muxer.Options()
            options.fragmentInterval = CMTime(value: 10, timescale: 1)
            // Finished in place, as a movie file output's: no copy of the media at the end.
            options.fastStart = false
            muxer = try Muxer(path: trigger.url.path, fileType: fileType, options: options)
            if let video = encoder.video { videoStream = try muxer.addVideoStream(from: video) }
            if hasAudio, let audio = encoder.audio { audioStream = try muxer.addAudioStream(from: audio) }
            try muxer.start(atSourceTime: first.time)
        } catch {
            report(trigger, error: AVError(error, writing: trigger.url.path), started: false)
            return
        }
        let postRoll = output?.currentConfiguration.postRoll ?? .invalid
        let event = EventFile(
            trigger: trigger, muxer: muxer, videoStream: videoStream, audioStream: audioStream, start: first.time,
            end: postRoll.isNumeric ? time + postRoll : .invalid)
        self.event = event
        callback(trigger) { $0.fileOutput($1, didStartRecordingTo: $2, from: $3) }
        for entry in held {
            let end = entry.time + (entry.packet.duration.isNumeric ? entry.packet.duration : .zero)
            if entry.isVideo || end > first.time { write(entry.packet, to: event, isVideo: entry.isVideo) }
            if self.event !== event { return }
        }
    }

    private func write(_ packet: EncodedPacket, to event: EventFile, isVideo: Bool) {
        guard let stream = isVideo ? event.videoStream : event.audioStream else { return }
        do {
            try event.muxer.write(packet, stream: stream)
        } catch {
            finish(event, error: AVError(error, writing: event.trigger.url.path))
            return
        }
        if isVideo {
            let duration = packet.duration.isNumeric ? packet.duration : CMTime(value: 1, timescale: 30)
            event.lastVideoEnd = packet.presentationTime + duration
            let recorded = event.lastVideoEnd - event.start
            let size = event.muxer.mediaBytes
            output?.fileState.withLock { state in
                guard state.outputFileURL == event.trigger.url else { return }
                state.recordedDuration = recorded
                state.recordedFileSize = Int64(size)
            }
        }
    }

    /// The file ends at source time `end`: no picture from there; sound up to it (finished once it gets there).
    private func endEvent(_ event: EventFile, at end: CMTime, thenFinish: Bool = false) {
        event.end = end.isNumeric ? end : (event.lastVideoEnd.isNumeric ? event.lastVideoEnd : event.start)
        event.isDraining = true
        if thenFinish || event.audioStream == nil { finish(event, error: nil) }
    }

    private func finish(_ event: EventFile, error: AVError?) {
        guard self.event === event else { return }
        self.event = nil
        let trigger = event.trigger
        let muxer = UncheckedSendable(event.muxer)
        callback(trigger) { $0.fileOutput($1, willFinishRecordingTo: $2, from: $3, error: error) }
        finishingQueue.async { [self] in
            var failure: (any Error)? = error
            do throws(MediaCodecsError) {
                try muxer.value.finish()
            } catch {
                failure = AVError(error, writing: trigger.url.path)
            }
            report(trigger, error: failure, started: true)
        }
    }

    private func report(noData trigger: Trigger) {
        report(
            trigger,
            error: AVError(
                .noDataCaptured, "The file was triggered before any frame was encoded; nothing was written.",
                suggestion: "Start the session and let it run before triggering.",
                extra: [AVErrorRecordingSuccessfullyFinishedKey: false]), started: false)
    }

    private func report(_ trigger: Trigger, error: (any Error)?, started: Bool) {
        guard let output else { return }
        output.fileState.withLock { state in
            guard state.outputFileURL == trigger.url else { return }
            state.isRecording = false
        }
        let call = UncheckedSendable({
            trigger.delegate.fileOutput(output, didFinishRecordingTo: trigger.url, from: trigger.connections, error: error)
        })
        callbackQueue.async { call.value() }
    }

    private func callback(
        _ trigger: Trigger,
        _ body: @escaping (any AVCaptureFileOutputRecordingDelegate, AVCaptureFileOutput, URL, [AVCaptureConnection]) -> Void
    ) {
        guard let output else { return }
        let call = UncheckedSendable({ body(trigger.delegate, output, trigger.url, trigger.connections) })
        callbackQueue.async { call.value() }
    }

    private func publishHeld() {
        guard let ring else { return }
        output?.updateHeld(bytes: ring.heldBytes, largest: ring.largestHeldBytes, duration: ring.heldDuration)
    }

    // MARK: Level

    /// The highest sample of an interleaved PCM buffer, in dBFS (−160 for silence).
    static func peakLevel(of buffer: CMSampleBuffer) -> Float {
        guard let description = buffer.formatDescription?.audioStreamBasicDescription,
            description.mFormatID == kAudioFormatLinearPCM, let data = buffer.dataBuffer
        else { return -160 }
        let isFloat = description.mFormatFlags & kAudioFormatFlagIsFloat != 0
        let bits = Int(description.mBitsPerChannel)
        let peak: Double = data.withUnsafeBytes { bytes in
            switch (isFloat, bits) {
            case (true, 32):
                return Double(bytes.bindMemory(to: Float.self).reduce(0) { max($0, abs($1)) })
            case (false, 16):
                return Double(bytes.bindMemory(to: Int16.self).reduce(0) { max($0, Int(abs(Int32($1)))) }) / 32768
            case (false, 32):
                return Double(bytes.bindMemory(to: Int32.self).reduce(0) { max($0, abs(Int64($1))) }) / 2_147_483_648
            default:
                return 0
            }
        }
        return peak > 0 ? max(-160, Float(20 * log10(peak))) : -160
    }
}
