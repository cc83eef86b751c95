// `avcapture serve --rtsp`'s request parser (OpenAVCaptureWeb's RTSPRequestParser), fed arbitrary bytes as one
// connection's stream. The first byte picks where the stream is cut in two, as TCP may deliver it; besides crashes,
// three properties are checked on every input: the messages (and the error, if any) are the same whole or cut; the
// parser never holds more than a header and a body's worth of bytes; every request it returns has a token for a
// method and a body no longer than the limit.

import Foundation
import FuzzSupport
import OpenAVCaptureWeb

/// Every message, then the error (nil when the bytes ran out cleanly), feeding `pieces` in turn.
func parse(_ pieces: [ArraySlice<UInt8>]) -> (messages: [RTSPInbound], error: RTSPParseError?) {
    var parser = RTSPRequestParser()
    var messages: [RTSPInbound] = []
    for piece in pieces {
        parser.append(piece)
        do {
            while let message = try parser.next() { messages.append(message) }
        } catch {
            return (messages, error)
        }
        // A header and a body, the interleaved packet's 64 KiB, and what one piece brought at most.
        let bound = RTSPRequestParser.maximumHeaderBytes + RTSPRequestParser.maximumBodyBytes + 65_540 + piece.count
        precondition(parser.bufferedByteCount <= bound, "the parser holds \(parser.bufferedByteCount) bytes")
    }
    return (messages, nil)
}

func checkStream(_ data: Data) {
    guard let first = data.first else { return }
    let bytes = Array(data.dropFirst())
    let cut = bytes.isEmpty ? 0 : Int(first) % (bytes.count + 1)
    let whole = parse([bytes[...]])
    let split = parse([bytes[..<cut], bytes[cut...]])
    precondition(whole.messages == split.messages, "cut at \(cut), the messages differ")
    precondition(
        whole.error == split.error,
        "cut at \(cut), the errors differ: \(String(describing: whole.error)) \(String(describing: split.error))")
    for case .request(let request) in whole.messages {
        precondition(!request.method.isEmpty && !request.method.contains(" "), "method \(request.method)")
        precondition(request.body.count <= RTSPRequestParser.maximumBodyBytes, "a body of \(request.body.count)")
    }
}

#if FUZZING
    import CFuzzDriver

    @_cdecl("LLVMFuzzerTestOneInput")
    public func fuzz(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> Int32 {
        checkStream(Data(bytes: bytes, count: count))
        return 0
    }

    /// SwiftPM links an executable's `main` as `RTSPRequestFuzzer_main`: it hands the command line to libFuzzer.
    @_cdecl("RTSPRequestFuzzer_main")
    public func fuzzerMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
        var count = argc
        var arguments = argv
        return LLVMFuzzerRunDriver(&count, &arguments) { data, size in
            guard let data else { return 0 }
            checkStream(Data(bytes: data, count: size))
            return 0
        }
    }
#else
    @main struct RTSPRequestCorpus {
        static func main() { runCorpus(named: "rtsp", checkStream) }
    }
#endif
