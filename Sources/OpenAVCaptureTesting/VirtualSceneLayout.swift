import CaptureDrivers
import Foundation

/// A rectangle of whole pixels in a frame: columns `x ..< x + width`, rows `y ..< y + height`.
///
/// Value type; safe to use from any thread.
public struct VirtualFrameRegion: Sendable, Hashable {
    /// The first column.
    public var x: Int
    /// The first row.
    public var y: Int
    /// The number of columns.
    public var width: Int
    /// The number of rows.
    public var height: Int

    /// A region from its origin and size.
    public init(x: Int, y: Int, width: Int, height: Int) {
        self.x = x
        self.y = y
        self.width = width
        self.height = height
    }

    /// The region's centre as a point of interest: (0, 0) top left to (1, 1) bottom right of a `frameWidth` by
    /// `frameHeight` frame, what `focusPointOfInterest` and `exposurePointOfInterest` take.
    public func pointOfInterest(frameWidth: Int, frameHeight: Int) -> CGPoint {
        CGPoint(
            x: (Double(x) + Double(width) / 2) / Double(frameWidth),
            y: (Double(y) + Double(height) / 2) / Double(frameHeight))
    }

    init(_ rect: VirtualPixelRect) {
        self.init(x: rect.x, y: rect.y, width: rect.width, height: rect.height)
    }

    var pixelRect: VirtualPixelRect { VirtualPixelRect(x: x, y: y, width: width, height: height) }
}

/// Where the virtual cameras draw things in a frame of a given size and zoom: the regions tests measure in.
///
/// The picture: colour bars across the top third, 18 % grey below with a white disc swinging left and right
/// through the centre (0.2 of the frame height across at zoom 1, a 4 s period), a striped focus target below the
/// centre, and the frame index as a block code in the top-left corner (never zoomed or mirrored). Zoom scales
/// everything but the code about the centre; the front camera mirrors it left to right.
///
/// Value type; safe to use from any thread.
public struct VirtualSceneLayout: Sendable, Hashable {
    let layout: VirtualFrameLayout

    /// The layout of a `width` by `height` frame at `zoomFactor` (1 or more), mirrored for the front camera.
    public init(width: Int, height: Int, zoomFactor: Double = 1, isMirrored: Bool = false) {
        layout = VirtualFrameLayout(width: width, height: height, zoomFactor: zoomFactor, isMirrored: isMirrored)
    }

    /// The layout of `pixelBuffer`'s size at `zoomFactor`, mirrored for the front camera.
    public init(for pixelBuffer: CVPixelBuffer, zoomFactor: Double = 1, isMirrored: Bool = false) {
        self.init(
            width: CVPixelBufferGetWidth(pixelBuffer), height: CVPixelBufferGetHeight(pixelBuffer),
            zoomFactor: zoomFactor, isMirrored: isMirrored)
    }

    /// The frame width in pixels.
    public var width: Int { layout.width }
    /// The frame height in pixels.
    public var height: Int { layout.height }
    /// The zoom factor.
    public var zoomFactor: Double { layout.zoomFactor }
    /// Whether the picture is mirrored (the front camera).
    public var isMirrored: Bool { layout.isMirrored }

    /// A region of plain 18 % grey that neither the object nor the focus target ever covers: where exposure
    /// and white balance are measured. Nil when zoomed past it (beyond about 2.4x at 4:3, 3.6x at 16:9).
    public var grayPatch: VirtualFrameRegion? { layout.grayPatchRect.map(VirtualFrameRegion.init) }

    /// The visible part of the focus target (2 pixels in from its edges); nil when zoomed past it.
    public var focusTarget: VirtualFrameRegion? { layout.focusTargetRect.map(VirtualFrameRegion.init) }

    /// The frame-index code in the top-left corner.
    public var frameIndexCode: VirtualFrameRegion { VirtualFrameRegion(layout.frameIndexCodeRect) }

    /// The visible part of colour bar `index` (0 white, then yellow, cyan, green, magenta, red, blue as the back
    /// camera sees them), below the frame-index code; nil when zoomed past it.
    public func colorBar(_ index: Int) -> VirtualFrameRegion? {
        layout.barRect(index).map(VirtualFrameRegion.init)
    }

    /// The moving object in the frame stamped `presentationTime`: its centre and diameter in pixels. It may reach
    /// past the frame's edges at high zoom; see `objectIsInsideFrame(at:)`.
    public func object(at presentationTime: CMTime) -> (center: CGPoint, diameter: Double) {
        let object = layout.object(atSeconds: presentationTime.seconds)
        return (CGPoint(x: object.centerX, y: object.centerY), object.diameter)
    }

    /// Whether the whole object, with a 2-pixel margin, is inside the frame stamped `presentationTime`.
    public func objectIsInsideFrame(at presentationTime: CMTime) -> Bool {
        let object = object(at: presentationTime)
        let radius = object.diameter / 2 + 2
        return object.center.x - radius >= 0 && object.center.x + radius <= Double(width)
            && object.center.y - radius >= 0 && object.center.y + radius <= Double(height)
    }
}
