import Foundation
import OpenAVCapture
import Testing

/// Our additions beyond Apple's API: `sampleBuffers` sequences and `try await session.start()`.
@Suite(.serialized) struct AVCaptureOutputSequenceTests {
    @Test func videoFramesAsAnAsyncSequenceWithoutADelegate() async throws {
        let output = AVCaptureVideoDataOutput()
        output.videoSettings = [kCVPixelBufferPixelFormatTypeKey: kCVPixelFormatType_32BGRA]
        let session = try makeSession(preset: .qvga320x240, devices: [VirtualDevices.back], outputs: [output])
        let frames = output.sampleBuffers
        try await session.start()
        var times: [CMTime] = []
        for await frame in frames {
            #expect(frame.imageBuffer.map(CVPixelBufferGetPixelFormatType) == kCVPixelFormatType_32BGRA)
            times.append(frame.presentationTimeStamp)
            if times.count == 5 { break }
        }
        session.stopRunning()
        #expect(times.count == 5)
        #expect(zip(times, times.dropFirst()).allSatisfy { $1 > $0 })
    }

    @Test func audioBuffersAsAnAsyncSequenceAreContiguous() async throws {
        let output = AVCaptureAudioDataOutput()
        let session = try makeSession(devices: [VirtualDevices.microphone], outputs: [output])
        let buffers = output.sampleBuffers
        try await session.start()
        var periods: [(CMTime, Int)] = []
        for await buffer in buffers {
            periods.append((buffer.presentationTimeStamp, buffer.numSamples))
            if periods.count == 10 { break }
        }
        session.stopRunning()
        for (earlier, later) in zip(periods, periods.dropFirst()) {
            #expect(later.0 == earlier.0 + CMTime(value: Int64(earlier.1), timescale: 48000))
        }
    }
}
