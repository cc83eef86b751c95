import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Where a V4L2 node's camera sits on USB: its bus, its port, the speed it runs at and the alternate settings its
/// video streaming interface offers.
///
/// Value type; safe to use from any thread.
package struct USBAttachment: Sendable, Hashable {
    /// The bus (`busnum`): one host controller's root hub at one speed, whose periodic schedule every device on it
    /// shares (an xHCI controller has two: its USB 2 bus and its USB 3 bus).
    package var bus: Int
    /// The device's place in the tree as sysfs names it (`1-1.2`: bus 1, root port 1, hub port 2), as
    /// `lsusb -t` shows it.
    package var port: String
    package var speed: USBSpeed
    /// The device's `product` string, when it has one.
    package var product: String?
    /// The video streaming alternate settings with a data endpoint (empty when the descriptors were unreadable).
    package var alternates: [USBStreamingAlternate]

    package init(bus: Int, port: String, speed: USBSpeed, product: String?, alternates: [USBStreamingAlternate]) {
        self.bus = bus
        self.port = port
        self.speed = speed
        self.product = product
        self.alternates = alternates
    }
}

/// A V4L2 node seen in sysfs, with its USB attachment when it has one.
///
/// Value type; safe to use from any thread.
package struct VideoNodeOnUSB: Sendable, Hashable {
    /// The node's name (`video2`).
    package var node: String
    /// The node's `name` attribute (the card: "HD Pro Webcam C920").
    package var card: String?
    package var attachment: USBAttachment
}

/// Reads sysfs for the USB facts behind V4L2 nodes: `/sys/class/video4linux/videoN/device` leads to the USB
/// interface the node hangs off, whose parent is the USB device, with `busnum`, `speed`, `product` and
/// `descriptors`. Nodes that are no USB device's (vivid, a PCI capture card, an SoC's ISP) have none.
///
/// Value type; safe to use from any thread. Reads files only; every read is fresh.
package struct USBTopology: Sendable {
    /// The directory of V4L2 nodes: `/sys/class/video4linux`, or a test's fake tree.
    package var videoNodeRoot: String

    package init(videoNodeRoot: String = "/sys/class/video4linux") {
        self.videoNodeRoot = videoNodeRoot
    }

    /// The USB attachment of node `name` (`video0`), nil where it is not a USB device's.
    package func attachment(ofVideoNode name: String) -> USBAttachment? {
        guard let device = resolvedPath("\(videoNodeRoot)/\(name)/device") else { return nil }
        // uvcvideo's nodes hang off the video control interface (`1-1:1.0`), whose parent is the device; some
        // drivers hang them off the device itself.
        for candidate in [device, (device as NSString).deletingLastPathComponent] {
            if let attachment = usbDevice(at: candidate) { return attachment }
        }
        return nil
    }

    /// Every V4L2 node on USB bus `bus` at `speed`, in node order.
    package func videoNodes(onBus bus: Int, speed: USBSpeed) -> [VideoNodeOnUSB] {
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: videoNodeRoot)) ?? [])
            .filter { $0.hasPrefix("video") }
            .sorted { (Int($0.dropFirst(5)) ?? .max, $0) < (Int($1.dropFirst(5)) ?? .max, $1) }
        return names.compactMap { name in
            guard let attachment = attachment(ofVideoNode: name), attachment.bus == bus, attachment.speed == speed
            else { return nil }
            return VideoNodeOnUSB(node: name, card: read("\(videoNodeRoot)/\(name)/name"), attachment: attachment)
        }
    }

    private func usbDevice(at directory: String) -> USBAttachment? {
        guard let bus = read("\(directory)/busnum").flatMap({ Int($0) }),
            let speed = read("\(directory)/speed").flatMap({ USBSpeed(sysfs: $0) })
        else { return nil }
        let descriptors = FileManager.default.contents(atPath: "\(directory)/descriptors").map { [UInt8]($0) } ?? []
        return USBAttachment(
            bus: bus, port: (directory as NSString).lastPathComponent, speed: speed,
            product: read("\(directory)/product"),
            alternates: USBDescriptorReader.streamingAlternates(in: descriptors, speed: speed))
    }

    /// The path with every symbolic link resolved (sysfs's links are relative, so a fake tree's are too).
    private func resolvedPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    private func read(_ path: String) -> String? {
        (try? String(contentsOfFile: path, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
