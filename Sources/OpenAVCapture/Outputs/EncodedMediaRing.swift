import MediaCodecs

/// The last seconds of encoded media, held in memory in arrival order for a pre-event recording: a bounded ring.
///
/// Two bounds, applied after every append:
/// - Bytes: the packets' payload bytes held never exceed ``capacityBytes`` (the oldest group of pictures goes first,
///   as many as it takes; a single packet larger than the capacity is not kept). This is a structural property,
///   checked by ``append(_:isVideo:)`` itself, not a matter of timing.
/// - Time: a group of pictures older than the newest packet by more than ``duration`` (measured from the key frame
///   that follows it) is dropped, so the ring holds ``duration`` and at most one group of pictures more.
///
/// The ring always begins with a video key frame when it holds video, so whatever a trigger takes from it decodes
/// from its first packet. Sound before the first key frame is not kept (a file cannot start with it).
///
/// Threading: a value; confined to its owner's queue.
struct EncodedMediaRing {
    struct Entry {
        let packet: EncodedPacket
        let isVideo: Bool
        var isKeyFrame: Bool { isVideo && packet.isKeyFrame }
        var time: CMTime { packet.presentationTime }
    }

    let capacityBytes: Int
    let duration: CMTime
    /// Whether pictures come: then groups start at video key frames; otherwise every packet stands alone.
    let hasVideo: Bool

    private var storage: [Entry] = []
    private var head = 0
    private(set) var heldBytes = 0
    /// The most bytes ever held, for reporting.
    private(set) var largestHeldBytes = 0

    init(capacityBytes: Int, duration: CMTime, hasVideo: Bool) {
        self.capacityBytes = capacityBytes
        self.duration = duration
        self.hasVideo = hasVideo
    }

    /// The packets held, oldest first.
    var entries: ArraySlice<Entry> { storage[head...] }

    /// The time from the first picture held to the newest packet.
    var heldDuration: CMTime {
        guard let first = entries.first, let last = entries.last(where: { $0.isVideo == hasVideo }) else { return .zero }
        return max(.zero, last.time - first.time)
    }

    mutating func append(_ packet: EncodedPacket, isVideo: Bool) {
        let entry = Entry(packet: packet, isVideo: isVideo)
        // A file cannot begin with sound or a picture that needs an earlier one: nothing before the first key frame.
        if hasVideo, entries.isEmpty, !entry.isKeyFrame { return }
        storage.append(entry)
        heldBytes += packet.data.dataLength
        while heldBytes > capacityBytes { dropFirstGroup() }
        // Time: drop the first group while the next one alone still covers the duration.
        while let next = nextGroupStart(), let newest = entries.last?.time, newest - storage[next].time >= duration {
            dropFirstGroup()
        }
        largestHeldBytes = max(largestHeldBytes, heldBytes)
        compactIfWorthIt()
    }

    /// The packets a recording triggered at `time` starts with: from the latest group start at or before
    /// `time − duration` (the oldest group when none is that old). Pictures first in the order the encoder gave them.
    func packets(forTriggerAt time: CMTime) -> ArraySlice<Entry> {
        let wanted = time - duration
        var start = head
        var index = head
        while index < storage.count {
            if isGroupStart(storage[index]) {
                if storage[index].time <= wanted { start = index } else { break }
            }
            index += 1
        }
        return storage[start...]
    }

    mutating func removeAll() {
        storage.removeAll(keepingCapacity: true)
        head = 0
        heldBytes = 0
    }

    // MARK: Groups

    private func isGroupStart(_ entry: Entry) -> Bool { hasVideo ? entry.isKeyFrame : true }

    /// The index of the second group's start, or nil when the ring holds one group.
    private func nextGroupStart() -> Int? {
        guard head < storage.count else { return nil }
        var index = head + 1
        while index < storage.count {
            if isGroupStart(storage[index]) { return index }
            index += 1
        }
        return nil
    }

    /// Drops the first group: up to the next group start, or everything when there is none.
    private mutating func dropFirstGroup() {
        let end = nextGroupStart() ?? storage.count
        for index in head..<end { heldBytes -= storage[index].packet.data.dataLength }
        head = end
        if head == storage.count { removeAll() }
    }

    /// Moves the live entries to the front once the dropped ones are half the storage (amortized O(1)).
    private mutating func compactIfWorthIt() {
        guard head > 64, head * 2 > storage.count else { return }
        storage.removeFirst(head)
        head = 0
    }
}
