// The audio file readers other than AVAssetReader (DemuxerFuzzer covers that): a sound file played as a `file:`
// microphone (OpenAVCaptureTesting's `MovieFileDevice`, free-running, on CaptureDrivers' movie-file driver and
// libavformat) into a session with an `AVCaptureAudioDataOutput`, so the packets reach the session's audio decoders
// (AAC, MP3, Opus, FLAC, ALAC) or its PCM path, and libswresample. OpenAVCapture has no public `AVAudioFile`.
//
// Input: the first byte picks the extension (wav, aiff, caf, m4a, mp3, flac, ogg: libavformat probes the content,
// the extension weighs in) and, from its eighth bit, whether the output converts to 48 kHz stereo 16-bit; the rest
// is the file. Every buffer delivered is read to its end. At most 300 buffers, or until the device reports the end
// of the file (or a fault), or 2 s; an error opening the file is fine.

import CFuzzDriver
import Dispatch
import Foundation
import FuzzSupport
import OpenAVCapture
import OpenAVCaptureTesting
import Synchronization

let extensions = ["wav", "aiff", "caf", "m4a", "mp3", "flac", "ogg"]

/// How many buffers one input may deliver, and how long it may play.
let bufferLimit = 300
let playLimit = 2.0

/// Reads each buffer's bytes and counts them; `done` is signalled at the limit.
final class BufferReader: NSObject, AVCaptureAudioDataOutputSampleBufferDelegate, Sendable {
    let count = Atomic<Int>(0)
    let checksum = Atomic<UInt64>(0)
    let done = DispatchSemaphore(value: 0)

    func captureOutput(
        _ output: AVCaptureOutput, didOutput sampleBuffer: CMSampleBuffer, from connection: AVCaptureConnection
    ) {
        var sum: UInt64 = 0
        sampleBuffer.dataBuffer?.withUnsafeBytes { bytes in for byte in bytes { sum &+= UInt64(byte) } }
        checksum.add(sum, ordering: .relaxed)
        if count.add(1, ordering: .relaxed).newValue == bufferLimit { done.signal() }
    }
}

/// Runs `body` with LeakSanitizer ignoring what this thread allocates meanwhile: for wiring the microphone into the
/// session. The device, its observer registry, its backend and its stream hub outlive the input (the process's
/// device tables keep them) and get weak references here, whose side tables LeakSanitizer cannot see are referenced
/// (see CFuzzDriver.h). What the capture thread and the delegate queue allocate, packets and decoders, is checked.
func ignoringLeaks<T>(_ body: () -> T) -> T {
    CFuzzDriverIgnoreLeaksBegin()
    defer { CFuzzDriverIgnoreLeaksEnd() }
    return body()
}

func playSound(_ data: Data) {
    guard let first = data.first else { return }
    withScratchFile(data.dropFirst(), extension: extensions[Int(first & 0x7f) % extensions.count]) { url in
        guard let movie = try? MovieFileDevice(url: url, loop: false, clock: .freeRunning),
            let microphone = movie.microphone, let input = try? AVCaptureDeviceInput(device: microphone)
        else { return }
        let session = AVCaptureSession()
        session.beginConfiguration()
        guard session.canAddInput(input) else { return }
        ignoringLeaks { session.addInput(input) }
        let output = AVCaptureAudioDataOutput()
        if first & 0x80 != 0 {
            output.audioSettings = [
                AVFormatIDKey: kAudioFormatLinearPCM, AVSampleRateKey: 48_000, AVNumberOfChannelsKey: 2,
                AVLinearPCMBitDepthKey: 16, AVLinearPCMIsFloatKey: false,
            ]
        }
        let reader = BufferReader()
        let queue = DispatchQueue(label: "audio file fuzzer buffers")
        output.setSampleBufferDelegate(reader, queue: queue)
        guard session.canAddOutput(output) else { return }
        session.addOutput(output)
        session.commitConfiguration()
        // The end of the file (the device's disconnection) or a fault arrives as the session's runtime error.
        let token = NotificationCenter.default.addObserver(
            forName: .AVCaptureSessionRuntimeError, object: session, queue: nil
        ) { _ in reader.done.signal() }
        defer { NotificationCenter.default.removeObserver(token) }
        ignoringLeaks { session.startRunning() }
        _ = reader.done.wait(timeout: .now() + playLimit)
        session.stopRunning()
        output.setSampleBufferDelegate(nil, queue: nil)
        // What the delegate queue still holds runs before the input's file goes.
        queue.sync {}
    }
}

#if FUZZING
    @_cdecl("LLVMFuzzerTestOneInput")
    public func fuzz(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> Int32 {
        playSound(Data(bytes: bytes, count: count))
        return 0
    }

    /// SwiftPM links an executable's `main` as `AudioFileFuzzer_main`: it hands the command line to libFuzzer's driver.
    @_cdecl("AudioFileFuzzer_main")
    public func fuzzerMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
        var count = argc
        var arguments = argv
        return LLVMFuzzerRunDriver(&count, &arguments) { data, size in
            guard let data else { return 0 }
            playSound(Data(bytes: data, count: size))
            return 0
        }
    }
#else
    @main struct AudioFileCorpus {
        static func main() { runCorpus(named: "audio", playSound) }
    }
#endif
