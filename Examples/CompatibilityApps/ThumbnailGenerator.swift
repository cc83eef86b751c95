// A gallery's thumbnail strip: an image generator on a background queue takes pictures at even times through a
// clip with copyCGImage(at:actualTime:), the call apps have used since iOS 4, and saves each one's pixels.
import OpenAVCaptureShim

final class ThumbnailGenerator: @unchecked Sendable {
    private let asset: AVURLAsset
    private let generator: AVAssetImageGenerator
    private let thumbnailQueue = DispatchQueue(label: "thumbnail queue", qos: .utility)

    init(url: URL) {
        asset = AVURLAsset(url: url, options: [AVURLAssetPreferPreciseDurationAndTimingKey: true])
        generator = AVAssetImageGenerator(asset: asset)
        generator.appliesPreferredTrackTransform = true
        generator.maximumSize = CGSize(width: 320, height: 320)
        // Exact frames, not the nearest key frame: the strip must show what plays at each time.
        generator.requestedTimeToleranceBefore = .zero
        generator.requestedTimeToleranceAfter = .zero
    }

    /// `count` thumbnails at 0, 1/count, 2/count … of the duration, saved as PPM files in `directory`; the times of
    /// the frames they are, in seconds.
    func makeThumbnails(count: Int, in directory: URL) async throws -> [Double] {
        let duration = try await asset.load(.duration)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let times = (0..<count).map { CMTimeMultiplyByFloat64(duration, multiplier: Double($0) / Double(count)) }
        return try await withCheckedThrowingContinuation { continuation in
            thumbnailQueue.async { [generator] in
                do {
                    var actualTimes: [Double] = []
                    for (index, time) in times.enumerated() {
                        var actualTime = CMTime.zero
                        let image = try generator.copyCGImage(at: time, actualTime: &actualTime)
                        try Self.ppm(of: image).write(to: directory.appendingPathComponent("thumbnail-\(index).ppm"))
                        actualTimes.append(actualTime.seconds)
                    }
                    continuation.resume(returning: actualTimes)
                } catch {
                    continuation.resume(throwing: error)
                }
            }
        }
    }

    /// The image's premultiplied BGRA pixels (opaque here) as an RGB PPM.
    private static func ppm(of image: CGImage) throws -> Data {
        guard image.bitsPerPixel == 32, let pixels = image.dataProvider?.data, let bytes = CFDataGetBytePtr(pixels)
        else { throw AppFailure("the thumbnail is not 32-bit") }
        var data = Data("P6\n\(image.width) \(image.height)\n255\n".utf8)
        for y in 0..<image.height {
            let row = bytes + y * image.bytesPerRow
            for x in 0..<image.width {
                data.append(contentsOf: [row[x * 4 + 2], row[x * 4 + 1], row[x * 4]])
            }
        }
        return data
    }

    /// `compat-apps thumbnail-generator IN-MOVIE OUT-DIRECTORY COUNT`: the frames' times as JSON on standard output.
    static func main(_ arguments: [String]) async throws {
        let arguments = Arguments(arguments)
        let generator = ThumbnailGenerator(url: try arguments.url(0, "the movie"))
        let times = try await generator.makeThumbnails(
            count: try arguments.integer(2, "COUNT"), in: try arguments.url(1, "the directory for the thumbnails"))
        print(String(decoding: try JSONSerialization.data(withJSONObject: times), as: UTF8.self))
    }
}
