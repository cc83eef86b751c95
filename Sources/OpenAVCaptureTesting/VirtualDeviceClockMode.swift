import CaptureDrivers

/// How a virtual device paces its stream.
///
/// Value type; safe to use from any thread.
public enum VirtualDeviceClockMode: Sendable, Hashable {
    /// Each frame or audio period arrives when the host clock reaches its time, as from a live device (the
    /// default).
    case realTime
    /// Frames or periods are produced as fast as they are taken, their timestamps still one frame (period) apart,
    /// so the device's time runs ahead of the host clock: for benchmarks and fast tests.
    case freeRunning

    init(_ mode: VirtualClockMode) {
        switch mode {
        case .realTime: self = .realTime
        case .freeRunning: self = .freeRunning
        }
    }

    var driverMode: VirtualClockMode {
        switch self {
        case .realTime: .realTime
        case .freeRunning: .freeRunning
        }
    }
}

/// The colour of the light falling on the virtual cameras' scene, as linear RGB factors.
///
/// Neutral (1, 1, 1) by default. Auto white balance converges to gains of `max / component`, so a warm light
/// (more red than blue) ends with a blue gain above 1. Value type; safe to use from any thread.
public struct VirtualIlluminant: Sendable, Hashable {
    /// The red factor, linear.
    public var red: Double
    /// The green factor, linear.
    public var green: Double
    /// The blue factor, linear.
    public var blue: Double

    /// A light of the given linear factors.
    public init(red: Double, green: Double, blue: Double) {
        self.red = red
        self.green = green
        self.blue = blue
    }

    /// White light: the default.
    public static let neutral = VirtualIlluminant(red: 1, green: 1, blue: 1)

    init(_ rgb: VirtualRGB) {
        self.init(red: rgb.red, green: rgb.green, blue: rgb.blue)
    }

    var rgb: VirtualRGB { VirtualRGB(red: red, green: green, blue: blue) }
}
