import Foundation

/// How many threads libx264 or libx265 gets for a picture size and frame rate on the cores this process may use,
/// and whether the encoder then keeps up with the camera.
///
/// `tune=zerolatency` makes libx264 thread by slices (`sliced-threads`): each frame is cut into one slice per thread
/// and the slices are encoded at once, so threads add no delay, but every slice costs bits and a little time, so a
/// frame size that one thread encodes in time gets one. The model counts what encoding costs in cores: the pixel
/// rate times a cost per pixel measured for each codec and preset (`EncoderScaling` in Benchmarks/Comparisons, on a
/// 1080p30 moving-noise picture; docs/performance.md has the table). One thread is given per
/// ``loadPerThread`` cores of that cost, at most one per core. The encoder keeps real time when its cost fits
/// within ``usableShare`` of the cores: the rest is for the capture thread (a webcam's JPEG decode), the
/// conversion stage, the muxer and the sound.
///
/// Value type; safe to use from any thread.
package struct EncoderThreadPlan: Sendable, Equatable {
    /// Threads for `thread_count`.
    package var threads: Int
    /// The cores encoding needs, by the model.
    package var cores: Double
    /// The cores the process may use.
    package var availableCores: Int
    /// Whether encoding fits within the cores with room for capture.
    package var keepsRealTime: Bool { cores <= Double(availableCores) * Self.usableShare }

    /// A thread per this many cores of encoding: below it, one thread keeps up with room for jitter, and slices
    /// would only cost bits.
    package static let loadPerThread = 0.8
    /// The share of the cores the encoder may take and still leave capture, decode and muxing enough.
    package static let usableShare = 0.75

    /// Core-seconds spent per megapixel (user + system time of libx264/libx265 with this project's settings on a
    /// 1080p moving-noise picture; `make bench-encoder-scaling`, table in docs/performance.md). Nil for a preset
    /// not measured.
    package static func costPerMegapixel(codec: VideoEncoder.Codec, preset: String?) -> Double? {
        switch (codec, preset) {
        case (.h264, nil), (.h264, "superfast"): 0.0105
        case (.h264, "ultrafast"): 0.0049
        case (.hevc, nil), (.hevc, "ultrafast"): 0.042
        default: nil
        }
    }

    /// The plan for `codec` at `width` × `height` and `frameRate`; codecs that do not thread by slices (JPEG, ProRes)
    /// get one thread.
    package init(
        codec: VideoEncoder.Codec, width: Int, height: Int, frameRate: Int, preset: String? = nil,
        availableCores: Int = ProcessInfo.processInfo.activeProcessorCount
    ) {
        self.availableCores = max(availableCores, 1)
        guard let cost = Self.costPerMegapixel(codec: codec, preset: preset) else {
            threads = 1
            cores = 0
            return
        }
        cores = Double(width * height) / 1e6 * Double(max(frameRate, 1)) * cost
        threads = min(self.availableCores, max(1, Int((cores / Self.loadPerThread).rounded(.up))))
    }

    /// What to tell a user whose recording would not keep up, with the settings that would; nil when it keeps up.
    package func advice(codec: VideoEncoder.Codec, width: Int, height: Int, frameRate: Int) -> String? {
        guard !keepsRealTime else { return nil }
        let fits = Double(availableCores) * Self.usableShare
        var options: [String] = []
        let rate = Int(Double(frameRate) * fits / cores)
        if rate >= 1 { options.append("at \(rate) fps or less") }
        let scale = (fits / cores).squareRoot()
        let smaller = [(1920, 1080), (1280, 720), (960, 540), (640, 480)].first {
            Double($0.0 * $0.1) <= Double(width * height) * scale * scale
        }
        if let smaller { options.append("at \(smaller.0)x\(smaller.1)") }
        if codec == .hevc { options.append("in H.264") }
        return String(
            format: "%dx%d at %d fps needs about %.1f cores for %@; %d are available, so frames will be dropped. "
                + "It would keep up %@.", width, height, frameRate, cores, codec == .hevc ? "HEVC" : "H.264",
            availableCores, options.joined(separator: ", or "))
    }
}
