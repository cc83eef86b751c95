import CLinuxMedia
import CaptureDrivers
import Foundation
import OpenCoreMedia
import OpenCoreVideo
import Synchronization
import Testing

/// The colour a V4L2 driver reports for its format (colorspace, transfer function, Y'CbCr encoding) reaches every
/// delivered pixel buffer as Apple's attachments (issue 21).
@Suite struct V4L2ColorimetryTests {
    /// The attachments of the first few frames a camera over `kernel` delivers.
    private func deliveredAttachments(_ kernel: SimulatedV4L2Kernel, subType: FourCharCode) throws -> [[String: String]] {
        let camera = try makeCamera(kernel)
        let seen = Mutex<[[String: String]]>([])
        let arrivals = DispatchSemaphore(value: 0)
        let sink: StreamSink = { event in
            guard case .output(let sample, _) = event, let image = sample.imageBuffer else { return }
            let attachments = (CVBufferCopyAttachments(image, .shouldPropagate) ?? [:]).compactMapValues { $0 as? String }
            seen.withLock { $0.append(attachments) }
            arrivals.signal()
        }
        try camera.start(try configuration(camera, 640, 480, subType), sink: sink)
        for _ in 0..<6 { _ = arrivals.wait(timeout: .now() + 10) }
        camera.stop()
        return seen.withLock { $0 }
    }

    private static let webcamFormats: [SimulatedV4L2Kernel.Format] = [.discrete(.yuyv, [(640, 480)])]

    @Test func aRec709FormatTagsEveryFrameWith709() throws {
        let kernel = SimulatedV4L2Kernel(formats: Self.webcamFormats)
        kernel.setColorimetry(V4L2Colorimetry(colorspace: V4L2_COLORSPACE_REC709.rawValue))
        let frames = try deliveredAttachments(kernel, subType: kCVPixelFormatType_422YpCbCr8_yuvs)
        #expect(frames.count >= 6)
        for attachments in frames {
            #expect(attachments[kCVImageBufferColorPrimariesKey] == kCVImageBufferColorPrimaries_ITU_R_709_2)
            #expect(attachments[kCVImageBufferTransferFunctionKey] == kCVImageBufferTransferFunction_ITU_R_709_2)
            #expect(attachments[kCVImageBufferYCbCrMatrixKey] == kCVImageBufferYCbCrMatrix_ITU_R_709_2)
        }
    }

    @Test func anSRGBWebcamIsBT601WithTheSRGBCurveAsUVCSays() throws {
        let kernel = SimulatedV4L2Kernel(formats: Self.webcamFormats)
        kernel.setColorimetry(V4L2Colorimetry(colorspace: V4L2_COLORSPACE_SRGB.rawValue))
        let frames = try deliveredAttachments(kernel, subType: kCVPixelFormatType_422YpCbCr8_yuvs)
        let first = try #require(frames.first)
        #expect(first[kCVImageBufferColorPrimariesKey] == kCVImageBufferColorPrimaries_ITU_R_709_2)
        #expect(first[kCVImageBufferTransferFunctionKey] == kCVImageBufferTransferFunction_sRGB)
        #expect(first[kCVImageBufferYCbCrMatrixKey] == kCVImageBufferYCbCrMatrix_ITU_R_601_4)
    }

    @Test func explicitFieldsWinOverTheColorspaceDefaults() throws {
        let kernel = SimulatedV4L2Kernel(formats: [.discrete(.nv12, [(640, 480)])], multiplanar: true, dataOffset: 64)
        kernel.setColorimetry(
            V4L2Colorimetry(
                colorspace: V4L2_COLORSPACE_BT2020.rawValue, transferFunction: V4L2_XFER_FUNC_SMPTE2084.rawValue,
                yCbCrEncoding: V4L2_YCBCR_ENC_BT2020.rawValue))
        let frames = try deliveredAttachments(kernel, subType: kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange)
        #expect(frames.count >= 6)
        for attachments in frames {
            #expect(attachments[kCVImageBufferColorPrimariesKey] == kCVImageBufferColorPrimaries_ITU_R_2020)
            #expect(attachments[kCVImageBufferTransferFunctionKey] == kCVImageBufferTransferFunction_SMPTE_ST_2084_PQ)
            #expect(attachments[kCVImageBufferYCbCrMatrixKey] == kCVImageBufferYCbCrMatrix_ITU_R_2020)
        }
    }

    @Test func aDriverThatSaysNothingAddsNothing() throws {
        let kernel = SimulatedV4L2Kernel(formats: Self.webcamFormats)
        let frames = try deliveredAttachments(kernel, subType: kCVPixelFormatType_422YpCbCr8_yuvs)
        let first = try #require(frames.first)
        #expect(first.isEmpty)
    }

    @Test func theKernelsDefaultMappingsForEachColorspace() {
        func mapped(_ colorspace: v4l2_colorspace) -> [String?] {
            let colorimetry = V4L2Colorimetry(colorspace: colorspace.rawValue)
            return [colorimetry.colorPrimaries, colorimetry.transferFunctionValue, colorimetry.yCbCrMatrix]
        }
        #expect(mapped(V4L2_COLORSPACE_SMPTE170M) == ["SMPTE_C", "ITU_R_709_2", "ITU_R_601_4"])
        #expect(mapped(V4L2_COLORSPACE_470_SYSTEM_BG) == ["EBU_3213", "ITU_R_709_2", "ITU_R_601_4"])
        #expect(mapped(V4L2_COLORSPACE_JPEG) == ["ITU_R_709_2", "IEC_sRGB", "ITU_R_601_4"])
        #expect(mapped(V4L2_COLORSPACE_SMPTE240M) == ["SMPTE_C", "SMPTE_240M_1995", "SMPTE_240M_1995"])
        #expect(mapped(V4L2_COLORSPACE_BT2020) == ["ITU_R_2020", "ITU_R_2020", "ITU_R_2020"])
        #expect(mapped(V4L2_COLORSPACE_DCI_P3) == ["DCI_P3", "UseGamma", "ITU_R_709_2"])
        #expect(mapped(V4L2_COLORSPACE_DEFAULT) == [nil, nil, nil])
    }

    // MARK: Range: the pixel format Apple's API gives a full-range camera

    /// The pixel format of the first frames a camera over `kernel` delivers, and of their format description.
    private func deliveredPixelFormats(_ kernel: SimulatedV4L2Kernel, subType: FourCharCode) throws -> [(OSType, FourCharCode?)] {
        let camera = try makeCamera(kernel)
        let seen = Mutex<[(OSType, FourCharCode?)]>([])
        let arrivals = DispatchSemaphore(value: 0)
        let sink: StreamSink = { event in
            guard case .output(let sample, _) = event, let image = sample.imageBuffer else { return }
            let described = sample.formatDescription?.mediaSubType.rawValue
            seen.withLock { $0.append((CVPixelBufferGetPixelFormatType(image), described)) }
            arrivals.signal()
        }
        try camera.start(try configuration(camera, 640, 480, subType), sink: sink)
        for _ in 0..<3 { _ = arrivals.wait(timeout: .now() + 10) }
        camera.stop()
        return seen.withLock { $0 }
    }

    struct RangeCase: CustomTestStringConvertible, Sendable {
        var format: SimulatedV4L2Kernel.Format
        var multiplanar = false
        var listed: FourCharCode
        var colorspace: v4l2_colorspace
        var quantization: v4l2_quantization
        var delivered: FourCharCode
        var testDescription: String { "\(listed) with colorspace \(colorspace.rawValue), quantization \(quantization.rawValue)" }
    }

    @Test(
        "the driver's range picks '420f'/'f420'/'yuvf' or the video-range format",
        arguments: [
            RangeCase(
                format: .discrete(.nv12, [(640, 480)]), listed: kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange,
                colorspace: V4L2_COLORSPACE_REC709, quantization: V4L2_QUANTIZATION_FULL_RANGE,
                delivered: kCVPixelFormatType_420YpCbCr8BiPlanarFullRange),
            RangeCase(
                format: .discrete(.nv12m, [(640, 480)]), multiplanar: true,
                listed: kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange, colorspace: V4L2_COLORSPACE_JPEG,
                quantization: V4L2_QUANTIZATION_DEFAULT, delivered: kCVPixelFormatType_420YpCbCr8BiPlanarFullRange),
            RangeCase(
                format: .discrete(.yuyv, [(640, 480)]), listed: kCVPixelFormatType_422YpCbCr8_yuvs,
                colorspace: V4L2_COLORSPACE_JPEG, quantization: V4L2_QUANTIZATION_DEFAULT,
                delivered: kCVPixelFormatType_422YpCbCr8FullRange),
            RangeCase(
                format: .discrete(.yuv420, [(640, 480)]), listed: kCVPixelFormatType_420YpCbCr8Planar,
                colorspace: V4L2_COLORSPACE_SRGB, quantization: V4L2_QUANTIZATION_FULL_RANGE,
                delivered: kCVPixelFormatType_420YpCbCr8PlanarFullRange),
            RangeCase(
                format: .discrete(.yuyv, [(640, 480)]), listed: kCVPixelFormatType_422YpCbCr8_yuvs,
                colorspace: V4L2_COLORSPACE_JPEG, quantization: V4L2_QUANTIZATION_LIM_RANGE,
                delivered: kCVPixelFormatType_422YpCbCr8_yuvs),
            RangeCase(
                format: .discrete(.nv12, [(640, 480)]), listed: kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange,
                colorspace: V4L2_COLORSPACE_SRGB, quantization: V4L2_QUANTIZATION_DEFAULT,
                delivered: kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange),
            RangeCase(
                format: .discrete(.uyvy, [(640, 480)]), listed: kCVPixelFormatType_422YpCbCr8,
                colorspace: V4L2_COLORSPACE_REC709, quantization: V4L2_QUANTIZATION_FULL_RANGE,
                delivered: kCVPixelFormatType_422YpCbCr8),
        ])
    func rangeChoosesThePixelFormat(_ range: RangeCase) throws {
        let kernel = SimulatedV4L2Kernel(formats: [range.format], multiplanar: range.multiplanar)
        kernel.setColorimetry(V4L2Colorimetry(colorspace: range.colorspace.rawValue, quantization: range.quantization.rawValue))
        let frames = try deliveredPixelFormats(kernel, subType: range.listed)
        #expect(frames.count >= 3)
        for (pixelFormat, described) in frames {
            #expect(pixelFormat == range.delivered)
            #expect(described == range.delivered, "the format description says the frames' format")
        }
    }

    @Test func theKernelsDefaultRange() {
        func fullRange(_ colorspace: v4l2_colorspace, _ quantization: v4l2_quantization = V4L2_QUANTIZATION_DEFAULT) -> Bool {
            V4L2Colorimetry(colorspace: colorspace.rawValue, quantization: quantization.rawValue).isFullRange
        }
        #expect(fullRange(V4L2_COLORSPACE_JPEG))
        #expect(!fullRange(V4L2_COLORSPACE_SRGB))
        #expect(!fullRange(V4L2_COLORSPACE_REC709))
        #expect(!fullRange(V4L2_COLORSPACE_DEFAULT))
        #expect(fullRange(V4L2_COLORSPACE_REC709, V4L2_QUANTIZATION_FULL_RANGE))
        #expect(!fullRange(V4L2_COLORSPACE_JPEG, V4L2_QUANTIZATION_LIM_RANGE))
    }
}
