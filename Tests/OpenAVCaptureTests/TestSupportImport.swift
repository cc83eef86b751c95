// The session helpers (makeSession, RecordingDelegate, VirtualDevices, NotificationRecorder) live in TestSupport,
// shared with the integration tests; every file of this target sees them.
@_exported import TestSupport
