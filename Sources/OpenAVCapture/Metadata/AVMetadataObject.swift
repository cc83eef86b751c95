import Foundation
import MediaCodecs

/// Something a metadata output found in a frame: its type, when, and where, in the output's coordinates (0 to 1
/// across the frame as the device delivers it, origin at the top left).
///
/// Threading: immutable; safe to share between threads.
open class AVMetadataObject: NSObject, @unchecked Sendable {
    /// The kinds of metadata object, with Apple's raw values.
    public struct ObjectType: RawRepresentable, Hashable, Sendable {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        public static let qr = ObjectType(rawValue: "org.iso.QRCode")
        public static let aztec = ObjectType(rawValue: "org.iso.Aztec")
        public static let dataMatrix = ObjectType(rawValue: "org.iso.DataMatrix")
        public static let pdf417 = ObjectType(rawValue: "org.iso.PDF417")
        public static let ean8 = ObjectType(rawValue: "org.gs1.EAN-8")
        public static let ean13 = ObjectType(rawValue: "org.gs1.EAN-13")
        public static let upce = ObjectType(rawValue: "org.gs1.UPC-E")
        public static let code39 = ObjectType(rawValue: "org.iso.Code39")
        public static let code39Mod43 = ObjectType(rawValue: "org.iso.Code39Mod43")
        public static let code93 = ObjectType(rawValue: "com.intermec.Code93")
        public static let code128 = ObjectType(rawValue: "org.iso.Code128")
        public static let interleaved2of5 = ObjectType(rawValue: "org.ansi.Interleaved2of5")
        public static let itf14 = ObjectType(rawValue: "org.gs1.ITF14")
        public static let codabar = ObjectType(rawValue: "org.iso.Codabar")
        public static let gs1DataBar = ObjectType(rawValue: "org.gs1.GS1DataBar")
        /// GS1 DataBar Expanded, read by zxing-cpp.
        public static let gs1DataBarExpanded = ObjectType(rawValue: "org.gs1.GS1DataBarExpanded")
        /// GS1 DataBar Limited. Not read here: zxing-cpp 1.4 does not read it, so no output offers it.
        public static let gs1DataBarLimited = ObjectType(rawValue: "org.gs1.GS1DataBarLimited")
        public static let microQR = ObjectType(rawValue: "org.iso.MicroQR")
        public static let microPDF417 = ObjectType(rawValue: "org.iso.MicroPDF417")
        /// Faces: Apple detects them; no detector here, so no output offers this type.
        public static let face = ObjectType(rawValue: "face")
    }

    /// What the object is.
    public let type: ObjectType
    /// The presentation time of the frame it was found in.
    public let time: CMTime
    /// How long it applies: the frame's duration.
    public let duration: CMTime
    /// The object's bounding rectangle, in the coordinates of the output (or layer) that made it.
    public let bounds: CGRect

    package init(type: ObjectType, time: CMTime, duration: CMTime, bounds: CGRect) {
        self.type = type
        self.time = time
        self.duration = duration
        self.bounds = bounds
    }

    /// The same object with its geometry mapped by `transform` (used by the coordinate conversions).
    package func mapped(_ transform: (CGPoint) -> CGPoint) -> AVMetadataObject {
        AVMetadataObject(type: type, time: time, duration: duration, bounds: Self.boundingBox(corners(of: bounds).map(transform)))
    }

    package func corners(of rect: CGRect) -> [CGPoint] {
        [CGPoint(x: rect.minX, y: rect.minY), CGPoint(x: rect.maxX, y: rect.minY),
         CGPoint(x: rect.maxX, y: rect.maxY), CGPoint(x: rect.minX, y: rect.maxY)]
    }

    package static func boundingBox(_ points: [CGPoint]) -> CGRect {
        guard let first = points.first else { return .zero }
        var (minX, minY, maxX, maxY) = (first.x, first.y, first.x, first.y)
        for point in points.dropFirst() {
            minX = min(minX, point.x)
            minY = min(minY, point.y)
            maxX = max(maxX, point.x)
            maxY = max(maxY, point.y)
        }
        return CGRect(x: minX, y: minY, width: maxX - minX, height: maxY - minY)
    }
}

/// A QR code or barcode a metadata output read: its text and the four corners of the symbol.
///
/// Threading: immutable; safe to share between threads.
open class AVMetadataMachineReadableCodeObject: AVMetadataObject, @unchecked Sendable {
    /// The symbol's corners, clockwise from its own top left, in the coordinates of the output (or layer) that made
    /// the object. For a barcode they span the scan line zxing-cpp read (its height may be small).
    public let corners: [CGPoint]
    /// The decoded text; nil if it is not text (never here: zxing-cpp gives text for every symbology offered).
    public let stringValue: String?

    package init(type: ObjectType, time: CMTime, duration: CMTime, corners: [CGPoint], stringValue: String?) {
        self.corners = corners
        self.stringValue = stringValue
        super.init(type: type, time: time, duration: duration, bounds: Self.boundingBox(corners))
    }

    package override func mapped(_ transform: (CGPoint) -> CGPoint) -> AVMetadataObject {
        AVMetadataMachineReadableCodeObject(
            type: type, time: time, duration: duration, corners: corners.map(transform), stringValue: stringValue)
    }
}

extension AVMetadataObject.ObjectType {
    /// Every type a metadata output reads here, in Apple's order: what zxing-cpp reads and the tests check.
    package static let readable: [AVMetadataObject.ObjectType] = [
        .upce, .code39, .ean13, .ean8, .code93, .code128, .pdf417, .qr, .aztec, .interleaved2of5, .itf14,
        .dataMatrix, .gs1DataBar, .gs1DataBarExpanded,
    ]

    /// The zxing-cpp symbologies that can produce this type (UPC-A is EAN-13 with a leading zero, as Apple reports it).
    package var symbologies: Set<BarcodeSymbology> {
        switch self {
        case .qr: [.qr]
        case .aztec: [.aztec]
        case .dataMatrix: [.dataMatrix]
        case .pdf417: [.pdf417]
        case .ean8: [.ean8]
        case .ean13: [.ean13, .upcA]
        case .upce: [.upcE]
        case .code39: [.code39]
        case .code93: [.code93]
        case .code128: [.code128]
        case .interleaved2of5, .itf14: [.itf]
        case .gs1DataBar: [.dataBar]
        case .gs1DataBarExpanded: [.dataBarExpanded]
        default: []
        }
    }

    /// The type and text Apple reports for a decoded symbol.
    package static func reported(_ symbol: DecodedBarcode) -> (AVMetadataObject.ObjectType, String) {
        switch symbol.symbology {
        case .qr: (.qr, symbol.text)
        case .aztec: (.aztec, symbol.text)
        case .dataMatrix: (.dataMatrix, symbol.text)
        case .pdf417: (.pdf417, symbol.text)
        case .ean8: (.ean8, symbol.text)
        case .ean13: (.ean13, symbol.text)
        case .upcA: (.ean13, "0" + symbol.text)
        case .upcE: (.upce, symbol.text)
        case .code39: (.code39, symbol.text)
        case .code93: (.code93, symbol.text)
        case .code128: (.code128, symbol.text)
        case .itf: (symbol.text.count == 14 ? .itf14 : .interleaved2of5, symbol.text)
        case .codabar: (.codabar, symbol.text)
        case .dataBar: (.gs1DataBar, symbol.text)
        case .dataBarExpanded: (.gs1DataBarExpanded, symbol.text)
        }
    }

    /// The symbology a test shows for this type on a virtual camera (`VirtualCameraController.showCode`).
    package var drawnSymbology: BarcodeSymbology? {
        switch self {
        case .interleaved2of5, .itf14: .itf
        case .ean13: .ean13
        default: symbologies.first
        }
    }
}
