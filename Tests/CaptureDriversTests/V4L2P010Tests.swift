import CLinuxMedia
import CaptureDrivers
import Foundation
import OpenCoreMedia
import OpenCoreVideo
import Synchronization
import Testing

/// A V4L2 camera delivering P010 (10-bit NV12, as `v4l2-ctl --list-formats` shows 'P010'; vivid does not offer it,
/// so the simulated kernel does): listed and delivered as Apple's `'x420'` (`'xf20'` when the driver says full
/// range), wrapped in place.
@Suite struct V4L2P010Tests {
    @Test func p010IsListedAsX420AfterThe8BitFormats() throws {
        let kernel = SimulatedV4L2Kernel(formats: [.discrete(.p010, [(640, 480)]), .discrete(.nv12, [(640, 480)])])
        let camera = try makeCamera(kernel)
        let subTypes = camera.formats.compactMap { format -> FourCharCode? in
            guard case .video(let video) = format else { return nil }
            return video.mediaSubType
        }
        #expect(
            subTypes == [
                kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange, kCVPixelFormatType_420YpCbCr10BiPlanarVideoRange,
            ])
        #expect(V4L2PixelFormat.p010.description == "P010")
    }

    @Test(arguments: [
        (V4L2_QUANTIZATION_DEFAULT, kCVPixelFormatType_420YpCbCr10BiPlanarVideoRange),
        (V4L2_QUANTIZATION_FULL_RANGE, kCVPixelFormatType_420YpCbCr10BiPlanarFullRange),
    ])
    func framesAreX420InPlace(quantization: v4l2_quantization, delivered: OSType) throws {
        let kernel = SimulatedV4L2Kernel(formats: [.discrete(.p010, [(640, 480)])])
        kernel.setColorimetry(
            V4L2Colorimetry(colorspace: V4L2_COLORSPACE_REC709.rawValue, quantization: quantization.rawValue))
        let camera = try makeCamera(kernel)
        struct Seen: Sendable {
            var pixelFormat: OSType
            var described: FourCharCode?
            var rowBytes: [Int]
            var planeHeights: [Int]
            var chromaOffset: Int
        }
        let seen = Mutex<[Seen]>([])
        let arrivals = DispatchSemaphore(value: 0)
        let sink: StreamSink = { event in
            guard case .output(let sample, _) = event, let image = sample.imageBuffer else { return }
            CVPixelBufferLockBaseAddress(image, .readOnly)
            defer { CVPixelBufferUnlockBaseAddress(image, .readOnly) }
            let luma = CVPixelBufferGetBaseAddressOfPlane(image, 0)!
            let chroma = CVPixelBufferGetBaseAddressOfPlane(image, 1)!
            seen.withLock {
                $0.append(
                    Seen(
                        pixelFormat: CVPixelBufferGetPixelFormatType(image),
                        described: sample.formatDescription?.mediaSubType.rawValue,
                        rowBytes: (0..<2).map { CVPixelBufferGetBytesPerRowOfPlane(image, $0) },
                        planeHeights: (0..<2).map { CVPixelBufferGetHeightOfPlane(image, $0) },
                        chromaOffset: chroma - luma))
            }
            arrivals.signal()
        }
        try camera.start(
            try configuration(camera, 640, 480, kCVPixelFormatType_420YpCbCr10BiPlanarVideoRange), sink: sink)
        for _ in 0..<3 { _ = arrivals.wait(timeout: .now() + 10) }
        camera.stop()
        let frames = seen.withLock { $0 }
        #expect(frames.count >= 3)
        for frame in frames {
            #expect(frame.pixelFormat == delivered && frame.described == delivered)
            // Two bytes a sample: 1280-byte rows for 640 pixels in both planes; the chroma right after the luma, as
            // V4L2's P010 lays one buffer out (wrapped, not copied).
            #expect(frame.rowBytes == [1280, 1280])
            #expect(frame.planeHeights == [480, 240])
            #expect(frame.chromaOffset == 1280 * 480)
        }
    }
}
