/// Everything one virtual camera frame depends on: when it is, which it is, what is in front of the lens and
/// how the lens and sensor are set.
///
/// A frame is a pure function of these and of the frame size (`VirtualFrameRenderer`): equal parameters give
/// identical bytes. Value type; safe from any thread.
package struct VirtualFrameParameters: Sendable, Hashable {
    /// The frame's timestamp on the device clock (the start of its interval).
    package var time: VirtualClockTime
    /// The frame's duration, one over the frame rate: the frame's interval is `[time, time + duration)`.
    package var duration: VirtualClockTime
    /// The frame's index since the stream started, written into the frame as a block code.
    package var index: UInt32
    /// What the camera looks at.
    package var scene: VirtualScene
    /// How the camera is set.
    package var optics: VirtualOptics

    /// The parameters of one frame.
    package init(
        time: VirtualClockTime,
        duration: VirtualClockTime,
        index: UInt32,
        scene: VirtualScene = VirtualScene(),
        optics: VirtualOptics = VirtualOptics()
    ) {
        self.time = time
        self.duration = duration
        self.index = index
        self.scene = scene
        self.optics = optics
    }

    /// The parameters of frame `index` of a stream at a constant rate of `timescale / frameDuration` fps that
    /// started at 0: the frame is stamped `index · frameDuration / timescale` seconds.
    package init(
        index: UInt32,
        frameDuration: Int64,
        timescale: Int32,
        scene: VirtualScene = VirtualScene(),
        optics: VirtualOptics = VirtualOptics()
    ) {
        self.init(
            time: VirtualClockTime(value: Int64(index) * frameDuration, timescale: timescale),
            duration: VirtualClockTime(value: frameDuration, timescale: timescale),
            index: index,
            scene: scene,
            optics: optics
        )
    }

    /// Whether this is a flash frame: its interval `[time, time + duration)` contains a whole second of the device
    /// clock. A flash frame is Y = 235 and Cb = Cr = 128 everywhere, whatever the controls, and carries no code.
    package var isFlashFrame: Bool {
        VirtualClockTime.intervalContainsWholeSecond(start: time, duration: duration)
    }
}
