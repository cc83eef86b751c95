// Where the picture-in-picture renderers put a multi-camera session's other cameras, against rectangles worked out
// by hand from the documented rule: a share of the width, the camera's aspect ratio, 2 % margins, stacked from the
// corner towards the opposite edge.

import Foundation
import OpenAVCapture
import Testing

@Suite("Picture-in-picture layout")
struct PictureInPictureLayoutTests {
    private let window = CGRect(x: 0, y: 0, width: 800, height: 450)

    @Test("one 16:9 inset in each corner of an 800x450 window: 200x113, 16 from the edges")
    func everyCorner() {
        // 800 × 0.25 = 200 wide; 200 / (16/9) = 112.5, rounded half away from zero: 113; margin 800 × 0.02 = 16.
        let expected: [PictureInPictureLayout.Corner: CGRect] = [
            .topLeft: CGRect(x: 16, y: 16, width: 200, height: 113),
            .topRight: CGRect(x: 584, y: 16, width: 200, height: 113),
            .bottomLeft: CGRect(x: 16, y: 321, width: 200, height: 113),
            .bottomRight: CGRect(x: 584, y: 321, width: 200, height: 113),
        ]
        for (corner, rect) in expected {
            let frames = PictureInPictureLayout(corner: corner).insetFrames(in: window, aspectRatios: [16.0 / 9])
            #expect(frames == [rect], "\(corner)")
        }
    }

    @Test("several insets stack from the corner: above in a bottom corner, below in a top one, each its own aspect")
    func stacking() {
        let bottom = PictureInPictureLayout(corner: .bottomRight).insetFrames(
            in: window, aspectRatios: [4.0 / 3, 16.0 / 9])
        // 4:3 is 150 high: y = 450 − 16 − 150 = 284; the next (113 high) ends 16 above it: y = 284 − 16 − 113 = 155.
        #expect(
            bottom == [
                CGRect(x: 584, y: 284, width: 200, height: 150), CGRect(x: 584, y: 155, width: 200, height: 113),
            ])
        let top = PictureInPictureLayout(corner: .topLeft).insetFrames(in: window, aspectRatios: [4.0 / 3, 16.0 / 9])
        #expect(top == [CGRect(x: 16, y: 16, width: 200, height: 150), CGRect(x: 16, y: 182, width: 200, height: 113)])
    }

    @Test("the width share is clamped to 5 ... 50 %; an unknown aspect ratio counts as 16:9; an offset container")
    func limits() {
        #expect(PictureInPictureLayout(insetWidthFraction: 0.9).insetWidthFraction == 0.5)
        #expect(PictureInPictureLayout(insetWidthFraction: 0).insetWidthFraction == 0.05)
        let half = PictureInPictureLayout(corner: .topLeft, insetWidthFraction: 0.5)
            .insetFrames(in: CGRect(x: 100, y: 50, width: 1280, height: 720), aspectRatios: [0])
        // 1280 × 0.5 = 640 wide, 360 high at 16:9; margin 25.6 → 26, from the container's own origin.
        #expect(half == [CGRect(x: 126, y: 76, width: 640, height: 360)])
    }
}
