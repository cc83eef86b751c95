// The V4L2 camera driver reading what the kernel answers, through the simulated kernel (OpenAVCaptureTesting's
// SimulatedV4L2Camera) whose answers the input rewrites: the capabilities, formats, frame sizes and intervals and
// controls the driver enumerates, the format and buffers it is given, and every dequeued buffer (index, bytes used,
// flags, sequence, timestamp) of three frames. The driver must refuse what makes no sense with an error or a dropped
// frame; AddressSanitizer watches the frames' bytes, which the handler reads to the end.
//
// Input: consumed answer by answer. A byte below 0x80 leaves the answer alone; otherwise its low two bits + 1
// rewrites follow, each an offset byte (×4, within the answer) and a 32-bit little-endian value. When the input
// runs out the kernel answers truthfully.

import Foundation
import FuzzSupport
import OpenAVCapture
import OpenAVCaptureTesting
import Synchronization

/// The input, read by the kernel's answers in turn (under the simulated kernel's lock, from any thread).
///
/// The bytes are an array, not `Data`: `Data` keeps its storage behind a tagged (spare-bit) reference that
/// LeakSanitizer does not recognise, so a kernel still held by the finishing capture thread when libFuzzer checks
/// for leaks made the input's storage look leaked.
final class Answers: Sendable {
    private let bytes: [UInt8]
    private let position = Mutex(0)
    init(_ data: Data) { bytes = Array(data) }

    func tamper(_ answer: UnsafeMutableRawBufferPointer) {
        position.withLock { position in
            func next() -> UInt8 {
                guard position < bytes.count else { return 0 }
                defer { position += 1 }
                return bytes[position]
            }
            let command = next()
            guard command >= 0x80, answer.count >= 4 else { return }
            for _ in 0...(command & 3) {
                let offset = Int(next()) * 4 % (answer.count - 3) & ~3
                let value = (0..<4).reduce(UInt32(0)) { $0 | UInt32(next()) << (8 * UInt32($1)) }
                answer.storeBytes(of: value, toByteOffset: offset, as: UInt32.self)
            }
        }
    }
}

func runCamera(_ data: Data) {
    let answers = Answers(data)
    let tampered = try? SimulatedV4L2Camera(width: 64, height: 48) { _, answer in answers.tamper(answer) }
    guard let camera = tampered else { return }
    defer { camera.stop() }
    let checksum = Atomic<UInt64>(0)
    _ = try? camera.capture(frames: 3, timeout: .milliseconds(300)) { sample in
        var sum: UInt64 = 0
        if let image = sample.imageBuffer {
            image.withLockedPlanes(.readOnly) { planes in
                for plane in planes {
                    for row in 0..<plane.height {
                        for byte in plane.row(row) { sum &+= UInt64(byte) }
                    }
                }
            }
        } else if let block = sample.dataBuffer {
            block.withUnsafeBytes { bytes in for byte in bytes { sum &+= UInt64(byte) } }
        }
        checksum.add(sum, ordering: .relaxed)
    }
}

#if FUZZING
    import CFuzzDriver

    @_cdecl("LLVMFuzzerTestOneInput")
    public func fuzz(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> Int32 {
        runCamera(Data(bytes: bytes, count: count))
        return 0
    }

    /// SwiftPM links an executable's `main` as `V4L2KernelFuzzer_main`: it hands the command line to libFuzzer.
    @_cdecl("V4L2KernelFuzzer_main")
    public func fuzzerMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
        var count = argc
        var arguments = argv
        return LLVMFuzzerRunDriver(&count, &arguments) { data, size in
            guard let data else { return 0 }
            runCamera(Data(bytes: data, count: size))
            return 0
        }
    }
#else
    @main struct V4L2KernelCorpus {
        static func main() { runCorpus(named: "v4l2", runCamera) }
    }
#endif
