import OpenCoreMedia

/// What one camera streaming one format needs of the machine: its pixel rate, how its frames arrive (what decoding
/// them costs), and, for a USB camera, the share of its bus's periodic time the format reserves. A session sums
/// these over its cameras (`CaptureHardwareCost`).
///
/// Value type; safe to use from any thread.
package struct HardwareDemand: Sendable, Hashable {
    /// How a format's frames arrive, for what turning them into pictures costs.
    package enum Encoding: Sendable, Hashable {
        /// Uncompressed pixels: at most a conversion.
        case raw
        /// Each frame a JPEG picture (MJPEG): a decode per frame.
        case jpeg
        /// An inter-frame codec (H.264, HEVC): a decoder that keeps state.
        case interframe
    }

    /// Pixels per second at the format's fastest active rate.
    package var pixelsPerSecond: Double
    package var encoding: Encoding
    /// What the format needs of its USB bus, where the driver can tell (nil: no USB, or a virtual device).
    package var usb: USBBusDemand?

    package init(pixelsPerSecond: Double, encoding: Encoding, usb: USBBusDemand? = nil) {
        self.pixelsPerSecond = pixelsPerSecond
        self.encoding = encoding
        self.usb = usb
    }

    /// The demand of a device that cannot know its hardware: the configuration's pixel rate and encoding.
    package init(pixelRateOf configuration: StreamConfiguration) {
        guard case .video(let video) = configuration.format else {
            self.init(pixelsPerSecond: 0, encoding: .raw)
            return
        }
        let duration = configuration.frameDuration
        let rate = duration.isNumeric && duration > .zero ? 1 / duration.seconds : video.maxFrameRate
        self.init(
            pixelsPerSecond: Double(video.width) * Double(video.height) * rate,
            encoding: Encoding(mediaSubType: video.mediaSubType))
    }
}

extension HardwareDemand.Encoding {
    /// The encoding of frames of `mediaSubType` (a CoreVideo pixel format or a CoreMedia codec type).
    package init(mediaSubType: FourCharCode) {
        switch mediaSubType {
        case kCMVideoCodecType_JPEG: self = .jpeg
        case kCMVideoCodecType_H264, kCMVideoCodecType_HEVC: self = .interframe
        default: self = .raw
        }
    }
}

/// What a format needs of a USB bus: the bus, the alternate setting `uvcvideo` would choose for it, and the
/// periodic bus time that setting reserves in every bus interval.
///
/// Value type; safe to use from any thread.
package struct USBBusDemand: Sendable, Hashable {
    /// Which bus: its number and the speed its schedule runs at (the budget's unit).
    package struct Bus: Sendable, Hashable, Comparable, CustomStringConvertible {
        package var number: Int
        package var speed: USBSpeed

        package init(number: Int, speed: USBSpeed) {
            self.number = number
            self.speed = speed
        }

        package var description: String { "USB bus \(number) (\(speed))" }
        package static func < (lhs: Bus, rhs: Bus) -> Bool {
            (lhs.number, lhs.speed.megabitsPerSecond) < (rhs.number, rhs.speed.megabitsPerSecond)
        }
    }

    package var bus: Bus
    /// The camera's port (`1-1.2`).
    package var port: String
    /// The payload the format needs per bus interval, estimated (see `USBPayloadEstimate`).
    package var payloadBytesPerInterval: Double
    /// The alternate setting that carries it; nil when none does (the driver then refuses to stream) or the
    /// descriptors were unreadable.
    package var alternate: USBStreamingAlternate?
    /// The bus time reserved per bus interval, in microseconds.
    package var reservedMicroseconds: Double

    /// The share of the bus's periodic budget reserved (1.0 = all of it).
    package var share: Double { reservedMicroseconds / bus.speed.periodicBudgetMicroseconds }

    /// What streaming `payloadBytesPerInterval` from the camera at `attachment` reserves: the smallest isochronous
    /// alternate setting that carries the payload, as `uvcvideo` chooses. With no isochronous setting (a bulk
    /// camera, or unreadable descriptors) or none large enough, the payload's own bus time, in the largest packets
    /// the speed allows (a bulk stream reserves nothing but needs that much of what is left; a format no setting
    /// carries cannot stream at all, and counts as more than it could get).
    package init(payloadBytesPerInterval payload: Double, attachment: USBAttachment) {
        bus = Bus(number: attachment.bus, speed: attachment.speed)
        port = attachment.port
        payloadBytesPerInterval = payload
        let isochronous = attachment.alternates.filter(\.isIsochronous).sorted {
            $0.bytesPerBusInterval < $1.bytesPerBusInterval
        }
        if let chosen = isochronous.first(where: { $0.bytesPerBusInterval >= payload }) {
            alternate = chosen
            reservedMicroseconds = chosen.reservedMicroseconds(at: attachment.speed)
        } else if let largest = isochronous.last, largest.bytesPerBusInterval > 0 {
            alternate = nil
            reservedMicroseconds =
                largest.reservedMicroseconds(at: attachment.speed) * payload / largest.bytesPerBusInterval
        } else {
            alternate = nil
            let packet = attachment.speed == .full ? 1023.0 : 1024.0
            reservedMicroseconds =
                attachment.speed.isochronousTransactionMicroseconds(bytes: Int(packet)) * payload / packet
        }
    }
}
