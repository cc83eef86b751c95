import Foundation
import OpenCoreMedia
import Testing

/// Format descriptions of video and audio, and block buffers.
@Suite struct CMFormatDescriptionTests {
    @Test func videoDescriptionCarriesCodecAndDimensions() throws {
        var description: CMVideoFormatDescription?
        let status = CMVideoFormatDescriptionCreate(
            allocator: nil, codecType: kCMVideoCodecType_H264, width: 1920, height: 1080, extensions: nil,
            formatDescriptionOut: &description)
        #expect(status == noErr)
        let video = try #require(description)
        #expect(video.mediaType == .video)
        #expect(video.mediaSubType == .h264)
        // 'avc1' as a big-endian four-character code.
        #expect(kCMVideoCodecType_H264 == 0x6176_6331)
        #expect(video.dimensions == CMVideoDimensions(width: 1920, height: 1080))
        #expect(CMAudioFormatDescriptionGetStreamBasicDescription(video) == nil)
        #expect("\(video)".contains("1920x1080"))
    }

    /// A description made for an image buffer carries its colour attachments as extensions, as Apple's
    /// `CMVideoFormatDescriptionCreateForImageBuffer` does.
    @Test func anImageBuffersColourBecomesExtensions() throws {
        var buffer: CVPixelBuffer?
        CVPixelBufferCreate(nil, 64, 48, kCVPixelFormatType_420YpCbCr8BiPlanarFullRange, nil, &buffer)
        let image = try #require(buffer)
        CVBufferSetAttachment(image, kCVImageBufferColorPrimariesKey, kCVImageBufferColorPrimaries_ITU_R_2020, .shouldPropagate)
        CVBufferSetAttachment(image, kCVImageBufferTransferFunctionKey, kCVImageBufferTransferFunction_ITU_R_2100_HLG, .shouldPropagate)
        CVBufferSetAttachment(image, kCVImageBufferYCbCrMatrixKey, kCVImageBufferYCbCrMatrix_ITU_R_2020, .shouldPropagate)
        var description: CMVideoFormatDescription?
        #expect(CMVideoFormatDescriptionCreateForImageBuffer(allocator: nil, imageBuffer: image, formatDescriptionOut: &description) == noErr)
        let video = try #require(description)
        #expect(video.extensions[kCMFormatDescriptionExtension_ColorPrimaries] as? String == kCVImageBufferColorPrimaries_ITU_R_2020)
        #expect(video.extensions[kCMFormatDescriptionExtension_TransferFunction] as? String == kCVImageBufferTransferFunction_ITU_R_2100_HLG)
        #expect(video.extensions[kCMFormatDescriptionExtension_YCbCrMatrix] as? String == kCVImageBufferYCbCrMatrix_ITU_R_2020)
        #expect(video.extensions[kCMFormatDescriptionExtension_GammaLevel] == nil)
    }

    @Test func nonPositiveDimensionsAreAnError() {
        var description: CMVideoFormatDescription?
        let status = CMVideoFormatDescriptionCreate(
            allocator: nil, codecType: kCMVideoCodecType_HEVC, width: 0, height: 1080, extensions: nil,
            formatDescriptionOut: &description)
        #expect(status == kCMFormatDescriptionError_InvalidParameter)
        #expect(description == nil)
    }

    @Test func audioDescriptionReturnsAStablePointerToItsLayout() throws {
        var layout = AudioStreamBasicDescription(
            mSampleRate: 48000, mFormatID: kAudioFormatLinearPCM,
            mFormatFlags: kAudioFormatFlagIsFloat | kAudioFormatFlagIsPacked, mBytesPerPacket: 8, mFramesPerPacket: 1,
            mBytesPerFrame: 8, mChannelsPerFrame: 2, mBitsPerChannel: 32, mReserved: 0)
        var description: CMAudioFormatDescription?
        let status = CMAudioFormatDescriptionCreate(
            allocator: nil, asbd: &layout, layoutSize: 0, layout: nil, magicCookieSize: 0, magicCookie: nil,
            extensions: nil, formatDescriptionOut: &description)
        #expect(status == noErr)
        let audio = try #require(description)
        let pointer = try #require(CMAudioFormatDescriptionGetStreamBasicDescription(audio))
        #expect(pointer.pointee == layout)
        #expect(CMAudioFormatDescriptionGetStreamBasicDescription(audio) == pointer)
        #expect(audio.mediaType == .audio && audio.mediaSubType == .linearPCM)
        #expect(AudioStreamBasicDescription.linearPCM(sampleRate: 48000, channels: 2, bitsPerChannel: 32, isFloat: true) == layout)
    }

    @Test func audioNeedsARateAndChannels() {
        #expect(throws: (any Error).self) { try CMFormatDescription(audioStreamBasicDescription: AudioStreamBasicDescription()) }
    }

    @Test func equalityAndHashingFollowContent() throws {
        let a = try CMFormatDescription(videoCodecType: .hevc, width: 1280, height: 720, extensions: ["Depth": 24])
        let b = try CMFormatDescription(videoCodecType: .hevc, width: 1280, height: 720, extensions: ["Depth": 24])
        let c = try CMFormatDescription(videoCodecType: .hevc, width: 1280, height: 720, extensions: ["Depth": 32])
        #expect(a == b && a.hashValue == b.hashValue)
        #expect(a != c)
        #expect(CMFormatDescriptionEqual(a, otherFormatDescription: b))
        #expect(!CMFormatDescriptionEqual(a, otherFormatDescription: nil))
        #expect(CMFormatDescriptionGetExtensions(a)?["Depth"] as? Int == 24)
    }
}

@Suite struct CMBlockBufferTests {
    @Test func copyReplaceAndPointerAccessRespectBounds() throws {
        let buffer = CMBlockBuffer(copying: [1, 2, 3, 4, 5] as [UInt8])
        #expect(CMBlockBufferGetDataLength(buffer) == 5)
        var out = [UInt8](repeating: 0, count: 3)
        #expect(CMBlockBufferCopyDataBytes(buffer, atOffset: 1, dataLength: 3, destination: &out) == kCMBlockBufferNoErr)
        #expect(out == [2, 3, 4])
        #expect(CMBlockBufferCopyDataBytes(buffer, atOffset: 3, dataLength: 3, destination: &out) == kCMBlockBufferBadLengthParameterErr)
        #expect(CMBlockBufferCopyDataBytes(buffer, atOffset: 6, dataLength: 0, destination: &out) == kCMBlockBufferBadOffsetParameterErr)
        let replacement: [UInt8] = [9, 9]
        #expect(CMBlockBufferReplaceDataBytes(with: replacement, blockBuffer: buffer, offsetIntoDestination: 3, dataLength: 2) == 0)
        #expect(Array(buffer.dataBytes()) == [1, 2, 3, 9, 9])

        var length = 0
        var total = 0
        var pointer: UnsafeMutablePointer<CChar>?
        #expect(CMBlockBufferGetDataPointer(buffer, atOffset: 2, lengthAtOffsetOut: &length, totalLengthOut: &total, dataPointerOut: &pointer) == 0)
        #expect(length == 3 && total == 5)
        #expect(pointer?.pointee == 3)
        #expect(CMBlockBufferGetDataPointer(buffer, atOffset: 5, lengthAtOffsetOut: nil, totalLengthOut: nil, dataPointerOut: &pointer) == kCMBlockBufferBadOffsetParameterErr)
    }

    /// Counts FreeBlock calls; the C callback cannot capture context.
    nonisolated(unsafe) static var freedBlocks: [(UnsafeMutableRawPointer, Int)] = []

    @Test func wrappedMemoryIsFreedOnceThroughTheCustomSource() throws {
        let block = UnsafeMutableRawPointer.allocate(byteCount: 64, alignment: 8)
        var source = CMBlockBufferCustomBlockSource(FreeBlock: { _, memory, size in
            CMBlockBufferTests.freedBlocks.append((memory, size))
            memory.deallocate()
        })
        var made: CMBlockBuffer?
        #expect(
            CMBlockBufferCreateWithMemoryBlock(
                allocator: nil, memoryBlock: block, blockLength: 64, blockAllocator: nil, customBlockSource: &source,
                offsetToData: 16, dataLength: 32, flags: 0, blockBufferOut: &made) == kCMBlockBufferNoErr)
        var pointer: UnsafeMutablePointer<CChar>?
        _ = CMBlockBufferGetDataPointer(made!, atOffset: 0, lengthAtOffsetOut: nil, totalLengthOut: nil, dataPointerOut: &pointer)
        #expect(UnsafeMutableRawPointer(pointer!) == block + 16)
        #expect(made?.dataLength == 32)
        #expect(Self.freedBlocks.isEmpty)
        made = nil
        #expect(Self.freedBlocks.count == 1)
        #expect(Self.freedBlocks.first?.0 == block && Self.freedBlocks.first?.1 == 64)
    }

    @Test func outOfRangeDataIsRefused() {
        var made: CMBlockBuffer?
        #expect(
            CMBlockBufferCreateWithMemoryBlock(
                allocator: nil, memoryBlock: nil, blockLength: 10, blockAllocator: nil, customBlockSource: nil,
                offsetToData: 8, dataLength: 4, flags: 0, blockBufferOut: &made) == kCMBlockBufferBadOffsetParameterErr)
        #expect(made == nil)
        #expect(
            CMBlockBufferCreateWithMemoryBlock(
                allocator: nil, memoryBlock: nil, blockLength: 10, blockAllocator: nil, customBlockSource: nil,
                offsetToData: 0, dataLength: 10, flags: kCMBlockBufferAssureMemoryNowFlag, blockBufferOut: &made) == 0)
        #expect(made.map { Array($0.dataBytes()) } == [UInt8](repeating: 0, count: 10))
    }
}
