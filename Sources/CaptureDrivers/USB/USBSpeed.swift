/// The speed a USB device runs at, as sysfs's `speed` file says it (megabits per second), and what one transfer of
/// its costs in bus time: the terms a host controller reserves periodic (isochronous and interrupt) bandwidth in.
///
/// The periodic budget is the USB specifications': at most 90 % of a full-speed 1 ms frame, 80 % of a high-speed
/// 125 µs microframe (USB 2.0 §5.6.4), 90 % of a SuperSpeed 125 µs bus interval (USB 3.x). Transaction
/// times are USB 2.0 §5.11.3's, with worst-case bit stuffing (7/6) as Linux's `usb_calc_bus_time` counts them; on
/// SuperSpeed links (8b/10b, 128b/132b coding and no bit stuffing) a byte costs its coded bits.
///
/// Value type; safe to use from any thread.
package enum USBSpeed: Sendable, Hashable, CustomStringConvertible {
    /// 12 Mb/s (USB 1.1 full speed).
    case full
    /// 480 Mb/s (USB 2.0 high speed).
    case high
    /// 5 Gb/s (USB 3.0 / 3.2 Gen 1 SuperSpeed).
    case superSpeed
    /// 10 Gb/s or more (USB 3.2 Gen 2 SuperSpeed+).
    case superSpeedPlus(megabitsPerSecond: Int)

    /// The speed sysfs's `speed` file names ("12", "480", "5000", "10000", "20000"); nil for low speed (1.5),
    /// which carries no isochronous transfers, and for anything unreadable.
    package init?(sysfs text: String) {
        switch text.trimmingCharacters(in: .whitespacesAndNewlines) {
        case "12": self = .full
        case "480": self = .high
        case "5000": self = .superSpeed
        case let other:
            guard let rate = Int(other), rate > 5000 else { return nil }
            self = .superSpeedPlus(megabitsPerSecond: rate)
        }
    }

    package var megabitsPerSecond: Int {
        switch self {
        case .full: 12
        case .high: 480
        case .superSpeed: 5000
        case .superSpeedPlus(let rate): rate
        }
    }

    /// "USB 2.0 high speed, 480 Mb/s", as people and `lsusb -t` know the speeds.
    package var description: String {
        switch self {
        case .full: "USB 1.1 full speed, 12 Mb/s"
        case .high: "USB 2.0 high speed, 480 Mb/s"
        case .superSpeed: "USB 3 SuperSpeed, 5 Gb/s"
        case .superSpeedPlus(let rate): "USB 3 SuperSpeed+, \(rate / 1000) Gb/s"
        }
    }

    /// The unit the periodic schedule repeats in: a 1 ms frame at full speed, a 125 µs (micro)frame faster.
    package var busIntervalMicroseconds: Double { self == .full ? 1000 : 125 }

    /// How many bus intervals pass per second (1000 or 8000).
    package var busIntervalsPerSecond: Double { 1_000_000 / busIntervalMicroseconds }

    /// The bus time of one bus interval the host may reserve for periodic transfers, in microseconds.
    package var periodicBudgetMicroseconds: Double {
        switch self {
        case .full: 900
        case .high: 100
        case .superSpeed, .superSpeedPlus: 112.5
        }
    }

    /// The bus time of one isochronous IN transaction carrying `bytes`, in microseconds.
    package func isochronousTransactionMicroseconds(bytes: Int) -> Double {
        let hostDelayNanoseconds = 5.0  // Linux's USB2_HOST_DELAY; the specification leaves it to the host.
        let stuffedBits = (3.167 + Double(bytes) * 8 * 7 / 6).rounded(.down)
        switch self {
        case .full:
            return (7268 + 83.54 * stuffedBits + hostDelayNanoseconds) / 1000
        case .high:
            return (38 * 8 * 2.083 + 2.083 * stuffedBits + hostDelayNanoseconds) / 1000
        case .superSpeed:
            // 8b/10b: ten line bits a byte at 5 Gb/s.
            return Double(bytes) * 10 / 5000
        case .superSpeedPlus(let rate):
            // 128b/132b.
            return Double(bytes) * 8 * 132 / 128 / Double(rate)
        }
    }
}
