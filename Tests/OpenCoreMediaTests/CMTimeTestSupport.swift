import OpenCoreMedia
import Testing

/// The four fields of a CMTime, compared field by field (unlike CMTime's `==`, which compares values).
struct Fields: Equatable, CustomStringConvertible {
    var value: Int64
    var timescale: Int32
    var flags: UInt32
    var epoch: Int64

    init(_ time: CMTime) {
        value = time.value
        timescale = time.timescale
        flags = time.flags.rawValue
        epoch = time.epoch
    }

    /// A numeric time: flags `valid` (1), plus `hasBeenRounded` (2) when `rounded`.
    init(_ value: Int64, _ timescale: Int32, rounded: Bool = false, epoch: Int64 = 0) {
        self.value = value
        self.timescale = timescale
        self.flags = rounded ? 3 : 1
        self.epoch = epoch
    }

    var description: String { "(\(value)/\(timescale) flags \(flags) epoch \(epoch))" }
}

/// The kind of a time, read from the raw flag bits (not from the code under test).
enum Kind: Equatable {
    case invalid, positiveInfinity, negativeInfinity, indefinite, numeric

    init(_ time: CMTime) {
        let bits = time.flags.rawValue
        if bits & 1 == 0 {
            self = .invalid
        } else if bits & 4 != 0 {
            self = .positiveInfinity
        } else if bits & 8 != 0 {
            self = .negativeInfinity
        } else if bits & 16 != 0 {
            self = .indefinite
        } else {
            self = .numeric
        }
    }
}

/// A time of each kind, built from raw fields.
let numericOne = CMTime(value: 1, timescale: 1, flags: CMTimeFlags(rawValue: 1), epoch: 0)
let plusInfinity = CMTime(value: 0, timescale: 0, flags: CMTimeFlags(rawValue: 1 | 4), epoch: 0)
let minusInfinity = CMTime(value: 0, timescale: 0, flags: CMTimeFlags(rawValue: 1 | 8), epoch: 0)
let indefiniteTime = CMTime(value: 0, timescale: 0, flags: CMTimeFlags(rawValue: 1 | 16), epoch: 0)
let invalidTime = CMTime(value: 7, timescale: 9, flags: CMTimeFlags(rawValue: 0), epoch: 3)
