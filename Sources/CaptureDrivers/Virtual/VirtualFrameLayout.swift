/// A rectangle of whole pixels: columns `x ..< x + width`, rows `y ..< y + height`.
///
/// Value type; safe from any thread.
package struct VirtualPixelRect: Sendable, Hashable {
    /// The first column.
    package var x: Int
    /// The first row.
    package var y: Int
    /// The number of columns.
    package var width: Int
    /// The number of rows.
    package var height: Int

    /// A rectangle from its origin and size.
    package init(x: Int, y: Int, width: Int, height: Int) {
        self.x = x
        self.y = y
        self.width = width
        self.height = height
    }

    /// The rectangle's columns.
    package var columns: Range<Int> { x..<x + width }
    /// The rectangle's rows.
    package var rows: Range<Int> { y..<y + height }
}

/// Where the virtual camera draws things in a frame of a given size and zoom: the map between scene units
/// (see `VirtualScene`) and pixels, and the expected rectangles tests measure in.
///
/// Pixel coordinates are continuous: pixel column `i` spans `i ..< i + 1`. A scene point `(x, y)` lands at
/// `(W/2 + s·x·z·H, H/2 + y·z·H)` for zoom `z`, where `s` is −1 for the front camera (mirrored) and 1 otherwise.
/// Value type; safe from any thread.
package struct VirtualFrameLayout: Sendable, Hashable {
    /// The frame width in pixels.
    package var width: Int
    /// The frame height in pixels.
    package var height: Int
    /// The zoom factor, 1 or more.
    package var zoomFactor: Double
    /// Whether the scene is mirrored left to right (the front camera).
    package var isMirrored: Bool

    /// The layout of a `width` by `height` frame at `zoomFactor`, mirrored or not.
    package init(width: Int, height: Int, zoomFactor: Double = 1, isMirrored: Bool = false) {
        precondition(width > 0 && height > 0, "a frame needs a positive size")
        precondition(zoomFactor >= 1, "the virtual camera zooms in only; zoom factor \(zoomFactor) is below 1")
        self.width = width
        self.height = height
        self.zoomFactor = zoomFactor
        self.isMirrored = isMirrored
    }

    /// The layout of a frame of `width` by `height` with the zoom and camera of `parameters`.
    package init(width: Int, height: Int, parameters: VirtualFrameParameters) {
        self.init(
            width: width,
            height: height,
            zoomFactor: parameters.optics.zoomFactor,
            isMirrored: parameters.scene.camera == .front
        )
    }

    /// The frame's aspect ratio, width over height.
    package var aspect: Double { Double(width) / Double(height) }
    /// Pixels per scene unit: the frame height times the zoom factor.
    package var pixelsPerSceneUnit: Double { Double(height) * zoomFactor }

    /// The pixel column (continuous) of scene x.
    package func pixelX(sceneX: Double) -> Double {
        Double(width) / 2 + (isMirrored ? -sceneX : sceneX) * pixelsPerSceneUnit
    }

    /// The pixel row (continuous) of scene y.
    package func pixelY(sceneY: Double) -> Double {
        Double(height) / 2 + sceneY * pixelsPerSceneUnit
    }

    /// The scene x of pixel column (continuous) `pixelX`.
    package func sceneX(pixelX: Double) -> Double {
        let x = (pixelX - Double(width) / 2) / pixelsPerSceneUnit
        return isMirrored ? -x : x
    }

    /// The scene y of pixel row (continuous) `pixelY`.
    package func sceneY(pixelY: Double) -> Double {
        (pixelY - Double(height) / 2) / pixelsPerSceneUnit
    }

    /// The whole pixels inside the scene rectangle, shrunk by `inset` pixels on each side, clipped to the frame;
    /// nil when nothing is left.
    package func pixelRect(
        sceneMinX: Double,
        maxX sceneMaxX: Double,
        minY sceneMinY: Double,
        maxY sceneMaxY: Double,
        inset: Double = 0
    ) -> VirtualPixelRect? {
        let xa = pixelX(sceneX: sceneMinX)
        let xb = pixelX(sceneX: sceneMaxX)
        let x0 = max(0, Int((min(xa, xb) + inset).rounded(.up)))
        let x1 = min(width, Int((max(xa, xb) - inset).rounded(.down)))
        let y0 = max(0, Int((pixelY(sceneY: sceneMinY) + inset).rounded(.up)))
        let y1 = min(height, Int((pixelY(sceneY: sceneMaxY) - inset).rounded(.down)))
        guard x1 > x0, y1 > y0 else { return nil }
        return VirtualPixelRect(x: x0, y: y0, width: x1 - x0, height: y1 - y0)
    }

    /// The moving object at `seconds` on the device clock: its centre and diameter in pixels (it may reach past
    /// the frame's edges).
    package func object(atSeconds seconds: Double) -> (centerX: Double, centerY: Double, diameter: Double) {
        let center = VirtualScene.objectCenter(atSeconds: seconds)
        return (
            centerX: pixelX(sceneX: center.x),
            centerY: pixelY(sceneY: center.y),
            diameter: VirtualScene.objectDiameter * pixelsPerSceneUnit
        )
    }

    /// The visible part of the focus target, 2 pixels in from its edges; nil when zoomed past it.
    package var focusTargetRect: VirtualPixelRect? {
        let b = VirtualScene.focusTargetBounds
        return pixelRect(sceneMinX: b.minX, maxX: b.maxX, minY: b.minY, maxY: b.maxY, inset: 2)
    }

    /// A visible region of plain 18 % grey, 2 pixels in from its edges; nil when zoomed past it.
    package var grayPatchRect: VirtualPixelRect? {
        let b = VirtualScene.grayPatchBounds(aspect: aspect)
        return pixelRect(sceneMinX: b.minX, maxX: b.maxX, minY: b.minY, maxY: b.maxY, inset: 2)
    }

    /// The visible part of colour bar `bar` (0 is white, as the back camera sees them), below the frame-index code
    /// and 2 pixels in from its edges; nil when zoomed past it.
    package func barRect(_ bar: Int) -> VirtualPixelRect? {
        precondition(VirtualScene.barReflectances.indices.contains(bar), "there is no bar \(bar)")
        let barWidth = aspect / Double(VirtualScene.barReflectances.count)
        let minX = -aspect / 2 + Double(bar) * barWidth
        let codeBottom = sceneY(pixelY: Double(frameIndexCodeRect.y + frameIndexCodeRect.height))
        return pixelRect(
            sceneMinX: minX, maxX: minX + barWidth, minY: codeBottom, maxY: VirtualScene.barsBottom, inset: 2
        )
    }

    /// The frame-index code's cell size in pixels.
    package var frameIndexCodeCellSize: Int { VirtualFrameIndexCode.cellSize(frameWidth: width) }

    /// The frame-index code's rectangle, in the top-left corner whatever the zoom or camera.
    package var frameIndexCodeRect: VirtualPixelRect {
        let cell = frameIndexCodeCellSize
        return VirtualPixelRect(
            x: 0, y: 0, width: VirtualFrameIndexCode.columns * cell, height: VirtualFrameIndexCode.rows * cell
        )
    }
}
