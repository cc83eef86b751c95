// AVAssetWriter and its input subclassed to count what is written, as recorder libraries do to add statistics.
import OpenAVCaptureShim

final class CountingAssetWriter: AVAssetWriter, @unchecked Sendable {
    private(set) var addedInputs = 0
    private(set) var sessionStart: CMTime = .invalid

    override func canAdd(_ input: AVAssetWriterInput) -> Bool {
        super.canAdd(input)
    }

    override func add(_ input: AVAssetWriterInput) {
        addedInputs += 1
        super.add(input)
    }

    override func startWriting() -> Bool {
        super.startWriting()
    }

    override func startSession(atSourceTime startTime: CMTime) {
        sessionStart = startTime
        super.startSession(atSourceTime: startTime)
    }

    override func cancelWriting() {
        super.cancelWriting()
    }
}

final class CountingWriterInput: AVAssetWriterInput, @unchecked Sendable {
    private(set) var appended = 0

    override func append(_ sampleBuffer: CMSampleBuffer) -> Bool {
        let accepted = super.append(sampleBuffer)
        if accepted {
            appended += 1
        }
        return accepted
    }

    override var isReadyForMoreMediaData: Bool { super.isReadyForMoreMediaData }

    override func markAsFinished() {
        super.markAsFinished()
    }

    override var expectsMediaDataInRealTime: Bool {
        get { super.expectsMediaDataInRealTime }
        set { super.expectsMediaDataInRealTime = newValue }
    }
}

final class CountingPixelBufferAdaptor: AVAssetWriterInputPixelBufferAdaptor, @unchecked Sendable {
    private(set) var frames = 0

    override func append(_ pixelBuffer: CVPixelBuffer, withPresentationTime presentationTime: CMTime) -> Bool {
        frames += 1
        return super.append(pixelBuffer, withPresentationTime: presentationTime)
    }
}

func makeCountingWriter(url: URL) throws -> (CountingAssetWriter, CountingWriterInput) {
    let writer = try CountingAssetWriter(outputURL: url, fileType: .mov)
    let input = CountingWriterInput(
        mediaType: .video,
        outputSettings: [
            AVVideoCodecKey: AVVideoCodecType.h264, AVVideoWidthKey: 1280, AVVideoHeightKey: 720,
        ])
    input.expectsMediaDataInRealTime = true
    if writer.canAdd(input) {
        writer.add(input)
    }
    return (writer, input)
}
