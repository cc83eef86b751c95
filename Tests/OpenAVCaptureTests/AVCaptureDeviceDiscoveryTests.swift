import OpenAVCapture
import Testing

/// Discovery, identity and formats of the virtual devices, through Apple's API. `make test` runs with
/// `OPENAV_DEVICES=virtual`; tests that need another selection run in a child process (exit tests).
@Suite struct AVCaptureDeviceDiscoveryTests {
    @Test func defaultDevicesAreTheVirtualOnesWhenNoHardwareIsShown() throws {
        let camera = try #require(AVCaptureDevice.default(for: .video))
        #expect(camera.localizedName == "Virtual Back Camera")
        #expect(camera.position == .back)
        #expect(camera.deviceType == .builtInWideAngleCamera)
        #expect(camera.hasMediaType(.video) && !camera.hasMediaType(.audio))
        let microphone = try #require(AVCaptureDevice.default(for: .audio))
        #expect(microphone.localizedName == "Virtual Microphone")
        #expect(microphone.deviceType == .microphone)
        #expect(AVCaptureDevice.default(for: .muxed) == nil)
    }

    @Test func discoverySessionFiltersByTypeMediaAndPosition() {
        let front = AVCaptureDevice.DiscoverySession(
            deviceTypes: [.builtInWideAngleCamera], mediaType: .video, position: .front
        ).devices
        #expect(front.map(\.localizedName) == ["Virtual Front Camera"])
        let anyCamera = AVCaptureDevice.DiscoverySession(
            deviceTypes: [.builtInWideAngleCamera, .external], mediaType: .video, position: .unspecified
        ).devices
        #expect(anyCamera.map(\.localizedName) == ["Virtual Back Camera", "Virtual Front Camera", "Virtual USB Webcam"])
        let external = AVCaptureDevice.DiscoverySession(
            deviceTypes: [.external], mediaType: .video, position: .unspecified
        ).devices
        #expect(external.map(\.localizedName) == ["Virtual USB Webcam"])
        let microphones = AVCaptureDevice.DiscoverySession(
            deviceTypes: [.microphone], mediaType: .audio, position: .unspecified
        ).devices
        #expect(microphones.count == 1)
        #expect(
            AVCaptureDevice.DiscoverySession(deviceTypes: [.builtInWideAngleCamera], mediaType: .audio, position: .back)
                .devices.isEmpty)
        #expect(AVCaptureDevice.default(.builtInWideAngleCamera, for: .video, position: .front)?.position == .front)
    }

    @Test func theSameDeviceIsTheSameObject() throws {
        let camera = try #require(AVCaptureDevice.default(for: .video))
        #expect(AVCaptureDevice.default(for: .video) === camera)
        let byID = try #require(AVCaptureDevice(uniqueID: camera.uniqueID))
        #expect(byID === camera)
        #expect(AVCaptureDevice(uniqueID: "no-such-device") == nil)
        #expect(!camera.uniqueID.isEmpty && !camera.modelID.isEmpty && !camera.manufacturer.isEmpty)
        #expect(camera.isConnected && !camera.isSuspended && !camera.isInUseByAnotherApplication)
    }

    @Test func backCameraFormatsCoverEveryPresetAndThePhotoFormat() throws {
        let camera = try #require(AVCaptureDevice.default(.builtInWideAngleCamera, for: .video, position: .back))
        let sizes = Set(camera.formats.map { "\($0.formatDescription.dimensions.width)x\($0.formatDescription.dimensions.height)" })
        for size in ["320x240", "352x288", "640x480", "960x540", "1280x720", "1920x1080", "3840x2160", "4032x3024"] {
            #expect(sizes.contains(size), "missing \(size)")
        }
        let presets: [AVCaptureSessionPreset] = [
            .high, .medium, .low, .photo, .qvga320x240, .cif352x288, .vga640x480, .qHD960x540, .hd1280x720,
            .hd1920x1080, .hd4K3840x2160, .iFrame960x540, .iFrame1280x720, .inputPriority,
        ]
        for preset in presets { #expect(camera.supportsSessionPreset(preset), "\(preset.rawValue)") }

        let fastest = camera.formats.flatMap(\.videoSupportedFrameRateRanges).map(\.maxFrameRate).max()
        #expect(fastest == 240)
        let hfr = try #require(camera.formats.first { $0.videoSupportedFrameRateRanges.contains { $0.maxFrameRate == 240 } })
        #expect(hfr.formatDescription.dimensions == CMVideoDimensions(width: 640, height: 480))
        #expect(hfr.videoSupportedFrameRateRanges.first?.minFrameDuration == CMTime(value: 1, timescale: 240))
        #expect(camera.formats.allSatisfy { $0.highResolutionStillImageDimensions == CMVideoDimensions(width: 4032, height: 3024) })
        #expect(camera.formats.map(\.videoMaxZoomFactor).allSatisfy { $0 == 16 })
        let front = try #require(AVCaptureDevice.default(.builtInWideAngleCamera, for: .video, position: .front))
        #expect(front.formats.map(\.videoMaxZoomFactor).allSatisfy { $0 == 4 })
        #expect(!front.formats.contains { $0.formatDescription.dimensions.width == 4032 })
    }

    @Test func theActiveFormatStartsAtWhatHighPicks() async {
        // In a fresh process: sessions in this one change the shared devices' formats.
        await #expect(processExitsWith: .success) {
            let camera = AVCaptureDevice.default(for: .video)!
            let microphone = AVCaptureDevice.default(for: .audio)!
            let layout = microphone.activeFormat.formatDescription.audioStreamBasicDescription
            let ok =
                camera.activeFormat.formatDescription.dimensions == CMVideoDimensions(width: 1920, height: 1080)
                && camera.activeFormat.formatDescription.mediaSubType.rawValue
                    == kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange
                && camera.activeVideoMinFrameDuration == CMTime(value: 1, timescale: 30)
                && layout?.mSampleRate == 48000 && microphone.activeFormat.mediaType == .audio
            exit(ok ? 0 : 1)
        }
    }

    @Test func virtualDevicesAreAuthorized() async {
        #expect(AVCaptureDevice.authorizationStatus(for: .video) == .authorized)
        #expect(await AVCaptureDevice.requestAccess(for: .audio))
        let granted: Bool = await withCheckedContinuation { continuation in
            AVCaptureDevice.requestAccess(for: .video) { continuation.resume(returning: $0) }
        }
        #expect(granted)
    }

    @Test func openavDevicesRealHidesTheVirtualDevices() async {
        await #expect(processExitsWith: .success) {
            setenv("OPENAV_DEVICES", "real", 1)
            // This machine has no camera the real drivers would show (CI); nothing virtual may appear.
            let names = AVCaptureDevice.DiscoverySession(
                deviceTypes: [.builtInWideAngleCamera, .external, .microphone], mediaType: nil, position: .unspecified
            ).devices.map(\.localizedName)
            exit(names.contains { $0.hasPrefix("Virtual") } ? 1 : 0)
        }
    }

    @Test func openavDevicesAllShowsTheVirtualDevicesAfterRealOnes() async {
        await #expect(processExitsWith: .success) {
            setenv("OPENAV_DEVICES", "all", 1)
            let devices = AVCaptureDevice.DiscoverySession(
                deviceTypes: [.builtInWideAngleCamera, .external, .microphone], mediaType: nil, position: .unspecified
            ).devices
            // The session orders by device type first, so "real before virtual" holds within each type (a real
            // microphone, such as ALSA's, comes after the virtual cameras).
            let realAfterVirtual = [AVCaptureDevice.DeviceType.builtInWideAngleCamera, .external, .microphone].contains {
                type in
                let ofType = devices.filter { $0.deviceType == type }
                let firstVirtual = ofType.firstIndex { $0.localizedName.hasPrefix("Virtual") } ?? ofType.count
                return ofType[firstVirtual...].contains { !$0.localizedName.hasPrefix("Virtual") }
            }
            exit(devices.contains { $0.localizedName == "Virtual Back Camera" } && !realAfterVirtual ? 0 : 1)
        }
    }
}
