import Foundation

/// The error domain of AVFoundation's errors.
public let AVFoundationErrorDomain = "AVFoundationErrorDomain"

/// `userInfo` key: a `Bool`, true when a recording that ended with this error still produced a playable file.
public let AVErrorRecordingSuccessfullyFinishedKey = "AVErrorRecordingSuccessfullyFinishedKey"
/// `userInfo` key: the `AVCaptureDevice` the error concerns.
public let AVErrorDeviceKey = "AVErrorDeviceKey"
/// `userInfo` key: the `CMTime` at which the error happened.
public let AVErrorTimeKey = "AVErrorTimeKey"
/// `userInfo` key: the file size (`Int64`) when the error happened.
public let AVErrorFileSizeKey = "AVErrorFileSizeKey"
/// `userInfo` key: the media type (`AVMediaType`) the error concerns.
public let AVErrorMediaTypeKey = "AVErrorMediaTypeKey"
/// `userInfo` key: the file type the error concerns.
public let AVErrorFileTypeKey = "AVErrorFileTypeKey"

/// An AVFoundation error: a code from Apple's list, with `userInfo` that explains it.
///
/// Thrown and delivered as Apple's is: `catch let error as AVError where error.code == .diskFull`,
/// `catch AVError.fileAlreadyExists`, or `(error as NSError).userInfo[AVErrorRecordingSuccessfullyFinishedKey]`.
/// Every error we create carries an `NSLocalizedDescriptionKey` and, where there is one, an
/// `NSLocalizedRecoverySuggestionErrorKey` that says what to do.
///
/// Value type; safe to use from any thread.
public struct AVError: CustomNSError, Hashable, @unchecked Sendable {
    /// Apple's error codes, with Apple's values.
    public enum Code: Int, Sendable, Hashable {
        case unknown = -11800
        case outOfMemory = -11801
        case sessionNotRunning = -11803
        case deviceAlreadyUsedByAnotherSession = -11804
        case noDataCaptured = -11805
        case sessionConfigurationChanged = -11806
        case diskFull = -11807
        case deviceWasDisconnected = -11808
        case mediaChanged = -11809
        case maximumDurationReached = -11810
        case maximumFileSizeReached = -11811
        case mediaDiscontinuity = -11812
        case maximumNumberOfSamplesForFileFormatReached = -11813
        case deviceNotConnected = -11814
        case deviceInUseByAnotherApplication = -11815
        case deviceLockedForConfigurationByAnotherProcess = -11817
        case sessionWasInterrupted = -11818
        case mediaServicesWereReset = -11819
        case exportFailed = -11820
        case decodeFailed = -11821
        case invalidSourceMedia = -11822
        case fileAlreadyExists = -11823
        case fileFormatNotRecognized = -11828
        case fileFailedToParse = -11829
        case maximumStillImageCaptureRequestsExceeded = -11830
        case decoderNotFound = -11833
        case encoderNotFound = -11834
        case operationNotSupportedForAsset = -11838
        case invalidOutputURLPathExtension = -11843
        case screenCaptureFailed = -11844
        case torchLevelUnavailable = -11846
        case operationInterrupted = -11847
        case applicationIsNotAuthorizedToUseDevice = -11852
        case recordingAlreadyInProgress = -11859
        case unsupportedOutputSettings = -11861
        case operationNotAllowed = -11862
        case formatUnsupported = -11864
        case sessionHardwareCostOverage = -11872
    }

    /// The code.
    public let code: Code
    /// What the error carries: a description, a recovery suggestion, and the keys above.
    public let userInfo: [String: Any]

    /// An error with the given code and information.
    public init(_ code: Code, userInfo: [String: Any] = [:]) {
        self.code = code
        self.userInfo = userInfo
    }

    /// An error whose description says what happened and what to do about it.
    package init(_ code: Code, _ description: String, suggestion: String? = nil, extra: [String: Any] = [:]) {
        var info = extra
        info[NSLocalizedDescriptionKey] = description
        if let suggestion { info[NSLocalizedRecoverySuggestionErrorKey] = suggestion }
        self.init(code, userInfo: info)
    }

    public static var errorDomain: String { AVFoundationErrorDomain }
    public var errorCode: Int { code.rawValue }
    public var errorUserInfo: [String: Any] { userInfo }

    public static func == (lhs: AVError, rhs: AVError) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }

    // The codes as static members of AVError, for `catch AVError.fileAlreadyExists` and `AVError.Code` checks.
    public static var unknown: Code { .unknown }
    public static var outOfMemory: Code { .outOfMemory }
    public static var sessionNotRunning: Code { .sessionNotRunning }
    public static var noDataCaptured: Code { .noDataCaptured }
    public static var diskFull: Code { .diskFull }
    public static var deviceWasDisconnected: Code { .deviceWasDisconnected }
    public static var maximumDurationReached: Code { .maximumDurationReached }
    public static var maximumFileSizeReached: Code { .maximumFileSizeReached }
    public static var deviceNotConnected: Code { .deviceNotConnected }
    public static var deviceInUseByAnotherApplication: Code { .deviceInUseByAnotherApplication }
    public static var sessionWasInterrupted: Code { .sessionWasInterrupted }
    public static var mediaServicesWereReset: Code { .mediaServicesWereReset }
    public static var fileAlreadyExists: Code { .fileAlreadyExists }
    public static var applicationIsNotAuthorizedToUseDevice: Code { .applicationIsNotAuthorizedToUseDevice }
    public static var sessionHardwareCostOverage: Code { .sessionHardwareCostOverage }

    /// `AVErrorRecordingSuccessfullyFinishedKey`, when present.
    public var isRecordingSuccessfullyFinished: Bool? { userInfo[AVErrorRecordingSuccessfullyFinishedKey] as? Bool }
}

/// Lets `catch AVError.diskFull` match, as Apple's bridged error codes do.
public func ~= (code: AVError.Code, error: any Error) -> Bool {
    (error as? AVError)?.code == code
}
