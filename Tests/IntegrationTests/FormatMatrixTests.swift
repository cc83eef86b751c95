import Foundation
import OpenAVCapture
import OpenAVCaptureTesting
import Synchronization
import Testing

import TestSupport

/// Every pixel format or codec of every virtual camera × every output: the frames each output gets carry the frame
/// index the camera wrote (read back after conversion, and after decoding for movies), and their colour bars match
/// the camera's own frame of the same index.
///
/// One session per camera format (the smallest size the camera offers it at), with a reference data output that
/// takes frames as they come, one data output per `availableVideoPixelFormatTypes` entry, a movie file output, and
/// a photo output; frames of each data output are also appended to an `AVAssetWriter` through a pixel buffer adaptor
/// of the same format. Colour is compared on the bars, frame for frame by index, in video-range BT.709 code values.
@Suite(.serialized) struct FormatMatrixTests {
    /// A camera format to test: the camera's uniqueID, its media subtype, and a name for messages.
    struct CameraFormat: CustomTestStringConvertible, Sendable {
        let uniqueID: String
        let subType: FourCharCode
        let name: String
        var testDescription: String { name }
    }

    /// Each distinct pixel format or codec of every virtual camera.
    static var cameraFormats: [CameraFormat] {
        let cameras = AVCaptureDevice.DiscoverySession(
            deviceTypes: [.builtInWideAngleCamera, .external], mediaType: .video, position: .unspecified
        ).devices
        var result: [CameraFormat] = []
        for camera in cameras {
            var seen = Set<FourCharCode>()
            for format in camera.formats where seen.insert(format.formatDescription.mediaSubType.rawValue).inserted {
                let subType = format.formatDescription.mediaSubType.rawValue
                result.append(
                    CameraFormat(
                        uniqueID: camera.uniqueID, subType: subType, name: "\(camera.localizedName) \(fourCC(subType))"))
            }
        }
        return result
    }

    /// What the outputs got, by output name: frame index → bar means.
    final class Observed: @unchecked Sendable {
        let frames = Mutex<[String: [UInt32: [PictureSampler.Sample]]]>([:])
        let unreadable = Mutex<[String: Int]>([:])
        /// The `kCVImageBufferYCbCrMatrixKey` attachments the reference frames carried.
        let matrixAttachments = Mutex<Set<String>>([])
        /// The matrix RGB outputs were made with: BT.601 for a JPEG camera (JFIF), BT.709 for the others.
        let matrix: PictureSampler.Matrix

        init(matrix: PictureSampler.Matrix) { self.matrix = matrix }

        func record(_ name: String, _ image: CVPixelBuffer, limit: Int) {
            if name == "reference" {
                let attachment = CVBufferCopyAttachment(image, kCVImageBufferYCbCrMatrixKey, nil) as? String
                matrixAttachments.withLock { _ = $0.insert(attachment ?? "none") }
            }
            guard frames.withLock({ ($0[name]?.count ?? 0) < limit }), let sampler = PictureSampler(image, matrix: matrix)
            else { return }
            guard let index = sampler.frameIndex else {
                // A flash frame carries no code; anything else unreadable is a failure the test reports.
                if !sampler.isFlash {
                    unreadable.withLock { $0[name, default: 0] += 1 }
                }
                return
            }
            let bars = sampler.barMeans
            frames.withLock { $0[name, default: [:]][index] = bars }
        }
    }

    /// A data output's delegate that samples each frame and appends it to a writer through an adaptor.
    final class Sink: NSObject, AVCaptureVideoDataOutputSampleBufferDelegate, @unchecked Sendable {
        let name: String
        let observed: Observed
        let writer: AdaptorWriter?
        init(name: String, observed: Observed, writer: AdaptorWriter?) {
            self.name = name
            self.observed = observed
            self.writer = writer
        }
        func captureOutput(
            _ output: AVCaptureOutput, didOutput sampleBuffer: CMSampleBuffer, from connection: AVCaptureConnection
        ) {
            guard let image = sampleBuffer.imageBuffer else { return }
            observed.record(name, image, limit: 12)
            writer?.append(image, at: sampleBuffer.presentationTimeStamp)
        }
    }

    /// An `AVAssetWriter` fed pixel buffers of one format through `AVAssetWriterInputPixelBufferAdaptor`.
    final class AdaptorWriter: @unchecked Sendable {
        let url: URL
        let writer: AVAssetWriter
        let adaptor: AVAssetWriterInputPixelBufferAdaptor
        let started = Mutex(false)

        init(url: URL, pixelFormat: OSType, width: Int, height: Int) throws {
            self.url = url
            writer = try AVAssetWriter(outputURL: url, fileType: .mov)
            let input = AVAssetWriterInput(
                mediaType: .video,
                outputSettings: [AVVideoCodecKey: AVVideoCodecType.h264, AVVideoWidthKey: width, AVVideoHeightKey: height])
            input.expectsMediaDataInRealTime = true
            adaptor = AVAssetWriterInputPixelBufferAdaptor(
                assetWriterInput: input,
                sourcePixelBufferAttributes: [kCVPixelBufferPixelFormatTypeKey: NSNumber(value: pixelFormat)])
            writer.add(input)
        }

        func append(_ image: CVPixelBuffer, at time: CMTime) {
            let first = started.withLock { started in
                defer { started = true }
                return !started
            }
            if first {
                guard writer.startWriting() else { return }
                writer.startSession(atSourceTime: time)
            }
            if adaptor.assetWriterInput.isReadyForMoreMediaData { adaptor.append(image, withPresentationTime: time) }
        }

        func finish() async {
            guard started.withLock({ $0 }) else { return }
            adaptor.assetWriterInput.markAsFinished()
            await writer.finishWriting()
        }
    }

    @Test(arguments: cameraFormats)
    func everyOutputGetsTheFramesInItsFormat(_ cameraFormat: CameraFormat) async throws {
        guard MediaTool.available([.ffmpeg, .ffprobe], for: "format matrix") else { return }
        let camera = try #require(AVCaptureDevice(uniqueID: cameraFormat.uniqueID))
        let format = try #require(
            camera.formats.filter { $0.formatDescription.mediaSubType.rawValue == cameraFormat.subType }
                .min { $0.formatDescription.dimensions.width < $1.formatDescription.dimensions.width })
        let width = Int(format.formatDescription.dimensions.width)
        let height = Int(format.formatDescription.dimensions.height)
        // JPEG's numbers are BT.601 (JFIF); the virtual cameras render BT.709.
        let isJPEG = cameraFormat.subType == FourCharCode(0x6A70_6567)  // 'jpeg'
        let observed = Observed(matrix: isJPEG ? .bt601 : .bt709)

        let session = AVCaptureSession()
        session.beginConfiguration()
        session.sessionPreset = .inputPriority
        let input = try AVCaptureDeviceInput(device: camera)
        try #require(session.canAddInput(input))
        session.addInput(input)
        try camera.lockForConfiguration()
        camera.activeFormat = format
        camera.unlockForConfiguration()

        // The reference: frames as the device (or the decode stage) gives them.
        var delegates: [Sink] = []
        let queues = (0...AVCaptureVideoDataOutput().availableVideoPixelFormatTypes.count).map {
            DispatchQueue(label: "matrix \($0)")
        }
        let reference = AVCaptureVideoDataOutput()
        delegates.append(Sink(name: "reference", observed: observed, writer: nil))
        reference.setSampleBufferDelegate(delegates.last!, queue: queues[0])
        session.addOutput(reference)
        var writers: [(OSType, AdaptorWriter)] = []
        // Pixel buffer adaptors at SD sizes only: what they convert does not depend on the camera, and nine HD
        // encoders beside the rest would only measure how far a debug build falls behind.
        let withAdaptors = width * height <= 640 * 480
        for (offset, pixelFormat) in reference.availableVideoPixelFormatTypes.enumerated() {
            let output = AVCaptureVideoDataOutput()
            output.videoSettings = [kCVPixelBufferPixelFormatTypeKey: NSNumber(value: pixelFormat)]
            let writer =
                withAdaptors
                ? try AdaptorWriter(
                    url: try scratchURL("matrix-adaptor-\(fourCC(pixelFormat)).mov"), pixelFormat: pixelFormat,
                    width: width, height: height) : nil
            if let writer { writers.append((pixelFormat, writer)) }
            delegates.append(Sink(name: fourCC(pixelFormat), observed: observed, writer: writer))
            output.setSampleBufferDelegate(delegates.last!, queue: queues[offset + 1])
            try #require(session.canAddOutput(output))
            session.addOutput(output)
        }
        let movie = AVCaptureMovieFileOutput()
        session.addOutput(movie)
        let photo = AVCapturePhotoOutput()
        session.addOutput(photo)
        session.commitConfiguration()

        // Stepped a frame at a time, every output caught up before the next: each output sees every frame, as on
        // a machine that keeps up with ten outputs, however loaded this one is.
        try await withManualClock([camera]) { clock in
            session.startRunning()
            defer { session.stopRunning() }
            let movieURL = try scratchURL("matrix-\(fourCC(cameraFormat.subType)).mov")
            let recording = MovieRecordingDelegate()
            movie.startRecording(to: movieURL, recordingDelegate: recording)
            // The photo is taken from a frame to come: the clock steps on while it is being taken.
            let photoRecorder = PhotoRecorder()
            photo.capturePhoto(with: AVCapturePhotoSettings(), delegate: photoRecorder)
            // Two seconds of movie.
            let frameTime = camera.activeVideoMinFrameDuration
            while movie.recordedDuration.seconds < 2 {
                guard clock.elapsed.seconds < 10, clock.advance(by: frameTime, step: frameTime, settling: session.outputs)
                else {
                    Issue.record("2 s never recorded: the outputs stopped catching up at \(clock.elapsed.seconds) s")
                    break
                }
            }
            #expect(recording.waitForStart())
            let photoResult = photoRecorder.waitForFinish() ? photoRecorder.photos.first : nil
            movie.stopRecording()
            #expect(recording.waitForFinish(timeout: 30), "the movie did not finish")
            #expect(recording.error == nil, "\(String(describing: recording.error))")
            session.stopRunning()
            for (_, writer) in writers { await writer.finish() }

            // The frames say what their numbers mean: JPEG's BT.601, the virtual cameras' BT.709.
            #expect(
                observed.matrixAttachments.withLock { $0 }
                    == [isJPEG ? kCVImageBufferYCbCrMatrix_ITU_R_601_4 : kCVImageBufferYCbCrMatrix_ITU_R_709_2])
            // Data outputs: each got frames in its own format, their indices readable, their bars the reference's.
            let frames = observed.frames.withLock { $0 }
            let referenceFrames = try #require(frames["reference"], "the reference output got no readable frame")
            #expect(observed.unreadable.withLock { $0 }.isEmpty, "frames whose index could not be read")
            for pixelFormat in reference.availableVideoPixelFormatTypes {
                let name = fourCC(pixelFormat)
                let got = frames[name] ?? [:]
                #expect(got.count >= 3, "\(name): only \(got.count) readable frames")
                let common = got.keys.filter { referenceFrames[$0] != nil }
                #expect(!common.isEmpty, "\(name): no frame in common with the reference")
                for index in common {
                    let difference = PictureSampler.largestDifference(got[index]!, referenceFrames[index]!)
                    // RGB holds the colour in other quantization steps: a round trip may move a code value by 3.
                    let tolerance = [kCVPixelFormatType_32BGRA, kCVPixelFormatType_32ARGB, kCVPixelFormatType_24RGB]
                        .contains(pixelFormat) ? 3.0 : 2.0
                    #expect(difference <= tolerance, "\(name): frame \(index)'s bars differ by \(difference) code values")
                }
            }

            // The movie and the adaptor movies: every decoded frame's index, consecutive, and the bars of the frames
            // the reference also saw.
            // Every frame the camera made while recording is in the movie, or counted as dropped with its reason (a
            // loaded machine makes the encoder fall behind: `FrameWasLate`).
            try checkMovie(
                movieURL, name: "movie file output", reference: referenceFrames, minimumFrames: 3,
                allowedMissing: movie.recordingStatistics.totalDroppedVideoFrames)
            // …tagged with the matrix its numbers were made with.
            let movieVideo = try #require(try FFprobeReport(movieURL).stream("video"))
            #expect(movieVideo["color_space"] as? String == (isJPEG ? "smpte170m" : "bt709"), "\(movieVideo)")
            for (pixelFormat, writer) in writers {
                // An adaptor's movie round-trips the very frames appended to it: RGB in RGB, the rest in Y'CbCr.
                let isRGB = [kCVPixelFormatType_32BGRA, kCVPixelFormatType_32ARGB, kCVPixelFormatType_24RGB].contains(pixelFormat)
                try checkMovie(
                    writer.url, name: "adaptor \(fourCC(pixelFormat))", reference: frames[fourCC(pixelFormat)] ?? [:],
                    minimumFrames: 3, decodeToRGB: isRGB, matrix: observed.matrix)
            }

            // The photo: one of the stream's frames, its index readable after JPEG decoding.
            let photoData = try #require(photoResult?.fileDataRepresentation(), "no photo: \(photoRecorder.events)")
            let photoURL = try scratchURL("matrix-\(fourCC(cameraFormat.subType)).jpg")
            try photoData.write(to: photoURL)
            let decodedPhoto = try decodeFrames(photoURL)
            #expect(decodedPhoto.count == 1)
            #expect(decodedPhoto.first.map { $0.frameIndex != nil || $0.isFlash } == true, "the photo's index is unreadable")
        }
    }

    private func checkMovie(
        _ url: URL, name: String, reference: [UInt32: [PictureSampler.Sample]], minimumFrames: Int,
        allowedMissing: Int? = nil, decodeToRGB: Bool = false, matrix: PictureSampler.Matrix = .bt709
    ) throws {
        #expect(try ffmpegDecodeErrors(url).isEmpty, "\(name): decode errors")
        let decoded = try decodeFrames(url, toRGB: decodeToRGB, matrix: matrix)
        #expect(decoded.count >= minimumFrames, "\(name): \(decoded.count) frames")
        let indices = decoded.map { $0.frameIndex }
        #expect(indices.compactMap { $0 }.count + decoded.filter(\.isFlash).count == decoded.count, "\(name): unreadable frames")
        // Written frames are consecutive (a data output may leave some out as late; their adaptor movies then skip).
        let readable = indices.compactMap { $0 }
        #expect(zip(readable, readable.dropFirst()).allSatisfy { $0 < $1 }, "\(name): indices out of order")
        if let allowedMissing {
            let missing = indexSteps(indices).map(\.step).reduce(0, +)
            #expect(missing <= allowedMissing, "\(name): \(missing) frames missing, \(allowedMissing) counted as dropped")
        }
        var compared = 0
        for frame in decoded {
            guard let index = frame.frameIndex, let expected = reference[index] else { continue }
            let difference = PictureSampler.largestDifference(frame.barMeans, expected)
            #expect(difference <= 2, "\(name): frame \(index)'s bars differ by \(difference) code values after decoding")
            compared += 1
        }
        #expect(compared > 0, "\(name): no decoded frame in common with the reference")
    }

    /// Every frame of `url` decoded by ffmpeg to 4:2:0 planes in the file's own range, or to RGB (ffmpeg reads the
    /// file's colour tags to convert).
    private func decodeFrames(_ url: URL, toRGB: Bool = false, matrix: PictureSampler.Matrix = .bt709) throws
        -> [PictureSampler]
    {
        let probe = try FFprobeReport(url)
        let video = try #require(probe.stream("video"))
        let width = try #require(video["width"] as? Int)
        let height = try #require(video["height"] as? Int)
        let fullRange = (video["color_range"] as? String) == "pc" || (video["pix_fmt"] as? String)?.hasPrefix("yuvj") == true
        let result = try MediaTool.ffmpeg.run(
            [
                "-nostdin", "-v", "error", "-i", url.path, "-map", "0:v:0", "-fps_mode", "passthrough", "-f", "rawvideo",
                "-pix_fmt", toRGB ? "rgb24" : fullRange ? "yuvj420p" : "yuv420p", "-",
            ])
        try #require(result.status == 0, "ffmpeg failed: \(result.error)")
        if toRGB {
            let frameSize = width * height * 3
            let bytes = [UInt8](result.output)
            return stride(from: 0, to: bytes.count - frameSize + 1, by: frameSize).map {
                PictureSampler(rgb24: Array(bytes[$0..<$0 + frameSize]), width: width, height: height, matrix: matrix)
            }
        }
        let frameSize = width * height + 2 * ((width + 1) / 2) * ((height + 1) / 2)
        let bytes = [UInt8](result.output)
        return stride(from: 0, to: bytes.count - frameSize + 1, by: frameSize).map {
            PictureSampler(yuv420p: Array(bytes[$0..<$0 + frameSize]), width: width, height: height, isFullRange: fullRange)
        }
    }
}

/// A four-character code as text ('420v'), or its number when it is not printable.
func fourCC(_ code: FourCharCode) -> String {
    let bytes = (0..<4).map { UInt8((code >> (24 - 8 * $0)) & 0xFF) }
    guard bytes.allSatisfy({ (0x20..<0x7F).contains($0) }) else { return "0x" + String(code, radix: 16) }
    return String(decoding: bytes, as: UTF8.self)
}
