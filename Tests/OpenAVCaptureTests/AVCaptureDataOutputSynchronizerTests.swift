import Foundation
import OpenAVCapture
import OpenAVCaptureTesting
import Synchronization
import TestSupport
import Testing

/// Records the synchronizer's collections, optionally slowly.
private final class CollectionRecorder: NSObject, AVCaptureDataOutputSynchronizerDelegate, @unchecked Sendable {
    struct Entry {
        let output: ObjectIdentifier
        let time: CMTime
        let dropped: Bool
        let reason: AVCaptureOutput.DataDroppedReason
        let codes: [String]
        let duration: CMTime
    }

    private let collections = Mutex<[[Entry]]>([])
    private let slowFirst: Int
    private let release = DispatchSemaphore(value: 0)

    init(holdingFirst count: Int = 0) { slowFirst = count }

    func dataOutputSynchronizer(
        _ synchronizer: AVCaptureDataOutputSynchronizer, didOutput synchronizedDataCollection: AVCaptureSynchronizedDataCollection
    ) {
        var entries: [Entry] = []
        for output in synchronizedDataCollection {
            guard let data = synchronizedDataCollection[output] else { continue }
            let sample = data as? AVCaptureSynchronizedSampleBufferData
            let metadata = data as? AVCaptureSynchronizedMetadataObjectData
            entries.append(
                Entry(
                    output: ObjectIdentifier(output), time: data.timestamp, dropped: sample?.sampleBufferWasDropped ?? false,
                    reason: sample?.droppedReason ?? .none,
                    codes: metadata?.metadataObjects.compactMap { ($0 as? AVMetadataMachineReadableCodeObject)?.stringValue } ?? [],
                    duration: sample?.sampleBuffer.duration ?? .invalid))
        }
        let count = collections.withLock { $0.append(entries); return $0.count }
        if count == 1 && slowFirst > 0 { release.wait() }
    }

    func letGo() { release.signal() }
    var received: [[Entry]] { collections.withLock { $0 } }
}

@Suite(.serialized) struct AVCaptureDataOutputSynchronizerTests {
    @Test func videoAudioAndMetadataArriveTogetherByTime() throws {
        let controller = try #require(VirtualDevices.back.virtualCamera)
        defer { controller.restoreDefaults() }
        controller.showCode("synchronized", type: .qr, in: CGRect(x: 0.55, y: 0.3, width: 0.3, height: 0.4))
        let video = AVCaptureVideoDataOutput()
        let audio = AVCaptureAudioDataOutput()
        let metadata = AVCaptureMetadataOutput()
        // Delegates set before the synchronizer are replaced by it: this one must never be called.
        let bypassed = RecordingDelegate()
        video.setSampleBufferDelegate(bypassed, queue: DispatchQueue(label: "bypassed"))
        let session = try makeSession(devices: [VirtualDevices.back, VirtualDevices.microphone], outputs: [video, audio, metadata])
        metadata.metadataObjectTypes = [.qr]
        let synchronizer = AVCaptureDataOutputSynchronizer(dataOutputs: [video, audio, metadata])
        #expect(synchronizer.dataOutputs.count == 3)
        let recorder = CollectionRecorder()
        synchronizer.setDelegate(recorder, queue: DispatchQueue(label: "synchronized"))
        session.startRunning()
        #expect(waitUntil { recorder.received.filter { $0.contains { !$0.codes.isEmpty } }.count >= 3 })
        #expect(waitUntil { recorder.received.count >= 40 })
        session.stopRunning()
        #expect(bypassed.received.isEmpty)

        let videoID = ObjectIdentifier(video)
        let audioID = ObjectIdentifier(audio)
        let metadataID = ObjectIdentifier(metadata)
        var audioTimes: [CMTime] = []
        var lastVideo = CMTime.negativeInfinity
        for collection in recorder.received {
            if let frame = collection.first(where: { $0.output == videoID }) {
                #expect(frame.time > lastVideo, "collections come in time order")
                lastVideo = frame.time
                for entry in collection where entry.output == metadataID {
                    #expect(entry.time == frame.time)
                    #expect(entry.codes == ["synchronized"])
                }
                for entry in collection where entry.output == audioID {
                    #expect(entry.time.seconds < frame.time.seconds + 1.0 / 30 + 1e-6)
                }
            } else {
                // Audio that did not fit with a frame comes alone.
                #expect(collection.allSatisfy { $0.output == audioID })
            }
            audioTimes += collection.filter { $0.output == audioID }.map(\.time)
        }
        // No audio is lost: consecutive buffers follow each other without gaps.
        #expect(audioTimes.count >= 10)
        let durations = recorder.received.flatMap { $0 }.filter { $0.output == audioID }.map(\.duration)
        for index in audioTimes.indices.dropFirst() {
            #expect(abs((audioTimes[index] - audioTimes[index - 1] - durations[index - 1]).seconds) < 1e-6)
        }
    }

    @Test func twoVideoOutputsAreMatchedFrameByFrame() throws {
        let nv12 = AVCaptureVideoDataOutput()
        let bgra = AVCaptureVideoDataOutput()
        bgra.videoSettings = [kCVPixelBufferPixelFormatTypeKey as String: kCVPixelFormatType_32BGRA]
        let session = try makeSession(devices: [VirtualDevices.back], outputs: [nv12, bgra])
        let synchronizer = AVCaptureDataOutputSynchronizer(dataOutputs: [nv12, bgra])
        let recorder = CollectionRecorder()
        synchronizer.setDelegate(recorder, queue: DispatchQueue(label: "two videos"))
        session.startRunning()
        #expect(waitUntil { recorder.received.count >= 20 })
        session.stopRunning()
        let paired = recorder.received.filter { $0.count == 2 }
        #expect(paired.count >= recorder.received.count * 3 / 4, "most collections carry both outputs")
        for collection in paired {
            #expect(collection[0].time == collection[1].time)
        }
    }

    @Test func framesDroppedWhileTheDelegateIsBusyAreReportedWithTheirReason() throws {
        let video = AVCaptureVideoDataOutput()
        let session = try makeSession(devices: [VirtualDevices.back], outputs: [video])
        let synchronizer = AVCaptureDataOutputSynchronizer(dataOutputs: [video])
        let recorder = CollectionRecorder(holdingFirst: 1)
        synchronizer.setDelegate(recorder, queue: DispatchQueue(label: "slow"))
        session.startRunning()
        #expect(waitUntil { recorder.received.count == 1 })
        #expect(waitUntil { video.deliveryStatistics.droppedLate >= 5 })
        recorder.letGo()
        #expect(waitUntil { recorder.received.contains { $0.contains { $0.dropped } } })
        session.stopRunning()
        let drops = recorder.received.flatMap { $0 }.filter(\.dropped)
        #expect(!drops.isEmpty)
        #expect(drops.allSatisfy { $0.reason == .lateData })
    }

    @Test func anOutputOfAnotherKindTraps() async {
        await #expect(processExitsWith: .failure) {
            _ = AVCaptureDataOutputSynchronizer(dataOutputs: [AVCaptureMovieFileOutput()])
        }
    }
}
