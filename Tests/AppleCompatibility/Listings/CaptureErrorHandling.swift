// Turning capture errors into user-facing messages.
import OpenAVCaptureShim

enum CaptureErrorMessage {
    static func message(for error: Error) -> String {
        if let avError = error as? AVError {
            switch avError.code {
            case .deviceNotConnected, .deviceWasDisconnected:
                return "The camera was disconnected."
            case .diskFull:
                return "There is not enough free space to keep recording."
            case .maximumDurationReached:
                return "The recording reached its time limit."
            case .deviceInUseByAnotherApplication:
                return "Another app is using the camera."
            default:
                return avError.localizedDescription
            }
        }
        let nsError = error as NSError
        if nsError.domain == AVFoundationErrorDomain {
            return "AVFoundation error \(nsError.code)"
        }
        return error.localizedDescription
    }

    static func finishedSuccessfully(_ error: Error?) -> Bool {
        guard let error else { return true }
        return ((error as NSError).userInfo[AVErrorRecordingSuccessfullyFinishedKey] as? Bool) ?? false
    }
}
