// CPipeWire: libpipewire-0.3 behind plain C functions. Every symbol this header adds starts with CPipeWire_.
//
// SPA's PODs are built and parsed with C macros Swift cannot import, and PipeWire's listeners are structs of
// function pointers with versions; both stay in CPipeWire.c, as OBS and GStreamer keep them in small C helpers.
// This header includes no PipeWire header: Swift sees opaque handles, flat structs and callbacks with a context
// pointer.
//
// Threading: a connection runs its own pw_thread_loop. Every callback runs on that loop's thread with the loop's
// (recursive) lock held and must not block. Every function here takes the lock itself and may be called from any
// thread, including from inside a callback, except CPipeWire_stream_destroy, which must not be called from one of
// its stream's callbacks.
#ifndef CPIPEWIRE_H
#define CPIPEWIRE_H

#include <stdbool.h>
#include <stdint.h>

typedef struct CPipeWire_Connection CPipeWire_Connection;
typedef struct CPipeWire_Stream CPipeWire_Stream;

// MARK: Media types, as the values Swift compares against (SPA's enums are not stable across headers' versions of
// Swift's importer, so the shim maps them to its own).

typedef enum {
    CPipeWire_MEDIA_UNKNOWN = 0,
    CPipeWire_MEDIA_VIDEO_RAW = 1,
    CPipeWire_MEDIA_VIDEO_MJPG = 2,
    CPipeWire_MEDIA_VIDEO_H264 = 3,
    CPipeWire_MEDIA_AUDIO_RAW = 4,
} CPipeWire_Media;

typedef enum {
    CPipeWire_PIXELS_UNKNOWN = 0,
    CPipeWire_PIXELS_YUY2 = 1,
    CPipeWire_PIXELS_NV12 = 2,
    CPipeWire_PIXELS_I420 = 3,
    CPipeWire_PIXELS_UYVY = 4,
    /// B, G, R and an unused byte: what screen-sharing nodes (the ScreenCast portal's) offer.
    CPipeWire_PIXELS_BGRX = 5,
    CPipeWire_PIXELS_BGRA = 6,
} CPipeWire_Pixels;

typedef enum {
    CPipeWire_SAMPLES_UNKNOWN = 0,
    CPipeWire_SAMPLES_S16 = 1,
    CPipeWire_SAMPLES_F32 = 2,
    CPipeWire_SAMPLES_S32 = 3,
} CPipeWire_Samples;

// MARK: Registry

/// One property of a registry object.
typedef struct {
    const char *key;
    const char *value;
} CPipeWire_Property;

typedef struct {
    void *context;
    /// A node appeared (or is listed at connection). `properties` live for the call only.
    void (*node_added)(void *context, uint32_t id, const CPipeWire_Property *properties, uint32_t count);
    /// A node went away.
    void (*node_removed)(void *context, uint32_t id);
    /// The connection to the daemon broke (the daemon stopped); no further node events follow.
    void (*connection_lost)(void *context, int error, const char *message);
} CPipeWire_RegistryCallbacks;

/// Connects to the PipeWire daemon: through `fd` when it is >= 0 (a portal's OpenPipeWireRemote), else to the
/// remote named `remote` (NULL: PIPEWIRE_REMOTE or the default, `pipewire-0` in XDG_RUNTIME_DIR). The nodes that
/// exist are reported before it returns. NULL, with a negative errno in `*error`, when there is no daemon.
CPipeWire_Connection *CPipeWire_connection_open(
    int fd, const char *remote, CPipeWire_RegistryCallbacks callbacks, int timeout_ms, int *error);

/// Stops the loop and disconnects; no callback runs after it returns. Called on the loop's own thread (from a
/// callback or an invoked task), it lets go of the callbacks at once and finishes on a thread of its own after the
/// callback returns.
void CPipeWire_connection_close(CPipeWire_Connection *connection);

/// Waits until the daemon has answered everything sent before: 0, or a negative errno (-ETIMEDOUT, -EPIPE).
int CPipeWire_connection_roundtrip(CPipeWire_Connection *connection, int timeout_ms);

/// Whether the connection still works.
bool CPipeWire_connection_is_alive(CPipeWire_Connection *connection);

/// Runs `task(context)` on the connection's loop thread, in order with its callbacks: at once when called from that
/// thread, else queued. 0, or a negative errno when it cannot be queued.
int CPipeWire_connection_invoke(CPipeWire_Connection *connection, void (*task)(void *context), void *context);

// MARK: Formats

/// One format a node offers (one EnumFormat param), its choices flattened: a list or a range for sizes and rates.
typedef struct {
    CPipeWire_Media media;
    /// Raw video: the pixel formats offered (an enumeration or one).
    CPipeWire_Pixels pixels[8];
    uint32_t pixels_count;
    /// Video sizes: `sizes_count` listed (the node's preferred one first), or a range when `size_is_range`: the
    /// minimum, the maximum and the preferred size, in that order.
    uint32_t widths[16];
    uint32_t heights[16];
    uint32_t sizes_count;
    bool size_is_range;
    /// Frame rates as fractions: listed (preferred first), or a range when `rate_is_range`: minimum, maximum,
    /// preferred.
    uint32_t rate_nums[16];
    uint32_t rate_dens[16];
    uint32_t rates_count;
    bool rate_is_range;
    /// Audio: sample formats offered, and the rate and channels (0 when the param leaves them open).
    CPipeWire_Samples samples[4];
    uint32_t samples_count;
    uint32_t audio_rate;
    uint32_t audio_channels;
} CPipeWire_Format;

/// The formats the output port of node `node_id` offers (EnumFormat), at most `capacity` of them into `formats`.
/// The count, or a negative errno (-ENOENT: no such node or it has no output port yet; -ETIMEDOUT).
int CPipeWire_enum_formats(
    CPipeWire_Connection *connection, uint32_t node_id, CPipeWire_Format *formats, int capacity, int timeout_ms);

// MARK: Streams

/// What a stream asks for: one fixed format.
typedef struct {
    CPipeWire_Media media;
    CPipeWire_Pixels pixels;
    uint32_t width;
    uint32_t height;
    uint32_t rate_num;
    uint32_t rate_den;
    CPipeWire_Samples samples;
    uint32_t audio_rate;
    uint32_t audio_channels;
} CPipeWire_StreamFormat;

/// pw_stream's states, as the shim reports them.
typedef enum {
    CPipeWire_STREAM_ERROR = -1,
    CPipeWire_STREAM_UNCONNECTED = 0,
    CPipeWire_STREAM_CONNECTING = 1,
    CPipeWire_STREAM_PAUSED = 2,
    CPipeWire_STREAM_STREAMING = 3,
} CPipeWire_StreamState;

typedef struct {
    void *context;
    /// The stream's state changed; `error` is the daemon's message when the state is an error.
    void (*state_changed)(void *context, CPipeWire_StreamState state, const char *error);
    /// The node fixed the format (video: `stride` is 0 until the first buffer tells it).
    void (*format_changed)(void *context, const CPipeWire_StreamFormat *format);
    /// Buffers are ready: call CPipeWire_stream_dequeue until it says there are none.
    void (*process)(void *context);
} CPipeWire_StreamCallbacks;

/// Connects a capture stream to node `target` (its object.serial or node.name) asking for `format`, with
/// `buffer_count` buffers. Buffers come as MemFd or memory pointers mapped by PipeWire, or as DmaBufs mapped here
/// (linear ones). NULL with a negative errno when the stream cannot be made.
CPipeWire_Stream *CPipeWire_stream_connect(
    CPipeWire_Connection *connection, const char *target, const char *name, CPipeWire_StreamFormat format,
    uint32_t buffer_count, CPipeWire_StreamCallbacks callbacks, int *error);

/// One buffer taken from the stream: its planes' memory, the header meta's time and sequence when the node sent one,
/// and the graph's time when the cycle ran.
typedef struct {
    /// Give this back with CPipeWire_stream_queue (the memory stays valid until then).
    void *handle;
    uint32_t planes_count;
    const uint8_t *planes[4];
    uint32_t plane_sizes[4];
    int32_t plane_strides[4];
    /// SPA's data type of the first plane (MemPtr 1, MemFd 2, DmaBuf 3).
    uint32_t data_type;
    /// Whether the planes are mappings of this shim's own (MemFd, DmaBuf), valid until the buffer is given back even
    /// when the stream has gone meanwhile (MemPtr memory in a shared block is mapped a second time for that); false for
    /// private MemPtr memory, which PipeWire frees with the stream: copy it.
    bool is_lendable;
    bool has_header;
    /// The header's presentation time in nanoseconds, its sequence number and whether it flags the data corrupted.
    int64_t header_pts;
    uint64_t header_sequence;
    bool is_corrupted;
    /// CLOCK_MONOTONIC nanoseconds of the graph cycle that produced the buffer (0 when unknown), the stream's delay
    /// in nanoseconds and the rate of its clock.
    int64_t graph_now;
    int64_t delay_ns;
    /// The cursor meta (SPA_META_Cursor: a ScreenCast stream in cursor mode metadata). `cursor_is_valid` when it
    /// names a cursor (id not 0; mutter sends 0 while the pointer is off the stream), at (`cursor_x`, `cursor_y`) in
    /// the stream's pixels. `has_cursor_bitmap` when the cursor's image changed with this buffer: `cursor_bitmap`,
    /// premultiplied, `cursor_bitmap_width` × `cursor_bitmap_height` (0 × 0 for no image), rows
    /// `cursor_bitmap_stride` bytes apart, RGBA byte order when `cursor_bitmap_is_rgba` else BGRA, the hot spot
    /// (`cursor_hotspot_x`, `cursor_hotspot_y`) inside it; valid until the buffer is given back.
    bool cursor_is_valid;
    int32_t cursor_x;
    int32_t cursor_y;
    bool has_cursor_bitmap;
    int32_t cursor_hotspot_x;
    int32_t cursor_hotspot_y;
    const uint8_t *cursor_bitmap;
    uint32_t cursor_bitmap_width;
    uint32_t cursor_bitmap_height;
    int32_t cursor_bitmap_stride;
    bool cursor_bitmap_is_rgba;
} CPipeWire_Buffer;

/// Takes the next filled buffer: 0, or -EAGAIN when there is none, -EPIPE when the stream is gone.
int CPipeWire_stream_dequeue(CPipeWire_Stream *stream, CPipeWire_Buffer *buffer);

/// Gives a buffer back to the stream (any thread; the loop's lock is taken). After the stream is destroyed this only
/// releases the shim's mappings; the connection must still be open.
void CPipeWire_stream_queue(CPipeWire_Stream *stream, void *handle);

/// Disconnects and destroys the stream; buffers not yet given back are given back by PipeWire itself. No callback
/// runs after it returns. Not from a callback.
void CPipeWire_stream_destroy(CPipeWire_Stream *stream);

#endif
