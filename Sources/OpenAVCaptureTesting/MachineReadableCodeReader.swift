import MediaCodecs
import OpenAVCapture

/// `AVCaptureMetadataOutput`'s reading step on its own: the codes of chosen types in one frame, for benchmarks and
/// tests of that cost. The same code the output runs on each analysed frame.
///
/// Threading: not thread safe; use it from one thread at a time.
public final class MachineReadableCodeReader {
    private let reader = BarcodeReader()
    private let types: [AVMetadataObject.ObjectType]
    private let effort: Effort

    /// How hard each frame is searched.
    public enum Effort: Sendable {
        /// What `AVCaptureMetadataOutput` does: the passes chosen for the types asked and the frame's size.
        case chosenForVideo
        /// Every pass whatever was asked (rotated, and again at a third of the size): the comparison's baseline.
        case everyPass
    }

    /// A reader of `types` (among those `AVCaptureMetadataOutput` offers), searching with `effort`.
    public init(types: [AVMetadataObject.ObjectType], effort: Effort = .chosenForVideo) {
        self.types = types
        self.effort = effort
    }

    /// The codes in `pixelBuffer` (NV12, I420, grey or YUYV) within `rectOfInterest`, in normalized coordinates.
    public func read(
        _ pixelBuffer: CVPixelBuffer, rectOfInterest: CGRect = CGRect(x: 0, y: 0, width: 1, height: 1)
    ) -> [AVMetadataMachineReadableCodeObject] {
        reader.objects(
            in: pixelBuffer, types: types, symbologies: types.reduce(into: Set()) { $0.formUnion($1.symbologies) },
            rectOfInterest: rectOfInterest, time: .zero, duration: .invalid,
            effort: effort == .everyPass ? .everything : nil)
    }
}
