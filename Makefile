# OpenAVCapture: `make demo` and `make test` work on a fresh Debian 12 machine with Swift installed.
# Both install the Debian packages they need first (only when something is missing).

SWIFT ?= swift
# Tests run against the deterministic virtual devices unless the caller says otherwise.
OPENAV_DEVICES ?= virtual
export OPENAV_DEVICES

# Libraries the package links (pkg-config finds them) and tools the integration tests read our files with.
BUILD_PACKAGES := pkg-config libavformat-dev libavcodec-dev libavutil-dev libswscale-dev libswresample-dev \
                  libavfilter-dev libasound2-dev libturbojpeg0-dev libexif-dev libheif-dev libzxing-dev \
                  libx11-dev libxext-dev libxfixes-dev libxdamage-dev libxrandr-dev libsdl2-dev libdbus-1-dev \
                  libpipewire-0.3-dev libspa-0.2-dev libwayland-dev
TOOL_PACKAGES := ffmpeg libimage-exiftool-perl mediainfo gstreamer1.0-tools gstreamer1.0-plugins-base-apps \
                 gstreamer1.0-plugins-base gstreamer1.0-plugins-good gstreamer1.0-plugins-bad gstreamer1.0-libav qrencode zint \
                 xvfb x11-utils xdotool x11-apps chromium chromium-driver python3-selenium \
                 nginx-light libnginx-mod-rtmp srt-tools prometheus curl openssl python3-gi gir1.2-gst-rtsp-server-1.0 \
                 dbus-daemon libglib2.0-bin xdg-desktop-portal pipewire pipewire-bin wireplumber gstreamer1.0-pipewire \
                 sway swaybg foot grim xdg-desktop-portal-wlr weston mutter xdg-desktop-portal-gnome dbus-bin
# The kernel tests' VM (QEMU, Debian's kernel, virtme-ng) is not listed: scripts/kernel-vm installs it when
# test-kernel first runs, so a plain build does not pull in a kernel.
APT_PACKAGES := $(BUILD_PACKAGES) $(TOOL_PACKAGES)
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
# The benchmarks' avcapture: the release build as `make stage` (and so `make deb`) ships it, the Swift runtime linked
# in statically, so the figures are the installed binary's (a dynamically linked build spends more of its start-up in
# the dynamic loader). The same flags as stage, so the two share .build/release without relinking each other's.
RELEASE_AVCAPTURE = $(SWIFT) build -c release --product avcapture --static-swift-stdlib --disable-local-rpath

.PHONY: all build demo test test-times doc-check test-kernel deps bench bench-pipewire bench-usb-webcam side-by-side-tools bench-side-by-side bench-floor bench-gap-profile bench-encoder-scaling bench-publish-and-record bench-shared-encoder bench-segment-switch bench-stages format lint clean usb-webcam-emulator soak fuzz bench-multicam vicodec-module bench-rtsp-clients bench-rtsp-latency bench-metrics-cost bench-metrics-scrape bench-wayland-screen bench-wayland-idle

all: build

## deps: install missing Debian packages (apt-get update only when something is missing).
deps:
	@missing=$$(for p in $(APT_PACKAGES); do \
		dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		echo "Installing:" $$missing; \
		$(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi

build: deps
	$(SWIFT) build

## demo: records 5 seconds from the default camera and microphone (the virtual ones where there are none) into
## a new file here, then shows what `avcapture probe` reads back.
demo: deps
	@$(SWIFT) build --product avcapture 2>&1 | grep -E 'error|warning: |Compiling avcapture|Build complete' || true
	@out=demo-$$(date +%Y%m%d-%H%M%S).mov; \
	OPENAV_DEVICES=$${DEMO_DEVICES:-all} "$$($(SWIFT) build --show-bin-path)/avcapture" record "$$out" --duration 5 \
		--metadata title="OpenAVCapture demo" && \
	echo && "$$($(SWIFT) build --show-bin-path)/avcapture" probe "$$out"

## test: the whole suite; fails on any compiler warning in our own code, on a false claim in the documentation
## (doc-check, with the avcapture just built), and on a fault systemd finds in the example unit (check-unit).
test: deps
	@$(SWIFT) build --build-tests 2>&1 | tee .build-warnings.log | grep -vE '^\[[0-9]+/[0-9]+\]' || true
	@if grep -E '^/.*/(Sources|Tests)/.*: (warning|error):' .build-warnings.log; then \
		echo "error: the build has warnings or errors (above); the project builds warning-free"; rm -f .build-warnings.log; exit 1; fi
	@rm -f .build-warnings.log
	@$(MAKE) --no-print-directory doc-check AVCAPTURE="$$($(SWIFT) build --show-bin-path)/avcapture"
	@$(MAKE) --no-print-directory check-unit
	@# The host suites in TEST_JOBS processes at once, each running its suites serially: the virtual devices are
	@# process-wide test instruments (a back, a front and a USB webcam camera, one microphone) that many suites
	@# reconfigure, so suites of one process must not overlap; two processes each have their own. The suites of
	@# Tests/suites-parallel.txt own their devices per test (VirtualDeviceSet) and run in parallel in theirs.
	$(PYTHON) scripts/test-host --jobs $(TEST_JOBS) "$$($(SWIFT) build --show-bin-path)/OpenAVCapturePackageTests.xctest"
	@$(MAKE) --no-print-directory test-kernel

## test-times: runs every host suite alone (TEST_JOBS at once) and writes the seconds each took into
## Tests/suite-times.tsv, which scripts/test-host hands the suites out by (longest first, short ones batched).
## Refresh it when suites were added or grew: a stale file only makes `make test` a little slower, never wrong.
test-times:
	@$(SWIFT) build --build-tests 2>&1 | grep -E 'error|warning: ' || true
	$(PYTHON) scripts/test-host --jobs $(TEST_JOBS) --write-times Tests/suite-times.tsv \
		"$$($(SWIFT) build --show-bin-path)/OpenAVCapturePackageTests.xctest"

## doc-check: what README.md, docs/*.md and the DocC catalogs claim that the code can answer (the avcapture commands
## and their options, counts of listings, shims, test targets and fuzz targets, the C shim lists, links, paths, make
## targets, test suites, api-coverage's names), checked against the code by scripts/doc-check (python3, standard
## library, a second or two); fails naming the file, the line, the claim and the truth. Reads the commands from
## Sources/avcapture, and from AVCAPTURE (a built avcapture) or .build/debug/avcapture when newer than the sources.
PYTHON ?= python3
# Host test processes at once (scripts/test-host): most suites wait on real time (recordings, servers) more than
# they compute, and those that drop frames on a loaded machine run alone (Tests/suites-alone.txt). On 2 cores
# (2026-11-30): 2 processes about 830 s, 3 681 s, 4 643 s, all passing, the CPU busy about one core's worth.
TEST_JOBS ?= 3
AVCAPTURE ?=
doc-check:
	@$(PYTHON) scripts/doc-check $(if $(AVCAPTURE),--avcapture "$(AVCAPTURE)")

## test-kernel: the suites named *KernelTests against real kernel drivers (vivid, snd-aloop, and uvcvideo and
## snd-usb-audio on the USB/IP webcam emulator) in a throw-away VM (scripts/kernel-vm: virtme-ng booting Debian's
## linux-image-amd64 against this machine's own root file system, read-only, so the build tree, the toolchain and
## the libraries are simply there): one boot for everything but hot-plug and multi-planar, one for hot-plug (it
## unloads vivid), one with two vivid instances loaded multi-planar (`n_devs=2 multiplanar=2,2`, as SoC and ISP
## drivers are) and the USB/IP modules, for the Multiplanar*KernelTests and MultiCamKernelTests (two vivid cameras
## and the USB webcam emulator in one multi-camera session), with vicodec (built by vicodec-module) inserted too
## for VicodecKernelTests (a boot of its own cost a minute more). The first run installs the VM (QEMU, the kernel, virtme-ng; about two minutes). Skips, saying
## why, only where the VM cannot run (no root to install it, no kernel, a VM that does not boot).
KERNEL_VM := scripts/kernel-vm
# Seconds a boot may take: the first runs every kernel suite, the USB webcam's included (about 15 minutes here under
# QEMU's software emulation on 2 cores shared with other builds; a boot cut short fails every suite it had left).
VM_TIMEOUT ?= 1500
# The first two boots: vivid and snd-aloop; vhci-hcd (USB/IP's host controller) with the drivers of what the
# emulator plugs in, loaded up front so that they are there when the device appears.
SOUND_AND_USB_MODULES := --module snd-aloop --module vhci-hcd --module uvcvideo --module snd-usb-audio
VM_MODULES := --module vivid $(SOUND_AND_USB_MODULES)
# The first boot also loads uinput: CaptureEventKernelTests makes a key device with it.
# Serial: the kernel suites share one vivid (and one snd-aloop), as the virtual devices are shared on the host.
KERNEL_TESTS := .build/debug/OpenAVCapturePackageTests.xctest --testing-library swift-testing --no-parallel
# kernel-vm exits 77 where the VM cannot run (setup impossible, or no boot): a skip, not a failure.
test-kernel:
	@$(KERNEL_VM) --setup; status=$$?; \
	if [ $$status = 77 ]; then echo "test-kernel: skipped: the VM cannot run here (kernel-vm's reason above)"; exit 0; fi; \
	[ $$status = 0 ] || exit $$status; \
	[ -x .build/debug/OpenAVCapturePackageTests.xctest ] || $(SWIFT) build --build-tests >/dev/null; \
	$(MAKE) --no-print-directory usb-webcam-emulator >/dev/null || echo "test-kernel: the USB webcam emulator did not build; its suite skips"; \
	vm() { t0=$$(date +%s); $(KERNEL_VM) --env OPENAV_DEVICES=all --timeout $(VM_TIMEOUT) "$$@"; s=$$?; \
		echo "test-kernel: boot finished in $$(( $$(date +%s) - t0 )) s, status $$s"; return $$s; }; \
	vm $(VM_MODULES) --module uinput -- $(KERNEL_TESTS) --filter KernelTests --skip HotPlugKernelTests --skip 'Multiplanar.*KernelTests' \
		--skip MultiCamKernelTests --skip VicodecKernelTests; first=$$?; \
	if [ $$first = 77 ]; then echo "test-kernel: skipped: the VM does not boot here (kernel-vm's reason above)"; exit 0; fi; \
	vm $(VM_MODULES) -- $(KERNEL_TESTS) --filter HotPlugKernelTests; second=$$?; \
	codec=; suites='Multiplanar.*KernelTests|MultiCamKernelTests'; vicodec=0; \
	scripts/vicodec-module $(dir $(VICODEC_MODULE)); built=$$?; \
	if [ $$built = 77 ]; then echo "test-kernel: VicodecKernelTests skipped: vicodec cannot be built here (the reason above)"; \
	elif [ $$built != 0 ]; then vicodec=$$built; \
	else codec="--module $(CURDIR)/$(VICODEC_MODULE)"; suites="$$suites|VicodecKernelTests"; fi; \
	vm --module "vivid n_devs=2 multiplanar=2,2" $(SOUND_AND_USB_MODULES) $$codec -- $(KERNEL_TESTS) \
		--filter "$$suites"; third=$$?; \
	[ $$first = 0 ] && [ $$second = 0 ] && [ $$third = 0 ] && [ $$vicodec = 0 ]

## vicodec-module: the kernel's virtual stateful codec (vicodec, FWHT), which Debian's kernel does not ship, built
## out of tree for the kernel the VM boots into .build/vicodec-module (scripts/vicodec-module: it installs that
## kernel's headers and linux-source with apt first; with v4l2-mem2mem.ko, which Debian's 6.1 lacks too). Exits 77,
## saying why, where it cannot be built. test-kernel's third boot inserts it for VicodecKernelTests.
VICODEC_MODULE := .build/vicodec-module/vicodec.ko
vicodec-module:
	@scripts/vicodec-module $(dir $(VICODEC_MODULE))

## usb-webcam-emulator: the USB webcam and microphone the kernel tests plug in over USB/IP (Tests/USBWebcamEmulator),
## a static C program, so it runs in the VM as it is.
EMULATOR := .build/usb-webcam-emulator/usb-webcam-emulator
usb-webcam-emulator: $(EMULATOR)
$(EMULATOR): Tests/USBWebcamEmulator/usb-webcam-emulator.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -O2 -Wall -Wextra -Werror -static -o $@ $< -lm

## bench-pipewire: PipeWire against raw V4L2 in the VM (Benchmarks/Comparisons/PipeWireOverhead): vivid's 1080p NV12
## frames into a session, straight from the node and through WirePlumber's V4L2 node, alternating; CPU per frame
## (the daemon's included) and capture-to-delegate latency, with per-pair ratios.
bench-pipewire: deps
	cd Benchmarks && $(SWIFT) build -c release --product PipeWireOverhead
	$(KERNEL_VM) --env OPENAV_DEVICES=real --timeout $(VM_TIMEOUT) --module vivid -- \
		sh $(CURDIR)/Benchmarks/Scripts/pipewire-overhead.sh $(CURDIR)/Benchmarks/.build/release/PipeWireOverhead

## bench-usb-webcam: the framework's overhead on uvcvideo (Benchmarks/Comparisons/USBWebcamOverhead) in the VM, with
## the USB webcam emulator plugged in: CPU per captured 720p MJPEG frame into a session against the decode alone.
bench-usb-webcam: deps usb-webcam-emulator
	cd Benchmarks && $(SWIFT) build -c release --product USBWebcamOverhead
	$(KERNEL_VM) --env OPENAV_DEVICES=real --timeout $(VM_TIMEOUT) $(VM_MODULES) -- sh -c \
		"$(CURDIR)/$(EMULATOR) >/dev/null 2>&1 & emulator=\$$!; \
		 until usbip attach -r 127.0.0.1 -b 1-1 2>/dev/null; do sleep 0.2; done; \
		 $(CURDIR)/Benchmarks/.build/release/USBWebcamOverhead; status=\$$?; kill \$$emulator; exit \$$status"

## soak: the long reliability runs (OPENAV_SOAK=1; about twenty minutes, more for the sanitizer builds): twenty SIGKILLs
## at random instants over 1.5-20 s of recording, the 8-thread public-API stress test for 60 s, an hour of media from
## a microphone ±200 ppm off (free-running, about four minutes each), then the same stress
## test built with the thread sanitizer, and the whole test suite, the soak versions included, built with the address
## sanitizer (about an hour; LeakSanitizer off: what it reports at exit is the Swift runtime's, XCTest's, libdbus's
## and libX11's process-lifetime allocations, in the test process and in every `avcapture` a test runs; Swift 6.3
## refuses `-sanitize=undefined` on Linux: UBSan is not run). Each sanitizer build has its own directory (.build-tsan,
## .build-asan).
## Swift's Synchronization.Mutex waits on a futex that ThreadSanitizer does not see, so every access inside a
## `withLock` is reported as a race (a 15-line program reproduces it); the TSan run's reports are printed, not failed on.
SOAK_SUITES := MovieCrashSafetyTests|APIStressTests|WriterStorageTests|AudioClockDriftTests|LongDriftTests
soak: deps
	$(SWIFT) build --build-tests
	OPENAV_SOAK=1 $(SWIFT) test --skip-build --no-parallel --filter '$(SOAK_SUITES)'
	$(SWIFT) build --build-tests --sanitize=thread --build-path .build-tsan
	@OPENAV_SOAK=1 TSAN_OPTIONS=halt_on_error=0 $(SWIFT) test --skip-build --sanitize=thread --build-path .build-tsan \
		--no-parallel --filter APIStressTests 2>&1 | tee .build-tsan/soak.log | grep -E '✔|✘|API stress'; \
	echo "soak: ThreadSanitizer reports: $$(grep -c 'WARNING: ThreadSanitizer' .build-tsan/soak.log) (in .build-tsan/soak.log)"
	$(SWIFT) build --build-tests --sanitize=address --build-path .build-asan
	OPENAV_SOAK=1 ASAN_OPTIONS=detect_leaks=0 $(SWIFT) test --skip-build --sanitize=address --build-path .build-asan \
		--no-parallel

## fuzz: libFuzzer (`-sanitize=fuzzer,address`, release) on each target of the Fuzz/ package for FUZZ_SECONDS each,
## starting from its checked-in seed corpus (Fuzz/Corpus/NAME; what libFuzzer finds goes to .build-fuzz/corpus-NAME,
## a crashing input to Fuzz/Crashes/; reports unsymbolized: llvm-symbolizer on the 35 MB binaries takes minutes, use
## addr2line on the offsets; Swift's backtracer is off: under ASan its reading of the crashed process shows as a
## wild memcpy that hides the real trap). A crash found is checked in under Fuzz/Corpus/NAME, where the plain build
## of the target (`cd Fuzz && swift run TARGET`) runs it as a regression.
FUZZ_SECONDS ?= 60
FUZZ_TARGETS := DemuxerFuzzer:demuxer AudioFileFuzzer:audio MJPEGFuzzer:mjpeg StillImageFuzzer:still \
	ServeRequestFuzzer:serve RTSPRequestFuzzer:rtsp V4L2KernelFuzzer:v4l2
fuzz: deps
	cd Fuzz && OPENAV_FUZZING=1 $(SWIFT) build -c release --build-path ../.build-fuzz -Xswiftc -sanitize=fuzzer,address
	@mkdir -p Fuzz/Crashes; status=0; for pair in $(FUZZ_TARGETS); do target=$${pair%%:*}; corpus=$${pair##*:}; \
		mkdir -p .build-fuzz/corpus-$$corpus; echo "fuzz: $$target for $(FUZZ_SECONDS) s"; start=$$(date +%s); \
		SWIFT_BACKTRACE=enable=no ASAN_OPTIONS=symbolize=0 .build-fuzz/release/$$target -max_total_time=$(FUZZ_SECONDS) \
			-max_len=65536 -rss_limit_mb=4096 -print_final_stats=1 -artifact_prefix=Fuzz/Crashes/$$target- \
			.build-fuzz/corpus-$$corpus Fuzz/Corpus/$$corpus 2>&1 \
			| grep -E '^Done|ERROR|SUMMARY|Test unit written|deadly signal|Fatal error|number_of_executed_units' || true; \
		echo "fuzz: $$target ran $$(( $$(date +%s) - start )) s"; \
		[ -z "$$(ls Fuzz/Crashes/$$target-* 2>/dev/null)" ] || status=1; done; exit $$status

## bench-side-by-side: avcapture, ffmpeg and gst-launch-1.0 doing the same recording jobs (Benchmarks/Comparisons/
## SideBySide); writes the table into docs/performance.md.
SIDE_BY_SIDE_PACKAGES := gstreamer1.0-plugins-good gstreamer1.0-plugins-bad gstreamer1.0-plugins-ugly gstreamer1.0-libav
## side-by-side-tools: the GStreamer plugins the comparisons run (x264enc, avdec_h264, avenc_aac, hlsdemux).
side-by-side-tools: deps
	@missing=$$(for p in $(SIDE_BY_SIDE_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq $$missing; fi

bench-side-by-side: side-by-side-tools
	$(RELEASE_AVCAPTURE)
	cd Benchmarks && $(SWIFT) run -c release SideBySide --avcapture $(CURDIR)/.build/release/avcapture \
		--write $(CURDIR)/docs/performance.md

## bench-floor: decoding alone plus libx264 alone on the side-by-side inputs, against the whole jobs of GStreamer,
## ffmpeg and avcapture (the floor under the GStreamer goal; Benchmarks/Scripts/decode-encode-floor.sh).
bench-floor: side-by-side-tools
	$(RELEASE_AVCAPTURE)
	sh Benchmarks/Scripts/decode-encode-floor.sh $(CURDIR)/.build/release/avcapture

## bench-gap-profile: the side-by-side job on one input (INPUT=mjpeg, h264 or y4m) by avcapture, ffmpeg -re and
## GStreamer under perf, CPU samples by library side by side (Benchmarks/Scripts/gap-profile.sh).
INPUT ?= mjpeg
bench-gap-profile: side-by-side-tools
	@command -v perf >/dev/null || { $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq linux-perf; }
	$(RELEASE_AVCAPTURE)
	sh Benchmarks/Scripts/gap-profile.sh .build/release/avcapture $(INPUT)

## bench-encoder-scaling: libx264/libx265 CPU and wall time per frame by size, preset and cores (the figures
## EncoderThreadPlan's model comes from).
bench-encoder-scaling: deps
	sh Benchmarks/Scripts/encoder-scaling.sh

## bench-segment-switch: what a cut into 1 s segments costs the frames after it at 1080p30, against the frames away from
## cuts in the same recording (goal: at most one frame interval), and the frames in the segments against those delivered.
bench-segment-switch: deps
	cd Benchmarks && $(SWIFT) build -c release --product SegmentSwitchLatency
	cd Benchmarks && OPENAV_DEVICES=virtual .build/release/SegmentSwitchLatency

## bench-publish-and-record: publishing HLS and recording the same 1080p30 camera against recording alone (CPU ratio).
bench-publish-and-record: deps
	$(RELEASE_AVCAPTURE)
	Benchmarks/Scripts/publish-and-record.sh $(CURDIR)/.build/release/avcapture

## bench-shared-encoder: a movie file output recording 1080p30 alone, sharing a publishing output's H.264 encoder, and
## beside one with an encoder of its own (CPU ratios against the movie alone; Benchmarks/Comparisons/SharedEncoderCost).
bench-shared-encoder: deps
	cd Benchmarks && $(SWIFT) build -c release --product SharedEncoderCost
	Benchmarks/Scripts/shared-encoder-cost.sh Benchmarks/.build/release/SharedEncoderCost

## bench-multicam: three cameras recorded by one `avcapture record` (one multi-camera session) against three
## `avcapture record` processes at once, one camera each; CPU ratio per paired round (goal: at most 1.05x).
bench-multicam: deps
	$(RELEASE_AVCAPTURE)
	Benchmarks/Scripts/multicam-versus-processes.sh $(CURDIR)/.build/release/avcapture

## bench-rtsp-clients: serve --rtsp's own CPU with ten ffmpeg clients against one (alternating rounds, ratio).
bench-rtsp-clients: deps
	$(RELEASE_AVCAPTURE)
	Benchmarks/Scripts/rtsp-clients.sh $(CURDIR)/.build/release/avcapture

## bench-rtsp-latency: glass-to-glass latency of serve --rtsp on loopback (flash frames against CLOCK_MONOTONIC).
bench-rtsp-latency: deps
	$(RELEASE_AVCAPTURE)
	Benchmarks/Scripts/rtsp-latency.sh $(CURDIR)/.build/release/avcapture

## bench-metrics-cost: record's CPU with --metrics scraped once a second against without (alternating rounds, ratio).
bench-metrics-cost: deps
	$(RELEASE_AVCAPTURE)
	Benchmarks/Scripts/metrics-cost.sh $(CURDIR)/.build/release/avcapture

## bench-metrics-scrape: one /metrics scrape's CPU against a recording's, and the endpoint's one-off start.
bench-metrics-scrape: deps
	$(RELEASE_AVCAPTURE)
	Benchmarks/Scripts/metrics-scrape-cost.sh $(CURDIR)/.build/release/avcapture

## bench-wayland-screen: record --screen through the ScreenCast portal (headless mutter, 1920x1080) against X11
## (Xvfb showing the same picture): CPU per frame, alternating rounds, ratio; and a still screen's cost.
bench-wayland-screen: deps
	@/usr/bin/python3 -c 'import dbus' 2>/dev/null || { $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq python3-dbus; }
	$(RELEASE_AVCAPTURE)
	Benchmarks/Scripts/wayland-screen-cost.sh $(CURDIR)/.build/release/avcapture

## bench-wayland-idle: a still screen's capture alone (avcapture frames --screen --changes-only, no encoder) through
## the ScreenCast portal on headless mutter, against the same on Xvfb: % of a core.
bench-wayland-idle: deps
	@/usr/bin/python3 -c 'import dbus' 2>/dev/null || { $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq python3-dbus; }
	$(RELEASE_AVCAPTURE)
	Benchmarks/Scripts/wayland-screen-idle.sh $(CURDIR)/.build/release/avcapture

## bench-stages: where a 1080p30 recording from the virtual webcam spends its CPU, stage by stage (perf samples).
bench-stages: deps
	@command -v perf >/dev/null || { $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq linux-perf; }
	$(RELEASE_AVCAPTURE)
	sh Benchmarks/Scripts/where-the-time-goes.sh .build/release/avcapture

## bench: where a recording's time goes (bench-stages), then the Benchmarks/ package (package-benchmark), which
## prints mallocs and times per operation.
bench: deps bench-stages
	cd Benchmarks && $(SWIFT) package --allow-writing-to-package-directory benchmark

# Installing.
PREFIX ?= /usr/local
DESTDIR ?=
BINDIR ?= $(PREFIX)/bin
MANDIR ?= $(PREFIX)/share/man
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
# zsh's own default; Debian's zsh reads a package's completions from /usr/share/zsh/vendor-completions (make deb).
ZSHCOMPDIR ?= $(PREFIX)/share/zsh/site-functions
FISHCOMPDIR ?= $(PREFIX)/share/fish/vendor_completions.d
SYSTEMDUNITDIR ?= $(PREFIX)/lib/systemd/system
DOCDIR ?= $(PREFIX)/share/doc/openavcapture
# What install copies, built once: the binary, its man page, completions and the unit with BINDIR in it.
STAGE := .build/stage
# argument-parser's generate-manual (the tool behind its GenerateManual plugin), built from the checkout SwiftPM
# resolved. The plugin itself would first build every product of the package in release without
# --static-swift-stdlib, relinking avcapture twice per install; the tool alone reads the binary we install.
GENERATE_MANUAL := .build/generate-manual/release/generate-manual
INSTALLED := $(BINDIR)/avcapture $(MANDIR)/man1/avcapture.1 $(BASHCOMPDIR)/avcapture $(ZSHCOMPDIR)/_avcapture \
	$(FISHCOMPDIR)/avcapture.fish $(SYSTEMDUNITDIR)/avcapture-record@.service

.PHONY: stage install uninstall deb test-deb check-unit example-package

# The release avcapture with the Swift runtime linked in (Foundation, Dispatch and the standard library), refused if
# it still needs a library of the toolchain: an installed avcapture runs where no Swift is installed. Stripped, as
# Debian policy asks of a packaged binary: 77 MB instead of 136 (the symbols and DWARF stay in the build directory).
# Without SwiftPM's RUNPATH $ORIGIN: nothing of ours is a shared library, and an installed binary should not load
# whatever lies beside it.
stage: deps
	$(RELEASE_AVCAPTURE)
	@[ -x $(GENERATE_MANUAL) ] || $(SWIFT) build -c release --package-path .build/checkouts/swift-argument-parser \
		--scratch-path .build/generate-manual --product generate-manual
	@bin="$$($(SWIFT) build -c release --show-bin-path)/avcapture"; \
	toolchain=$$(dirname "$$(dirname "$$(readlink -f "$$(command -v $(SWIFT))")")"); \
	if ldd "$$bin" | grep -F "$$toolchain"; then echo "error: $$bin needs the Swift toolchain's libraries (above)"; exit 1; fi; \
	rm -rf $(STAGE) && mkdir -p $(STAGE) && strip -o $(STAGE)/avcapture "$$bin" && \
	for shell in bash zsh fish; do $(STAGE)/avcapture --generate-completion-script $$shell > $(STAGE)/completion.$$shell || exit 1; done; \
	date=$$(git log -1 --format=%cs 2>/dev/null || date +%F); \
	$(GENERATE_MANUAL) $(STAGE)/avcapture --date "$$date" --output-directory $(STAGE) && \
	sed 's|@BINDIR@|$(BINDIR)|g' packaging/systemd/avcapture-record@.service.in > $(STAGE)/avcapture-record@.service

## install: the release avcapture with the Swift runtime linked in (no toolchain needed to run it), its man page
## (generated from the argument-parser definitions), bash, zsh and fish completions, and an example systemd unit
## (avcapture-record@.service, disabled) under $(DESTDIR)$(PREFIX) (PREFIX=/usr/local unless given).
install: stage
	install -Dm755 $(STAGE)/avcapture $(DESTDIR)$(BINDIR)/avcapture
	install -Dm644 $(STAGE)/avcapture.1 $(DESTDIR)$(MANDIR)/man1/avcapture.1
	install -Dm644 $(STAGE)/completion.bash $(DESTDIR)$(BASHCOMPDIR)/avcapture
	install -Dm644 $(STAGE)/completion.zsh $(DESTDIR)$(ZSHCOMPDIR)/_avcapture
	install -Dm644 $(STAGE)/completion.fish $(DESTDIR)$(FISHCOMPDIR)/avcapture.fish
	install -Dm644 $(STAGE)/avcapture-record@.service $(DESTDIR)$(SYSTEMDUNITDIR)/avcapture-record@.service
	install -Dm644 README.md $(DESTDIR)$(DOCDIR)/README.md

## uninstall: removes what install put under $(DESTDIR)$(PREFIX) (the same PREFIX and DESTDIR).
uninstall:
	rm -f $(addprefix $(DESTDIR),$(INSTALLED)) $(DESTDIR)$(DOCDIR)/README.md
	rmdir $(DESTDIR)$(DOCDIR) 2>/dev/null || true

# The package's version has one source: the VERSION file.
VERSION := $(shell cat VERSION)

## deb: openavcapture_VERSION_ARCH.deb here (dpkg-deb), from `make install PREFIX=/usr` into a scratch root, with the
## Depends dpkg-shlibdeps reads from the binary (scripts/build-deb).
deb: deps
	rm -rf .build/deb && $(MAKE) --no-print-directory install DESTDIR=$(CURDIR)/.build/deb/root PREFIX=/usr \
		ZSHCOMPDIR=/usr/share/zsh/vendor-completions
	scripts/build-deb .build/deb/root $(VERSION) $(CURDIR)

## check-unit: systemd-analyze verify on the example unit as install writes it (BINDIR filled in), for an instance; a
## warning (an unknown key, a bad specifier) fails it too, though verify itself would only print it. A second; run by
## `make test`. Installs systemd's tools where they are missing.
check-unit:
	@command -v systemd-analyze >/dev/null || { $(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends systemd >/dev/null; }; \
	dir=$$(mktemp -d) && sed 's|@BINDIR@|$(BINDIR)|g' packaging/systemd/avcapture-record@.service.in \
		> "$$dir/avcapture-record@.service" && ln -s avcapture-record@.service "$$dir/avcapture-record@door.service" && \
	out=$$(cd "$$dir" && systemd-analyze verify --man=no ./avcapture-record@door.service 2>&1); status=$$?; \
	rm -rf "$$dir"; if [ $$status != 0 ] || [ -n "$$out" ]; then echo "$$out"; echo "check-unit: FAILED"; exit 1; fi; \
	echo "check-unit: avcapture-record@.service verified"

## test-deb: make deb, then apt installs it into a fresh Debian 12 chroot without Swift (mmdebstrap, cached in
## ~/.cache/openavcapture/chroot) where avcapture records 2 s from the virtual devices (ffprobe: video and audio,
## about 2 s), `man -w avcapture` finds the page and the completions are in place (scripts/test-deb). Needs root
## and the network. About a minute once the package is built; not part of `make test`, because building it (a
## release build with the static runtime) took 20 minutes here, longer than the whole suite.
test-deb: deb check-unit
	scripts/test-deb openavcapture_$(VERSION)_$$(dpkg --print-architecture).deb

## example-package: Examples/ExternalPackage, a package outside this one depending on OpenAVCapture through SwiftPM:
## builds it and records one second from the virtual devices with it (ffprobe: a video and an audio stream).
example-package: deps
	cd Examples/ExternalPackage && $(SWIFT) build --product RecordOneSecond
	@out=$(CURDIR)/.build/example-package.mov; rm -f "$$out"; \
	OPENAV_DEVICES=virtual Examples/ExternalPackage/.build/debug/RecordOneSecond "$$out" || exit 1; \
	streams=$$(ffprobe -v error -show_entries stream=codec_type -of csv=p=0 "$$out" | sort | tr '\n' ' '); \
	duration=$$(ffprobe -v error -show_entries format=duration -of csv=p=0 "$$out"); \
	echo "example-package: $$out: $$streams$$duration s"; \
	[ "$$streams" = "audio video " ] && awk -v d="$$duration" 'BEGIN { exit !(d >= 0.8 && d <= 1.3) }'

## format: rewrite sources with the checked-in .swift-format; lint: report only.
format:
	$(SWIFT) format --in-place --recursive Sources Tests Benchmarks/Benchmarks Benchmarks/Comparisons Package.swift
lint:
	$(SWIFT) format lint --recursive Sources Tests Benchmarks/Benchmarks Benchmarks/Comparisons Package.swift

clean:
	rm -rf .build Benchmarks/.build
