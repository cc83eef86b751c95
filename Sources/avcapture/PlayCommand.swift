import ArgumentParser
import Dispatch
import Foundation
import OpenAVCapture
import OpenAVCaptureUI
import Synchronization

/// `avcapture play FILE [--rate R] [--pitch A] [--audio-device PCM] [--headless]`: a movie or sound file played
/// with AVPlayer: its video in a window (AVPlayerLayer drawn by PlayerWindow) when there is a display, its sound
/// through ALSA when there is a device; otherwise headless, which it says.
struct PlayCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "play",
        abstract: "Play a movie or sound file, at a rate, in a window or headless.",
        discussion: """
            --rate 0.5 plays at half speed, 2 at double; the sound keeps its pitch (--pitch timeDomain or \
            spectral) or moves with the rate (--pitch varispeed). The video shows in a window when DISPLAY is set \
            (space pauses, escape or closing the window stops); the sound plays on the ALSA PCM named by \
            --audio-device (default: default). With no display or no sound device, the player runs headless: it \
            decodes and keeps time, and prints the time each second.
            """)

    @OptionGroup var logging: LoggingOptions
    @Argument(help: "The file to play.") var file: String
    @Option(help: "The playback rate (0.5 is half speed, 2 double).") var rate: Float = 1
    @Option(help: "How the sound is stretched (varispeed: the pitch moves with the rate).")
    var pitch: PitchChoice = .timeDomain
    @Option(name: .customLong("audio-device"), help: "The ALSA PCM to play the sound on.") var audioDevice: String?
    @Flag(help: "Show no window even when there is a display.") var headless = false

    func run() throws {
        try reportingFailures {
            guard rate > 0, rate <= 100 else {
                throw ToolFailure(.usage, "--rate is above 0 and at most 100, not \(rate)")
            }
            let algorithm = pitch.algorithm
            guard FileManager.default.isReadableFile(atPath: file) else {
                throw ToolFailure(.noInput, "\(file) does not exist or cannot be read")
            }
            let item = AVPlayerItem(url: URL(fileURLWithPath: file))
            item.audioTimePitchAlgorithm = algorithm
            let player = AVPlayer(playerItem: item)
            player.audioOutputDeviceUniqueID = audioDevice
            guard item.status == .readyToPlay else {
                let reason = (item.error as? AVError)?.localizedDescription ?? "it cannot be read"
                throw ToolFailure(.dataError, "\(file) cannot be played: \(reason)")
            }
            let ended = DispatchSemaphore(value: 0)
            let token = NotificationCenter.default.addObserver(
                forName: AVPlayerItem.didPlayToEndTimeNotification, object: item, queue: nil
            ) { _ in ended.signal() }
            defer { NotificationCenter.default.removeObserver(token) }
            let printer = DispatchQueue(label: "avcapture.play.time")
            let duration = item.duration.seconds
            let timeToken = player.addPeriodicTimeObserver(forInterval: CMTime(value: 1, timescale: 1), queue: printer)
            {
                print(String(format: "%.3f / %.3f s", $0.seconds, duration))
            }
            defer { player.removeTimeObserver(timeToken) }

            let hasVideo = !item.asset.tracks(withMediaType: .video).isEmpty
            let display = ProcessInfo.processInfo.environment["DISPLAY"].map { !$0.isEmpty } ?? false
            player.rate = rate
            if hasVideo, display, !headless {
                try playInWindow(player, item: item, ended: ended)
            } else {
                if hasVideo {
                    print(headless ? "headless: no window (--headless)" : "headless: no display (DISPLAY is not set)")
                }
                ended.wait()
            }
            reportSound(player)
            print(String(format: "played %@: %.3f s at rate %g", file, player.currentTime().seconds, rate))
        }
    }

    private func reportSound(_ player: AVPlayer) {
        if let reason = player.audioOutputUnavailableReason { print("headless sound: \(reason)") }
    }

    private func playInWindow(_ player: AVPlayer, item: AVPlayerItem, ended: DispatchSemaphore) throws {
        let layer = AVPlayerLayer(player: player)
        let size = item.presentationSize == .zero ? CGSize(width: 640, height: 480) : item.presentationSize
        let window = PlayerWindow(layer: layer, title: "avcapture play \(file)", size: size)
        let playRate = rate
        window.setKeyHandler { key in
            switch key {
            case "space": if player.rate == 0 { player.rate = playRate } else { player.pause() }
            case "escape": window.stop()
            default: break
            }
        }
        Thread {
            ended.wait()
            window.stop()
        }.start()
        do {
            try window.run()
        } catch {
            print("headless: \(error)")
            ended.wait()
            return
        }
        // The window was closed before the end: the watcher thread waits for a signal that will not come.
        ended.signal()
    }
}
