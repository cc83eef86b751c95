// What the power-loss syncs cost a recording: fdatasync of the fragments (at most one a second) while writing, and
// the fsyncs of the finished file, the rewrite's copy and the directory at the finish (see MuxerStorage).
//
//   AVAssetWriter writes 20 s of 320x240 NV12 noise at 30 fps as H.264 at 10 Mb/s (noise spends the whole rate, so
//   the file is a 1080p30 camera's, 25 MB, at a fraction of the encoding cost) as fast as it encodes, with 1 s
//   fragments, into a directory on the disk under test, with the syncs on and (WriterStorageFaults.syncsFiles =
//   false) off, alternating. Reported: the wall time of the writing and of finishWriting (the fast-start rewrite),
//   medians, and the ratio synced / unsynced of each, measured in the same run.
//
// Run: swift run -c release FragmentSyncCost [--rounds 5] [--directory /path/on/the/disk]

import Foundation
import OpenAVCapture
import OpenAVCaptureTesting

let arguments = CommandLine.arguments

func option(_ name: String) -> String? {
    arguments.firstIndex(of: name).flatMap { arguments.indices.contains($0 + 1) ? arguments[$0 + 1] : nil }
}

/// One 320x240 NV12 frame of xorshift noise.
func noiseFrame(seed: UInt64) -> CVPixelBuffer {
    var created: CVPixelBuffer?
    CVPixelBufferCreate(nil, 320, 240, kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange, nil, &created)
    guard let buffer = created else { fatalError("cannot make a 320x240 buffer") }
    var state = seed | 1
    buffer.withLockedPlanes { planes in
        for plane in planes {
            let words = plane.bytes.bindMemory(to: UInt64.self)
            for index in words.indices {
                state ^= state << 13
                state ^= state >> 7
                state ^= state << 17
                words[index] = state
            }
        }
    }
    return buffer
}

let frames = (0..<16).map { noiseFrame(seed: UInt64($0 + 1) &* 0x9E37_79B9_7F4A_7C15) }
let directory = option("--directory") ?? FileManager.default.currentDirectoryPath

/// Writes the movie; returns the seconds spent writing and finishing.
func measure(syncing: Bool) async throws -> (writing: Double, finishing: Double) {
    WriterStorageFaults.syncsFiles = syncing
    let url = URL(fileURLWithPath: directory + "/fragment-sync-cost-\(getpid()).mov")
    try? FileManager.default.removeItem(at: url)
    defer { try? FileManager.default.removeItem(at: url) }
    let writer = try AVAssetWriter(outputURL: url, fileType: .mov)
    writer.movieFragmentInterval = CMTime(value: 1, timescale: 1)
    let input = AVAssetWriterInput(
        mediaType: .video,
        outputSettings: [
            AVVideoCodecKey: AVVideoCodecType.h264, AVVideoWidthKey: 320, AVVideoHeightKey: 240,
            AVVideoCompressionPropertiesKey: [AVVideoAverageBitRateKey: 10_000_000, AVVideoMaxKeyFrameIntervalKey: 30],
        ])
    input.expectsMediaDataInRealTime = false
    let adaptor = AVAssetWriterInputPixelBufferAdaptor(assetWriterInput: input, sourcePixelBufferAttributes: nil)
    writer.add(input)
    guard writer.startWriting() else { throw writer.error ?? CocoaError(.fileWriteUnknown) }
    writer.startSession(atSourceTime: .zero)
    let clock = ContinuousClock()
    let started = clock.now
    for index in 0..<20 * 30 {
        while !input.isReadyForMoreMediaData { usleep(500) }
        guard
            adaptor.append(
                frames[index % frames.count], withPresentationTime: CMTime(value: Int64(index), timescale: 30))
        else { throw writer.error ?? CocoaError(.fileWriteUnknown) }
    }
    input.markAsFinished()
    let written = clock.now
    await writer.finishWriting()
    let finished = clock.now
    guard writer.status == .completed else { throw writer.error ?? CocoaError(.fileWriteUnknown) }
    return ((written - started) / .seconds(1), (finished - written) / .seconds(1))
}

func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }

let rounds = Int(option("--rounds") ?? "5") ?? 5
var results: [Bool: [(writing: Double, finishing: Double)]] = [:]
for round in 1...rounds {
    for syncing in [true, false] {
        let result = try await measure(syncing: syncing)
        results[syncing, default: []].append(result)
        print(
            "round \(round), syncs \(syncing ? "on " : "off"): writing \(String(format: "%.3f", result.writing)) s, "
                + "finishing \(String(format: "%.3f", result.finishing)) s")
    }
}
let synced = results[true] ?? []
let unsynced = results[false] ?? []
let writingRatio = median(synced.map(\.writing)) / median(unsynced.map(\.writing))
let finishingRatio = median(synced.map(\.finishing)) / median(unsynced.map(\.finishing))
print("20 s of H.264 at 10 Mb/s, 1 s fragments, in \(directory) (medians of \(rounds)):")
print(
    "  writing:   synced \(String(format: "%.3f", median(synced.map(\.writing)))) s, unsynced "
        + "\(String(format: "%.3f", median(unsynced.map(\.writing)))) s, ratio \(String(format: "%.3f", writingRatio))")
print(
    "  finishing: synced \(String(format: "%.3f", median(synced.map(\.finishing)))) s, unsynced "
        + "\(String(format: "%.3f", median(unsynced.map(\.finishing)))) s, ratio \(String(format: "%.3f", finishingRatio))"
)
