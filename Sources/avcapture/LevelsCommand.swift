import ArgumentParser
import Foundation
import OpenAVCapture

/// `avcapture levels`: a live audio level meter.
struct LevelsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "levels",
        abstract: "Show a microphone's average and peak levels in dBFS (Ctrl-C ends it).")

    @OptionGroup var logging: LoggingOptions
    @OptionGroup var microphone: MicrophoneOptions
    @Option(help: "Stop after this many seconds.") var duration: Double?

    func validate() throws {
        if let duration, !(duration > 0) { throw ValidationError("--duration must be positive") }
        if microphone.isNone { throw ValidationError("levels need a microphone; --audio none leaves none") }
    }

    func run() throws {
        try reportingFailures {
            let microphone = try DeviceSelector.device(microphone.audio, for: .audio)
            let output = AVCaptureAudioDataOutput()
            let setup = try CaptureSetup(video: nil, audio: microphone, format: nil, outputs: [output])
            let stop = DispatchSemaphore(value: 0)
            let signals = SignalWatcher(stop: { _ in stop.signal() })
            try setup.start()
            defer { setup.session.stopRunning() }
            let channels = output.connection(with: .audio)?.audioChannels ?? []
            let deadline = duration.map { Date().addingTimeInterval($0) }
            // A terminal gets a live meter ten times a second; a pipe or file gets a line every half second.
            let interval = Terminal.standardOutputIsTerminal ? 0.1 : 0.5
            repeat {
                let line = channels.enumerated().map { index, channel in
                    "ch\(index + 1) " + Recorder.meter(average: channel.averagePowerLevel, peak: channel.peakHoldLevel)
                }.joined(separator: "  ")
                if Terminal.standardOutputIsTerminal {
                    FileHandle.standardOutput.write(Data(("\r\u{1B}[2K" + line).utf8))
                } else {
                    FileHandle.standardOutput.write(Data((line + "\n").utf8))
                }
                if let deadline, Date() >= deadline { break }
            } while stop.wait(timeout: .now() + interval) == .timedOut
            if Terminal.standardOutputIsTerminal { FileHandle.standardOutput.write(Data("\n".utf8)) }
            withExtendedLifetime(signals) {}
        }
    }
}
