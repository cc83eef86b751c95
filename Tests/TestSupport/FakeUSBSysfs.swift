import Foundation

/// A UVC webcam as its USB descriptors describe it, for a fake sysfs tree: the alternate settings of its video
/// streaming interface, and a microphone's isochronous endpoint beside it (as most webcams have) that bandwidth
/// reading must leave alone.
///
/// Value type; safe to use from any thread.
public struct FakeUVCCamera: Sendable {
    /// One alternate setting's endpoint: high speed's `wMaxPacketSize` word (bits 11–12: extra transactions), or a
    /// SuperSpeed endpoint's packet size with its companion's burst, mult and bytes per interval.
    public struct Alternate: Sendable {
        /// `wMaxPacketSize`: bits 0–10 the packet size, bits 11–12 (high speed) the extra transactions.
        public var maxPacketSizeWord: UInt16
        /// `bInterval`: served every 2^(n−1) bus intervals.
        public var interval: UInt8 = 1
        /// The SuperSpeed companion's `bMaxBurst` (packets − 1 per burst); nil at high speed.
        public var superSpeedBurst: UInt8?
        /// The SuperSpeed companion's `bmAttributes` mult (bursts − 1 per interval).
        public var superSpeedMult: UInt8 = 0
        /// The SuperSpeed companion's `wBytesPerInterval`.
        public var bytesPerInterval: UInt16 = 0
        /// A bulk endpoint instead of an isochronous one.
        public var isBulk = false

        /// A high-speed isochronous endpoint with this `wMaxPacketSize`.
        public static func highSpeed(_ word: UInt16) -> Alternate { Alternate(maxPacketSizeWord: word) }
        /// A high-speed bulk endpoint of `packetSize` bytes.
        public static func bulk(_ packetSize: UInt16 = 512) -> Alternate {
            Alternate(maxPacketSizeWord: packetSize, interval: 0, isBulk: true)
        }
        /// A SuperSpeed isochronous endpoint of 1024-byte packets with its companion's figures.
        public static func superSpeed(burst: UInt8, mult: UInt8 = 0, bytesPerInterval: UInt16) -> Alternate {
            Alternate(
                maxPacketSizeWord: 1024, superSpeedBurst: burst, superSpeedMult: mult,
                bytesPerInterval: bytesPerInterval)
        }
    }

    /// The USB device's `product` string.
    public var product: String
    /// The V4L2 nodes' `name` (the product unless told otherwise).
    public var card: String
    /// `idVendor`, four hex digits.
    public var vendorID: String
    /// `idProduct`, four hex digits.
    public var productID: String
    /// The video streaming interface's alternate settings 1…n.
    public var alternates: [Alternate]

    /// A camera with these strings and settings; `card` defaults to `product`.
    public init(product: String, card: String? = nil, vendorID: String, productID: String, alternates: [Alternate]) {
        self.product = product
        self.card = card ?? product
        self.vendorID = vendorID
        self.productID = productID
        self.alternates = alternates
    }

    /// A Logitech C920's eleven high-speed alternate settings, 192 bytes to 3 × 1020 a microframe.
    public static func c920(product: String = "HD Pro Webcam C920") -> FakeUVCCamera {
        FakeUVCCamera(
            product: product, vendorID: "046d", productID: "082d",
            alternates: [0x00C0, 0x0180, 0x0200, 0x0280, 0x0320, 0x03B0, 0x0A80, 0x0B20, 0x0BE0, 0x1380, 0x13FC]
                .map(Alternate.highSpeed))
    }

    /// A SuperSpeed camera: bursts of 1024-byte packets, 8 KiB to 48 KiB per 125 µs.
    public static func superSpeedCamera(product: String = "USB 3.0 Capture Camera") -> FakeUVCCamera {
        FakeUVCCamera(
            product: product, vendorID: "2b7e", productID: "0400",
            alternates: [
                .superSpeed(burst: 7, bytesPerInterval: 8192), .superSpeed(burst: 15, bytesPerInterval: 16384),
                .superSpeed(burst: 15, mult: 1, bytesPerInterval: 32768),
                .superSpeed(burst: 15, mult: 2, bytesPerInterval: 49152),
            ])
    }

    /// The bytes of sysfs's `descriptors` file: the device descriptor, then the configuration with an interface
    /// association, video control (with its interrupt endpoint and a class-specific header), video streaming
    /// (alternate 0 with its class-specific headers and no endpoint, then one per alternate setting) and a UAC
    /// microphone's streaming interface with an isochronous endpoint.
    public func descriptors(superSpeed: Bool) -> [UInt8] {
        func le(_ value: UInt16) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8)] }
        func companion(_ alternate: Alternate?) -> [UInt8] {
            guard superSpeed else { return [] }
            guard let alternate else { return [6, 0x30, 0, 0, 0x10, 0] }
            return [6, 0x30, alternate.superSpeedBurst ?? 0, alternate.superSpeedMult] + le(alternate.bytesPerInterval)
        }
        var body: [UInt8] = []
        body += [8, 0x0B, 0, 2, 0x0E, 0x03, 0, 2]  // interface association: video
        body += [9, 4, 0, 0, 1, 0x0E, 0x01, 0, 2]  // video control
        body += [13, 0x24, 0x01, 0x00, 0x01, 0x4D, 0x00, 0x80, 0xC3, 0xC9, 0x01, 0x01, 0x01]
        body += [7, 5, 0x83, 0x03] + le(16) + [8] + companion(nil)
        body += [9, 4, 1, 0, 0, 0x0E, 0x02, 0, 0]  // video streaming, alternate 0: no endpoint
        body += [14, 0x24, 0x01, 0x01, 0x4D, 0x00, 0x81, 0x00, 0x02, 0x00, 0x00, 0x00, 0x01, 0x00]
        body += [27, 0x24, 0x04, 0x01, 0x01] + [UInt8](repeating: 0x10, count: 22)  // an uncompressed format
        for (index, alternate) in alternates.enumerated() {
            body += [9, 4, 1, UInt8(index + 1), 1, 0x0E, 0x02, 0, 0]
            body +=
                [7, 5, 0x81, alternate.isBulk ? 0x02 : 0x05] + le(alternate.maxPacketSizeWord) + [alternate.interval]
            body += alternate.isBulk ? [] : companion(alternate)
        }
        body += [9, 4, 3, 0, 0, 0x01, 0x02, 0, 0]  // audio streaming, alternate 0
        body += [9, 4, 3, 1, 1, 0x01, 0x02, 0, 0]
        body += [9, 5, 0x84, 0x05] + le(0x0044) + [4, 0, 0] + companion(nil)
        let configuration: [UInt8] = [9, 2] + le(UInt16(9 + body.count)) + [4, 1, 0, 0x80, 250]
        let device: [UInt8] =
            [18, 1] + le(superSpeed ? 0x0320 : 0x0200) + [0xEF, 0x02, 0x01, superSpeed ? 9 : 64]
            + le(UInt16(vendorID, radix: 16) ?? 0) + le(UInt16(productID, radix: 16) ?? 0) + le(0x0011) + [1, 2, 3, 1]
        return device + configuration + body
    }
}

/// A sysfs tree written for a test, laid out as the kernel lays it out: USB devices under
/// `devices/pci0000:00/0000:00:14.0/usbN/N-P…`, each camera's V4L2 nodes under its video control interface
/// (`N-P:1.0/video4linux/videoK`, with `device` linking back to the interface), and `class/video4linux/videoK`
/// linking to the node, every link relative as sysfs's are. Removed when released.
///
/// Threading: not synchronized; use from one thread.
public final class FakeUSBSysfs {
    /// The tree's root, a new folder under the temporary directory.
    public let root: String

    /// An empty tree (only `class/video4linux`).
    public init() throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("usb-sysfs-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: "\(root)/class/video4linux", withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(atPath: root) }

    /// What `USBTopology` and `V4L2CameraDriver` read: `ROOT/class/video4linux`.
    public var videoNodeRoot: String { "\(root)/class/video4linux" }

    /// Plugs `camera` in at `port` (`1-1.2`: bus 1, root port 1, hub port 2) running at `speed` ("480", "5000"),
    /// with V4L2 nodes `nodes` (the capture node first, then its metadata node).
    public func plug(_ camera: FakeUVCCamera, port: String, speed: String, nodes: [String]) throws {
        let (bus, path) = Self.devicePath(of: port)
        let device = "\(root)/devices/pci0000:00/0000:00:14.0/\(path)"
        let interface = "\(device)/\(port):1.0"
        try FileManager.default.createDirectory(atPath: interface, withIntermediateDirectories: true)
        for (name, value) in [
            ("busnum", "\(bus)"), ("devnum", "\(nodes.count + 1)"), ("speed", speed), ("product", camera.product),
            ("idVendor", camera.vendorID), ("idProduct", camera.productID), ("manufacturer", "Fake"),
        ] {
            try write("\(value)\n", to: "\(device)/\(name)")
        }
        try Data(camera.descriptors(superSpeed: (Int(speed) ?? 0) >= 5000)).write(
            to: URL(fileURLWithPath: "\(device)/descriptors"))
        for (name, value) in [("bInterfaceClass", "0e"), ("bInterfaceSubClass", "01"), ("bInterfaceNumber", "00")] {
            try write("\(value)\n", to: "\(interface)/\(name)")
        }
        for (index, node) in nodes.enumerated() {
            try addNode(node, card: camera.card, index: index, under: interface, deviceLink: "../../../\(port):1.0")
        }
    }

    /// A node that is no USB device's, as vivid's: `devices/platform/NAME/video4linux/NODE`.
    public func addPlatformNode(_ node: String, card: String, platformDevice: String = "vivid.0") throws {
        let device = "\(root)/devices/platform/\(platformDevice)"
        try addNode(node, card: card, index: 0, under: device, deviceLink: "../../../\(platformDevice)")
    }

    private func addNode(_ node: String, card: String, index: Int, under parent: String, deviceLink: String) throws {
        let files = FileManager.default
        let directory = "\(parent)/video4linux/\(node)"
        try files.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try write("\(card)\n", to: "\(directory)/name")
        try write("\(index)\n", to: "\(directory)/index")
        try files.createSymbolicLink(atPath: "\(directory)/device", withDestinationPath: deviceLink)
        let relative = "../.." + directory.dropFirst(root.count)
        try files.createSymbolicLink(atPath: "\(videoNodeRoot)/\(node)", withDestinationPath: relative)
    }

    /// `1-1.2` → bus 1, `usb1/1-1/1-1.2` (a device behind a hub sits in its hub's folder).
    private static func devicePath(of port: String) -> (bus: Int, path: String) {
        let parts = port.split(separator: "-", maxSplits: 1)
        let bus = Int(parts[0]) ?? 0
        let hops = parts.count > 1 ? parts[1].split(separator: ".") : []
        var components = ["usb\(bus)"]
        for hop in 1...max(hops.count, 1) where !hops.isEmpty {
            components.append("\(bus)-" + hops.prefix(hop).joined(separator: "."))
        }
        return (bus, components.joined(separator: "/"))
    }

    private func write(_ text: String, to path: String) throws {
        try text.write(toFile: path, atomically: false, encoding: .utf8)
    }
}
