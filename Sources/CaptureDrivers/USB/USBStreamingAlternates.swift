/// One alternate setting of a camera's UVC video streaming interface, and what it reserves of the bus: the kernel's
/// `uvcvideo` picks, at `VIDIOC_STREAMON`, the smallest alternate setting whose endpoint carries the payload the
/// camera asked for, and the host controller refuses it (`ENOSPC`) when the bus has too little periodic time left.
///
/// Value type; safe to use from any thread.
package struct USBStreamingAlternate: Sendable, Hashable {
    /// `bInterfaceNumber` of the video streaming interface.
    package var interface: Int
    /// `bAlternateSetting`.
    package var alternate: Int
    /// Bytes one transaction carries (`wMaxPacketSize` bits 0–10; a SuperSpeed endpoint's packet size).
    package var packetSize: Int
    /// Transactions per service interval: high speed's `wMaxPacketSize` bits 11–12 plus one, or a SuperSpeed
    /// endpoint's burst × mult from its companion descriptor.
    package var transactionsPerInterval: Int
    /// The bytes per service interval a SuperSpeed companion descriptor states (`wBytesPerInterval`), when it does.
    package var statedBytesPerInterval: Int?
    /// How many bus intervals apart the endpoint is served (2^(bInterval − 1) for high and SuperSpeed).
    package var serviceInterval: Int
    /// Isochronous (reserves periodic time) or bulk (takes what is left, reserves nothing).
    package var isIsochronous: Bool

    package init(
        interface: Int, alternate: Int, packetSize: Int, transactionsPerInterval: Int,
        statedBytesPerInterval: Int? = nil, serviceInterval: Int = 1, isIsochronous: Bool = true
    ) {
        self.interface = interface
        self.alternate = alternate
        self.packetSize = packetSize
        self.transactionsPerInterval = transactionsPerInterval
        self.statedBytesPerInterval = statedBytesPerInterval
        self.serviceInterval = serviceInterval
        self.isIsochronous = isIsochronous
    }

    /// The payload bytes the setting moves per bus interval (an endpoint served every Nth interval counts 1/N).
    package var bytesPerBusInterval: Double {
        Double(statedBytesPerInterval ?? packetSize * transactionsPerInterval) / Double(max(serviceInterval, 1))
    }

    /// The bus time the setting reserves per bus interval at `speed`, in microseconds; nothing for bulk.
    package func reservedMicroseconds(at speed: USBSpeed) -> Double {
        guard isIsochronous else { return 0 }
        switch speed {
        case .full, .high:
            return Double(transactionsPerInterval) * speed.isochronousTransactionMicroseconds(bytes: packetSize)
                / Double(max(serviceInterval, 1))
        case .superSpeed, .superSpeedPlus:
            let bytes = statedBytesPerInterval ?? packetSize * transactionsPerInterval
            return speed.isochronousTransactionMicroseconds(bytes: bytes) / Double(max(serviceInterval, 1))
        }
    }
}

/// Reads a USB device's descriptors (sysfs's `descriptors` file: the device descriptor, then every configuration
/// with its interfaces, endpoints and class-specific descriptors) for the alternate settings of its UVC video
/// streaming interfaces (class 0x0E, subclass 0x02) that have a data endpoint. Alternate setting 0 of an
/// isochronous camera has none and reserves nothing; sysfs's `ep_*` directories show only the active setting, so
/// they say nothing about the others.
///
/// Value type; safe to use from any thread. Malformed input ends the walk; what was read before stays.
package enum USBDescriptorReader {
    private static let interfaceType: UInt8 = 4
    private static let endpointType: UInt8 = 5
    private static let superSpeedCompanionType: UInt8 = 0x30
    private static let videoClass: UInt8 = 0x0E
    private static let videoStreamingSubclass: UInt8 = 0x02

    /// The video streaming alternate settings in `descriptors`, in the order the device lists them.
    package static func streamingAlternates(in descriptors: [UInt8], speed: USBSpeed) -> [USBStreamingAlternate] {
        var found: [USBStreamingAlternate] = []
        var current: (interface: Int, alternate: Int)?
        var offset = 0
        while offset + 2 <= descriptors.count {
            let length = Int(descriptors[offset])
            guard length >= 2, offset + length <= descriptors.count else { break }
            let body = descriptors[offset..<offset + length]
            let start = body.startIndex
            switch body[start + 1] {
            case interfaceType where length >= 9:
                let isStreaming = body[start + 5] == videoClass && body[start + 6] == videoStreamingSubclass
                current = isStreaming ? (Int(body[start + 2]), Int(body[start + 3])) : nil
            case endpointType where length >= 7:
                guard let setting = current else { break }
                let isInput = body[start + 2] & 0x80 != 0
                let transferType = body[start + 3] & 0x03
                guard isInput, transferType == 1 || transferType == 2 else { break }
                let word = Int(body[start + 4]) | Int(body[start + 5]) << 8
                let interval = Int(body[start + 6])
                let isIsochronous = transferType == 1
                let highSpeedMultiplier = speed == .high && isIsochronous ? (word >> 11 & 0x3) + 1 : 1
                // Full speed counts bInterval in frames for isochronous endpoints too, but as 2^(n−1) as well.
                let serviceInterval = isIsochronous && interval >= 1 ? 1 << (min(interval, 16) - 1) : 1
                found.append(
                    USBStreamingAlternate(
                        interface: setting.interface, alternate: setting.alternate, packetSize: word & 0x7FF,
                        transactionsPerInterval: highSpeedMultiplier, serviceInterval: serviceInterval,
                        isIsochronous: isIsochronous))
            case superSpeedCompanionType where length >= 6:
                // Belongs to the endpoint just read: bMaxBurst (packets − 1 per burst), bmAttributes bits 0–1
                // (bursts − 1 per interval, isochronous), wBytesPerInterval.
                guard current != nil, var last = found.last, last.isIsochronous else { break }
                let bursts = Int(body[start + 3] & 0x03) + 1
                last.transactionsPerInterval = (Int(body[start + 2]) + 1) * bursts
                let stated = Int(body[start + 4]) | Int(body[start + 5]) << 8
                last.statedBytesPerInterval = stated > 0 ? stated : nil
                found[found.count - 1] = last
            default:
                break
            }
            offset += length
        }
        return found
    }
}
