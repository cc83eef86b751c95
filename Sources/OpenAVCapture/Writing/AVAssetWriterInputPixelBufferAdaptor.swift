// AVAssetWriterInputPixelBufferAdaptor: pixel buffers and a pool for a video AVAssetWriterInput.

import Foundation
import OpenCoreMedia
import OpenCoreVideo
import Synchronization

/// Appends pixel buffers, with their presentation times, to a video ``AVAssetWriterInput``, and offers a pool of
/// buffers of the right format and size to render into.
///
/// `sourcePixelBufferAttributes` may give `kCVPixelBufferPixelFormatTypeKey` (an `OSType`, or an array whose first
/// element is used), `kCVPixelBufferWidthKey` and `kCVPixelBufferHeightKey`; the size defaults to the input's
/// settings, the format to NV12 video range (`'420v'`). The input's encoder is made for that pixel format.
///
/// Threading: thread safe (`@unchecked Sendable`); append from one thread at a time.
open class AVAssetWriterInputPixelBufferAdaptor: NSObject, @unchecked Sendable {
    /// The input the buffers go to.
    open var assetWriterInput: AVAssetWriterInput { storedAssetWriterInput }
    private let storedAssetWriterInput: AVAssetWriterInput
    /// The attributes given.
    open var sourcePixelBufferAttributes: [String: Any]? { storedSourcePixelBufferAttributes }
    private let storedSourcePixelBufferAttributes: [String: Any]?
    private let pixelFormat: OSType
    private let size: (width: Int, height: Int)
    private let pool = Mutex<CVPixelBufferPool?>(nil)

    /// An adaptor for `input`, a video input whose writer has not started. Traps otherwise, as Apple raises.
    public init(assetWriterInput input: AVAssetWriterInput, sourcePixelBufferAttributes: [String: Any]? = nil) {
        precondition(
            input.mediaType == .video, "AVAssetWriterInputPixelBufferAdaptor: the input's media type must be video")
        let status = input.writer?.status ?? .unknown
        precondition(
            status == .unknown,
            "AVAssetWriterInputPixelBufferAdaptor cannot be created after the writer started (status is \(status))")
        let attributes = sourcePixelBufferAttributes ?? [:]
        var format: OSType = kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange
        if let raw = attributes[kCVPixelBufferPixelFormatTypeKey] {
            let first = (raw as? [Any])?.first ?? raw
            guard let value = integerSetting(first), let code = OSType(exactly: value) else {
                preconditionFailure(
                    "AVAssetWriterInputPixelBufferAdaptor: kCVPixelBufferPixelFormatTypeKey \(raw) is not an OSType")
            }
            format = code
        }
        var width = 0
        var height = 0
        if case .video(let configuration) = input.settings {
            width = configuration.width
            height = configuration.height
        }
        width = integerSetting(attributes[kCVPixelBufferWidthKey]) ?? width
        height = integerSetting(attributes[kCVPixelBufferHeightKey]) ?? height
        self.storedAssetWriterInput = input
        self.storedSourcePixelBufferAttributes = sourcePixelBufferAttributes
        self.pixelFormat = format
        self.size = (width, height)
        super.init()
        input.setSourcePixelFormat(format)
        if let width = integerSetting(attributes[kCVPixelBufferWidthKey]),
            let height = integerSetting(attributes[kCVPixelBufferHeightKey])
        {
            input.setSourceSize((width, height))
        }
    }

    /// A pool of buffers of the adaptor's format and size, once the writer has started writing; `nil` before.
    open var pixelBufferPool: CVPixelBufferPool? {
        guard let status = assetWriterInput.writer?.status, status != .unknown else { return nil }
        return pool.withLock { pool in
            if pool == nil {
                pool = try? CVPixelBufferPool(width: size.width, height: size.height, pixelFormatType: pixelFormat)
            }
            return pool
        }
    }

    /// Appends `pixelBuffer` at `presentationTime` (source clock).
    ///
    /// - Returns: as ``AVAssetWriterInput/append(_:)``: `false` when the writer failed or was cancelled.
    @discardableResult
    open func append(_ pixelBuffer: CVPixelBuffer, withPresentationTime presentationTime: CMTime) -> Bool {
        assetWriterInput.appendPixelBuffer(
            pixelBuffer, at: presentationTime,
            caller: "append(_:withPresentationTime:) (through its pixel buffer adaptor)")
    }
}
