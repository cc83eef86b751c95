import OpenAVCapture

/// The session's controls (`AVCaptureSession.controls`) as sliders over the bottom-left of the picture: where each
/// row, track and thumb is, and what a person's mouse and keys do to them. A press on a row's track sets the value
/// under the pointer and a drag keeps setting it until the button is let go; Up and Down choose a control (the
/// chosen one is outlined), Left and Right move it a step (the control's step, or a twentieth of its range). Every
/// change goes through the control's own `userDid…` method (``AVCaptureControl/userDidSetAppearanceValue(_:)``),
/// so a system slider moves its camera. Drawing is ``ControlOverlayDrawing``'s.
///
/// Threading: the window's thread only (it holds which control is chosen and dragged).
final class ControlOverlay {
    /// One control's place on the screen, in layer coordinates.
    struct Row {
        let control: AVCaptureControl
        let appearance: CaptureControlAppearance
        /// The whole row: the label line above the track.
        let frame: CGRect
        /// The track the thumb moves along; its left edge is the minimum, its right edge the maximum.
        let track: CGRect

        /// The thumb's centre along the track, where the value is.
        var thumbX: CGFloat { track.minX + track.width * appearance.fraction }
    }

    /// Sizes in points: the rows are tall enough for a label in the 2x pixel font and a thumb a finger can find.
    static let margin: CGFloat = 12
    static let padding: CGFloat = 8
    static let rowHeight: CGFloat = 44
    static let trackTop: CGFloat = 26
    static let trackHeight: CGFloat = 6
    static let thumbWidth: CGFloat = 10
    static let thumbHeight: CGFloat = 22
    static let maximumWidth: CGFloat = 320

    /// The control the keys move (an index into the rows), once a person chose one.
    private(set) var selected: Int?
    /// The control being dragged, between a press on its row and the button's release.
    private var dragged: AVCaptureControl?

    /// The session's controls that have an appearance, laid out in `area` (the picture on the screen): the first
    /// control at the top, the last just above the bottom margin.
    static func rows(for controls: [AVCaptureControl], in area: CGRect) -> [Row] {
        let shown = controls.compactMap { control in control.appearance.map { (control, $0) } }
        guard !shown.isEmpty else { return [] }
        let width = min(maximumWidth, area.width - 2 * margin - 2 * padding)
        guard width > 4 * thumbWidth else { return [] }
        let left = area.minX + margin + padding
        let top = area.maxY - margin - padding - CGFloat(shown.count) * rowHeight
        return shown.enumerated().map { index, pair in
            let frame = CGRect(x: left, y: top + CGFloat(index) * rowHeight, width: width, height: rowHeight)
            let track = CGRect(x: left, y: frame.minY + trackTop, width: width, height: trackHeight)
            return Row(control: pair.0, appearance: pair.1, frame: frame, track: track)
        }
    }

    /// The panel behind `rows`, darkened so that the labels read over any picture.
    static func panel(around rows: [Row]) -> CGRect? {
        guard let first = rows.first, let last = rows.last else { return nil }
        return first.frame.union(last.frame).insetBy(dx: -padding, dy: -padding)
    }

    /// A press at `point`: on a row, chooses that control, sets the value under the pointer and starts a drag.
    /// True when the press was the overlay's (the app does not see it as a click on the picture).
    func press(at point: CGPoint, rows: [Row]) -> Bool {
        guard let index = rows.firstIndex(where: { $0.frame.contains(point) }) else { return false }
        selected = index
        dragged = rows[index].control
        set(rows[index], toX: point.x)
        return true
    }

    /// The pointer moved with the button held: a drag in progress follows it. True when it was the overlay's.
    func drag(to point: CGPoint, rows: [Row]) -> Bool {
        guard let dragged, let row = rows.first(where: { $0.control === dragged }) else { return false }
        set(row, toX: point.x)
        return true
    }

    /// The button was let go: the drag ends. True when one was in progress.
    func release() -> Bool {
        defer { dragged = nil }
        return dragged != nil
    }

    /// The arrow keys the overlay takes.
    enum Arrow { case up, down, left, right }

    /// Up and Down choose the control above or below; Left and Right move the chosen one a step down or up. True
    /// when the key was the overlay's (there are controls).
    func key(_ arrow: Arrow, rows: [Row]) -> Bool {
        guard !rows.isEmpty else { return false }
        let current = selected.map { min($0, rows.count - 1) }
        switch arrow {
        case .up: selected = max(0, (current ?? rows.count) - 1)
        case .down: selected = min(rows.count - 1, (current ?? -1) + 1)
        case .left, .right:
            let index = current ?? rows.count - 1
            selected = index
            let row = rows[index]
            row.control.userDidSetAppearanceValue(row.appearance.value(movedBy: arrow == .right ? 1 : -1))
        }
        return true
    }

    private func set(_ row: Row, toX x: CGFloat) {
        let fraction = row.track.width > 0 ? Double((x - row.track.minX) / row.track.width) : 0
        row.control.userDidSetAppearanceValue(row.appearance.value(atFraction: fraction))
    }
}
