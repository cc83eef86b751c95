// AVCaptureMetadataOutput reading a QR code from a movie played as a camera: the code made by qrencode (libqrencode,
// not the library we decode with), the clip by ffmpeg.

import Foundation
import OpenAVCapture
import Testing
import TestSupport

@Suite struct MetadataOutputFileSourceTests {
    @Test func aQRCodeInAMovieFileIsRead() throws {
        let qrencode = "/usr/bin/qrencode"
        guard FileManager.default.isExecutableFile(atPath: qrencode), MediaTool.available([.ffmpeg], for: "file QR test")
        else {
            print("Skipping aQRCodeInAMovieFileIsRead: \(qrencode) or ffmpeg not installed (make test installs them)")
            return
        }
        let text = "OpenAVCapture reads this from a file"
        let image = try scratchURL("qr.png", suite: "metadata-file-source")
        let made = try ToolResult.run(executable: qrencode, ["-o", image.path, "-s", "6", "-m", "4", text])
        #expect(made.status == 0, "\(made.error)")
        // Two seconds of the code on a grey 640x480 picture, right of centre, H.264 in QuickTime.
        let clip = try scratchURL("qr.mov", suite: "metadata-file-source")
        let encoded = try MediaTool.ffmpeg.run([
            "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", "color=c=gray:s=640x480:r=30:d=2", "-i", image.path,
            "-filter_complex", "[1:v]scale=220:220:flags=neighbor[code];[0:v][code]overlay=360:130", "-c:v", "libx264",
            "-pix_fmt", "yuv420p", "-t", "2", clip.path,
        ])
        #expect(encoded.status == 0, "\(encoded.error)")

        let camera = try #require(AVCaptureDevice(uniqueID: "file:" + clip.path))
        let output = AVCaptureMetadataOutput()
        let recorder = MetadataRecorder()
        output.setMetadataObjectsDelegate(recorder, queue: DispatchQueue(label: "file QR delegate"))
        let session = try makeSession(preset: .inputPriority, devices: [camera], outputs: [output])
        output.metadataObjectTypes = [.qr]
        session.startRunning()
        defer { session.stopRunning() }
        let code = try #require(recorder.waitForCode())
        #expect(code.type == .qr)
        #expect(code.text == text)
        // The code (220 px with its 4-module margin of 6 px scaled by 220/(module count)) sits at x 360...580,
        // y 130...350 of 640x480: its corners lie inside that square.
        for corner in code.corners {
            #expect(corner.x > 360.0 / 640 && corner.x < 580.0 / 640, "\(corner)")
            #expect(corner.y > 130.0 / 480 && corner.y < 350.0 / 480, "\(corner)")
        }
    }

    /// GS1 DataBar and DataBar Expanded, drawn by zint (not the library we decode with) into a clip played as a camera.
    @Test(arguments: [
        ("29", "2001234567890", AVMetadataObject.ObjectType.gs1DataBar, "20012345678909"),
        ("31", "[01]98898765432106[3202]012345[15]991231", .gs1DataBarExpanded, "98898765432106"),
    ])
    func aGS1DataBarInAMovieFileIsRead(
        _ zintType: String, _ data: String, _ type: AVMetadataObject.ObjectType, _ digits: String
    ) throws {
        let zint = "/usr/bin/zint"
        guard FileManager.default.isExecutableFile(atPath: zint), MediaTool.available([.ffmpeg], for: "file DataBar test")
        else {
            print("Skipping aGS1DataBarInAMovieFileIsRead: \(zint) or ffmpeg not installed (make test installs them)")
            return
        }
        let image = try scratchURL("databar-\(zintType).png", suite: "metadata-file-source")
        // zint's --gs1 reads bracketed application identifiers (Expanded); the omnidirectional symbol takes digits.
        let gs1 = data.hasPrefix("[") ? ["--gs1"] : []
        let made = try ToolResult.run(executable: zint, ["-b", zintType] + gs1 + ["-d", data, "--scale=2", "-o", image.path])
        #expect(made.status == 0, "\(made.error)")
        let clip = try scratchURL("databar-\(zintType).mov", suite: "metadata-file-source")
        let encoded = try MediaTool.ffmpeg.run([
            "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", "color=c=white:s=1280x720:r=30:d=2", "-i", image.path,
            "-filter_complex", "[1:v]scale=1100:-2:flags=neighbor[code];[0:v][code]overlay=90:200", "-c:v", "libx264",
            "-crf", "12", "-pix_fmt", "yuv420p", "-t", "2", clip.path,
        ])
        #expect(encoded.status == 0, "\(encoded.error)")

        let camera = try #require(AVCaptureDevice(uniqueID: "file:" + clip.path))
        let output = AVCaptureMetadataOutput()
        let recorder = MetadataRecorder()
        output.setMetadataObjectsDelegate(recorder, queue: DispatchQueue(label: "file DataBar delegate"))
        let session = try makeSession(preset: .inputPriority, devices: [camera], outputs: [output])
        #expect(!output.availableMetadataObjectTypes.contains(.gs1DataBarLimited))
        output.metadataObjectTypes = [type]
        session.startRunning()
        defer { session.stopRunning() }
        let code = try #require(recorder.waitForCode())
        #expect(code.type == type)
        #expect(code.text?.contains(digits) == true, "\(code.text ?? "nil")")
    }
}
