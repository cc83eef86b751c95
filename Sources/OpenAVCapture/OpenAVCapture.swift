// OpenAVCapture makes Foundation, OpenCoreMedia and OpenCoreVideo visible, as Apple's AVFoundation makes
// Foundation, CoreMedia and CoreVideo visible: capture code needs CMTime, CMSampleBuffer and CVPixelBuffer.
@_exported import Foundation
@_exported import OpenCoreMedia
@_exported import OpenCoreVideo
