// Output subclasses that override Apple's members: a movie output that names its files, a photo output that counts
// captures, a video data output that remembers its delegate, a metadata output that narrows the types asked for.
import OpenAVCaptureShim

final class NamingMovieFileOutput: AVCaptureMovieFileOutput, @unchecked Sendable {
    private(set) var startedURLs: [URL] = []
    private(set) var stopCount = 0

    override func startRecording(
        to outputFileURL: URL, recordingDelegate delegate: AVCaptureFileOutputRecordingDelegate
    ) {
        startedURLs.append(outputFileURL)
        super.startRecording(to: outputFileURL, recordingDelegate: delegate)
    }

    override func stopRecording() {
        stopCount += 1
        super.stopRecording()
    }

    override var isRecording: Bool { super.isRecording }

    override var movieFragmentInterval: CMTime {
        get { super.movieFragmentInterval }
        set { super.movieFragmentInterval = newValue }
    }
}

final class CountingPhotoOutput: AVCapturePhotoOutput, @unchecked Sendable {
    private(set) var captures = 0

    override func capturePhoto(with settings: AVCapturePhotoSettings, delegate: AVCapturePhotoCaptureDelegate) {
        captures += 1
        super.capturePhoto(with: settings, delegate: delegate)
    }

    override var supportedFlashModes: [AVCaptureDevice.FlashMode] {
        super.supportedFlashModes.filter { $0 != .auto }
    }
}

final class RememberingVideoDataOutput: AVCaptureVideoDataOutput, @unchecked Sendable {
    private(set) var delegateChanges = 0

    override func setSampleBufferDelegate(
        _ sampleBufferDelegate: AVCaptureVideoDataOutputSampleBufferDelegate?,
        queue sampleBufferCallbackQueue: DispatchQueue?
    ) {
        delegateChanges += 1
        super.setSampleBufferDelegate(sampleBufferDelegate, queue: sampleBufferCallbackQueue)
    }

    override var alwaysDiscardsLateVideoFrames: Bool {
        get { super.alwaysDiscardsLateVideoFrames }
        set { super.alwaysDiscardsLateVideoFrames = newValue }
    }

    override var videoSettings: [String: Any]! {
        get { super.videoSettings }
        set { super.videoSettings = newValue }
    }
}

final class QRCodeOnlyMetadataOutput: AVCaptureMetadataOutput, @unchecked Sendable {
    override var availableMetadataObjectTypes: [AVMetadataObject.ObjectType] {
        super.availableMetadataObjectTypes.filter { $0 == .qr }
    }

    override func setMetadataObjectsDelegate(
        _ objectsDelegate: AVCaptureMetadataOutputObjectsDelegate?, queue objectsCallbackQueue: DispatchQueue?
    ) {
        super.setMetadataObjectsDelegate(objectsDelegate, queue: objectsCallbackQueue)
    }
}

final class TrackingAudioDataOutput: AVCaptureAudioDataOutput, @unchecked Sendable {
    override func setSampleBufferDelegate(
        _ sampleBufferDelegate: AVCaptureAudioDataOutputSampleBufferDelegate?,
        queue sampleBufferCallbackQueue: DispatchQueue?
    ) {
        super.setSampleBufferDelegate(sampleBufferDelegate, queue: sampleBufferCallbackQueue)
    }
}

final class OrientedInput: AVCaptureDeviceInput, @unchecked Sendable {
    override var device: AVCaptureDevice { super.device }
}
