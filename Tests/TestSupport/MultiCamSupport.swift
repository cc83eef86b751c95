// What the multi-camera tests share: the virtual webcam, a camera's format chosen by size and rate (and put back),
// and AVMultiCamPiP's way of connecting a camera to an output by hand.

import Foundation
import OpenAVCapture
import Testing

extension VirtualDevices {
    /// "Virtual USB Webcam": YUYV and MJPEG at 30 and 15 fps.
    public static var webcam: AVCaptureDevice { AVCaptureDevice(uniqueID: "virtual:usb-webcam")! }
}

/// Sets `camera`'s first format of that size (and pixel format, if given) at `framesPerSecond`, and returns what puts
/// the camera's format and frame duration back (the devices are process-wide).
public func useFormat(
    _ camera: AVCaptureDevice, width: Int32, height: Int32, pixelFormat: OSType? = nil, framesPerSecond: Int32 = 30
) throws -> () -> Void {
    let format = try #require(
        camera.formats.first { format in
            let size = format.formatDescription.dimensions
            return size.width == width && size.height == height
                && (pixelFormat.map { $0 == format.formatDescription.mediaSubType.rawValue } ?? true)
                && format.videoSupportedFrameRateRanges.contains {
                    Double(framesPerSecond) >= $0.minFrameRate && Double(framesPerSecond) <= $0.maxFrameRate
                }
        }, "\(camera.localizedName) has no \(width)x\(height)@\(framesPerSecond)")
    let (oldFormat, oldDuration) = (camera.activeFormat, camera.activeVideoMinFrameDuration)
    try camera.lockForConfiguration()
    camera.activeFormat = format
    camera.activeVideoMinFrameDuration = CMTime(value: 1, timescale: framesPerSecond)
    camera.activeVideoMaxFrameDuration = CMTime(value: 1, timescale: framesPerSecond)
    camera.unlockForConfiguration()
    return {
        guard (try? camera.lockForConfiguration()) != nil else { return }
        camera.activeFormat = oldFormat
        camera.activeVideoMinFrameDuration = oldDuration
        camera.activeVideoMaxFrameDuration = oldDuration
        camera.unlockForConfiguration()
    }
}

/// Connects `input`'s video port to `output` by hand, as AVMultiCamPiP does; fails the test when the session refuses.
@discardableResult
public func connectCamera(
    _ input: AVCaptureDeviceInput, to output: AVCaptureOutput, in session: AVCaptureSession
) throws -> AVCaptureConnection {
    let port = try #require(
        input.ports(
            for: .video, sourceDeviceType: input.device.deviceType, sourceDevicePosition: input.device.position
        ).first)
    let connection = AVCaptureConnection(inputPorts: [port], output: output)
    try #require(session.canAddConnection(connection), "the session refuses \(input.device.localizedName) → \(output)")
    session.addConnection(connection)
    return connection
}
