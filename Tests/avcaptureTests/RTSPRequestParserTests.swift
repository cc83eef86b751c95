// The RTSP request parser behind `serve --rtsp` (OpenAVCaptureWeb's RTSPRequestParser), fed what real clients send
// and what they must not: every bad input is a clear error with the status the server answers, and nothing a client
// sent before it is lost or merged.

import OpenAVCaptureWeb
import Testing

@Suite("RTSP request parser")
struct RTSPRequestParserTests {
    /// Every message in `text`, fed in pieces of `chunk` bytes.
    static func messages(_ bytes: [UInt8], chunk: Int = .max) throws(RTSPParseError) -> [RTSPInbound] {
        var parser = RTSPRequestParser()
        var found: [RTSPInbound] = []
        var offset = 0
        while offset < bytes.count {
            let end = min(bytes.count, offset + min(chunk, bytes.count))
            parser.append(bytes[offset..<end])
            offset = end
            while let message = try parser.next() { found.append(message) }
        }
        return found
    }

    static let ffmpegSetup = Array(
        ("OPTIONS rtsp://127.0.0.1:8554/live RTSP/1.0\r\nCSeq: 1\r\nUser-Agent: Lavf59.27.100\r\n\r\n"
            + "SETUP rtsp://127.0.0.1:8554/live/streamid=0 RTSP/1.0\r\n"
            + "Transport: RTP/AVP/TCP;unicast;interleaved=0-1\r\n"
            + "CSeq: 3\r\nSession: 1A2B\r\n\r\n").utf8)

    @Test("Requests as FFmpeg sends them, whole or a byte at a time, give the same requests and fields")
    func pipelinedRequests() throws {
        for chunk in [1, 7, .max] {
            let found = try Self.messages(Self.ffmpegSetup, chunk: chunk)
            #expect(found.count == 2)
            guard case .request(let options) = found.first, case .request(let setup) = found.last else {
                Issue.record("not two requests: \(found)")
                continue
            }
            #expect(options.method == "OPTIONS" && options.uri == "rtsp://127.0.0.1:8554/live")
            #expect(options.sequence == "1" && options.header("user-agent") == "Lavf59.27.100")
            #expect(setup.method == "SETUP" && setup.header("TRANSPORT") == "RTP/AVP/TCP;unicast;interleaved=0-1")
            #expect(setup.header("Session") == "1A2B" && setup.sequence == "3")
        }
    }

    @Test("A body is read by Content-Length; interleaved RTCP between requests comes out as a packet")
    func bodiesAndInterleavedPackets() throws {
        let body = "position: 0\r\n"
        let bytes =
            Array(
                "SET_PARAMETER rtsp://h/live RTSP/1.0\r\nCSeq: 9\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
                    .utf8)
            + [0x24, 1, 0, 3, 0x81, 0xc9, 0x00] + Array("GET_PARAMETER rtsp://h/live RTSP/1.0\nCSeq: 10\n\n".utf8)
        let found = try Self.messages(bytes, chunk: 3)
        #expect(found.count == 3)
        if case .request(let request) = found[0] { #expect(request.body == Array(body.utf8)) }
        #expect(found[1] == .interleaved(channel: 1, payload: [0x81, 0xc9, 0x00]))
        if case .request(let request) = found[2] {
            #expect(request.method == "GET_PARAMETER" && request.sequence == "10")
        }
    }

    @Test(
        "Bad input is an error naming the fault, with the status the server answers",
        arguments: [
            ("GET / HTTP/1.1\r\n\r\n", 400, "RTSP/1.0"),
            ("OPTIONS * RTSP/2.0\r\nCSeq: 1\r\n\r\n", 505, "RTSP/2.0"),
            ("OPTIONS *\r\n\r\n", 400, "request line"),
            ("OPTIONS * RTSP/1.0\r\nCSeq 1\r\n\r\n", 400, "no colon"),
            ("OPTIONS * RTSP/1.0\r\nCSeq: 1\r\nContent-Length: -4\r\n\r\n", 400, "Content-Length"),
            ("OPTIONS * RTSP/1.0\r\nContent-Length: 99999999\r\n\r\n", 413, "over"),
            ("OPT(ONS * RTSP/1.0\r\n\r\n", 400, "method"),
            ("OPTIONS * RTSP/1.0\r\nBad Name: x\r\n\r\n", 400, "header name"),
        ])
    func badInput(text: String, status: Int, words: String) {
        do {
            let found = try Self.messages(Array(text.utf8))
            Issue.record("parsed \(found) from \(text.debugDescription)")
        } catch {
            #expect(error.status == status, "\(error)")
            #expect(error.message.contains(words), "\(error)")
        }
    }

    @Test("A request before bad bytes is returned whole; after an error the parser keeps failing")
    func nothingLostBeforeAnError() throws {
        var parser = RTSPRequestParser()
        parser.append(Array("OPTIONS * RTSP/1.0\r\nCSeq: 1\r\n\r\nBROKEN\r\n\r\n".utf8))
        guard case .request(let first) = try parser.next() else {
            Issue.record("the good request was lost")
            return
        }
        #expect(first.sequence == "1")
        #expect(throws: RTSPParseError.self) { try parser.next() }
        parser.append(Array("OPTIONS * RTSP/1.0\r\nCSeq: 2\r\n\r\n".utf8))
        #expect(throws: RTSPParseError.self) { try parser.next() }
    }

    @Test("A header that never ends is refused at 8 KiB, not buffered for ever")
    func endlessHeader() throws {
        var parser = RTSPRequestParser()
        parser.append(Array("OPTIONS * RTSP/1.0\r\n".utf8))
        var refused: RTSPParseError?
        for _ in 0..<400 where refused == nil {
            parser.append(Array("X-Filler: 0123456789012345678901234567890123456789\r\n".utf8))
            do {
                #expect(try parser.next() == nil)
            } catch {
                refused = error
            }
        }
        #expect(refused?.status == 400)
        #expect(parser.bufferedByteCount <= RTSPRequestParser.maximumHeaderBytes + 128)
    }
}
