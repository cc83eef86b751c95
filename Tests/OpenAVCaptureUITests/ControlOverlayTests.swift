import Foundation
import OpenAVCapture
import Synchronization
import Testing

@testable import OpenAVCaptureUI

/// The preview window's controls overlay without a window: where the rows go, and what presses, drags and arrow
/// keys do to the controls (through their actions, which Apple's sliders call with a person's values).

/// A session with a slider 0 ... 10 in steps of 0.5 and a three-title picker, live (a controls delegate).
final class OverlayFixture: NSObject, AVCaptureSessionControlsDelegate, @unchecked Sendable {
    let session = AVCaptureSession()
    let slider = AVCaptureSlider("Level", symbolName: "dial.low", in: 0...10, step: 0.5)
    let picker = AVCaptureIndexPicker("Look", symbolName: "camera.filters", localizedIndexTitles: ["A", "B", "C"])
    let queue = DispatchQueue(label: "ControlOverlayTests")
    let actions = Mutex<[String]>([])

    override init() {
        super.init()
        slider.setActionQueue(queue) { [weak self] value in self?.actions.withLock { $0.append("level \(value)") } }
        picker.setActionQueue(queue) { [weak self] index in self?.actions.withLock { $0.append("look \(index)") } }
        session.addControl(slider)
        session.addControl(picker)
        session.setControlsDelegate(self, queue: queue)
    }

    func sessionControlsDidBecomeActive(_ session: AVCaptureSession) {}
    func sessionControlsDidBecomeInactive(_ session: AVCaptureSession) {}

    /// The actions called so far (they run on the queue).
    var called: [String] {
        queue.sync {}
        return actions.withLock { $0 }
    }
}

/// The overlay's layout and input rules (see the comment above the fixture).
@Suite(.serialized) struct ControlOverlayTests {
    @Test("Rows stack above the bottom-left margin of the picture, the thumb where the value is")
    func layout() {
        let fixture = OverlayFixture()
        fixture.slider.value = 2.5
        let rows = ControlOverlay.rows(for: fixture.session.controls, in: CGRect(x: 80, y: 0, width: 640, height: 480))
        #expect(rows.count == 2)
        #expect(rows[0].frame == CGRect(x: 100, y: 372, width: 320, height: 44))
        #expect(rows[1].frame == CGRect(x: 100, y: 416, width: 320, height: 44))
        #expect(rows[0].track == CGRect(x: 100, y: 398, width: 320, height: 6))
        #expect(rows[0].thumbX == 180)  // a quarter of the way
        #expect(rows[1].thumbX == 100 && rows[1].appearance.valueText == "A")
        #expect(ControlOverlay.panel(around: rows) == CGRect(x: 92, y: 364, width: 336, height: 104))
        // Too narrow a picture for a usable track: nothing is drawn rather than a sliver.
        #expect(
            ControlOverlay.rows(for: fixture.session.controls, in: CGRect(x: 0, y: 0, width: 60, height: 200)).isEmpty)
    }

    @Test("A press sets the value under the pointer, a drag follows it, a release ends it; others are not taken")
    func pressAndDrag() {
        let fixture = OverlayFixture()
        let overlay = ControlOverlay()
        func rows() -> [ControlOverlay.Row] {
            ControlOverlay.rows(for: fixture.session.controls, in: CGRect(x: 0, y: 0, width: 800, height: 480))
        }
        #expect(!overlay.press(at: CGPoint(x: 400, y: 100), rows: rows()), "a press on the picture is the app's")
        #expect(overlay.press(at: CGPoint(x: 20 + 64, y: 401), rows: rows()))  // a fifth of the way: 2
        #expect(fixture.slider.value == 2)
        #expect(overlay.drag(to: CGPoint(x: 20 + 240, y: 300), rows: rows()))  // the drag follows x anywhere: 7.5
        #expect(fixture.slider.value == 7.5)
        #expect(overlay.release())
        #expect(!overlay.drag(to: CGPoint(x: 20, y: 401), rows: rows()), "no drag after the release")
        #expect(fixture.called == ["level 2.0", "level 7.5"])
    }

    @Test("Up and Down choose a control, Left and Right move it a step")
    func arrowKeys() {
        let fixture = OverlayFixture()
        let overlay = ControlOverlay()
        func rows() -> [ControlOverlay.Row] {
            ControlOverlay.rows(for: fixture.session.controls, in: CGRect(x: 0, y: 0, width: 800, height: 480))
        }
        #expect(overlay.key(.down, rows: rows()) && overlay.selected == 0)
        #expect(overlay.key(.right, rows: rows()) && overlay.key(.right, rows: rows()))
        #expect(fixture.slider.value == 1)
        #expect(overlay.key(.down, rows: rows()) && overlay.selected == 1)
        #expect(overlay.key(.right, rows: rows()))
        #expect(fixture.picker.selectedIndex == 1)
        #expect(overlay.key(.up, rows: rows()) && overlay.selected == 0)
        #expect(overlay.key(.left, rows: rows()))
        #expect(fixture.called == ["level 0.5", "level 1.0", "look 1", "level 0.5"])
        #expect(!ControlOverlay().key(.down, rows: []), "no controls: the key is the app's")
    }
}
