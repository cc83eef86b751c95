import CaptureDrivers
import Foundation
import Testing

/// The camera portal as the cameras' authorization: what a PipeWire camera allows when the permission store
/// grants, denies or has not decided, through a real portal and permission store (`PortalSession`).
@Suite(.serialized) struct CameraAccessTests {
    static func camera(_ access: CameraAccess) -> PipeWireDevice {
        PipeWireDevice(
            node: PipeWireNode(id: 5, properties: ["media.class": "Video/Source", "node.name": "portal-camera"]),
            connection: { nil }, cameraAccess: access)
    }

    @Test(arguments: [("yes", CameraPortalPermission.granted), ("no", .denied)])
    func theStoresDecisionIsTheCamerasAccess(word: String, permission: CameraPortalPermission) throws {
        guard let session = try PortalSession.start(for: "theStoresDecisionIsTheCamerasAccess") else { return }
        let environment = session.environment
        let access = CameraAccess(environment: { environment })
        #expect(access.permission == .notDetermined)
        #expect(Self.camera(access).isAccessible, "undecided is not denied: the portal asks when the app asks")
        try session.setCameraPermission(appID: CameraPortalTests.hostAppID, [word])
        #expect(access.permission == permission)
        let camera = Self.camera(access)
        #expect(camera.isAccessible == (permission == .granted))
        #expect(access.requestAccess() == (permission == .granted))
        if permission == .denied {
            #expect(camera.accessAdvice?.contains("flatpak permission-set devices camera") == true)
            #expect(access.pipeWireRemote() == nil)
        }
    }

    @Test func noPortalLeavesAuthorizationAsItWas() {
        let access = CameraAccess(environment: { ["PATH": "/usr/bin"] })
        #expect(access.permission == nil)
        #expect(access.requestAccess() == nil)
        #expect(Self.camera(access).isAccessible)
    }
}
