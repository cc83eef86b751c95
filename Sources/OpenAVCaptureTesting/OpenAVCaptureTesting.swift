// OpenAVCaptureTesting: drive OpenAVCapture's virtual cameras (back, front, USB webcam) and microphone from a test.
//
// What a test gets here:
// - `VirtualCameraController` / `VirtualMicrophoneController` (or `device.virtualCamera` / `.virtualMicrophone`):
//   scene light, illuminant, focus target, clock mode, clock error, faults on demand (unplug, busy, stall);
// - `CaptureDeviceTap`: samples straight from a device, without a session;
// - `VirtualFrameReader` / `VirtualAudioReader`: the frame index, flash and beep markers and the optics, read
//   back from pixels and samples, ours or decoded from a movie;
// - `VirtualFrameSource` / `VirtualSoundSource`: the virtual devices' picture and sound, rendered on demand;
// - `VirtualDeviceSet`: virtual devices a test owns, made current for its task, so such tests run in parallel.
//
// The process's virtual devices are shared by the whole process: a test that changes one should restore it
// (`restoreDefaults()`), and tests that share a device should not run in parallel; tests that own a
// `VirtualDeviceSet` may.
@_exported import OpenAVCapture
