// AVVideoScalingModeKey: how a writer input fits pictures of another size into the size it encodes.

import Foundation
import MediaCodecs
import OpenCoreVideo

/// Video settings value of ``AVVideoScalingModeKey``: keep the source's aspect ratio by making the encoded size
/// smaller where it differs, and never scale a smaller source up (the encoded size is the source's, fitted within
/// the width and height asked). Needs the source size before writing: the pixel buffer adaptor's
/// `kCVPixelBufferWidthKey`/`kCVPixelBufferHeightKey`, or a video `sourceFormatHint`.
public let AVVideoScalingModeFit = "AVVideoScalingModeFit"
/// Video settings value of ``AVVideoScalingModeKey``: stretch the source to the width and height (the default here).
public let AVVideoScalingModeResize = "AVVideoScalingModeResize"
/// Video settings value of ``AVVideoScalingModeKey``: keep the aspect ratio, black bars fill the rest.
public let AVVideoScalingModeResizeAspect = "AVVideoScalingModeResizeAspect"
/// Video settings value of ``AVVideoScalingModeKey``: keep the aspect ratio, crop what overflows (centred).
public let AVVideoScalingModeResizeAspectFill = "AVVideoScalingModeResizeAspectFill"

/// ``AVVideoScalingModeKey``'s values as a type.
///
/// Threading: a value; `Sendable`.
enum VideoScalingMode: String, Sendable {
    case fit = "AVVideoScalingModeFit"
    case resize = "AVVideoScalingModeResize"
    case resizeAspect = "AVVideoScalingModeResizeAspect"
    case resizeAspectFill = "AVVideoScalingModeResizeAspectFill"

    /// The size a `source` picture is scaled to, and where it sits in the `target` picture (negative: the part
    /// cropped off). Even numbers throughout, so 4:2:0 and 4:2:2 chroma stay aligned.
    func layout(
        source: (width: Int, height: Int), target: (width: Int, height: Int)
    )
        -> (scaled: (width: Int, height: Int), origin: (x: Int, y: Int))
    {
        func even(_ value: Double) -> Int { max(2, Int((value / 2).rounded()) * 2) }
        let sx = Double(target.width) / Double(source.width)
        let sy = Double(target.height) / Double(source.height)
        let scale: Double
        switch self {
        case .resize, .fit: return (target, (0, 0))
        case .resizeAspect: scale = min(sx, sy)
        case .resizeAspectFill: scale = max(sx, sy)
        }
        let scaled = (
            width: scale == sx ? target.width : even(Double(source.width) * scale),
            height: scale == sy ? target.height : even(Double(source.height) * scale)
        )
        let origin = (x: (target.width - scaled.width) / 2 / 2 * 2, y: (target.height - scaled.height) / 2 / 2 * 2)
        return (scaled, origin)
    }

    /// The encoded size for ``fit``: `source` made smaller to fit within `limit`, its aspect kept, never larger.
    static func fitted(source: (width: Int, height: Int), within limit: (width: Int, height: Int)) -> (Int, Int) {
        let scale = min(1, Double(limit.width) / Double(source.width), Double(limit.height) / Double(source.height))
        func even(_ value: Double) -> Int { max(2, Int(value / 2) * 2) }
        return (even(Double(source.width) * scale), even(Double(source.height) * scale))
    }
}

/// Makes pictures of the encoder's format and size from pictures of another size, by a scaling mode: scaled by
/// libswscale (``PixelBufferConverter``) to the layout's size, then placed on black (aspect) or cropped (fill)
/// by copying plane rows. The black picture is made once by converting a black BGRA picture to the format, so
/// every format has its own black (Y' 16 in video range, 0 in full range).
///
/// Threading: thread-bound (the writer's queue).
final class PictureFitter {
    let mode: VideoScalingMode
    let target: PixelBufferConverter.Format
    private var scaler: PixelBufferConverter?
    private var scalerMatrix: YCbCrMatrix?
    private var black: CVPixelBuffer?

    init(mode: VideoScalingMode, target: PixelBufferConverter.Format) {
        self.mode = mode
        self.target = target
    }

    func fit(_ picture: CVPixelBuffer, matrix: YCbCrMatrix?) throws(MediaCodecsError) -> CVPixelBuffer {
        let source = PixelBufferConverter.Format(of: picture)
        let layout = mode.layout(
            source: (source.width, source.height), target: (target.width, target.height))
        let scaledFormat = PixelBufferConverter.Format(
            pixelFormatType: target.pixelFormatType, width: layout.scaled.width, height: layout.scaled.height)
        if scaler?.source != source || scaler?.destination != scaledFormat || scalerMatrix != matrix {
            scaler = try PixelBufferConverter(from: source, to: scaledFormat, matrix: matrix)
            scalerMatrix = matrix
        }
        let scaled = try scaler!.convert(picture)
        if layout.scaled.width == target.width, layout.scaled.height == target.height { return scaled }
        let output = try blankPicture(matrix: matrix)
        let visible = (
            x: max(0, layout.origin.x), y: max(0, layout.origin.y),
            width: min(target.width, layout.scaled.width), height: min(target.height, layout.scaled.height)
        )
        copyRegion(
            from: scaled, at: (max(0, -layout.origin.x), max(0, -layout.origin.y)), to: output,
            at: (visible.x, visible.y), size: (visible.width, visible.height))
        return output
    }

    /// A new picture of the target format and size, black.
    private func blankPicture(matrix: YCbCrMatrix?) throws(MediaCodecsError) -> CVPixelBuffer {
        if black == nil {
            var seed: CVPixelBuffer?
            CVPixelBufferCreate(nil, 2, 2, kCVPixelFormatType_32BGRA, nil, &seed)
            guard let seed else {
                throw MediaCodecsError(.allocationFailed, while: "making a black picture", message: "no memory")
            }
            CVPixelBufferLockBaseAddress(seed, [])
            let base = CVPixelBufferGetBaseAddress(seed)!.assumingMemoryBound(to: UInt8.self)
            for row in 0..<2 {
                let line = base + row * CVPixelBufferGetBytesPerRow(seed)
                for pixel in 0..<2 { (line + pixel * 4).initialize(from: [0, 0, 0, 255], count: 4) }
            }
            CVPixelBufferUnlockBaseAddress(seed, [])
            black = try PixelBufferConverter(from: .init(of: seed), to: target, matrix: matrix).convert(seed)
        }
        var output: CVPixelBuffer?
        CVPixelBufferCreate(nil, target.width, target.height, target.pixelFormatType, nil, &output)
        guard let output, let black else {
            throw MediaCodecsError(.allocationFailed, while: "making a picture to fit into", message: "no memory")
        }
        copyRegion(from: black, at: (0, 0), to: output, at: (0, 0), size: (target.width, target.height))
        return output
    }

    /// Copies a `size` region of `source` at `from` to `destination` at `to`, plane by plane (same format; even
    /// coordinates and sizes).
    private func copyRegion(
        from source: CVPixelBuffer, at from: (x: Int, y: Int), to destination: CVPixelBuffer, at to: (x: Int, y: Int),
        size: (width: Int, height: Int)
    ) {
        guard let description = PixelFormatDescription.describing(target.pixelFormatType) else { return }
        CVPixelBufferLockBaseAddress(source, .readOnly)
        CVPixelBufferLockBaseAddress(destination, [])
        defer {
            CVPixelBufferUnlockBaseAddress(destination, [])
            CVPixelBufferUnlockBaseAddress(source, .readOnly)
        }
        for (index, plane) in description.planes.enumerated() {
            let sourceBase: UnsafeMutableRawPointer?
            let destinationBase: UnsafeMutableRawPointer?
            let sourceStride: Int
            let destinationStride: Int
            if description.isPlanar {
                sourceBase = CVPixelBufferGetBaseAddressOfPlane(source, index)
                destinationBase = CVPixelBufferGetBaseAddressOfPlane(destination, index)
                sourceStride = CVPixelBufferGetBytesPerRowOfPlane(source, index)
                destinationStride = CVPixelBufferGetBytesPerRowOfPlane(destination, index)
            } else {
                sourceBase = CVPixelBufferGetBaseAddress(source)
                destinationBase = CVPixelBufferGetBaseAddress(destination)
                sourceStride = CVPixelBufferGetBytesPerRow(source)
                destinationStride = CVPixelBufferGetBytesPerRow(destination)
            }
            guard let sourceBase, let destinationBase else { continue }
            func bytes(_ pixels: Int) -> Int {
                Int(Double(pixels / plane.horizontalSubsampling) * plane.bytesPerPixel)
            }
            let rows = size.height / plane.verticalSubsampling
            let rowBytes = bytes(size.width)
            for row in 0..<rows {
                let sourceRow = sourceBase + (from.y / plane.verticalSubsampling + row) * sourceStride + bytes(from.x)
                let destinationRow =
                    destinationBase + (to.y / plane.verticalSubsampling + row) * destinationStride + bytes(to.x)
                destinationRow.copyMemory(from: sourceRow, byteCount: rowBytes)
            }
        }
    }
}

extension AVAssetWriterInput {
    /// The output settings' ``AVVideoScalingModeKey`` (checked in the initializer); `.resize` when absent.
    var scalingMode: VideoScalingMode {
        (outputSettings?[AVVideoScalingModeKey] as? String).flatMap(VideoScalingMode.init(rawValue:)) ?? .resize
    }
}

extension WriterPipeline {
    /// Gives each video track that keeps the aspect ratio its fitter (one mode per input, in order).
    func setScalingModes(_ modes: [VideoScalingMode]) {
        for (index, mode) in modes.enumerated() where index < tracks.count {
            guard mode == .resizeAspect || mode == .resizeAspectFill, let encoder = tracks[index].video else {
                continue
            }
            let configuration = encoder.configuration
            tracks[index].pictureFitter = PictureFitter(
                mode: mode,
                target: .init(
                    pixelFormatType: configuration.pixelFormat, width: configuration.width,
                    height: configuration.height))
        }
    }
}
