import CaptureDrivers

extension AVCaptureOutput {
    /// Why an output dropped data, with Apple's raw values: what `AVCaptureDataOutputSynchronizer` and the depth and
    /// metadata outputs report, and the typed form of a dropped sample buffer's
    /// `kCMSampleBufferAttachmentKey_DroppedFrameReason`.
    public enum DataDroppedReason: Int, Sendable, Hashable {
        /// Nothing was dropped.
        case none = 0
        /// The consumer was still busy with earlier data (Apple's `kCMSampleBufferDroppedFrameReason_FrameWasLate`).
        case lateData = 1
        /// Every buffer was held by consumers (`kCMSampleBufferDroppedFrameReason_OutOfBuffers`).
        case outOfBuffers = 2
        /// The device skipped data (`kCMSampleBufferDroppedFrameReason_Discontinuity`).
        case discontinuity = 3
    }
}

extension AVCaptureOutput.DataDroppedReason {
    /// The reason of a drop the drivers or an output's queue reported.
    package init(_ reason: DropReason) {
        switch reason {
        case .frameWasLate: self = .lateData
        case .outOfBuffers: self = .outOfBuffers
        case .discontinuity: self = .discontinuity
        }
    }
}
