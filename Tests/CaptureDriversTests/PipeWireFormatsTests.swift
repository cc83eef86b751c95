import CPipeWire
import CaptureDrivers
import OpenCoreMedia
import OpenCoreVideo
import Testing

/// What a node's EnumFormat params become, from params as the shim flattens them (the parsing itself is exercised
/// against real nodes in PipeWireCaptureTests).
@Suite("PipeWire formats")
struct PipeWireFormatsTests {
    /// A flattened param: raw pixels or a codec, sizes and rates listed or as ranges (minimum, maximum, preferred).
    static func param(
        media: CPipeWire_Media, pixels: [CPipeWire_Pixels] = [], sizes: [(UInt32, UInt32)], sizeRange: Bool = false,
        rates: [(UInt32, UInt32)], rateRange: Bool = false
    ) -> CPipeWire_Format {
        var format = CPipeWire_Format()
        format.media = media
        withUnsafeMutableBytes(of: &format.pixels) { raw in
            for (index, value) in pixels.enumerated() { raw.storeBytes(of: value, toByteOffset: index * 4, as: CPipeWire_Pixels.self) }
        }
        format.pixels_count = UInt32(pixels.count)
        store(sizes, first: &format.widths, second: &format.heights)
        format.sizes_count = UInt32(sizes.count)
        format.size_is_range = sizeRange
        store(rates, first: &format.rate_nums, second: &format.rate_dens)
        format.rates_count = UInt32(rates.count)
        format.rate_is_range = rateRange
        return format
    }

    /// Pairs into the shim's two parallel C arrays (imported as tuples).
    static func store<Tuple>(_ pairs: [(UInt32, UInt32)], first: inout Tuple, second: inout Tuple) {
        withUnsafeMutableBytes(of: &first) { firsts in
            withUnsafeMutableBytes(of: &second) { seconds in
                for (index, pair) in pairs.enumerated() {
                    firsts.storeBytes(of: pair.0, toByteOffset: index * 4, as: UInt32.self)
                    seconds.storeBytes(of: pair.1, toByteOffset: index * 4, as: UInt32.self)
                }
            }
        }
    }

    static func videos(_ formats: [DeviceFormat]) -> [VideoFormat] {
        formats.compactMap { if case .video(let video) = $0 { video } else { nil } }
    }

    @Test("a V4L2 node's modes: one format per pixel format and size, raw before MJPEG, sizes ascending")
    func modesOfAWebcam() {
        let params = [
            Self.param(media: CPipeWire_MEDIA_VIDEO_MJPG, sizes: [(1280, 720)], rates: [(30, 1), (15, 1)]),
            Self.param(media: CPipeWire_MEDIA_VIDEO_RAW, pixels: [CPipeWire_PIXELS_YUY2], sizes: [(1280, 720)], rates: [(10, 1)]),
            Self.param(media: CPipeWire_MEDIA_VIDEO_RAW, pixels: [CPipeWire_PIXELS_YUY2], sizes: [(640, 480)], rates: [(30, 1)]),
        ]
        let videos = Self.videos(PipeWireFormats.videoFormats(from: params))
        #expect(videos.map { "\($0.width)x\($0.height)" } == ["640x480", "1280x720", "1280x720"])
        #expect(videos.map(\.mediaSubType) == [
            kCVPixelFormatType_422YpCbCr8_yuvs, kCVPixelFormatType_422YpCbCr8_yuvs, kCMVideoCodecType_JPEG,
        ])
        #expect(videos[2].frameDurationRanges.map(\.maxFrameRate) == [30, 15])
        #expect(videos[1].maxFrameRate == 10)
    }

    @Test("ranges: the common sizes inside, plus the preferred one; a rate range is one duration range")
    func rangesOfAGStreamerSource() {
        let params = [
            Self.param(
                media: CPipeWire_MEDIA_VIDEO_RAW, pixels: [CPipeWire_PIXELS_NV12, CPipeWire_PIXELS_I420],
                sizes: [(1, 1), (1920, 1080), (800, 600)], sizeRange: true, rates: [(0, 1), (60, 1), (30, 1)],
                rateRange: true)
        ]
        let videos = Self.videos(PipeWireFormats.videoFormats(from: params))
        let nv12 = videos.filter { $0.mediaSubType == kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange }
        #expect(nv12.map { "\($0.width)x\($0.height)" } == ["320x240", "640x480", "800x600", "1280x720", "1920x1080"])
        #expect(videos.filter { $0.mediaSubType == kCVPixelFormatType_420YpCbCr8Planar }.count == 5)
        #expect(nv12[0].frameDurationRanges.count == 1)
        #expect(nv12[0].maxFrameRate == 60)
        #expect(nv12[0].frameDurationRanges[0].minFrameRate == 1)
    }

    @Test("a chosen format becomes the fixed request: 30000/1001 stays that fraction")
    func requestOfAFormat() throws {
        let video = VideoFormat(
            width: 640, height: 480, mediaSubType: kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange,
            frameDurationRanges: [FrameDurationRange(minFrameRate: 1, maxFrameRate: 30)], fieldOfView: 0,
            maxZoomFactor: 1)
        let request = try #require(
            PipeWireFormats.streamRequest(for: .video(video), frameDuration: CMTime(value: 1001, timescale: 30000)))
        #expect(request.media == CPipeWire_MEDIA_VIDEO_RAW)
        #expect(request.pixels == CPipeWire_PIXELS_NV12)
        #expect((request.width, request.height) == (640, 480))
        #expect((request.rate_num, request.rate_den) == (30000, 1001))
    }

    @Test("a microphone is offered in float and 16-bit at the node's rate and channels")
    func microphoneFormats() {
        var param = CPipeWire_Format()
        param.media = CPipeWire_MEDIA_AUDIO_RAW
        param.audio_rate = 44_100
        param.audio_channels = 1
        let node = PipeWireNode(id: 7, properties: ["media.class": "Audio/Source"])
        let formats = PipeWireFormats.audioFormats(from: [param], node: node)
        #expect(formats == [
            .audio(AudioFormat(sampleRate: 44_100, channels: 1, sampleFormat: .float32)),
            .audio(AudioFormat(sampleRate: 44_100, channels: 1, sampleFormat: .int16)),
        ])
        // A node whose ports leave rate and channels open: its properties, else 48 kHz stereo.
        let open = PipeWireFormats.audioFormats(from: [], node: node)
        #expect(open.first == .audio(AudioFormat(sampleRate: 48_000, channels: 2, sampleFormat: .float32)))
    }

    @Test("a node names the raw device it reads, and its identity comes from its path")
    func nodeIdentity() {
        let webcam = PipeWireNode(
            id: 40,
            properties: [
                "media.class": "Video/Source", "object.path": "v4l2:/dev/video2", "api.v4l2.path": "/dev/video2",
                "node.description": "HD Webcam (V4L2)", "node.name": "v4l2_input.pci-0000_00_14.0-usb-0_1_1.0",
            ])
        #expect(webcam.rawDeviceKey == "v4l2:/dev/video2")
        #expect(webcam.uniqueID == "pipewire:v4l2:/dev/video2")
        #expect(webcam.localizedName == "HD Webcam (V4L2)")
        #expect(webcam.capturedMedia == .video)
        let microphone = PipeWireNode(
            id: 41,
            properties: [
                "media.class": "Audio/Source", "device.api": "alsa", "api.alsa.card": "1",
                "object.path": "alsa:pcm:1:hw:1,0:capture", "node.name": "alsa_input.usb-Webcam-00.analog-stereo",
            ])
        #expect(microphone.rawDeviceKey == "alsa:card:1")
        #expect(microphone.localizedName == "alsa_input.usb-Webcam-00.analog-stereo")
        let unknown = PipeWireNode(
            id: 44,
            properties: [
                "media.class": "Video/Source", "node.description": "Unknown device (V4L2)",
                "api.v4l2.cap.card": "OpenAV Test Webcam: OpenAV Test",
            ])
        #expect(unknown.localizedName == "OpenAV Test Webcam: OpenAV Test", "udev's placeholder gives way to the card")
        // What the registry's global event gives (no device.api, no api.* keys): the object path says it all.
        let announced = PipeWireNode(
            id: 45, properties: ["media.class": "Audio/Source", "object.path": "alsa:pcm:2:front:2:capture"])
        #expect(announced.rawDeviceKey == "alsa:card:2")
        let announcedCamera = PipeWireNode(id: 46, properties: ["object.path": "v4l2:/dev/video4"])
        #expect(announcedCamera.v4l2Path == "/dev/video4" && announcedCamera.rawDeviceKey == "v4l2:/dev/video4")
        let monitor = PipeWireNode(id: 42, properties: ["media.class": "Audio/Sink"])
        #expect(monitor.capturedMedia == nil)
        let libcamera = PipeWireNode(
            id: 43, properties: ["media.class": "Video/Source", "object.path": "libcamera:/base/soc/i2c0mux/imx708@1a"])
        #expect(libcamera.rawDeviceKey == nil)
    }
}
