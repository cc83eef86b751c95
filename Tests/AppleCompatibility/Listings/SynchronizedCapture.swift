// Depth-and-video style synchronized capture: one delegate gets each moment's video, audio and metadata together.
import OpenAVCaptureShim

final class SynchronizedCapture: NSObject, AVCaptureDataOutputSynchronizerDelegate, @unchecked Sendable {
    let videoDataOutput = AVCaptureVideoDataOutput()
    let audioDataOutput = AVCaptureAudioDataOutput()
    let metadataOutput = AVCaptureMetadataOutput()
    private var outputSynchronizer: AVCaptureDataOutputSynchronizer?
    private let dataOutputQueue = DispatchQueue(label: "synchronized.data.queue")

    func configure(_ session: AVCaptureSession) {
        for output in [videoDataOutput, audioDataOutput, metadataOutput] as [AVCaptureOutput] where session.canAddOutput(output) {
            session.addOutput(output)
        }
        if metadataOutput.availableMetadataObjectTypes.contains(.qr) {
            metadataOutput.metadataObjectTypes = [.qr]
        }
        let synchronizer = AVCaptureDataOutputSynchronizer(dataOutputs: [videoDataOutput, audioDataOutput, metadataOutput])
        synchronizer.setDelegate(self, queue: dataOutputQueue)
        outputSynchronizer = synchronizer
    }

    func dataOutputSynchronizer(
        _ synchronizer: AVCaptureDataOutputSynchronizer, didOutput synchronizedDataCollection: AVCaptureSynchronizedDataCollection
    ) {
        if let syncedVideo = synchronizedDataCollection.synchronizedData(for: videoDataOutput)
            as? AVCaptureSynchronizedSampleBufferData
        {
            if syncedVideo.sampleBufferWasDropped {
                print("video dropped: \(syncedVideo.droppedReason.rawValue)")
            } else if let pixelBuffer = CMSampleBufferGetImageBuffer(syncedVideo.sampleBuffer) {
                _ = CVPixelBufferGetWidth(pixelBuffer)
            }
        }
        if let syncedAudio = synchronizedDataCollection[audioDataOutput] as? AVCaptureSynchronizedSampleBufferData,
            !syncedAudio.sampleBufferWasDropped
        {
            _ = CMSampleBufferGetNumSamples(syncedAudio.sampleBuffer)
        }
        if let syncedMetadata = synchronizedDataCollection[metadataOutput] as? AVCaptureSynchronizedMetadataObjectData {
            for object in syncedMetadata.metadataObjects {
                print("\(object.type.rawValue) at \(syncedMetadata.timestamp.seconds)")
            }
        }
        for output in synchronizedDataCollection {
            _ = synchronizedDataCollection.synchronizedData(for: output)?.timestamp
        }
    }
}
