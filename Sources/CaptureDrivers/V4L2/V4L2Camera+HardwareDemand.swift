import OpenCoreMedia

extension V4L2Camera {
    /// The configuration's pixel rate and encoding, and for a USB camera what it reserves of its bus: the payload
    /// estimated from the format (`estimatedPayloadBytesPerInterval`) carried by the smallest alternate setting of
    /// the camera's streaming interface that holds it.
    package func hardwareDemand(for configuration: StreamConfiguration) -> HardwareDemand {
        var demand = HardwareDemand(pixelRateOf: configuration)
        guard let usb, case .video(let video) = configuration.format,
            let index = formats.firstIndex(of: configuration.format)
        else { return demand }
        let payload = Self.estimatedPayloadBytesPerInterval(
            pixelFormat: pixelFormats[index], width: Int(video.width), height: Int(video.height),
            framesPerSecond: demand.pixelsPerSecond / (Double(video.width) * Double(video.height)), speed: usb.speed)
        demand.usb = USBBusDemand(payloadBytesPerInterval: payload, attachment: usb)
        return demand
    }

    /// The payload a UVC camera sends per bus interval for a format: the frame's bytes times the frame rate, spread
    /// over the bus intervals of a second, plus a 12-byte payload header. The camera itself says how much it wants
    /// (`dwMaxPayloadTransferSize`, answered to the driver's probe at stream-on, which user space never sees), so
    /// this is the least it can ask; many cameras ask more. A compressed format's frames vary with the picture:
    /// MJPEG is counted at 4 bits a pixel (a webcam's JPEG at high quality, a quarter of YUYV), H.264 at 1.
    package static func estimatedPayloadBytesPerInterval(
        pixelFormat: V4L2PixelFormat, width: Int, height: Int, framesPerSecond: Double, speed: USBSpeed
    ) -> Double {
        let bytesPerSecond = Double(width * height) * bitsPerPixel(pixelFormat) / 8 * framesPerSecond
        return bytesPerSecond / speed.busIntervalsPerSecond + 12
    }

    /// Bits per pixel on the wire: exact for raw formats, an estimate for compressed ones.
    static func bitsPerPixel(_ pixelFormat: V4L2PixelFormat) -> Double {
        switch pixelFormat {
        case .grey: 8
        case .nv12, .nv12m, .yuv420, .yuv420m: 12
        case .rgb24, .bgr24, .p010: 24
        case .mjpeg, .jpeg: 4
        case .h264: 1
        default: 16  // YUYV, UYVY and the other packed 4:2:2 formats most UVC cameras send
        }
    }
}
