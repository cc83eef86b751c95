// One import for capture code that builds on Apple's platforms and on Linux: Apple's AVFoundation where it
// exists, OpenAVCapture (which re-exports Foundation, OpenCoreMedia and OpenCoreVideo) everywhere else.
//
//     import OpenAVCaptureShim
//
// The OpenCombineShim convention: the same source compiles against either implementation.
#if canImport(AVFoundation)
@_exported import AVFoundation
#else
@_exported import OpenAVCapture
#endif
