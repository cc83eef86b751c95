import Foundation
import OpenCoreMedia
import Synchronization
import SystemPackage

/// A microphone behind an ALSA capture PCM: any name `snd_pcm_open` takes (`default`, `plughw:CARD=PCH,DEV=0`, a
/// `pulse` or `pipewire` plugin, a PCM defined in an asoundrc).
///
/// Formats: 48000 and 44100 Hz, mono and stereo, float32, int16 and int32 interleaved, as far as the PCM takes them
/// (probed with `snd_pcm_hw_params_test_rate` when first asked, again while the device is busy). Streaming opens the
/// PCM with that exact format, periods near 10 ms in a ring of about 100 ms, and runs an `ALSACaptureStream`: one
/// `CMSampleBuffer` per period, stamped on the host clock from the status timestamps, overruns recovered and
/// reported as `Discontinuity` drops.
///
/// Threading: thread safe (a mutex guards the probed formats and the running stream); `start` and `stop` are
/// serialized by the caller. The sink runs on the capture thread.
package final class ALSAMicrophone: CaptureBackend {
    /// The rates, sample formats and channel counts offered, in the order `formats` lists them.
    static let candidateFormats: [AudioFormat] = [48_000.0, 44_100.0].flatMap { rate in
        [AudioSampleFormat.float32, .int16, .int32].flatMap { sampleFormat in
            [1, 2].map { AudioFormat(sampleRate: rate, channels: $0, sampleFormat: sampleFormat) }
        }
    }

    /// Held while this process opens a PCM, to probe it or to stream, or to find where `default` leads: these never
    /// overlap.
    static let opening = Mutex(())

    private struct State {
        var probedFormats: [DeviceFormat]?
        var stream: ALSACaptureStream?
        var isConnected = true
        var isBusy = false
        var isDenied = false
        var cardIndex: Int32?
    }

    package let identity: DeviceIdentity
    /// The name the PCM is opened by (a hardware device's `plughw:` form, so it converts what the card lacks).
    package let pcmName: String
    /// The id of the card whose device this is ("Webcam", "PCH"); nil for a PCM that is not a card's device
    /// (`default` led elsewhere, `pulse`, an asoundrc's own).
    package let cardID: String?
    private let state: Mutex<State>

    /// A microphone that opens `pcmName`. `uniqueID` defaults to `alsa:` and the name; `cardIndex` and `cardID` name
    /// the card for a card's device.
    package init(
        pcmName: String, localizedName: String? = nil, uniqueID: String? = nil, cardIndex: Int32? = nil,
        cardID: String? = nil
    ) {
        self.pcmName = pcmName
        self.cardID = cardID
        state = Mutex(State(cardIndex: cardIndex))
        identity = DeviceIdentity(
            uniqueID: uniqueID ?? "alsa:\(pcmName)", modelID: "ALSA \(pcmName)",
            localizedName: localizedName ?? pcmName, manufacturer: "ALSA", kind: .microphone, position: .unspecified,
            media: .audio, origin: .real, systemName: pcmName)
    }

    /// The ALSA number of the card whose device this is (`hw:N`, `/proc/asound/cardN`), as discovery last found it:
    /// the same card may come back under another number when it is plugged again, so read it anew rather than keep
    /// it. Nil for a PCM that is not a card's device.
    package var cardIndex: Int32? { state.withLock { $0.cardIndex } }

    /// `alsa:card:N` for a card's device, as PipeWire's ALSA nodes name the card they read (`alsa.card`); nil for
    /// a PCM that is no card (a sound server's plugin, a user's own PCM).
    package var rawDeviceKey: String? { cardIndex.map { "alsa:card:\($0)" } }

    // MARK: CaptureBackend

    /// The candidate formats the PCM takes, probed once. While another process holds the device, every candidate
    /// (unprobed: a device object needs formats, and streaming reports a format the card lacks); empty when the PCM
    /// cannot be opened at all (gone, a plugin whose server is down), which discovery leaves out.
    package var formats: [DeviceFormat] {
        if let probed = state.withLock({ $0.probedFormats }) { return probed }
        let probing: Result<[DeviceFormat], Errno> = Self.opening.withLock { _ in
            do throws(Errno) {
                let pcm = try ALSAPCM(capture: pcmName)
                return .success(Self.candidateFormats.filter(pcm.supports).map(DeviceFormat.audio))
            } catch {
                return .failure(error)
            }
        }
        let probed: [DeviceFormat]
        switch probing {
        case .success(let formats): probed = formats
        case .failure(let error):
            note(openFailure: error)
            return error == .resourceBusy ? Self.candidateFormats.map(DeviceFormat.audio) : []
        }
        state.withLock { state in
            state.probedFormats = probed
            state.isBusy = false
            state.isDenied = false
        }
        return probed
    }

    package var controls: (any CameraControlling)? { nil }
    package var clock: CMClock { .hostTimeClock }
    package var isConnected: Bool { state.withLock { $0.isConnected } }
    package var isInUseByAnotherApplication: Bool { state.withLock { $0.isBusy } }
    package var isAccessible: Bool { state.withLock { !$0.isDenied } }

    package func validate(_ configuration: StreamConfiguration) -> ConfigurationValidity {
        formats.contains(configuration.format)
            ? .valid : .invalid("\(identity.localizedName) cannot capture \(configuration.format)")
    }

    /// Opens the PCM and streams. Throws `.busy` when another process holds it, `.disconnected` when it is gone,
    /// `.io` for any other refusal; traps for a video format (a programming error the session never makes).
    package func start(_ configuration: StreamConfiguration, sink: @escaping StreamSink) throws(DeviceFault) {
        guard case .audio(let format) = configuration.format else {
            preconditionFailure("ALSAMicrophone.start: \(configuration.format) is not an audio format")
        }
        precondition(state.withLock { $0.stream == nil }, "ALSAMicrophone.start while streaming; call stop() first")
        let stream: ALSACaptureStream
        do {
            // Not while this process probes a PCM's formats (discovery, on a hot-plug): a hardware PCM opens once,
            // and our own probe would make the device look busy.
            let (pcm, parameters) = try Self.opening.withLock { _ throws(Errno) in
                let pcm = try ALSAPCM(capture: pcmName)
                return (pcm, try pcm.configure(format))
            }
            let description: CMFormatDescription
            do {
                description = try CMFormatDescription(audioStreamBasicDescription: format.streamDescription)
            } catch {
                preconditionFailure("ALSAMicrophone: cannot describe \(format): \(error)")
            }
            stream = try ALSACaptureStream(
                pcm: pcm, parameters: parameters, formatDescription: description, sink: sink)
            try stream.start(threadName: "OpenAVCapture ALSA \(pcmName)")
        } catch {
            note(openFailure: error)
            throw Self.fault(for: error)
        }
        state.withLock { $0.stream = stream }
    }

    package func stop() {
        let stream = state.withLock { state in
            defer { state.stream = nil }
            return state.stream
        }
        stream?.stop()
    }

    // MARK: Driver side

    /// Discovery found the card under `index` (the same while it stays plugged in).
    func setCardIndex(_ index: Int32?) {
        state.withLock { $0.cardIndex = index }
    }

    /// Discovery saw the PCM (again) or no longer lists it. Returns whether that changed anything.
    @discardableResult
    func setConnected(_ connected: Bool) -> Bool {
        state.withLock { state in
            defer { state.isConnected = connected }
            return state.isConnected != connected
        }
    }

    private func note(openFailure error: Errno) {
        state.withLock { state in
            state.isBusy = error == .resourceBusy
            state.isDenied = error == .permissionDenied
        }
    }

    /// How an `snd_pcm_open` or setup failure reaches the session.
    static func fault(for error: Errno) -> DeviceFault {
        switch error {
        case .resourceBusy: .busy
        case .noSuchFileOrDirectory, .operationNotSupportedByDevice, .noSuchAddressOrDevice: .disconnected
        default: .io(error)
        }
    }
}
