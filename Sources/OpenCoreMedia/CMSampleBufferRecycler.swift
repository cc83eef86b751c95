import Synchronization

/// Reuses sample buffer objects, so a device that wraps every frame in one allocates nothing per frame after
/// warm-up (the `CVPixelBufferPool` scheme, one level up): a buffer whose only reference is the recycler's is
/// free. Before checking a pixel buffer out of its pool, call `releaseIdleImages()`, so idle sample buffers stop
/// holding their old pixel buffers.
///
/// Why it is race-free: references to a buffer only come from the one the recycler handed out; once the count is
/// back to one, nobody else can obtain the buffer again, and the acquiring fence orders the last holder's reads
/// before our writes.
///
/// Threading: thread-bound; use it from one thread at a time (a device's capture thread).
package final class CMSampleBufferRecycler {
    private var buffers: [CMSampleBuffer] = []
    private let capacity: Int

    /// A recycler keeping up to `capacity` buffers (more than can be held downstream at once).
    package init(capacity: Int) {
        self.capacity = capacity
        buffers.reserveCapacity(capacity)
    }

    /// Lets go of the images of buffers nobody holds any more.
    package func releaseIdleImages() {
        for index in buffers.indices where isKnownUniquelyReferenced(&buffers[index]) {
            atomicMemoryFence(ordering: .acquiring)
            buffers[index].releaseImage()
        }
    }

    /// A one-sample buffer around `imageBuffer`: an idle one reused, or a new one.
    package func sampleBuffer(
        imageBuffer: CVImageBuffer, formatDescription: CMFormatDescription, timing: CMSampleTimingInfo
    ) -> CMSampleBuffer {
        for index in buffers.indices where isKnownUniquelyReferenced(&buffers[index]) {
            atomicMemoryFence(ordering: .acquiring)
            buffers[index].reuse(imageBuffer: imageBuffer, formatDescription: formatDescription, timing: timing)
            return buffers[index]
        }
        let made = CMSampleBuffer(unchecked: imageBuffer, formatDescription: formatDescription, sampleTiming: timing)
        if buffers.count < capacity { buffers.append(made) }
        return made
    }
}
