import CALSA
import SystemPackage

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A libasound result as Swift: non-negative values pass through, negative ones are `-errno` and become the
/// `Errno` they name (ALSA reports every failure this way, and leaves the message to the caller, who has context).
@discardableResult
func alsaCheck<T: BinaryInteger>(_ result: T) throws(Errno) -> T {
    guard result < 0 else { return result }
    throw Errno(rawValue: CInt(-Int64(result)))
}

extension AudioSampleFormat {
    /// The ALSA sample format: native-endian (little on every machine we run on) interleaved PCM.
    /// The corresponding C constants are `SND_PCM_FORMAT_S16_LE`, `SND_PCM_FORMAT_S32_LE` and
    /// `SND_PCM_FORMAT_FLOAT_LE`.
    var alsaFormat: snd_pcm_format_t {
        switch self {
        case .int16: SND_PCM_FORMAT_S16_LE
        case .int32: SND_PCM_FORMAT_S32_LE
        case .float32: SND_PCM_FORMAT_FLOAT_LE
        }
    }
}

/// What an open capture PCM settled on: the format asked for, and the period and buffer ALSA chose near ours.
///
/// Value type; safe to use from any thread.
struct ALSANegotiatedParameters: Sendable, Hashable {
    var format: AudioFormat
    /// Frames per period: what one wake-up delivers, and what one sample buffer holds.
    var periodFrames: Int
    /// Frames the ring buffer holds: how long the capture thread may be late before an overrun.
    var bufferFrames: Int
    /// Bytes per interleaved frame.
    var bytesPerFrame: Int { format.channels * Int(format.sampleFormat.bitsPerSample / 8) }
}

/// One open ALSA capture PCM (`snd_pcm_t`), its only owner: closed (`snd_pcm_close`) when it goes away.
///
/// Wraps `snd_pcm_open`, the `snd_pcm_hw_params_*` and `snd_pcm_sw_params_*` negotiation, `snd_pcm_start`,
/// `snd_pcm_avail_update`, `snd_pcm_readi`, `snd_pcm_status`, `snd_pcm_prepare`, `snd_pcm_resume` and
/// `snd_pcm_poll_descriptors`. Failures are the `Errno` libasound returned (negated).
///
/// Threading: thread-bound. Opened on the caller's thread by `start`, then handed once to the capture thread, which
/// alone uses it from then on (hence `@unchecked Sendable`: the hand-off is the only crossing).
final class ALSAPCM: @unchecked Sendable {
    /// The handle; this value is its one owner.
    private let handle: OpaquePointer
    /// The PCM's name, as opened (`default`, `hw:CARD=Loopback,DEV=1`).
    let name: String

    /// Opens `name` for capture, non-blocking (reads return `EAGAIN` instead of waiting; the capture thread polls).
    ///
    /// - Throws: `EBUSY` when another process holds a hardware device, `ENOENT` for an unknown name, `EACCES` when
    ///   the device node is not ours to open, …
    init(capture name: String) throws(Errno) {
        var pcm: OpaquePointer?
        try alsaCheck(snd_pcm_open(&pcm, name, SND_PCM_STREAM_CAPTURE, CALSA_PCM_NONBLOCK()))
        guard let pcm else { throw Errno.operationNotSupportedByDevice }
        handle = pcm
        self.name = name
    }

    deinit {
        snd_pcm_close(handle)
    }

    /// Whether the PCM can capture `format` as interleaved frames (`snd_pcm_hw_params_test_*` on a fresh
    /// configuration space; nothing is applied).
    func supports(_ format: AudioFormat) -> Bool {
        guard let params = CALSA_hwParamsCreate() else { return false }
        defer { snd_pcm_hw_params_free(params) }
        return snd_pcm_hw_params_any(handle, params) >= 0
            && snd_pcm_hw_params_set_access(handle, params, SND_PCM_ACCESS_RW_INTERLEAVED) >= 0
            && snd_pcm_hw_params_set_format(handle, params, format.sampleFormat.alsaFormat) >= 0
            && snd_pcm_hw_params_set_channels(handle, params, UInt32(format.channels)) >= 0
            && snd_pcm_hw_params_test_rate(handle, params, UInt32(format.sampleRate), 0) >= 0
    }

    /// The card and device the PCM reaches in the end (`snd_pcm_info`, `snd_pcm_info_get_card`,
    /// `snd_pcm_info_get_device`), through whatever plugins stand between (`plug`, `dsnoop`, `empty`, …); nil when
    /// it reaches no card (a sound server's plugin, a `file` or `null` PCM: ALSA answers a card below 0).
    func card() throws(Errno) -> (index: Int32, device: Int32)? {
        var info: OpaquePointer?
        guard snd_pcm_info_malloc(&info) >= 0, let info else { throw Errno.noMemory }
        defer { snd_pcm_info_free(info) }
        try alsaCheck(snd_pcm_info(handle, info))
        let card = snd_pcm_info_get_card(info)
        return card < 0 ? nil : (card, Int32(bitPattern: snd_pcm_info_get_device(info)))
    }

    /// Applies `format` exactly (no resampling by ALSA's `rate` plugin unless the PCM is a `plug`), periods near
    /// `periodMicroseconds` and a ring of about `bufferPeriods` periods, then software parameters: wake when a
    /// period is ready, and monotonic timestamps in the status (`SND_PCM_TSTAMP_ENABLE`,
    /// `SND_PCM_TSTAMP_TYPE_MONOTONIC`). Leaves the PCM prepared.
    func configure(_ format: AudioFormat, periodMicroseconds: UInt32 = 10_000, bufferPeriods: UInt32 = 10)
        throws(Errno) -> ALSANegotiatedParameters
    {
        guard let hardware = CALSA_hwParamsCreate() else { throw Errno.noMemory }
        defer { snd_pcm_hw_params_free(hardware) }
        try alsaCheck(snd_pcm_hw_params_any(handle, hardware))
        try alsaCheck(snd_pcm_hw_params_set_access(handle, hardware, SND_PCM_ACCESS_RW_INTERLEAVED))
        try alsaCheck(snd_pcm_hw_params_set_format(handle, hardware, format.sampleFormat.alsaFormat))
        try alsaCheck(snd_pcm_hw_params_set_channels(handle, hardware, UInt32(format.channels)))
        // An exact rate: `plug` devices resample to it, `hw` devices refuse what they lack (validated before).
        try alsaCheck(snd_pcm_hw_params_set_rate(handle, hardware, UInt32(format.sampleRate), 0))
        var periodTime = periodMicroseconds
        var direction: Int32 = 0
        try alsaCheck(snd_pcm_hw_params_set_period_time_near(handle, hardware, &periodTime, &direction))
        var bufferTime = periodTime * bufferPeriods
        direction = 0
        try alsaCheck(snd_pcm_hw_params_set_buffer_time_near(handle, hardware, &bufferTime, &direction))
        try alsaCheck(snd_pcm_hw_params(handle, hardware))
        var periodFrames: snd_pcm_uframes_t = 0
        direction = 0
        try alsaCheck(snd_pcm_hw_params_get_period_size(hardware, &periodFrames, &direction))
        var bufferFrames: snd_pcm_uframes_t = 0
        try alsaCheck(snd_pcm_hw_params_get_buffer_size(hardware, &bufferFrames))

        guard let software = CALSA_swParamsCreate() else { throw Errno.noMemory }
        defer { snd_pcm_sw_params_free(software) }
        try alsaCheck(snd_pcm_sw_params_current(handle, software))
        try alsaCheck(snd_pcm_sw_params_set_avail_min(handle, software, periodFrames))
        try alsaCheck(snd_pcm_sw_params_set_tstamp_mode(handle, software, SND_PCM_TSTAMP_ENABLE))
        // Older plugins lack the timestamp type; the capture loop checks the clock of what it gets.
        _ = snd_pcm_sw_params_set_tstamp_type(handle, software, SND_PCM_TSTAMP_TYPE_MONOTONIC)
        try alsaCheck(snd_pcm_sw_params(handle, software))
        return ALSANegotiatedParameters(
            format: format, periodFrames: Int(periodFrames), bufferFrames: Int(bufferFrames))
    }

    /// Starts the capture (`snd_pcm_start`).
    func start() throws(Errno) {
        try alsaCheck(snd_pcm_start(handle))
    }

    /// Frames ready to read (`snd_pcm_avail_update`). Throws `EPIPE` after an overrun, `ESTRPIPE` while
    /// suspended, `ENODEV` when the device is gone.
    func available() throws(Errno) -> Int {
        try alsaCheck(snd_pcm_avail_update(handle))
    }

    /// Reads up to `frames` interleaved frames into `buffer` (`snd_pcm_readi`); returns how many came, 0 when none
    /// were ready (`EAGAIN`).
    func read(into buffer: UnsafeMutableRawPointer, frames: Int) throws(Errno) -> Int {
        let result = snd_pcm_readi(handle, buffer, snd_pcm_uframes_t(frames))
        if result == -Int(EAGAIN) { return 0 }
        return try alsaCheck(result)
    }

    /// The hardware timestamp of the last pointer update and the frames available then (`snd_pcm_status`,
    /// `snd_pcm_status_get_htstamp`, `snd_pcm_status_get_avail`). The timestamp is nil when the PCM gives none.
    func status() throws(Errno) -> (timestampNanoseconds: Int64?, available: Int) {
        guard let status = CALSA_statusCreate() else { throw Errno.noMemory }
        defer { snd_pcm_status_free(status) }
        try alsaCheck(snd_pcm_status(handle, status))
        var stamp = snd_htimestamp_t()
        snd_pcm_status_get_htstamp(status, &stamp)
        let nanoseconds = Int64(stamp.tv_sec) * 1_000_000_000 + Int64(stamp.tv_nsec)
        return (nanoseconds > 0 ? nanoseconds : nil, Int(snd_pcm_status_get_avail(status)))
    }

    /// Back to a prepared state after an overrun (`EPIPE`), or out of a suspend (`ESTRPIPE`: `snd_pcm_resume`,
    /// then `snd_pcm_prepare` if the driver cannot resume), then started again.
    func recover(from error: Errno) throws(Errno) {
        if error == .brokenPipe || error == .resourceTemporarilyUnavailable {
            try alsaCheck(snd_pcm_prepare(handle))
        } else if error.rawValue == ESTRPIPE {
            var result = snd_pcm_resume(handle)
            while result == -EAGAIN {
                // The driver is still resuming; ALSA's own recovery waits like this.
                usleep(10_000)
                result = snd_pcm_resume(handle)
            }
            if result < 0 { try alsaCheck(snd_pcm_prepare(handle)) }
        } else {
            throw error
        }
        try start()
    }

    /// Stops capture at once, dropping what is buffered (`snd_pcm_drop`), then prepares the PCM again.
    func restart() throws(Errno) {
        try alsaCheck(snd_pcm_drop(handle))
        try alsaCheck(snd_pcm_prepare(handle))
        try start()
    }

    /// The descriptors to poll for "a period is ready" (`snd_pcm_poll_descriptors`).
    func pollDescriptors() throws(Errno) -> [pollfd] {
        let count = try alsaCheck(snd_pcm_poll_descriptors_count(handle))
        var descriptors = [pollfd](repeating: pollfd(), count: Int(count))
        let filled = try descriptors.withUnsafeMutableBufferPointer { buffer throws(Errno) in
            try alsaCheck(snd_pcm_poll_descriptors(handle, buffer.baseAddress, UInt32(count)))
        }
        return Array(descriptors.prefix(Int(filled)))
    }
}
