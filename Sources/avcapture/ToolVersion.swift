/// The release this avcapture belongs to: the project's VERSION file says the same (a test in avcaptureTests
/// compares them, and `make deb` names the package from that file).
let toolVersion = "0.1.0"
