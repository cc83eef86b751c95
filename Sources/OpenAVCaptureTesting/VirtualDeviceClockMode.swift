import CaptureDrivers
import Foundation
import OpenAVCapture

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
    /// Frames or periods are produced when the test moves `clock` to their time: the test steps time with
    /// ``VirtualDeviceClock/advance(by:timeout:)`` instead of waiting for it.
    case manual(VirtualDeviceClock)

    init(_ mode: VirtualClockMode) {
        switch mode {
        case .realTime: self = .realTime
        case .freeRunning: self = .freeRunning
        case .manual(let clock): self = .manual(VirtualDeviceClock(clock))
        }
    }

    var driverMode: VirtualClockMode {
        switch self {
        case .realTime: .realTime
        case .freeRunning: .freeRunning
        case .manual(let clock): .manual(clock.clock)
        }
    }
}

/// A clock a test moves by hand, for virtual devices whose ``VirtualDeviceClockMode`` is `.manual(clock)`.
///
/// A device on the clock delivers a frame (or audio period) only when the clock has reached its time, and
/// ``advance(by:timeout:)`` returns once every device on it has delivered everything due by then, its delegate
/// calls on the capture thread done. So `advance(by: CMTime(value: 1, timescale: 1))` gives exactly one more second
/// of a 30 fps camera's frames, however loaded the machine is:
///
///     let clock = VirtualDeviceClock()
///     VirtualCameraController(camera)?.clockMode = .manual(clock)
///     session.startRunning()
///     clock.advance(by: CMTime(value: 2, timescale: 1))   // two seconds of frames, delivered
///
/// A device delivers its first item as it starts, as a live one does, and each later item once the clock has moved
/// on from that start by the item's distance from the first. Items keep the timestamps a live device gives them
/// (host time from the moment the device started), one frame or period apart. Work done later on other queues (an
/// output's encoder, a delegate's queue) is not waited for: wait for its result as you would with a live device.
///
/// Threading: thread safe. Call `advance` from the test's thread, not from a delegate method of a device on the
/// clock (that device cannot deliver while its own capture thread waits). Equal only to itself.
public final class VirtualDeviceClock: Sendable, Hashable {
    let clock: VirtualManualClock

    /// A clock at rest, at time 0.
    public init() {
        clock = VirtualManualClock()
    }

    init(_ clock: VirtualManualClock) {
        self.clock = clock
    }

    /// How far the clock has been advanced in all.
    public var elapsed: CMTime { clock.elapsed }

    /// How many devices are on the clock now, starting or streaming. A device takes its clock as it starts: one
    /// that was already streaming (for another session, or a tap) when its clock mode was set keeps the clock it
    /// had until it starts again.
    public var deviceCount: Int { clock.deviceCount }

    /// Moves the clock on by `duration` and returns when every device on it has delivered every item due by then,
    /// or has stopped. Returns false when that took longer than `timeout` seconds of host time: a delegate that
    /// never returns, or buffers that never come back.
    @discardableResult
    public func advance(by duration: CMTime, timeout: TimeInterval = 60) -> Bool {
        precondition(
            duration.isNumeric && duration >= .zero,
            "VirtualDeviceClock.advance(by:) takes a numeric duration of 0 or more, got \(duration)")
        return clock.advance(by: duration, timeout: timeout)
    }

    /// Moves the clock on by `duration`, `step` at a time, and after each step waits until `outputs` have handled
    /// everything their devices delivered (their queues, delegates, encoders and writers have caught up).
    ///
    /// Outputs drop what waits too long, as Apple's do: a movie file output drops a frame when 8 wait for its
    /// encoder, a video data output a late frame. A test that steps a whole second at once hands a second's frames
    /// over at once and so sees drops that no real-time device causes; stepping a frame at a time and settling
    /// makes the recording the one a machine that keeps up makes, however loaded this one is. Returns false, without
    /// moving, when no device is on the clock (stepping it would pace nothing: see ``deviceCount``), and when a step
    /// or a settling took longer than `timeout` seconds of host time.
    @discardableResult
    public func advance(
        by duration: CMTime, step: CMTime, settling outputs: [AVCaptureOutput], timeout: TimeInterval = 60
    ) -> Bool {
        precondition(
            step.isNumeric && step > .zero, "VirtualDeviceClock.advance(by:step:settling:) takes a step above 0, got \(step)")
        guard deviceCount > 0 else { return false }
        func settle() -> Bool {
            let deadline = Date().addingTimeInterval(timeout)
            // Polled: the outputs' queues have no completion to wait on that covers their encoders' threads too.
            while outputs.contains(where: \.hasWorkInFlight) {
                guard Date() < deadline else { return false }
                usleep(500)
            }
            return true
        }
        // What is due already (a starting device's first item) is handled first, so the first step brings one.
        guard advance(by: .zero, timeout: timeout), settle() else { return false }
        var remaining = duration
        while remaining > .zero {
            let next = CMTimeMinimum(step, remaining)
            guard advance(by: next, timeout: timeout), settle() else { return false }
            remaining = remaining - next
        }
        return true
    }

    /// Whether both are the same clock.
    public static func == (lhs: VirtualDeviceClock, rhs: VirtualDeviceClock) -> Bool { lhs.clock === rhs.clock }
    /// Hashes the clock's identity.
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(clock)) }
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
