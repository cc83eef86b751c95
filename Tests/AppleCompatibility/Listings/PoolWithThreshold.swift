// A pool that refuses to grow past a few buffers, as frame-processing pipelines guard their memory.
import OpenAVCaptureShim

final class BoundedFramePool {
    private let pool: CVPixelBufferPool
    private let auxAttributes: NSDictionary = [kCVPixelBufferPoolAllocationThresholdKey: 4]

    init?(width: Int, height: Int) {
        let attributes: NSDictionary = [
            kCVPixelBufferPixelFormatTypeKey: kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange,
            kCVPixelBufferWidthKey: width,
            kCVPixelBufferHeightKey: height,
        ]
        var created: CVPixelBufferPool?
        guard CVPixelBufferPoolCreate(kCFAllocatorDefault, nil, attributes, &created) == kCVReturnSuccess,
            let created
        else { return nil }
        pool = created
    }

    func next() -> CVPixelBuffer? {
        var buffer: CVPixelBuffer?
        let status = CVPixelBufferPoolCreatePixelBufferWithAuxAttributes(kCFAllocatorDefault, pool, auxAttributes, &buffer)
        return status == kCVReturnWouldExceedAllocationThreshold ? nil : buffer
    }

    func tag(_ buffer: CVPixelBuffer) {
        let colour: NSDictionary = [
            kCVImageBufferYCbCrMatrixKey: kCVImageBufferYCbCrMatrix_ITU_R_709_2,
            kCVImageBufferColorPrimariesKey: kCVImageBufferColorPrimaries_ITU_R_709_2,
        ]
        CVBufferSetAttachments(buffer, colour, .shouldPropagate)
    }
}
