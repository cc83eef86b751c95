// usb-webcam-emulator: a USB webcam with a microphone, in user space, exported over USB/IP.
//
// A test instrument of OpenAVCapture. It listens on 127.0.0.1:3240 (the USB/IP port) and exports one device,
// bus id 1-1, "OpenAV Test Webcam" (1209:0001, the pid.codes test ID), high speed, a composite of:
//   * a UVC 1.1 camera: MJPEG 1280x720 and 1920x1080 at 30 and 15 fps, YUYV 640x480 at 30 fps, streamed on a
//     bulk endpoint (0x81); controls: brightness, white balance temperature (and auto), power line frequency,
//     auto exposure mode, exposure time, focus (and auto);
//   * a USB Audio Class 1 microphone: 48 kHz mono 16-bit on an isochronous endpoint (0x82), 1 ms packets.
// `usbip attach -r 127.0.0.1 -b 1-1` plugs it into the kernel's vhci-hcd, which then binds uvcvideo and
// snd-usb-audio to it as to a webcam in a port; `usbip detach -p N` or ending this program unplugs it.
//
// What it shows, on one clock (CLOCK_MONOTONIC, the clock the kernel stamps V4L2 buffers and ALSA with):
//   * every video frame carries OpenAVCapture's frame-index code (VirtualFrameIndexCode.swift: 14 x 6 cells of
//     max(8, width / 80) rounded down to even pixels, luma 16 or 235, clock row and column, 32-bit index and its
//     CRC-16/CCITT-FALSE) in its top-left corner over colour bars; the index counts frames from 0 at the start
//     of each stream and never skips (a late frame is sent late, not dropped);
//   * the frame whose slot starts at a whole second of the clock is a flash: white all over, no code;
//   * the microphone plays VirtualMicrophoneSynth's sound: a 440 Hz tone at -30 dBFS and, at every whole second,
//     a 50 ms 1 kHz beep at -6 dBFS with 2 ms raised-cosine ramps. Sample n of the clock is sample n / 48000 s.
//
// Why C and not Swift: it runs inside the test VM, whose image has no Swift runtime; a static C binary needs
// nothing there, and the program is a protocol responder plus a small JPEG writer. Its JPEGs are baseline, 4:2:2,
// and made only of flat 8x8 blocks (the code's cells, the bars and the flash all fall on the block grid), so each
// block is a DC difference and an end-of-block: a frame is written in well under a millisecond, even under TCG.
//
// Why bulk streaming: a bulk endpoint has no alternate settings or bandwidth negotiation, takes any frame size at
// any rate, and is what uvcvideo uses for many real cameras; isochronous video over USB/IP adds nothing the
// kernel's UVC code paths under test care about. The microphone is isochronous because UAC 1 requires it.
//
// Protocol: Documentation/usb/usbip_protocol.rst (OP_REQ_DEVLIST, OP_REQ_IMPORT, USBIP_CMD_SUBMIT/UNLINK),
// USB 2.0 chapter 9, UVC 1.1 and UAC 1.0. Usage: usb-webcam-emulator [--port N] [--verbose]. It serves one
// attachment at a time and, after a detach, waits for the next.

#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

// MARK: - Logging and time

static int verbose;

static void logf_(const char *format, ...) {
    va_list args;
    va_start(args, format);
    fprintf(stderr, "usb-webcam-emulator: ");
    vfprintf(stderr, format, args);
    fputc('\n', stderr);
    va_end(args);
}
#define debugf(...) \
    do { \
        if (verbose) logf_(__VA_ARGS__); \
    } while (0)

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

// MARK: - Little-endian and big-endian helpers

static void put_le16(uint8_t *p, uint32_t v) { p[0] = v & 0xff; p[1] = (v >> 8) & 0xff; }
static void put_le32(uint8_t *p, uint32_t v) { put_le16(p, v & 0xffff); put_le16(p + 2, v >> 16); }
static uint32_t get_le16(const uint8_t *p) { return p[0] | (uint32_t)p[1] << 8; }
static uint32_t get_le32(const uint8_t *p) { return get_le16(p) | get_le16(p + 2) << 16; }
static void put_be16(uint8_t *p, uint32_t v) { p[0] = (v >> 8) & 0xff; p[1] = v & 0xff; }
static void put_be32(uint8_t *p, uint32_t v) { put_be16(p, v >> 16); put_be16(p + 2, v & 0xffff); }
static uint32_t get_be32(const uint8_t *p) { return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | p[2] << 8 | p[3]; }

// MARK: - Descriptors

enum { VENDOR_ID = 0x1209, PRODUCT_ID = 0x0001, BCD_DEVICE = 0x0100 };
enum { USB_SPEED_HIGH = 3 };
enum { VIDEO_ENDPOINT = 1, AUDIO_ENDPOINT = 2 };  // 0x81 and 0x82
enum { VC_INTERFACE = 0, VS_INTERFACE = 1, AC_INTERFACE = 2, AS_INTERFACE = 3, INTERFACE_COUNT = 4 };
// UVC entities.
enum { CAMERA_TERMINAL = 1, PROCESSING_UNIT = 2, OUTPUT_TERMINAL = 3 };
// One payload per bulk URB: uvcvideo makes its bulk URBs min(dwMaxPayloadTransferSize, 32 x 512) bytes long.
enum { MAX_PAYLOAD = 16384 };
enum { AUDIO_RATE = 48000, AUDIO_PACKET_SAMPLES = 48, AUDIO_PACKET_BYTES = 96 };

static const uint8_t device_descriptor[18] = {
    18, 1, 0x00, 0x02,             // USB 2.0
    0xef, 0x02, 0x01, 64,          // miscellaneous / common class / interface association: a composite device
    VENDOR_ID & 0xff, VENDOR_ID >> 8, PRODUCT_ID & 0xff, PRODUCT_ID >> 8, BCD_DEVICE & 0xff, BCD_DEVICE >> 8,
    1, 2, 3,                       // manufacturer, product, serial number strings
    1,                             // one configuration
};

static const char *strings[] = {NULL, "OpenAVCapture", "OpenAV Test Webcam", "OAV-USBIP-0001",
                                "OpenAV Test Webcam Microphone"};

struct video_frame_size {
    uint16_t width, height;
    uint32_t intervals[2];  // 100 ns units; 0 ends the list
};
struct video_format {
    int mjpeg;  // else YUYV
    int frame_count;
    struct video_frame_size frames[2];
};
static const struct video_format video_formats[] = {
    {1, 2, {{1280, 720, {333333, 666667}}, {1920, 1080, {333333, 666667}}}},
    {0, 1, {{640, 480, {333333, 0}}}},
};
enum { VIDEO_FORMAT_COUNT = sizeof video_formats / sizeof video_formats[0] };

static uint32_t frame_buffer_size(const struct video_frame_size *f) { return (uint32_t)f->width * f->height * 2; }

static uint8_t configuration[1024];
static size_t configuration_length;

static uint8_t *append(const uint8_t *bytes, size_t n) {
    uint8_t *at = configuration + configuration_length;
    memcpy(at, bytes, n);
    configuration_length += n;
    return at;
}

static void build_configuration(void) {
    configuration_length = 0;
    uint8_t *config = append((const uint8_t[]){9, 2, 0, 0, INTERFACE_COUNT, 1, 0, 0x80, 250}, 9);

    // Video function.
    append((const uint8_t[]){8, 0x0b, VC_INTERFACE, 2, 0x0e, 0x03, 0x00, 2}, 8);  // interface association
    append((const uint8_t[]){9, 4, VC_INTERFACE, 0, 0, 0x0e, 0x01, 0x00, 2}, 9);   // VideoControl, no endpoint
    size_t vc_start = configuration_length;
    uint8_t *vc_header = append((const uint8_t[]){13, 0x24, 0x01, 0x10, 0x01, 0, 0, 0, 0, 0, 0, 1, VS_INTERFACE}, 13);
    put_le32(vc_header + 7, 48000000);  // dwClockFrequency
    // Camera terminal: auto-exposure mode (D1), exposure time absolute (D3), focus absolute (D5), focus auto (D17).
    append((const uint8_t[]){18, 0x24, 0x02, CAMERA_TERMINAL, 0x01, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 3,
                             0x2a, 0x00, 0x02},
           18);
    // Processing unit: brightness (D0), white balance temperature (D6), power line frequency (D10), white balance
    // temperature auto (D12).
    append((const uint8_t[]){12, 0x24, 0x05, PROCESSING_UNIT, CAMERA_TERMINAL, 0, 0, 2, 0x41, 0x14, 0, 0}, 12);
    append((const uint8_t[]){9, 0x24, 0x03, OUTPUT_TERMINAL, 0x01, 0x01, 0, PROCESSING_UNIT, 0}, 9);
    put_le16(vc_header + 5, (uint32_t)(configuration_length - vc_start));

    append((const uint8_t[]){9, 4, VS_INTERFACE, 0, 1, 0x0e, 0x02, 0x00, 0}, 9);  // VideoStreaming, one bulk EP
    size_t vs_start = configuration_length;
    uint8_t *vs_header = append(
        (const uint8_t[]){13 + VIDEO_FORMAT_COUNT, 0x24, 0x01, VIDEO_FORMAT_COUNT, 0, 0, 0x80 | VIDEO_ENDPOINT, 0,
                          OUTPUT_TERMINAL, 0, 0, 0, 1, 0, 0},
        13 + VIDEO_FORMAT_COUNT);
    for (int f = 0; f < VIDEO_FORMAT_COUNT; f++) {
        const struct video_format *format = &video_formats[f];
        if (format->mjpeg) {
            append((const uint8_t[]){11, 0x24, 0x06, f + 1, format->frame_count, 0x01, 1, 0, 0, 0, 0}, 11);
        } else {
            append((const uint8_t[]){27, 0x24, 0x04, f + 1, format->frame_count, 'Y', 'U', 'Y', '2', 0x00, 0x00,
                                     0x10, 0x00, 0x80, 0x00, 0x00, 0xaa, 0x00, 0x38, 0x9b, 0x71, 16, 1, 0, 0, 0, 0},
                   27);
        }
        for (int i = 0; i < format->frame_count; i++) {
            const struct video_frame_size *size = &format->frames[i];
            int interval_count = size->intervals[1] ? 2 : 1;
            uint8_t d[34] = {(uint8_t)(26 + 4 * interval_count), 0x24, format->mjpeg ? 0x07 : 0x05, i + 1, 0};
            put_le16(d + 5, size->width);
            put_le16(d + 7, size->height);
            uint32_t frame_bits = frame_buffer_size(size) * 8;
            put_le32(d + 9, frame_bits * 15);   // dwMinBitRate
            put_le32(d + 13, frame_bits * 30);  // dwMaxBitRate
            put_le32(d + 17, frame_buffer_size(size));
            put_le32(d + 21, size->intervals[0]);  // dwDefaultFrameInterval
            d[25] = (uint8_t)interval_count;
            for (int k = 0; k < interval_count; k++) put_le32(d + 26 + 4 * k, size->intervals[k]);
            append(d, d[0]);
        }
        // Colour matching: BT.709 primaries and transfer, BT.601 matrix (what JPEG and YUY2 webcams declare).
        append((const uint8_t[]){6, 0x24, 0x0d, 1, 1, 4}, 6);
    }
    put_le16(vs_header + 4, (uint32_t)(configuration_length - vs_start));
    append((const uint8_t[]){7, 5, 0x80 | VIDEO_ENDPOINT, 0x02, 0x00, 0x02, 0}, 7);  // bulk IN, 512 bytes

    // Audio function (UAC 1).
    append((const uint8_t[]){8, 0x0b, AC_INTERFACE, 2, 0x01, 0x02, 0x00, 4}, 8);
    append((const uint8_t[]){9, 4, AC_INTERFACE, 0, 0, 0x01, 0x01, 0x00, 0}, 9);  // AudioControl
    size_t ac_start = configuration_length;
    uint8_t *ac_header = append((const uint8_t[]){9, 0x24, 0x01, 0x00, 0x01, 0, 0, 1, AS_INTERFACE}, 9);
    // Input terminal 1: a microphone, one channel; output terminal 2: USB streaming.
    append((const uint8_t[]){12, 0x24, 0x02, 1, 0x01, 0x02, 0, 1, 0, 0, 0, 0}, 12);
    append((const uint8_t[]){9, 0x24, 0x03, 2, 0x01, 0x01, 0, 1, 0}, 9);
    put_le16(ac_header + 5, (uint32_t)(configuration_length - ac_start));
    append((const uint8_t[]){9, 4, AS_INTERFACE, 0, 0, 0x01, 0x02, 0x00, 0}, 9);  // zero bandwidth
    append((const uint8_t[]){9, 4, AS_INTERFACE, 1, 1, 0x01, 0x02, 0x00, 0}, 9);  // streaming
    append((const uint8_t[]){7, 0x24, 0x01, 2, 1, 0x01, 0x00}, 7);                // AS general: PCM from terminal 2
    append((const uint8_t[]){11, 0x24, 0x02, 1, 1, 2, 16, 1, AUDIO_RATE & 0xff, (AUDIO_RATE >> 8) & 0xff,
                             AUDIO_RATE >> 16},
           11);  // type I: mono, 2-byte subframes, 16 bits, one rate
    // Isochronous asynchronous IN, 96 bytes every 8 microframes (1 ms).
    append((const uint8_t[]){9, 5, 0x80 | AUDIO_ENDPOINT, 0x05, AUDIO_PACKET_BYTES, 0, 4, 0, 0}, 9);
    append((const uint8_t[]){7, 0x25, 0x01, 0x00, 0, 0, 0}, 7);

    put_le16(config + 2, (uint32_t)configuration_length);
}

// MARK: - Camera controls

struct control {
    uint8_t entity, selector, size;
    int32_t min, max, res, def, cur;
};
static struct control controls[] = {
    {CAMERA_TERMINAL, 0x02, 1, 0x01, 0x08, 0x09, 0x08, 0x08},  // CT_AE_MODE: manual (1) or aperture priority (8)
    {CAMERA_TERMINAL, 0x04, 4, 3, 2047, 1, 156, 156},         // CT_EXPOSURE_TIME_ABSOLUTE, 100 us units
    {CAMERA_TERMINAL, 0x06, 2, 0, 250, 5, 0, 0},              // CT_FOCUS_ABSOLUTE
    {CAMERA_TERMINAL, 0x08, 1, 0, 1, 1, 1, 1},                // CT_FOCUS_AUTO
    {PROCESSING_UNIT, 0x02, 2, -64, 64, 1, 0, 0},             // PU_BRIGHTNESS (signed)
    {PROCESSING_UNIT, 0x05, 1, 0, 2, 1, 1, 1},                // PU_POWER_LINE_FREQUENCY: off, 50 Hz, 60 Hz
    {PROCESSING_UNIT, 0x0a, 2, 2800, 6500, 10, 4600, 4600},   // PU_WHITE_BALANCE_TEMPERATURE, kelvin
    {PROCESSING_UNIT, 0x0b, 1, 0, 1, 1, 1, 1},                // PU_WHITE_BALANCE_TEMPERATURE_AUTO
};
enum { CONTROL_COUNT = sizeof controls / sizeof controls[0] };
static uint8_t request_error_code;  // VC_REQUEST_ERROR_CODE_CONTROL

// MARK: - Video streaming state

// The UVC 1.1 probe and commit control (34 bytes).
struct streaming_control {
    uint8_t format_index, frame_index;
    uint32_t interval;
};
static struct streaming_control probe = {1, 1, 333333}, committed = {1, 1, 333333};

static void normalize(struct streaming_control *c) {
    if (c->format_index < 1 || c->format_index > VIDEO_FORMAT_COUNT) c->format_index = 1;
    const struct video_format *format = &video_formats[c->format_index - 1];
    if (c->frame_index < 1 || c->frame_index > format->frame_count) c->frame_index = 1;
    const struct video_frame_size *size = &format->frames[c->frame_index - 1];
    uint32_t best = size->intervals[0];
    for (int k = 0; k < 2 && size->intervals[k]; k++) {
        if (c->interval && llabs((long long)size->intervals[k] - c->interval) < llabs((long long)best - c->interval))
            best = size->intervals[k];
    }
    c->interval = best;
}

static void encode_streaming_control(const struct streaming_control *c, uint8_t out[34]) {
    memset(out, 0, 34);
    const struct video_frame_size *size = &video_formats[c->format_index - 1].frames[c->frame_index - 1];
    put_le16(out, 1);  // bmHint: frame interval fixed
    out[2] = c->format_index;
    out[3] = c->frame_index;
    put_le32(out + 4, c->interval);
    put_le16(out + 12, 10000);  // wCompQuality
    put_le32(out + 18, frame_buffer_size(size));
    put_le32(out + 22, MAX_PAYLOAD);
    put_le32(out + 26, 48000000);
    out[30] = 0x03;  // bmFramingInfo: FID and EOF used
    out[31] = out[32] = out[33] = 1;
}

static void decode_streaming_control(const uint8_t *in, uint32_t length, struct streaming_control *c) {
    if (length >= 3) c->format_index = in[2];
    if (length >= 4) c->frame_index = in[3];
    if (length >= 8) c->interval = get_le32(in + 4);
    normalize(c);
}

// MARK: - Frame pictures

// Luma and chroma of the background's eight 75 % colour bars (white, yellow, cyan, green, magenta, red, blue,
// black), BT.601, in full range (JPEG) or video range (YUY2).
struct ycbcr {
    uint8_t y, cb, cr;
};
static struct ycbcr bar_colour(int bar, int full_range) {
    static const uint8_t rgb[8][3] = {{191, 191, 191}, {191, 191, 0}, {0, 191, 191}, {0, 191, 0},
                                      {191, 0, 191},   {191, 0, 0},   {0, 0, 191},   {0, 0, 0}};
    double r = rgb[bar][0] / 255.0, g = rgb[bar][1] / 255.0, b = rgb[bar][2] / 255.0;
    double y = 0.299 * r + 0.587 * g + 0.114 * b;
    double cb = (b - y) / 1.772, cr = (r - y) / 1.402;
    struct ycbcr out;
    if (full_range) {
        out.y = (uint8_t)lround(y * 255);
        out.cb = (uint8_t)lround(128 + cb * 255);
        out.cr = (uint8_t)lround(128 + cr * 255);
    } else {
        out.y = (uint8_t)lround(16 + y * 219);
        out.cb = (uint8_t)lround(128 + cb * 224);
        out.cr = (uint8_t)lround(128 + cr * 224);
    }
    return out;
}

enum { CODE_COLUMNS = 14, CODE_ROWS = 6, CODE_DATA_BITS = 48, CODE_BLACK = 16, CODE_WHITE = 235 };

static int code_cell_size(int width) { int c = (width / 80) & ~1; return c > 8 ? c : 8; }

static uint16_t code_checksum(uint32_t index) {
    uint16_t crc = 0xffff;
    for (int shift = 24; shift >= 0; shift -= 8) {
        crc ^= (uint16_t)(((index >> shift) & 0xff) << 8);
        for (int i = 0; i < 8; i++) crc = crc & 0x8000 ? (uint16_t)((crc << 1) ^ 0x1021) : (uint16_t)(crc << 1);
    }
    return crc;
}

// Whether cell (column, row) of the code of `index` is white (VirtualFrameIndexCode.cellIsWhite).
static int code_cell_is_white(int column, int row, uint32_t index) {
    if (row == 0 || column == 0) return (row + column) % 2 == 0;
    if (column == CODE_COLUMNS - 1) return 0;
    if (row == CODE_ROWS - 1) return column % 2 == 1 && column < CODE_COLUMNS - 2;
    int bit = (row - 1) * (CODE_COLUMNS - 2) + (column - 1);
    uint64_t bits = (uint64_t)index << 16 | code_checksum(index);
    return (bits >> (CODE_DATA_BITS - 1 - bit)) & 1;
}

// The luma at (x, y) and the chroma of the 2-pixel pair at (x & ~1, y): flash, code or bars.
static struct ycbcr picture_sample(int x, int y, int width, uint32_t index, int flash, int full_range) {
    if (flash) return (struct ycbcr){full_range ? 255 : CODE_WHITE, 128, 128};
    int cell = code_cell_size(width);
    if (x < CODE_COLUMNS * cell && y < CODE_ROWS * cell) {
        int white = code_cell_is_white(x / cell, y / cell, index);
        return (struct ycbcr){white ? CODE_WHITE : CODE_BLACK, 128, 128};
    }
    int bar = x * 8 / width;
    return bar_colour(bar, full_range);
}

// A growable byte buffer for one frame.
struct buffer {
    uint8_t *bytes;
    size_t length, capacity;
};
static void buffer_reserve(struct buffer *b, size_t extra) {
    if (b->length + extra <= b->capacity) return;
    size_t capacity = b->capacity ? b->capacity : 65536;
    while (capacity < b->length + extra) capacity *= 2;
    b->bytes = realloc(b->bytes, capacity);
    if (!b->bytes) {
        logf_("out of memory");
        exit(1);
    }
    b->capacity = capacity;
}
static void buffer_append(struct buffer *b, const void *bytes, size_t n) {
    buffer_reserve(b, n);
    memcpy(b->bytes + b->length, bytes, n);
    b->length += n;
}

static void render_yuyv(struct buffer *out, int width, int height, uint32_t index, int flash) {
    out->length = 0;
    buffer_reserve(out, (size_t)width * height * 2);
    uint8_t *p = out->bytes;
    for (int y = 0; y < height; y++) {
        for (int x = 0; x < width; x += 2) {
            struct ycbcr a = picture_sample(x, y, width, index, flash, 0);
            struct ycbcr b = picture_sample(x + 1, y, width, index, flash, 0);
            *p++ = a.y;
            *p++ = a.cb;
            *p++ = b.y;
            *p++ = a.cr;
        }
    }
    out->length = (size_t)width * height * 2;
}

// JPEG: baseline, 4:2:2 (an MCU is 16x8: two luma blocks, one Cb, one Cr), one DC table (ITU-T T.81 K.3's
// luminance DC table) and one AC table holding only end-of-block, as every block is flat. A flat block's only
// coefficient is DC = 8 (v - 128); with a DC quantizer of 8 the quantized DC is v - 128, and decoders give back v.
static const uint8_t dc_bits[16] = {0, 1, 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0};
static const uint8_t dc_values[12] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
static uint16_t dc_code[12];
static uint8_t dc_length[12];

static void build_huffman_codes(void) {
    int k = 0;
    uint16_t code = 0;
    for (int length = 1; length <= 16; length++) {
        for (int i = 0; i < dc_bits[length - 1]; i++) {
            dc_code[dc_values[k]] = code++;
            dc_length[dc_values[k]] = (uint8_t)length;
            k++;
        }
        code <<= 1;
    }
}

struct bit_writer {
    struct buffer *out;
    uint32_t accumulator;
    int count;
};
static void put_bits(struct bit_writer *w, uint32_t bits, int n) {
    for (int i = n - 1; i >= 0; i--) {
        w->accumulator = w->accumulator << 1 | ((bits >> i) & 1);
        if (++w->count == 8) {
            uint8_t byte = (uint8_t)w->accumulator;
            buffer_append(w->out, &byte, 1);
            if (byte == 0xff) buffer_append(w->out, "", 1);  // byte stuffing
            w->accumulator = 0;
            w->count = 0;
        }
    }
}
static void flush_bits(struct bit_writer *w) {
    while (w->count) put_bits(w, 1, 1);
}

static void put_flat_block(struct bit_writer *w, int *predictor, int level) {
    int dc = level - 128;
    int diff = dc - *predictor;
    *predictor = dc;
    int magnitude = diff < 0 ? -diff : diff;
    int category = 0;
    while (magnitude >> category) category++;
    put_bits(w, dc_code[category], dc_length[category]);
    if (category) put_bits(w, (uint32_t)(diff < 0 ? diff - 1 : diff) & ((1u << category) - 1), category);
    put_bits(w, 0, 1);  // end of block: the AC table's only code, "0"
}

static void render_jpeg(struct buffer *out, int width, int height, uint32_t index, int flash) {
    out->length = 0;
    static const uint8_t soi_app0[] = {0xff, 0xd8, 0xff, 0xe0, 0, 16, 'J', 'F', 'I', 'F', 0, 1, 1, 0, 0, 1, 0, 1, 0, 0};
    buffer_append(out, soi_app0, sizeof soi_app0);
    uint8_t dqt[5 + 64] = {0xff, 0xdb, 0, 67, 0};
    dqt[5] = 8;
    for (int i = 1; i < 64; i++) dqt[5 + i] = 16;
    buffer_append(out, dqt, sizeof dqt);
    uint8_t sof[19] = {0xff, 0xc0, 0, 17, 8, 0, 0, 0, 0, 3, 1, 0x21, 0, 2, 0x11, 0, 3, 0x11, 0};
    put_be16(sof + 5, (uint32_t)height);
    put_be16(sof + 7, (uint32_t)width);
    buffer_append(out, sof, sizeof sof);
    uint8_t dht[4 + 1 + 16 + 12 + 1 + 16 + 1] = {0xff, 0xc4, 0, 0, 0x00};
    size_t n = 5;
    memcpy(dht + n, dc_bits, 16), n += 16;
    memcpy(dht + n, dc_values, 12), n += 12;
    dht[n++] = 0x10;  // AC table 0: one code of length 1, for end-of-block
    dht[n++] = 1;
    memset(dht + n, 0, 15), n += 15;
    dht[n++] = 0x00;
    put_be16(dht + 2, (uint32_t)(n - 2));
    buffer_append(out, dht, n);
    static const uint8_t sos[] = {0xff, 0xda, 0, 12, 3, 1, 0x00, 2, 0x00, 3, 0x00, 0, 63, 0};
    buffer_append(out, sos, sizeof sos);

    struct bit_writer w = {out, 0, 0};
    int predictors[3] = {0, 0, 0};
    for (int my = 0; my < (height + 7) / 8; my++) {
        for (int mx = 0; mx < (width + 15) / 16; mx++) {
            int x = mx * 16, y = my * 8;
            struct ycbcr left = picture_sample(x, y, width, index, flash, 1);
            struct ycbcr right = picture_sample(x + 8 < width ? x + 8 : x, y, width, index, flash, 1);
            put_flat_block(&w, &predictors[0], left.y);
            put_flat_block(&w, &predictors[0], right.y);
            put_flat_block(&w, &predictors[1], left.cb);
            put_flat_block(&w, &predictors[2], left.cr);
        }
    }
    flush_bits(&w);
    buffer_append(out, (const uint8_t[]){0xff, 0xd9}, 2);
}

// MARK: - Sound

static int16_t synth_table[AUDIO_RATE];

static void build_synth(void) {
    const int beep = AUDIO_RATE / 20, ramp = AUDIO_RATE / 500;
    const double tone_amplitude = pow(10, -30.0 / 20), beep_amplitude = pow(10, -6.0 / 20);
    for (int m = 0; m < AUDIO_RATE; m++) {
        double e = 0;
        if (m < ramp) e = 0.5 - 0.5 * cos(M_PI * m / ramp);
        else if (m < beep - ramp) e = 1;
        else if (m < beep) e = 0.5 - 0.5 * cos(M_PI * (beep - m) / ramp);
        double s = (1 - e) * tone_amplitude * sin(2 * M_PI * 440.0 * m / AUDIO_RATE) +
                   e * beep_amplitude * sin(2 * M_PI * 1000.0 * m / AUDIO_RATE);
        synth_table[m] = (int16_t)lround(s * 32767);
    }
}

// MARK: - URBs and the connection

struct iso_descriptor {
    uint32_t offset, length, actual_length, status;
};
struct urb {
    uint32_t seqnum, length, start_frame;
    int packet_count;  // -1 when not isochronous
    struct iso_descriptor *packets;
    struct urb *next;
};
struct urb_queue {
    struct urb *head, *tail;
};
static void queue_push(struct urb_queue *q, struct urb *u) {
    u->next = NULL;
    if (q->tail) q->tail->next = u; else q->head = u;
    q->tail = u;
}
static struct urb *queue_pop(struct urb_queue *q) {
    struct urb *u = q->head;
    if (u) {
        q->head = u->next;
        if (!q->head) q->tail = NULL;
    }
    return u;
}
static int queue_remove(struct urb_queue *q, uint32_t seqnum) {
    struct urb *previous = NULL;
    for (struct urb *u = q->head; u; previous = u, u = u->next) {
        if (u->seqnum != seqnum) continue;
        if (previous) previous->next = u->next; else q->head = u->next;
        if (q->tail == u) q->tail = previous;
        free(u->packets);
        free(u);
        return 1;
    }
    return 0;
}
static void queue_clear(struct urb_queue *q) {
    struct urb *u;
    while ((u = queue_pop(q))) {
        free(u->packets);
        free(u);
    }
}

static int connection = -1;
static int listener = -1;
static volatile sig_atomic_t stopping;

static int read_all(int fd, void *buffer, size_t n) {
    uint8_t *p = buffer;
    while (n) {
        ssize_t r = read(fd, p, n);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return -1;
        p += r;
        n -= (size_t)r;
    }
    return 0;
}
static int write_all(int fd, const void *buffer, size_t n) {
    const uint8_t *p = buffer;
    while (n) {
        ssize_t r = send(fd, p, n, MSG_NOSIGNAL);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return -1;
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

enum { CMD_SUBMIT = 1, CMD_UNLINK = 2, RET_SUBMIT = 3, RET_UNLINK = 4 };
enum { EPIPE_STATUS = -32, ECONNRESET_STATUS = -104 };

// Sends USBIP_RET_SUBMIT: status, actual_length, `data` (an IN transfer's bytes; none for OUT) and the iso
// descriptors when isochronous.
static int send_ret_submit(uint32_t seqnum, int32_t status, const void *data, uint32_t data_length,
                           uint32_t actual_length, const struct urb *iso) {
    uint8_t header[48] = {0};
    put_be32(header, RET_SUBMIT);
    put_be32(header + 4, seqnum);
    put_be32(header + 20, (uint32_t)status);
    put_be32(header + 24, actual_length);
    put_be32(header + 28, iso ? iso->start_frame : 0);
    put_be32(header + 32, iso ? (uint32_t)iso->packet_count : 0xffffffff);
    if (write_all(connection, header, sizeof header) < 0) return -1;
    if (data_length && write_all(connection, data, data_length) < 0) return -1;
    if (iso) {
        for (int i = 0; i < iso->packet_count; i++) {
            uint8_t d[16];
            put_be32(d, iso->packets[i].offset);
            put_be32(d + 4, iso->packets[i].length);
            put_be32(d + 8, iso->packets[i].actual_length);
            put_be32(d + 12, iso->packets[i].status);
            if (write_all(connection, d, 16) < 0) return -1;
        }
    }
    return 0;
}

// MARK: - Device state

static int configuration_value;
static int alternate_settings[INTERFACE_COUNT];
static struct urb_queue video_urbs, audio_urbs;

static struct {
    int active;
    int fps;
    int64_t first_slot;  // slot number (since the clock's zero, at `fps`) of frame 0
    uint32_t index;      // the frame being sent (or next to send)
    int in_progress;     // the frame is rendered and partly sent
    size_t offset;
    uint8_t fid;
    struct buffer frame;
} video;

static struct {
    int active;
    int64_t next_sample;  // sample number since the clock's zero
} audio;

static int64_t slot_time_ns(int64_t slot, int fps) { return slot * 1000000000 / fps; }

static void stop_video(void) {
    if (video.active) debugf("video stream stopped after %u frames", video.index);
    video.active = 0;
    video.in_progress = 0;
}

static void start_video(void) {
    const struct streaming_control *c = &committed;
    video.fps = (int)((10000000 + c->interval / 2) / c->interval);
    int64_t now = now_ns();
    video.first_slot = (now * video.fps + 999999999) / 1000000000;
    video.index = 0;
    video.in_progress = 0;
    video.active = 1;
    debugf("video stream started: format %d frame %d at %d fps", c->format_index, c->frame_index, video.fps);
}

// Answers the waiting video URBs with the current frame's payloads; renders frames when their slot has come.
static int pump_video(int64_t now) {
    while (video_urbs.head) {
        if (!video.active) start_video();
        const struct video_format *format = &video_formats[committed.format_index - 1];
        const struct video_frame_size *size = &format->frames[committed.frame_index - 1];
        if (!video.in_progress) {
            int64_t slot = video.first_slot + video.index;
            if (now < slot_time_ns(slot, video.fps)) return 0;
            int flash = slot % video.fps == 0;
            if (format->mjpeg) render_jpeg(&video.frame, size->width, size->height, video.index, flash);
            else render_yuyv(&video.frame, size->width, size->height, video.index, flash);
            video.in_progress = 1;
            video.offset = 0;
        }
        struct urb *u = queue_pop(&video_urbs);
        static uint8_t payload[MAX_PAYLOAD];
        uint32_t capacity = u->length < MAX_PAYLOAD ? u->length : MAX_PAYLOAD;
        size_t remaining = video.frame.length - video.offset;
        size_t chunk = remaining < capacity - 2 ? remaining : capacity - 2;
        int last = chunk == remaining;
        payload[0] = 2;
        payload[1] = (uint8_t)(0x80 | video.fid | (last ? 0x02 : 0));  // EOH, FID, EOF
        memcpy(payload + 2, video.frame.bytes + video.offset, chunk);
        video.offset += chunk;
        int failed = send_ret_submit(u->seqnum, 0, payload, (uint32_t)(chunk + 2), (uint32_t)(chunk + 2), NULL);
        free(u);
        if (failed) return -1;
        if (last) {
            video.in_progress = 0;
            video.index++;
            video.fid ^= 1;
        }
    }
    return 0;
}

static int64_t audio_sample_time_ns(int64_t sample) { return sample * 1000000000 / AUDIO_RATE; }

// Answers each waiting audio URB once the last sample it carries has been "recorded".
static int pump_audio(int64_t now) {
    while (audio_urbs.head) {
        struct urb *u = audio_urbs.head;
        if (!audio.active) {
            audio.active = 1;
            audio.next_sample = now * AUDIO_RATE / 1000000000;
        }
        int64_t end = audio.next_sample + (int64_t)u->packet_count * AUDIO_PACKET_SAMPLES;
        if (now < audio_sample_time_ns(end)) return 0;
        queue_pop(&audio_urbs);
        static uint8_t data[1024 * AUDIO_PACKET_BYTES];
        uint32_t total = 0;
        for (int i = 0; i < u->packet_count; i++) {
            uint32_t bytes = u->packets[i].length < AUDIO_PACKET_BYTES ? u->packets[i].length : AUDIO_PACKET_BYTES;
            bytes &= ~1u;
            for (uint32_t b = 0; b < bytes; b += 2) {
                int16_t s = synth_table[audio.next_sample % AUDIO_RATE];
                audio.next_sample++;
                put_le16(data + total + b, (uint16_t)s);
            }
            u->packets[i].actual_length = bytes;
            u->packets[i].status = 0;
            total += bytes;
        }
        int failed = send_ret_submit(u->seqnum, 0, data, total, total, u);
        free(u->packets);
        free(u);
        if (failed) return -1;
    }
    return 0;
}

static int64_t next_event_ns(void) {
    int64_t next = INT64_MAX;
    if (video_urbs.head) {
        if (!video.active || video.in_progress) return 0;
        next = slot_time_ns(video.first_slot + video.index, video.fps);
    }
    if (audio_urbs.head) {
        if (!audio.active) return 0;
        int64_t end = audio.next_sample + (int64_t)audio_urbs.head->packet_count * AUDIO_PACKET_SAMPLES;
        int64_t t = audio_sample_time_ns(end);
        if (t < next) next = t;
    }
    return next;
}

// MARK: - Control transfers

// Answers a class request to a UVC interface or entity; returns the reply's length, or -1 to stall.
static int uvc_request(const uint8_t *setup, const uint8_t *data, uint32_t length, uint8_t *reply) {
    uint8_t request = setup[1], selector = setup[3], interface = setup[4], entity = setup[5];
    uint16_t w_length = (uint16_t)get_le16(setup + 6);
    if (interface == VS_INTERFACE) {
        if (selector != 1 && selector != 2) return -1;  // probe, commit
        struct streaming_control *c = selector == 1 ? &probe : &committed;
        switch (request) {
        case 0x01:  // SET_CUR
            decode_streaming_control(data, length, c);
            if (selector == 2) {
                stop_video();
                debugf("commit: format %d frame %d interval %u", c->format_index, c->frame_index, c->interval);
            }
            return 0;
        case 0x81: case 0x82: case 0x83: case 0x87: {  // GET_CUR, GET_MIN, GET_MAX, GET_DEF
            struct streaming_control value = *c;
            if (request == 0x87) value = (struct streaming_control){1, 1, 333333};
            encode_streaming_control(&value, reply);
            return w_length < 34 ? w_length : 34;
        }
        case 0x85: put_le16(reply, 34); return 2;  // GET_LEN
        case 0x86: reply[0] = 0x03; return 1;       // GET_INFO
        default: return -1;
        }
    }
    if (interface != VC_INTERFACE) return -1;
    if (entity == 0) {
        if (selector == 0x02 && request == 0x81) {  // VC_REQUEST_ERROR_CODE_CONTROL
            reply[0] = request_error_code;
            return 1;
        }
        if (selector == 0x02 && request == 0x86) { reply[0] = 0x01; return 1; }
        return -1;
    }
    struct control *control = NULL;
    for (int i = 0; i < CONTROL_COUNT; i++)
        if (controls[i].entity == entity && controls[i].selector == selector) control = &controls[i];
    if (!control) {
        request_error_code = 0x06;  // invalid control
        return -1;
    }
    request_error_code = 0;
    int32_t value;
    switch (request) {
    case 0x01:  // SET_CUR
        if (length < control->size) return -1;
        value = control->size == 1 ? data[0] : control->size == 2 ? (int16_t)get_le16(data) : (int32_t)get_le32(data);
        if (control->size == 2 && control->min >= 0) value = (int32_t)get_le16(data);
        if (value < control->min || value > control->max) {
            request_error_code = 0x04;  // out of range
            return -1;
        }
        control->cur = value;
        debugf("control %d/%d set to %d", entity, selector, value);
        return 0;
    case 0x81: value = control->cur; break;
    case 0x82: value = control->min; break;
    case 0x83: value = control->max; break;
    case 0x84: value = control->res; break;
    case 0x87: value = control->def; break;
    case 0x85: put_le16(reply, control->size); return 2;
    case 0x86: reply[0] = 0x03; return 1;  // GET and SET supported
    default: request_error_code = 0x07; return -1;
    }
    if (control->size == 1) reply[0] = (uint8_t)value;
    else if (control->size == 2) put_le16(reply, (uint32_t)value);
    else put_le32(reply, (uint32_t)value);
    return control->size < w_length ? control->size : w_length;
}

// Answers a control transfer on endpoint 0; returns the reply's length, or -1 to stall.
static int control_request(const uint8_t *setup, const uint8_t *data, uint32_t length, uint8_t *reply) {
    uint8_t type = setup[0], request = setup[1];
    uint16_t value = (uint16_t)get_le16(setup + 2), index = (uint16_t)get_le16(setup + 4);
    uint16_t w_length = (uint16_t)get_le16(setup + 6);
    int n = -1;
    if ((type & 0x60) == 0x00) {  // standard
        switch (request) {
        case 0x06: {  // GET_DESCRIPTOR
            uint8_t kind = value >> 8, number = value & 0xff;
            if (kind == 1) {
                memcpy(reply, device_descriptor, 18);
                n = 18;
            } else if (kind == 2 && number == 0) {
                memcpy(reply, configuration, configuration_length);
                n = (int)configuration_length;
            } else if (kind == 3 && number == 0) {
                memcpy(reply, (const uint8_t[]){4, 3, 0x09, 0x04}, 4);
                n = 4;
            } else if (kind == 3 && number < sizeof strings / sizeof strings[0]) {
                const char *s = strings[number];
                size_t len = strlen(s);
                reply[0] = (uint8_t)(2 + 2 * len);
                reply[1] = 3;
                for (size_t i = 0; i < len; i++) put_le16(reply + 2 + 2 * i, (uint8_t)s[i]);
                n = reply[0];
            }
            break;
        }
        case 0x00:  // GET_STATUS
            put_le16(reply, 0);  // bus powered, no remote wakeup, no halted endpoint
            n = 2;
            break;
        case 0x01: case 0x03:  // CLEAR_FEATURE, SET_FEATURE
            if ((type & 0x1f) == 2 && request == 0x01 && (index & 0x7f) == VIDEO_ENDPOINT) stop_video();
            n = 0;
            break;
        case 0x08: reply[0] = (uint8_t)configuration_value; n = 1; break;  // GET_CONFIGURATION
        case 0x09: configuration_value = value; n = 0; break;             // SET_CONFIGURATION
        case 0x0a:                                                         // GET_INTERFACE
            if (index < INTERFACE_COUNT) { reply[0] = (uint8_t)alternate_settings[index]; n = 1; }
            break;
        case 0x0b:  // SET_INTERFACE
            if (index >= INTERFACE_COUNT || (index == AS_INTERFACE ? value > 1 : value != 0)) break;
            alternate_settings[index] = value;
            if (index == AS_INTERFACE) {
                audio.active = 0;
                debugf("microphone alternate setting %d", value);
            }
            if (index == VS_INTERFACE) stop_video();
            n = 0;
            break;
        }
    } else if ((type & 0x60) == 0x20) {  // class
        uint8_t recipient = type & 0x1f;
        uint8_t interface = index & 0xff;
        if (recipient == 1 && (interface == VC_INTERFACE || interface == VS_INTERFACE)) {
            n = uvc_request(setup, data, length, reply);
        } else if (recipient == 2 && (index & 0x7f) == AUDIO_ENDPOINT && (value >> 8) == 0x01) {
            // UAC 1 sampling frequency control: only 48 kHz.
            if (request == 0x01) n = 0;
            else if (request & 0x80) {
                reply[0] = AUDIO_RATE & 0xff, reply[1] = (AUDIO_RATE >> 8) & 0xff, reply[2] = AUDIO_RATE >> 16;
                n = 3;
            }
        }
    }
    debugf("control %02x %02x value %04x index %04x length %u: %s %d", type, request, value, index, w_length,
           n < 0 ? "stall" : "ok", n);
    if (n > w_length) n = w_length;
    return n;
}

// MARK: - USB/IP

static void device_record(uint8_t out[312]) {
    memset(out, 0, 312);
    strcpy((char *)out, "/sys/devices/platform/openav-usb-webcam-emulator/usb1/1-1");
    strcpy((char *)out + 256, "1-1");
    put_be32(out + 288, 1);               // busnum
    put_be32(out + 292, 2);               // devnum
    put_be32(out + 296, USB_SPEED_HIGH);
    put_be16(out + 300, VENDOR_ID);
    put_be16(out + 302, PRODUCT_ID);
    put_be16(out + 304, BCD_DEVICE);
    out[306] = device_descriptor[4];
    out[307] = device_descriptor[5];
    out[308] = device_descriptor[6];
    out[309] = 1;  // bConfigurationValue
    out[310] = 1;  // bNumConfigurations
    out[311] = INTERFACE_COUNT;
}

// Answers OP_REQ_DEVLIST or OP_REQ_IMPORT on a new connection; returns 1 when the device was imported.
static int handle_operation(int fd, int busy) {
    uint8_t header[8];
    if (read_all(fd, header, 8) < 0) return 0;
    uint16_t code = (uint16_t)(header[2] << 8 | header[3]);
    uint8_t reply[8 + 4 + 312 + 4 * INTERFACE_COUNT] = {0};
    put_be16(reply, 0x0111);
    if (code == 0x8005) {  // OP_REQ_DEVLIST
        put_be16(reply + 2, 0x0005);
        put_be32(reply + 8, 1);
        device_record(reply + 12);
        static const uint8_t interfaces[INTERFACE_COUNT][3] = {{0x0e, 1, 0}, {0x0e, 2, 0}, {1, 1, 0}, {1, 2, 0}};
        for (int i = 0; i < INTERFACE_COUNT; i++) memcpy(reply + 12 + 312 + 4 * i, interfaces[i], 3);
        write_all(fd, reply, sizeof reply);
        return 0;
    }
    if (code == 0x8003) {  // OP_REQ_IMPORT
        char busid[32];
        if (read_all(fd, busid, sizeof busid) < 0) return 0;
        busid[31] = 0;
        put_be16(reply + 2, 0x0003);
        int ok = !busy && strcmp(busid, "1-1") == 0;
        put_be32(reply + 4, ok ? 0 : 1);
        if (!ok) {
            logf_("refused to import \"%s\"%s", busid, busy ? " (already attached)" : "");
            write_all(fd, reply, 8);
            return 0;
        }
        device_record(reply + 8);
        write_all(fd, reply, 8 + 312);
        return 1;
    }
    logf_("unknown operation %04x", code);
    return 0;
}

// Reads and answers one USB/IP command; returns -1 when the connection ended.
static int handle_command(void) {
    uint8_t header[48];
    if (read_all(connection, header, sizeof header) < 0) return -1;
    uint32_t command = get_be32(header), seqnum = get_be32(header + 4);
    uint32_t direction = get_be32(header + 12), endpoint = get_be32(header + 16);
    if (command == CMD_UNLINK) {
        uint32_t target = get_be32(header + 20);
        int found = queue_remove(&video_urbs, target) || queue_remove(&audio_urbs, target);
        uint8_t reply[48] = {0};
        put_be32(reply, RET_UNLINK);
        put_be32(reply + 4, seqnum);
        put_be32(reply + 20, (uint32_t)(found ? ECONNRESET_STATUS : 0));
        return write_all(connection, reply, sizeof reply);
    }
    if (command != CMD_SUBMIT) {
        logf_("unknown command %u", command);
        return -1;
    }
    uint32_t length = get_be32(header + 24), start_frame = get_be32(header + 28);
    int32_t packet_count = (int32_t)get_be32(header + 32);
    const uint8_t *setup = header + 40;
    if (length > 16 * 1024 * 1024 || packet_count > 4096) {
        logf_("URB too large (%u bytes, %d packets)", length, packet_count);
        return -1;
    }
    uint8_t *data = NULL;
    if (direction == 0 && length) {
        data = malloc(length);
        if (!data || read_all(connection, data, length) < 0) { free(data); return -1; }
    }
    struct iso_descriptor *packets = NULL;
    if (packet_count > 0) {
        packets = calloc((size_t)packet_count, sizeof *packets);
        for (int i = 0; i < packet_count; i++) {
            uint8_t d[16];
            if (read_all(connection, d, 16) < 0) { free(data); free(packets); return -1; }
            packets[i] = (struct iso_descriptor){get_be32(d), get_be32(d + 4), 0, 0};
        }
    }
    int result = 0;
    if (endpoint == 0) {
        static uint8_t reply[4096];
        int n = control_request(setup, data, direction == 0 ? length : 0, reply);
        if (n < 0) result = send_ret_submit(seqnum, EPIPE_STATUS, NULL, 0, 0, NULL);
        else if (direction == 1) result = send_ret_submit(seqnum, 0, reply, (uint32_t)n, (uint32_t)n, NULL);
        else result = send_ret_submit(seqnum, 0, NULL, 0, length, NULL);
        free(packets);
    } else if (direction == 1 && (endpoint == VIDEO_ENDPOINT || endpoint == AUDIO_ENDPOINT)) {
        struct urb *u = calloc(1, sizeof *u);
        *u = (struct urb){seqnum, length, start_frame, packet_count, packets, NULL};
        if (endpoint == VIDEO_ENDPOINT) {
            u->packet_count = -1;
            free(packets);
            u->packets = NULL;
            queue_push(&video_urbs, u);
        } else if (packet_count > 0) {
            queue_push(&audio_urbs, u);
        } else {
            free(u);
            free(packets);
            result = send_ret_submit(seqnum, EPIPE_STATUS, NULL, 0, 0, NULL);
        }
    } else {
        logf_("URB for endpoint %u direction %u: stalled", endpoint, direction);
        free(packets);
        result = send_ret_submit(seqnum, EPIPE_STATUS, NULL, 0, 0, NULL);
    }
    free(data);
    return result;
}

static void reset_device(void) {
    queue_clear(&video_urbs);
    queue_clear(&audio_urbs);
    stop_video();
    audio.active = 0;
    configuration_value = 0;
    memset(alternate_settings, 0, sizeof alternate_settings);
    probe = committed = (struct streaming_control){1, 1, 333333};
    for (int i = 0; i < CONTROL_COUNT; i++) controls[i].cur = controls[i].def;
}

static void on_signal(int signal) {
    (void)signal;
    stopping = 1;
}

int main(int argc, char **argv) {
    int port = 3240;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--port") && i + 1 < argc) port = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--verbose")) verbose = 1;
        else {
            fprintf(stderr, "usage: usb-webcam-emulator [--port N] [--verbose]\n");
            return 2;
        }
    }
    build_configuration();
    build_huffman_codes();
    build_synth();
    struct sigaction action = {0};
    action.sa_handler = on_signal;
    sigaction(SIGINT, &action, NULL);
    sigaction(SIGTERM, &action, NULL);

    listener = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(listener, (struct sockaddr *)&address, sizeof address) < 0 || listen(listener, 4) < 0) {
        logf_("cannot listen on 127.0.0.1:%d: %s", port, strerror(errno));
        return 1;
    }
    logf_("listening on 127.0.0.1:%d, exporting bus id 1-1 (OpenAV Test Webcam)", port);

    while (!stopping) {
        struct pollfd fds[2] = {{listener, POLLIN, 0}, {connection, POLLIN, 0}};
        int timeout = -1;
        if (connection >= 0) {
            int64_t next = next_event_ns(), now = now_ns();
            if (next != INT64_MAX) timeout = next <= now ? 0 : (int)((next - now + 999999) / 1000000);
        }
        int ready = poll(fds, connection >= 0 ? 2 : 1, timeout);
        if (ready < 0 && errno != EINTR) break;
        if (ready > 0 && (fds[0].revents & POLLIN)) {
            int fd = accept(listener, NULL, NULL);
            if (fd >= 0) {
                if (handle_operation(fd, connection >= 0)) {
                    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                    connection = fd;
                    reset_device();
                    logf_("attached");
                } else {
                    close(fd);
                }
            }
        }
        if (connection < 0) continue;
        int failed = 0;
        if (ready > 0 && (fds[1].revents & (POLLIN | POLLHUP | POLLERR))) failed = handle_command() < 0;
        int64_t now = now_ns();
        if (!failed) failed = pump_video(now) < 0 || pump_audio(now) < 0;
        if (failed) {
            logf_("detached");
            close(connection);
            connection = -1;
            reset_device();
        }
    }
    if (connection >= 0) close(connection);
    close(listener);
    logf_("stopped");
    return 0;
}
