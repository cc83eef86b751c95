"""Splits a recording's CPU into stages from two `perf report --sort dso,sym` reports; prints ms per frame.

Usage: stage-split.py FULL_REPORT FULL_FRAMES DEVICE_REPORT DEVICE_FRAMES

FULL is the whole path (the virtual webcam's MJPEG decoded, converted, encoded into H.264, muxed); DEVICE records
the same webcam as Motion JPEG, its frames written as they come: the webcam's own rendering and JPEG compression,
the framework and the mux, nothing decoded or encoded. Debian strips the libraries' symbols, so each sample counts
for its library, and for our own binary, its Swift symbol (the type names in the mangled name). TurboJPEG and
libswscale serve both the webcam (turning its rendered YUYV into planes and compressing them) and the decode and
conversion stages: those stages are FULL's share less DEVICE's.
"""
import re
import sys

LINE = re.compile(r"^\s*([\d.]+)%\s+(\S+)\s+\[.\]\s+(.*)$")


def costs(path, frames):
    """Milliseconds per frame by (library, symbol) of one report."""
    total_ns, rows = None, []
    with open(path) as report:
        for line in report:
            if total_ns is None and "Event count (approx.)" in line:
                total_ns = int(line.rsplit(":", 1)[1])
            match = LINE.match(line)
            if match:
                rows.append((float(match.group(1)) / 100, match.group(2), match.group(3)))
    if total_ns is None:
        sys.exit(f"no samples in {path}: is perf allowed (kernel.perf_event_paranoid)?")
    return [(share * total_ns / 1e6 / max(frames, 1), dso, symbol) for share, dso, symbol in rows]


def sum_of(rows, dso, symbol=r"."):
    return sum(ms for ms, d, s in rows if re.search(dso, d) and re.search(symbol, s))


full = costs(sys.argv[1], int(sys.argv[2]))
device = costs(sys.argv[3], int(sys.argv[4]))
virtual = r"Virtual(Frame|Camera|Scene|Luma|Picture|Stream|Bitstream|Microphone|Optics|Sample|Card)|MJPEGFrameCompressor"
ours = r"avcapture"
stages = {
    "capture: the virtual webcam's rendering and JPEG compression (a real webcam's hardware)":
        sum_of(device, r"turbojpeg|swscale") + sum_of(full, ours, virtual),
    "decode: MJPEG to 4:2:0 (TurboJPEG)": max(sum_of(full, r"turbojpeg") - sum_of(device, r"turbojpeg"), 0),
    "convert: pixel format for the encoder (libswscale, the conversion stage)":
        max(sum_of(full, r"swscale") - sum_of(device, r"swscale"), 0)
        + sum_of(full, ours, r"FrameConversionStage|PixelBufferConverter|PixelTransform"),
    "encode video: libx264": sum_of(full, r"x264"),
    "encode audio and resample: AAC (libavcodec, libswresample)": sum_of(full, r"avcodec|swresample"),
    "mux: QuickTime fragments (libavformat, the writer)":
        sum_of(full, r"avformat") + sum_of(full, ours, r"Muxer|WriterPipeline|AVAssetWriter"),
}
everything = sum(ms for ms, _, _ in full)
framework = sum_of(full, ours) + sum_of(full, r"libswift|libdispatch|libFoundation|libBlocks|_FoundationICU")
framework -= sum_of(full, ours, virtual) + sum_of(full, ours, r"FrameConversionStage|PixelBufferConverter|PixelTransform")
framework -= sum_of(full, ours, r"Muxer|WriterPipeline|AVAssetWriter")
stages["framework: the session graph, outputs and recording engine (Swift)"] = framework
stages["kernel, libc and the loader: system calls, page faults, copies, start-up"] = sum_of(
    full, r"kernel|libc\.so|libc-|ld-linux|libm\.so|libgcc")
stages["other libraries"] = max(everything - sum(stages.values()), 0)

frames = int(sys.argv[2])
print(f"CPU per recorded frame, {frames} frames of 1920x1080@30 MJPEG + 48 kHz sound into H.264 + AAC "
      f"(perf cpu-clock samples):")
for stage, ms in sorted(stages.items(), key=lambda item: -item[1]):
    print(f"  {ms:6.2f} ms  {ms / everything * 100:5.1f} %  {stage}")
print(f"  {everything:6.2f} ms  100.0 %  in all")
