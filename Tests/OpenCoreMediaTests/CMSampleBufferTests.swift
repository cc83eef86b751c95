import Foundation
import OpenCoreMedia
import Testing

/// Sample buffers: timing of audio periods and video frames, sizes, validity, attachments, the C-style API.
@Suite struct CMSampleBufferTests {
    /// A 10 ms period of 48 kHz stereo Int16: 480 frames of 4 bytes.
    private func audioPeriod(startingAt start: CMTime) throws -> CMSampleBuffer {
        let format = try CMFormatDescription(
            audioStreamBasicDescription: .linearPCM(sampleRate: 48000, channels: 2, bitsPerChannel: 16, isFloat: false))
        let data = CMBlockBuffer(length: 480 * 4, zeroed: true)
        let timing = CMSampleTimingInfo(
            duration: CMTime(value: 1, timescale: 48000), presentationTimeStamp: start, decodeTimeStamp: .invalid)
        return try CMSampleBuffer(
            dataBuffer: data, formatDescription: format, numSamples: 480, sampleTimings: [timing], sampleSizes: [4])
    }

    @Test func audioPeriodTimingExpandsOneEntryAcrossEverySample() throws {
        let start = CMTime(value: 96000, timescale: 48000)
        let buffer = try audioPeriod(startingAt: start)
        #expect(buffer.numSamples == 480)
        #expect(buffer.presentationTimeStamp == start)
        // 480 samples of 1/48000 s: exactly 10 ms.
        #expect(buffer.duration == CMTime(value: 1, timescale: 100))
        #expect(buffer.decodeTimeStamp == .invalid)
        #expect(buffer.totalSampleSize == 1920)
        #expect(buffer.sampleSize(at: 479) == 4)
        #expect(buffer.sampleSize(at: 480) == 0)
        let last = try buffer.sampleTimingInfo(at: 479)
        #expect(last.presentationTimeStamp == CMTime(value: 96479, timescale: 48000))
        #expect(try buffer.sampleTimingInfos().count == 480)
        #expect(throws: (any Error).self) { try buffer.sampleTimingInfo(at: 480) }
    }

    @Test func videoFrameAroundAPixelBuffer() throws {
        var pixels: CVPixelBuffer?
        #expect(CVPixelBufferCreate(nil, 640, 480, kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange, nil, &pixels) == 0)
        let image = try #require(pixels)
        var format: CMVideoFormatDescription?
        #expect(CMVideoFormatDescriptionCreateForImageBuffer(allocator: nil, imageBuffer: image, formatDescriptionOut: &format) == noErr)
        let description = try #require(format)
        #expect(CMVideoFormatDescriptionGetDimensions(description) == CMVideoDimensions(width: 640, height: 480))
        #expect(CMFormatDescriptionGetMediaType(description) == kCMMediaType_Video)
        #expect(CMFormatDescriptionGetMediaSubType(description) == kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange)

        var timing = CMSampleTimingInfo(
            duration: CMTime(value: 1001, timescale: 30000), presentationTimeStamp: CMTime(value: 5, timescale: 1),
            decodeTimeStamp: .invalid)
        var sample: CMSampleBuffer?
        let status = CMSampleBufferCreateReadyWithImageBuffer(
            allocator: kCFAllocatorDefault, imageBuffer: image, formatDescription: description,
            sampleTiming: &timing, sampleBufferOut: &sample)
        #expect(status == noErr)
        let buffer = try #require(sample)
        #expect(CMSampleBufferGetImageBuffer(buffer) === image)
        #expect(CMSampleBufferGetDataBuffer(buffer) == nil)
        #expect(CMSampleBufferGetNumSamples(buffer) == 1)
        #expect(CMSampleBufferGetPresentationTimeStamp(buffer) == CMTime(value: 5, timescale: 1))
        #expect(CMSampleBufferGetDuration(buffer) == CMTime(value: 1001, timescale: 30000))
        #expect(CMSampleBufferIsValid(buffer))
        #expect(CMSampleBufferDataIsReady(buffer))
    }

    @Test func imageAndDescriptionMustAgree() throws {
        var pixels: CVPixelBuffer?
        _ = CVPixelBufferCreate(nil, 640, 480, kCVPixelFormatType_32BGRA, nil, &pixels)
        let image = try #require(pixels)
        let wrongSize = try CMFormatDescription(
            videoCodecType: .init(rawValue: kCVPixelFormatType_32BGRA), width: 320, height: 240)
        var timing = CMSampleTimingInfo()
        var sample: CMSampleBuffer?
        let status = CMSampleBufferCreateForImageBuffer(
            allocator: nil, imageBuffer: image, dataReady: true, makeDataReadyCallback: nil, refcon: nil,
            formatDescription: wrongSize, sampleTiming: &timing, sampleBufferOut: &sample)
        #expect(status == kCMSampleBufferError_InvalidMediaFormat)
        #expect(sample == nil)
    }

    @Test func entryCountsMustBeZeroOneOrOnePerSample() throws {
        let data = CMBlockBuffer(length: 30)
        let timings = [CMSampleTimingInfo](repeating: .invalid, count: 2)
        var sample: CMSampleBuffer?
        let status = timings.withUnsafeBufferPointer { timing in
            CMSampleBufferCreate(
                allocator: nil, dataBuffer: data, dataReady: true, makeDataReadyCallback: nil, refcon: nil,
                formatDescription: nil, sampleCount: 3, sampleTimingEntryCount: 2,
                sampleTimingArray: timing.baseAddress, sampleSizeEntryCount: 0, sampleSizeArray: nil,
                sampleBufferOut: &sample)
        }
        #expect(status == kCMSampleBufferError_InvalidEntryCount)
        #expect(sample == nil)
        #expect(throws: (any Error).self) {
            try CMSampleBuffer(
                dataBuffer: nil, formatDescription: nil, numSamples: 1, sampleTimings: [], sampleSizes: [])
        }
    }

    @Test func perSampleTimingIsSummedAndArraysReportTheirNeeds() throws {
        let sizes = [100, 20, 30]
        let timings = (0..<3).map { index in
            CMSampleTimingInfo(
                duration: CMTime(value: Int64(index + 1), timescale: 10),
                presentationTimeStamp: CMTime(value: Int64(index), timescale: 1), decodeTimeStamp: .invalid)
        }
        let buffer = try CMSampleBuffer(
            dataBuffer: CMBlockBuffer(length: 150), formatDescription: nil, numSamples: 3, sampleTimings: timings,
            sampleSizes: sizes)
        #expect(buffer.duration == CMTime(value: 6, timescale: 10))
        #expect(buffer.totalSampleSize == 150)
        #expect(try buffer.sampleSizes() == sizes)

        var needed = 0
        #expect(CMSampleBufferGetSampleSizeArray(buffer, entryCount: 0, arrayToFill: nil, entriesNeededOut: &needed) == noErr)
        #expect(needed == 3)
        var tooSmall = [Int](repeating: 0, count: 2)
        #expect(
            CMSampleBufferGetSampleSizeArray(buffer, entryCount: 2, arrayToFill: &tooSmall, entriesNeededOut: nil)
                == kCMSampleBufferError_ArrayTooSmall)
        var timingOut = [CMSampleTimingInfo](repeating: .invalid, count: 3)
        #expect(
            CMSampleBufferGetSampleTimingInfoArray(buffer, entryCount: 3, arrayToFill: &timingOut, entriesNeededOut: nil)
                == noErr)
        #expect(timingOut == timings)
    }

    @Test func invalidationIsOneWay() throws {
        let buffer = try audioPeriod(startingAt: .zero)
        #expect(CMSampleBufferInvalidate(buffer) == noErr)
        #expect(!CMSampleBufferIsValid(buffer))
        #expect(CMSampleBufferInvalidate(buffer) == kCMSampleBufferError_Invalidated)
    }

    @Test func dataBufferCanBeAttachedOnceAndDataMadeReady() throws {
        let format = CMFormatDescription(mediaType: .muxed, mediaSubType: .init(rawValue: 0x6d703274))
        var sample: CMSampleBuffer?
        let status = CMSampleBufferCreate(
            allocator: nil, dataBuffer: nil, dataReady: false, makeDataReadyCallback: { buffer, _ in
                CMSampleBufferSetDataBuffer(buffer, newValue: CMBlockBuffer(length: 8))
            }, refcon: nil, formatDescription: format, sampleCount: 1, sampleTimingEntryCount: 0,
            sampleTimingArray: nil, sampleSizeEntryCount: 0, sampleSizeArray: nil, sampleBufferOut: &sample)
        #expect(status == noErr)
        let buffer = try #require(sample)
        #expect(!buffer.dataIsReady)
        #expect(buffer.dataBuffer == nil)
        #expect(buffer.presentationTimeStamp == .invalid)
        try buffer.makeDataReady()
        #expect(buffer.dataIsReady)
        #expect(buffer.dataBuffer?.dataLength == 8)
        #expect(CMSampleBufferSetDataBuffer(buffer, newValue: CMBlockBuffer(length: 1)) == kCMSampleBufferError_AlreadyHasDataBuffer)
    }

    @Test func newTimingSharesDataAndPropagatesOnlyPropagatingAttachments() throws {
        let buffer = try audioPeriod(startingAt: .zero)
        CMSetAttachment(buffer, key: "propagates", value: "yes", attachmentMode: kCMAttachmentMode_ShouldPropagate)
        CMSetAttachment(buffer, key: "stays", value: 1, attachmentMode: kCMAttachmentMode_ShouldNotPropagate)
        var timing = CMSampleTimingInfo(
            duration: CMTime(value: 1, timescale: 48000), presentationTimeStamp: CMTime(value: 7, timescale: 1),
            decodeTimeStamp: .invalid)
        var copy: CMSampleBuffer?
        #expect(
            CMSampleBufferCreateCopyWithNewTiming(
                allocator: nil, sampleBuffer: buffer, sampleTimingEntryCount: 1, sampleTimingArray: &timing,
                sampleBufferOut: &copy) == noErr)
        let retimed = try #require(copy)
        #expect(retimed.presentationTimeStamp == CMTime(value: 7, timescale: 1))
        #expect(retimed.dataBuffer === buffer.dataBuffer)
        #expect(CMGetAttachment(retimed, key: "propagates", attachmentModeOut: nil) as? String == "yes")
        #expect(CMGetAttachment(retimed, key: "stays", attachmentModeOut: nil) == nil)
    }
}

/// Attachments: the dropped-frame reason and anything else set with `CMSetAttachment`.
@Suite struct CMAttachmentTests {
    private func frame() throws -> CMSampleBuffer {
        try CMSampleBuffer(
            dataBuffer: CMBlockBuffer(length: 1), formatDescription: nil, numSamples: 1, sampleTimings: [],
            sampleSizes: [1])
    }

    @Test func droppedFrameReasonReadsBackWithItsMode() throws {
        let buffer = try frame()
        CMSetAttachment(
            buffer, key: kCMSampleBufferAttachmentKey_DroppedFrameReason,
            value: kCMSampleBufferDroppedFrameReason_OutOfBuffers, attachmentMode: kCMAttachmentMode_ShouldPropagate)
        var mode: CMAttachmentMode = 99
        let reason = CMGetAttachment(buffer, key: kCMSampleBufferAttachmentKey_DroppedFrameReason, attachmentModeOut: &mode)
        #expect(reason as? String == "OutOfBuffers")
        #expect(mode == kCMAttachmentMode_ShouldPropagate)
    }

    @Test func removeSetNilAndDictionaries() throws {
        let buffer = try frame()
        CMSetAttachments(buffer, attachments: ["a": 1, "b": "two"], attachmentMode: kCMAttachmentMode_ShouldNotPropagate)
        CMSetAttachment(buffer, key: "c", value: 3.5, attachmentMode: kCMAttachmentMode_ShouldPropagate)
        let notPropagating = try #require(
            CMCopyDictionaryOfAttachments(allocator: nil, target: buffer, attachmentMode: kCMAttachmentMode_ShouldNotPropagate))
        #expect(Set(notPropagating.keys) == ["a", "b"])
        CMRemoveAttachment(buffer, key: "a")
        CMSetAttachment(buffer, key: "b", value: nil, attachmentMode: 0)
        #expect(CMCopyDictionaryOfAttachments(allocator: nil, target: buffer, attachmentMode: 0) == nil)
        CMRemoveAllAttachments(buffer)
        #expect(CMGetAttachment(buffer, key: "c", attachmentModeOut: nil) == nil)
    }

    @Test func targetsWithoutAttachmentsHaveNone() {
        CMSetAttachment("not a buffer", key: "k", value: 1, attachmentMode: 0)
        #expect(CMGetAttachment("not a buffer", key: "k", attachmentModeOut: nil) == nil)
    }

    @Test func concurrentWritersAndReadersAgree() async throws {
        let buffer = try frame()
        await withTaskGroup(of: Void.self) { group in
            for writer in 0..<8 {
                group.addTask {
                    for index in 0..<500 {
                        CMSetAttachment(buffer, key: "w\(writer)", value: index, attachmentMode: 0)
                        _ = CMGetAttachment(buffer, key: "w\((writer + 1) % 8)", attachmentModeOut: nil)
                    }
                }
            }
        }
        let all = try #require(CMCopyDictionaryOfAttachments(allocator: nil, target: buffer, attachmentMode: 0))
        #expect(all.count == 8)
        #expect(all.values.allSatisfy { $0 as? Int == 499 })
    }
}
