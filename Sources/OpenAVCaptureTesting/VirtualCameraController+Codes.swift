import CaptureDrivers
import Foundation
import MediaCodecs
import OpenAVCapture

extension VirtualCameraController {
    /// Holds a card with `text` encoded as a `type` code in front of the camera, filling `rect` of the frame
    /// (fractions of the frame as the camera delivers it, origin top left), on a white card with a border of a tenth
    /// of its width. `AVCaptureMetadataOutput` then reads it from the next frame on. The card stays put whatever the
    /// zoom, is sharp whatever the focus, is not mirrored by the front camera, and is absent from flash frames.
    ///
    /// Traps when the type is not one a metadata output reads here, or the text cannot be encoded in it (a wrong
    /// length or check digit): the test asked for something no code could show.
    public func showCode(_ text: String, type: AVMetadataObject.ObjectType, in rect: CGRect) {
        camera.scene.card = VirtualCard(showing: text, as: type, in: rect)
    }

    /// Takes the card away.
    public func hideCode() {
        camera.scene.card = nil
    }
}

extension VirtualCard {
    /// A card showing `text` as a `type` code over `rect` of the frame; traps when the type is not one a metadata
    /// output reads here or the text cannot be encoded in it.
    init(showing text: String, as type: AVMetadataObject.ObjectType, in rect: CGRect) {
        guard let symbology = type.drawnSymbology else {
            preconditionFailure("showCode: \(type.rawValue) is not a type AVCaptureMetadataOutput reads here")
        }
        // Drawn at a fixed size; the renderer scales it to the card's place nearest-neighbour.
        let isMatrix = [BarcodeSymbology.qr, .aztec, .dataMatrix].contains(symbology)
        let columns = isMatrix ? 256 : 512
        let rows = isMatrix ? 256 : (symbology == .pdf417 ? 192 : 128)
        // Barcodes need a quiet zone of about ten bars either side, wider than the card's border when a short code is
        // stretched across the card: the writer leaves one an eighth of the picture wide.
        let margin = isMatrix || symbology == .pdf417 ? 0 : columns / 8
        guard
            let picture = BarcodeWriter.modules(
                text, symbology: symbology, width: columns, height: rows, margin: margin)
        else {
            preconditionFailure("showCode: \"\(text)\" cannot be encoded as \(type.rawValue)")
        }
        self.init(
            picture: picture, columns: columns, rows: rows, x: Double(rect.minX), y: Double(rect.minY),
            width: Double(rect.width), height: Double(rect.height))
    }
}
