import CLinuxMedia
import Foundation
import OpenCoreMedia
import SystemPackage

/// One format as a node offers it: the `VideoFormat` we list and the pixel format we ask the kernel for.
///
/// Value type; safe to use from any thread.
package struct V4L2Format: Sendable, Hashable {
    package var video: VideoFormat
    package var pixelFormat: V4L2PixelFormat

    package init(video: VideoFormat, pixelFormat: V4L2PixelFormat) {
        self.video = video
        self.pixelFormat = pixelFormat
    }
}

/// Where a node sits in sysfs and /dev: what identity is made of besides QUERYCAP.
///
/// Value type; safe to use from any thread.
package struct V4L2NodeLocation: Sendable, Hashable {
    /// `video0`.
    package var name: String
    /// `/dev/video0`.
    package var path: String
    /// The node's `index` in sysfs: which node of its device it is.
    package var index: Int
    /// `/dev/v4l/by-id/…` or `/dev/v4l/by-path/…` name of the node, when udev made one.
    package var stableName: String?
    /// USB vendor and product ids (`046d`, `082d`), for USB cameras.
    package var usbVendorID: String?
    package var usbProductID: String?
    /// The USB manufacturer string, when the device gives one.
    package var usbManufacturer: String?

    package init(
        name: String, path: String, index: Int = 0, stableName: String? = nil, usbVendorID: String? = nil,
        usbProductID: String? = nil, usbManufacturer: String? = nil
    ) {
        self.name = name
        self.path = path
        self.index = index
        self.stableName = stableName
        self.usbVendorID = usbVendorID
        self.usbProductID = usbProductID
        self.usbManufacturer = usbManufacturer
    }
}

/// Everything discovery reads from a capture node: who it is, its formats and its controls.
///
/// Value type; safe to use from any thread.
package struct V4L2DeviceDescription: Sendable {
    package var identity: DeviceIdentity
    package var formats: [V4L2Format]
    package var controls: V4L2ControlSet
    package var controlValues: [UInt32: Int64]
    /// The queue the node streams from: single-planar, or multi-planar (SoC and ISP drivers).
    package var bufferType: V4L2BufferType

    /// Opens `location.path` and reads it: QUERYCAP, the formats, the controls and their values. Nil for a node
    /// that is not a streaming video capture node, single- or multi-planar (metadata, output, radio), or offers no
    /// format we deliver.
    package static func read(_ location: V4L2NodeLocation, system: SystemCalls) throws(Errno) -> Self? {
        let node = try V4L2Node(path: location.path, system: system)
        let capability = try node.capability()
        guard let bufferType = capability.captureBufferType else { return nil }
        let formats = try Self.formats(of: node, type: bufferType)
        guard !formats.isEmpty else { return nil }
        let all = (try? node.controls()) ?? []
        let controls = V4L2ControlSet(controls: all) { control in
            Set(((try? node.menuItems(of: control)) ?? [:]).keys)
        }
        let values = V4L2CameraControls.readValues(controls, from: node)
        return Self(
            identity: identity(location, capability), formats: formats, controls: controls, controlValues: values,
            bufferType: bufferType)
    }

    /// Who the node is. The unique ID is udev's by-id (or by-path) name when there is one, else the bus and node
    /// index, both stable across reboots.
    static func identity(_ location: V4L2NodeLocation, _ capability: V4L2Capability) -> DeviceIdentity {
        let uniqueID = location.stableName ?? "v4l2:\(capability.busInfo):\(location.index)"
        let modelID: String =
            if let vendor = location.usbVendorID, let product = location.usbProductID {
                "usb:\(vendor):\(product)"
            } else {
                "\(capability.driver):\(capability.card)"
            }
        return DeviceIdentity(
            uniqueID: uniqueID, modelID: modelID, localizedName: capability.card,
            manufacturer: location.usbManufacturer ?? capability.driver,
            kind: capability.isUSB ? .external : .builtInWideAngleCamera, position: .unspecified, media: .video,
            origin: .real, systemName: location.path)
    }

    /// Sizes offered for a stepwise or continuous range: the common ones inside it, and its largest.
    static let commonSizes: [(UInt32, UInt32)] = [
        (160, 120), (320, 240), (352, 288), (640, 360), (640, 480), (800, 600), (960, 540), (1024, 768),
        (1280, 720), (1280, 960), (1600, 1200), (1920, 1080), (2560, 1440), (3840, 2160),
    ]

    /// Every format we deliver, by size (smallest first), then native before compressed.
    /// A multi-planar node offering both a format and its `…M` variant (NV12 and NV12M) lists the one ENUM_FMT
    /// names first.
    static func formats(of node: V4L2Node, type: V4L2BufferType) throws(Errno) -> [V4L2Format] {
        var formats: [V4L2Format] = []
        var seen = Set<String>()
        for pixelFormat in try node.pixelFormats(type) {
            guard let subType = pixelFormat.mediaSubType else { continue }
            for (width, height) in sizes(try node.frameSizes(of: pixelFormat)) {
                // A size no camera has (0, or beyond Int32 and V4L2's 16-bit sizes) is the driver's or the kernel's
                // mistake: skip it (the V4L2 fuzz target's lying kernel made `Int32(width)` trap).
                guard (1...65_535).contains(width), (1...65_535).contains(height) else { continue }
                // MJPG and JPEG both become 'jpeg': list the first only.
                guard seen.insert("\(subType) \(width)x\(height)").inserted else { continue }
                let intervals = try node.frameIntervals(of: pixelFormat, width: width, height: height)
                var ranges = intervals.map { interval in
                    switch interval {
                    case .discrete(let duration):
                        FrameDurationRange(minFrameDuration: duration, maxFrameDuration: duration)
                    case .stepwise(let shortest, let longest):
                        FrameDurationRange(minFrameDuration: shortest, maxFrameDuration: longest)
                    }
                }
                // A driver that cannot list intervals streams at its own pace; say 1–30 fps.
                if ranges.isEmpty { ranges = [FrameDurationRange(minFrameRate: 1, maxFrameRate: 30)] }
                ranges.sort { $0.minFrameDuration < $1.minFrameDuration }
                let video = VideoFormat(
                    width: Int32(width), height: Int32(height), mediaSubType: subType, frameDurationRanges: ranges,
                    fieldOfView: 0, maxZoomFactor: 1)
                formats.append(V4L2Format(video: video, pixelFormat: pixelFormat))
            }
        }
        func area(_ format: V4L2Format) -> Int64 { Int64(format.video.width) * Int64(format.video.height) }
        return formats.enumerated().sorted { a, b in
            let (left, right) = (a.element, b.element)
            if area(left) != area(right) { return area(left) < area(right) }
            if left.video.width != right.video.width { return left.video.width < right.video.width }
            if left.pixelFormat.listingRank != right.pixelFormat.listingRank {
                return left.pixelFormat.listingRank < right.pixelFormat.listingRank
            }
            return a.offset < b.offset
        }.map(\.element)
    }

    static func sizes(_ frameSizes: [V4L2FrameSize]) -> [(UInt32, UInt32)] {
        var sizes: [(UInt32, UInt32)] = []
        for size in frameSizes {
            switch size {
            case .discrete(let width, let height):
                sizes.append((width, height))
            case .stepwise(let minWidth, let maxWidth, let widthStep, let minHeight, let maxHeight, let heightStep):
                // A range the other way round or with a step of 0 says nothing (and would trap below).
                guard minWidth <= maxWidth, minHeight <= maxHeight, widthStep > 0, heightStep > 0 else { continue }
                for (width, height) in commonSizes
                where (minWidth...maxWidth).contains(width) && (minHeight...maxHeight).contains(height)
                    && (width - minWidth) % widthStep == 0 && (height - minHeight) % heightStep == 0
                {
                    sizes.append((width, height))
                }
                if !sizes.contains(where: { $0 == (maxWidth, maxHeight) }) { sizes.append((maxWidth, maxHeight)) }
            }
        }
        return sizes
    }
}
