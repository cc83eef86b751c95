// Shifting sample buffer timestamps after a pause, as pause-and-resume recorders do.
import OpenAVCaptureShim

final class SampleBufferRetimer {
    private var offset = CMTime.zero

    func addPause(from start: CMTime, to end: CMTime) {
        offset = CMTimeAdd(offset, CMTimeSubtract(end, start))
    }

    func retimed(_ sampleBuffer: CMSampleBuffer) -> CMSampleBuffer? {
        guard offset != .zero else { return sampleBuffer }
        var count: CMItemCount = 0
        CMSampleBufferGetSampleTimingInfoArray(sampleBuffer, entryCount: 0, arrayToFill: nil, entriesNeededOut: &count)
        var timing = [CMSampleTimingInfo](repeating: CMSampleTimingInfo(), count: count)
        CMSampleBufferGetSampleTimingInfoArray(
            sampleBuffer, entryCount: count, arrayToFill: &timing, entriesNeededOut: &count)
        for index in 0..<count {
            timing[index].presentationTimeStamp = CMTimeSubtract(timing[index].presentationTimeStamp, offset)
            if timing[index].decodeTimeStamp.isValid {
                timing[index].decodeTimeStamp = CMTimeSubtract(timing[index].decodeTimeStamp, offset)
            }
        }
        var copy: CMSampleBuffer?
        CMSampleBufferCreateCopyWithNewTiming(
            allocator: kCFAllocatorDefault, sampleBuffer: sampleBuffer, sampleTimingEntryCount: count,
            sampleTimingArray: &timing, sampleBufferOut: &copy)
        if let copy {
            CMSampleBufferSetOutputPresentationTimeStamp(copy, newValue: timing[0].presentationTimeStamp)
        }
        return copy
    }
}
