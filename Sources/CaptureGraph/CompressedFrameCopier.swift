import CaptureDrivers
import OpenCoreMedia
import OpenCoreVideo
import Synchronization

/// Copies the compressed frames a file output takes as they are, in the layout the file stores, where they are on
/// loan.
///
/// A camera lends a few buffers only (a V4L2 camera's mapped memory, four to eight) and a file holds a frame until the
/// writer's queue gets to it, up to 16 frames when the writer is behind: holding the camera's buffers that long would
/// starve it (frames lost as `OutOfBuffers`). So the file keeps a copy (tens to hundreds of kilobytes: microseconds)
/// of a frame whose memory is such a loan (`CMBlockBuffer.isOnLoan`); one in memory of its own (a movie file's
/// packet) it keeps as it is.
///
/// The copy is where a camera's H.264 moves from Annex B to AVCC (see `H264Bitstream`): the same one pass over the
/// bytes, and the frame gets an `'avc1'` description with the `avcC` of the parameter sets the camera sends before
/// its key frames, as Apple's camera frames carry. A frame before any parameter sets were seen stays Annex B (it is
/// no key frame: a recording skips it). JPEG and frames already in AVCC are copied as they are, when on loan.
///
/// Threading: thread safe (a mutex guards the description of the last parameter sets); called on capture threads.
package final class CompressedFrameCopier: Sendable {
    package init() {}
    private struct H264State {
        var sps: [[UInt8]] = []
        var pps: [[UInt8]] = []
        var description: CMFormatDescription?
    }

    private let h264 = Mutex(H264State())

    /// `sampleBuffer` in memory the file may hold as long as it needs: an own copy, with its timing and attachments
    /// (`NotSync` among them), of a frame on loan or in Annex B; any other frame itself.
    package func copy(_ sampleBuffer: CMSampleBuffer) -> CMSampleBuffer {
        guard let data = sampleBuffer.dataBuffer, let format = sampleBuffer.formatDescription else {
            return sampleBuffer
        }
        // A camera's Annex B H.264 as AVCC once its parameter sets were seen; anything else byte for byte.
        let annexB = format.mediaSubType == .h264 && !H264Bitstream.isAVCC(format)
        // A frame in memory of its own (a movie file's packet, a copy a camera made) is kept as it is.
        if !annexB && !data.isOnLoan { return sampleBuffer }
        let (bytes, description) =
            data.withUnsafeBytes { source in annexB ? asAVCC(source, like: format) : nil }
            ?? (data.withUnsafeBytes { CMBlockBuffer(copying: $0) }, format)
        guard
            let copy = try? CMSampleBuffer(
                dataBuffer: bytes, formatDescription: description, numSamples: sampleBuffer.numSamples,
                sampleTimings: (try? sampleBuffer.sampleTimingInfos()) ?? [], sampleSizes: [bytes.dataLength])
        else { return sampleBuffer }
        CMPropagateAttachments(sampleBuffer, destination: copy)
        return copy
    }

    /// Annex B `annexB` as AVCC, with the description of the latest parameter sets; nil before any were seen.
    private func asAVCC(
        _ annexB: UnsafeRawBufferPointer, like format: CMFormatDescription
    )
        -> (CMBlockBuffer, CMFormatDescription)?
    {
        let (sps, pps) = H264Bitstream.parameterSets(annexB: annexB)
        let description: CMFormatDescription? = h264.withLock { state in
            if !sps.isEmpty, !pps.isEmpty, sps != state.sps || pps != state.pps {
                state.sps = sps
                state.pps = pps
                state.description = H264Bitstream.formatDescription(
                    sps: sps, pps: pps, width: Int(format.dimensions.width), height: Int(format.dimensions.height))
            }
            return state.description
        }
        guard let description else { return nil }
        let block = CMBlockBuffer(length: H264Bitstream.avccLength(ofAnnexB: annexB))
        _ = block.withUnsafeMutableBytes { H264Bitstream.writeAVCC(fromAnnexB: annexB, into: $0) }
        return (block, description)
    }
}
