// Playing a slow-motion clip back at half speed with the pitch kept: a player, its layer, a time label, a scrubber.
import OpenAVCaptureShim

@MainActor
final class SlowMotionPlayer {
    let player: AVPlayer
    let playerLayer: AVPlayerLayer
    private(set) var timeLabel = "0.0"
    private(set) var isPlaying = false
    private var timeObserver: Any?
    private var statusObservation: NSKeyValueObservation?
    private var endObserver: NSObjectProtocol?

    init(url: URL) {
        let item = AVPlayerItem(url: url)
        item.audioTimePitchAlgorithm = .timeDomain
        player = AVPlayer(playerItem: item)
        playerLayer = AVPlayerLayer(player: player)
        playerLayer.videoGravity = .resizeAspect
        let interval = CMTime(seconds: 0.1, preferredTimescale: 600)
        timeObserver = player.addPeriodicTimeObserver(forInterval: interval, queue: .main) { [weak self] time in
            MainActor.assumeIsolated {
                self?.timeLabel = String(format: "%.1f", CMTimeGetSeconds(time))
            }
        }
        statusObservation = player.observe(\.timeControlStatus, options: [.new]) { [weak self] player, _ in
            let playing = player.timeControlStatus == .playing
            Task { @MainActor in self?.isPlaying = playing }
        }
        endObserver = NotificationCenter.default.addObserver(
            forName: AVPlayerItem.didPlayToEndTimeNotification, object: item, queue: .main
        ) { [weak self] _ in
            MainActor.assumeIsolated {
                self?.player.seek(to: .zero)
            }
        }
    }

    func playSlowly() {
        player.rate = 0.5
    }

    func playNormally() {
        player.play()
    }

    func pause() {
        player.pause()
    }

    func scrub(to fraction: Double) {
        guard let duration = player.currentItem?.duration, duration.isNumeric else { return }
        let target = CMTime(seconds: CMTimeGetSeconds(duration) * fraction, preferredTimescale: 600)
        player.seek(to: target, toleranceBefore: .zero, toleranceAfter: .zero) { finished in
            print(finished ? "landed" : "replaced by another seek")
        }
    }

    func stepForward() async -> Bool {
        let next = CMTimeAdd(player.currentTime(), CMTime(value: 1, timescale: 30))
        return await player.seek(to: next)
    }

    func invalidate() {
        if let timeObserver { player.removeTimeObserver(timeObserver) }
        if let endObserver { NotificationCenter.default.removeObserver(endObserver) }
        statusObservation?.invalidate()
    }
}
