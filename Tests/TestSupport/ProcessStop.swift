import Foundation

#if canImport(Glibc)
    import Glibc
#endif

extension Process {
    /// Ends a child the test started, now: SIGKILL, then reaps it. Not `terminate()`: Foundation starts a child with
    /// the spawning thread's signal mask, and a test runs on a (dispatch) thread that blocks SIGTERM, so a child that
    /// does not unblock it (Xvfb, a tool waiting on a dialog) never sees the signal and `waitUntilExit()` waits
    /// forever. Use it where the child's clean exit is not what the test checks.
    public func killAndReap() {
        guard isRunning else { return }
        kill(processIdentifier, SIGKILL)
        waitUntilExit()
    }
}
