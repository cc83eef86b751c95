import CLinuxMedia
import CaptureDrivers
import OpenCoreMedia
import Testing

/// A UVC-like camera's controls on the simulated kernel: what `AVCaptureDevice` may do with them, and the values
/// each request writes (read back from the kernel's side).
@Suite struct V4L2ControlTests {
    static func control(_ id: Int32, _ type: v4l2_ctrl_type, _ minimum: Int64, _ maximum: Int64, _ value: Int64)
        -> SimulatedV4L2Kernel.Control
    {
        SimulatedV4L2Kernel.Control(
            info: V4L2ControlInfo(
                id: UInt32(bitPattern: id), type: type.rawValue, name: "c\(id)", minimum: minimum, maximum: maximum,
                step: 1, defaultValue: value),
            value: value)
    }

    func webcam() -> SimulatedV4L2Kernel {
        var exposureAuto = Self.control(V4L2_CID_EXPOSURE_AUTO, V4L2_CTRL_TYPE_MENU, 0, 3, 3)
        exposureAuto.menu = [1: "Manual Mode", 3: "Aperture Priority Mode"]
        var flashMode = Self.control(V4L2_CID_FLASH_LED_MODE, V4L2_CTRL_TYPE_MENU, 0, 2, 0)
        flashMode.menu = [0: "Off", 2: "Torch"]
        return SimulatedV4L2Kernel(
            formats: [.discrete(.yuyv, [(640, 480)])],
            controls: [
                Self.control(V4L2_CID_FOCUS_AUTO, V4L2_CTRL_TYPE_BOOLEAN, 0, 1, 1),
                Self.control(V4L2_CID_FOCUS_ABSOLUTE, V4L2_CTRL_TYPE_INTEGER, 0, 250, 0),
                exposureAuto,
                Self.control(V4L2_CID_EXPOSURE_ABSOLUTE, V4L2_CTRL_TYPE_INTEGER, 3, 2047, 250),
                Self.control(V4L2_CID_GAIN, V4L2_CTRL_TYPE_INTEGER, 0, 255, 0),
                Self.control(V4L2_CID_AUTO_WHITE_BALANCE, V4L2_CTRL_TYPE_BOOLEAN, 0, 1, 1),
                Self.control(V4L2_CID_WHITE_BALANCE_TEMPERATURE, V4L2_CTRL_TYPE_INTEGER, 2000, 6500, 4000),
                Self.control(V4L2_CID_ZOOM_ABSOLUTE, V4L2_CTRL_TYPE_INTEGER, 100, 500, 100),
                flashMode,
                Self.control(V4L2_CID_FLASH_TORCH_INTENSITY, V4L2_CTRL_TYPE_INTEGER, 0, 100, 0),
            ])
    }

    @Test func capabilitiesFollowTheControlsTheCameraHas() throws {
        let camera = try makeCamera(webcam())
        let capabilities = camera.cameraControls.capabilities
        #expect(capabilities.focusModes == [.locked, .continuousAutoFocus])
        #expect(capabilities.isLensPositionSupported)
        #expect(capabilities.exposureModes == [.continuousAutoExposure, .custom, .locked])
        #expect(capabilities.exposureDurationRange == 0.0003...0.2047)
        #expect(capabilities.isoRange == 100...1600)
        #expect(capabilities.whiteBalanceModes == [.continuousAutoWhiteBalance, .locked])
        #expect(capabilities.isCustomWhiteBalanceGainsSupported)
        #expect(capabilities.hasTorch)
        #expect(!capabilities.hasFlash, "no flash mode in the menu and no strobe")
        guard case .video(let video) = camera.formats[0] else { Issue.record("not video"); return }
        #expect(video.maxZoomFactor == 5, "zoom_absolute 100...500 is 1x...5x")
        // The state read at discovery.
        let state = camera.cameraControls.state
        #expect(state.focusMode == .continuousAutoFocus)
        #expect(state.exposureMode == .continuousAutoExposure)
        #expect(abs(state.exposureDuration - 0.025) < 1e-9)
        #expect(state.whiteBalanceMode == .continuousAutoWhiteBalance)
    }

    @Test func requestsWriteTheMatchingControls() throws {
        let kernel = webcam()
        let controls = try makeCamera(kernel).cameraControls
        controls.apply(.lockFocus(lensPosition: 0.2), completion: nil)
        #expect(kernel.controlValue(V4L2_CID_FOCUS_AUTO) == 0)
        #expect(kernel.controlValue(V4L2_CID_FOCUS_ABSOLUTE) == 200, "lens position 0.2 is near: 80% of the range")
        #expect(controls.state.focusMode == .locked)
        #expect(abs(controls.state.lensPosition - 0.2) < 0.01)

        controls.apply(.customExposure(duration: 0.01, iso: 400), completion: nil)
        #expect(kernel.controlValue(V4L2_CID_EXPOSURE_AUTO) == Int64(V4L2_EXPOSURE_MANUAL.rawValue))
        #expect(kernel.controlValue(V4L2_CID_EXPOSURE_ABSOLUTE) == 100, "10 ms in 100 µs units")
        #expect(kernel.controlValue(V4L2_CID_GAIN) == 51, "ISO 400 is a fifth of 100...1600")
        #expect(controls.state.exposureMode == .custom)
        controls.apply(.exposureMode(.continuousAutoExposure), completion: nil)
        #expect(kernel.controlValue(V4L2_CID_EXPOSURE_AUTO) == Int64(V4L2_EXPOSURE_APERTURE_PRIORITY.rawValue))

        controls.apply(.lockWhiteBalance(ColorGains(red: 1, green: 1, blue: 1)), completion: nil)
        #expect(kernel.controlValue(V4L2_CID_AUTO_WHITE_BALANCE) == 0)
        #expect(kernel.controlValue(V4L2_CID_WHITE_BALANCE_TEMPERATURE) == 6500, "unity gains are daylight")
        #expect(controls.state.whiteBalanceMode == .locked)

        controls.apply(.zoomFactor(2.5), completion: nil)
        #expect(kernel.controlValue(V4L2_CID_ZOOM_ABSOLUTE) == 250)
        #expect(controls.state.videoZoomFactor == 2.5)

        controls.apply(.torch(.on, level: 0.5), completion: nil)
        #expect(kernel.controlValue(V4L2_CID_FLASH_LED_MODE) == Int64(V4L2_FLASH_LED_MODE_TORCH.rawValue))
        #expect(kernel.controlValue(V4L2_CID_FLASH_TORCH_INTENSITY) == 50)
        #expect(controls.state.torchMode == .on)
        controls.apply(.torch(.off, level: 0), completion: nil)
        #expect(kernel.controlValue(V4L2_CID_FLASH_LED_MODE) == Int64(V4L2_FLASH_LED_MODE_NONE.rawValue))
    }

    @Test func gainsAndTemperaturesRoundTrip() {
        let control = V4L2ControlInfo(
            id: 0, type: V4L2_CTRL_TYPE_INTEGER.rawValue, name: "t", minimum: 2000, maximum: 10000, step: 1,
            defaultValue: 6500)
        for kelvin: Int64 in [2800, 4000, 6500, 9000] {
            let gains = V4L2ControlSet.gains(fromTemperature: kelvin)
            #expect(min(gains.red, gains.green, gains.blue) == 1, "the smallest gain is 1, as Apple's")
            #expect(abs(V4L2ControlSet.temperature(fromGains: gains, control) - kelvin) <= 1)
        }
        #expect(V4L2ControlSet.gains(fromTemperature: 3000).blue > V4L2ControlSet.gains(fromTemperature: 3000).red)
    }
}
