"""Sums `perf report --sort dso,sym` lines into the stages of a recording; prints CPU ms per frame for each.

Usage: perf report ... | python3 stage-split.py FRAMES

A sample's stage is decided by the shared object it fell in and, where one library serves two stages, its symbol
(libturbojpeg both compresses, for the virtual webcam's simulated device, and decompresses, for the decode stage).
Swift symbols are matched on the type names inside their mangled names.
"""
import re
import sys

frames = max(int(sys.argv[1]), 1)
# (stage, shared object pattern, symbol pattern); the first that matches wins.
RULES = [
    ("capture: the virtual webcam's own rendering and JPEG compression (a real camera's hardware)",
     r"turbojpeg|jpeg", r"encode|fdct|quantiz|downsample|compress_|rgb_ycc|fill_bit_buffer|emit_|huff_encode|write_"),
    ("capture: the virtual webcam's own rendering and JPEG compression (a real camera's hardware)",
     r"avcapture", r"Virtual(Frame|Camera|Scene|Luma|Picture|Stream|Bitstream|Microphone|Optics)"),
    ("decode: MJPEG to NV12 (TurboJPEG)", r"turbojpeg|jpeg", r"."),
    ("convert: pixel format and size (libswscale, the conversion stage)", r"swscale", r"."),
    ("convert: pixel format and size (libswscale, the conversion stage)", r"avcapture",
     r"FrameConversionStage|PixelBufferConverter|PixelTransform"),
    ("encode video: libx264", r"x264", r"."),
    ("encode audio: AAC (libavcodec)", r"avcodec", r"aac|psy|quantize|ff_|mdct|fft"),
    ("mux: QuickTime fragments (libavformat, the writer)", r"avformat", r"."),
    ("mux: QuickTime fragments (libavformat, the writer)", r"avcapture", r"Muxer|WriterPipeline|AVAssetWriter"),
    ("framework: the session graph, outputs and recording engine", r"avcapture", r"."),
    ("framework: the session graph, outputs and recording engine", r"libswift|libdispatch|libFoundation|libBlocks", r"."),
    ("memory copies and allocation (libc)", r"libc\.so|libc-", r"."),
    ("kernel: system calls, page faults, scheduling", r"kernel", r"."),
]

total_ns = None
stages = {}
line_pattern = re.compile(r"^\s*([\d.]+)%\s+(\S+)\s+\[.\]\s+(.*)$")
for line in sys.stdin:
    if total_ns is None and "Event count (approx.)" in line:
        total_ns = int(line.rsplit(":", 1)[1])
    match = line_pattern.match(line)
    if not match:
        continue
    share, dso, symbol = float(match.group(1)) / 100, match.group(2), match.group(3)
    stage = next((name for name, d, s in RULES if re.search(d, dso) and re.search(s, symbol)), "other libraries")
    stages[stage] = stages.get(stage, 0.0) + share

if total_ns is None:
    sys.exit("no samples: is perf installed and allowed (kernel.perf_event_paranoid)?")
print(f"CPU per recorded frame, {frames} frames of 1920x1080@30 MJPEG + 48 kHz sound (perf cpu-clock samples):")
for stage, share in sorted(stages.items(), key=lambda item: -item[1]):
    print(f"  {share * total_ns / 1e6 / frames:6.2f} ms  {share * 100:5.1f} %  {stage}")
print(f"  {total_ns / 1e6 / frames:6.2f} ms  100.0 %  in all")
