// Each test on virtual devices of its own, so a suite's tests may run in parallel in one process.

import OpenAVCaptureTesting
import Testing

/// A suite or test trait: every test (every case of a parameterized test) runs with a new `VirtualDeviceSet` made
/// current, so `VirtualDevices.back`, `AVCaptureDevice.default` and discovery sessions answer from devices no other
/// test touches. Its faults, scenes, formats and clocks stay inside the test; the suite need not be `.serialized`.
///
/// Value type; safe from any thread.
public struct OwnVirtualDevicesTrait: SuiteTrait, TestTrait, TestScoping {
    /// Applies to every test of the suite and the suites inside it.
    public var isRecursive: Bool { true }

    /// A scope per test case: a set per run of a test body, never one shared by a suite.
    public func scopeProvider(for test: Test, testCase: Test.Case?) -> Self? {
        testCase == nil ? nil : self
    }

    public func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        try await VirtualDeviceSet().withCurrent { try await function() }
    }
}

extension Trait where Self == OwnVirtualDevicesTrait {
    /// Every test on virtual devices of its own (see `OwnVirtualDevicesTrait`).
    public static var ownVirtualDevices: Self { Self() }
}
