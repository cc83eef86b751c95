// CPipeWire: the connection, registry, format enumeration and capture streams over libpipewire-0.3.
// See include/CPipeWire.h for the contract; the PipeWire headers come through the `system` links (Package.swift says
// why not through pkg-config).
#define _GNU_SOURCE  // mremap
#include "CPipeWire.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <pipewire/pipewire.h>
#include <spa/param/audio/format-utils.h>
#include <spa/param/video/format-utils.h>
#include <spa/pod/builder.h>
#include <spa/utils/result.h>

/// The cursor meta's size with a `width` × `height` RGBA bitmap after it (what producers allocate).
static int cursor_meta_size(int width, int height) {
    return (int)(sizeof(struct spa_meta_cursor) + sizeof(struct spa_meta_bitmap) + (size_t)width * height * 4);
}

// MARK: Connection

typedef struct {
    uint32_t id;
    uint32_t node_id;
    bool is_output;
} Port;

struct CPipeWire_Connection {
    struct pw_thread_loop *loop;
    struct pw_context *context;
    struct pw_core *core;
    struct pw_registry *registry;
    struct spa_hook core_listener;
    struct spa_hook registry_listener;
    CPipeWire_RegistryCallbacks callbacks;
    /// The sequence number of the last `done` the core sent (SPA_RESULT_ASYNC_SEQ'd).
    int done_seq;
    bool alive;
    Port *ports;
    uint32_t ports_count;
    uint32_t ports_capacity;
};

static void on_core_done(void *data, uint32_t id, int seq) {
    CPipeWire_Connection *c = data;
    if (id != PW_ID_CORE) return;
    c->done_seq = SPA_RESULT_ASYNC_SEQ(seq);
    pw_thread_loop_signal(c->loop, false);
}

static void on_core_error(void *data, uint32_t id, int seq, int res, const char *message) {
    CPipeWire_Connection *c = data;
    (void)seq;
    // Errors of other objects (a link that failed to negotiate) reach their streams through their own state.
    if (id != PW_ID_CORE || !c->alive) return;
    c->alive = false;
    if (c->callbacks.connection_lost) c->callbacks.connection_lost(c->callbacks.context, res, message);
    pw_thread_loop_signal(c->loop, false);
}

static const struct pw_core_events core_events = {
    PW_VERSION_CORE_EVENTS,
    .done = on_core_done,
    .error = on_core_error,
};

static void remember_port(CPipeWire_Connection *c, uint32_t id, const struct spa_dict *props) {
    const char *node = spa_dict_lookup(props, PW_KEY_NODE_ID);
    const char *direction = spa_dict_lookup(props, PW_KEY_PORT_DIRECTION);
    if (!node || !direction) return;
    if (c->ports_count == c->ports_capacity) {
        uint32_t capacity = c->ports_capacity ? c->ports_capacity * 2 : 32;
        Port *grown = realloc(c->ports, capacity * sizeof(Port));
        if (!grown) return;
        c->ports = grown;
        c->ports_capacity = capacity;
    }
    c->ports[c->ports_count++] = (Port){id, (uint32_t)strtoul(node, NULL, 10), strcmp(direction, "out") == 0};
}

static void on_global(void *data, uint32_t id, uint32_t permissions, const char *type, uint32_t version,
                      const struct spa_dict *props) {
    CPipeWire_Connection *c = data;
    (void)permissions;
    (void)version;
    if (!props) return;
    if (strcmp(type, PW_TYPE_INTERFACE_Port) == 0) {
        remember_port(c, id, props);
        return;
    }
    if (strcmp(type, PW_TYPE_INTERFACE_Node) != 0 || !c->callbacks.node_added) return;
    CPipeWire_Property stack[64];
    uint32_t count = props->n_items < 64 ? props->n_items : 64;
    for (uint32_t i = 0; i < count; i++) stack[i] = (CPipeWire_Property){props->items[i].key, props->items[i].value};
    c->callbacks.node_added(c->callbacks.context, id, stack, count);
}

static void on_global_remove(void *data, uint32_t id) {
    CPipeWire_Connection *c = data;
    for (uint32_t i = 0; i < c->ports_count; i++) {
        if (c->ports[i].id == id) {
            c->ports[i] = c->ports[--c->ports_count];
            return;
        }
    }
    if (c->callbacks.node_removed) c->callbacks.node_removed(c->callbacks.context, id);
}

static const struct pw_registry_events registry_events = {
    PW_VERSION_REGISTRY_EVENTS,
    .global = on_global,
    .global_remove = on_global_remove,
};

/// Waits, with the lock held, until the core has answered everything sent so far.
static int roundtrip_locked(CPipeWire_Connection *c, int timeout_ms) {
    if (!c->alive) return -EPIPE;
    int seq = SPA_RESULT_ASYNC_SEQ(pw_core_sync(c->core, PW_ID_CORE, 0));
    struct timespec deadline;
    pw_thread_loop_get_time(c->loop, &deadline, (int64_t)timeout_ms * SPA_NSEC_PER_MSEC);
    // Sequence numbers only grow (they wrap after 2^30 requests, which a capture process does not send).
    while (c->alive && c->done_seq < seq) {
        if (pw_thread_loop_timed_wait_full(c->loop, &deadline) == -ETIMEDOUT) return -ETIMEDOUT;
    }
    return c->alive ? 0 : -EPIPE;
}

static void connection_free(CPipeWire_Connection *c) {
    if (c->loop) pw_thread_loop_stop(c->loop);
    if (c->registry) {
        spa_hook_remove(&c->registry_listener);
        pw_proxy_destroy((struct pw_proxy *)c->registry);
    }
    if (c->core) {
        spa_hook_remove(&c->core_listener);
        pw_core_disconnect(c->core);
    }
    if (c->context) pw_context_destroy(c->context);
    if (c->loop) pw_thread_loop_destroy(c->loop);
    free(c->ports);
    free(c);
}

CPipeWire_Connection *CPipeWire_connection_open(int fd, const char *remote, CPipeWire_RegistryCallbacks callbacks,
                                                int timeout_ms, int *error) {
    pw_init(NULL, NULL);
    CPipeWire_Connection *c = calloc(1, sizeof(*c));
    if (!c) {
        *error = -ENOMEM;
        return NULL;
    }
    c->callbacks = callbacks;
    c->loop = pw_thread_loop_new("OpenAVCapture PipeWire", NULL);
    if (!c->loop || !(c->context = pw_context_new(pw_thread_loop_get_loop(c->loop), NULL, 0))) {
        *error = -errno ? -errno : -ENOMEM;
        connection_free(c);
        return NULL;
    }
    if (pw_thread_loop_start(c->loop) < 0) {
        *error = -EIO;
        connection_free(c);
        return NULL;
    }
    pw_thread_loop_lock(c->loop);
    struct pw_properties *props = remote ? pw_properties_new(PW_KEY_REMOTE_NAME, remote, NULL) : NULL;
    c->core = fd >= 0 ? pw_context_connect_fd(c->context, fd, props, 0) : pw_context_connect(c->context, props, 0);
    if (!c->core) {
        *error = errno ? -errno : -ECONNREFUSED;
        pw_thread_loop_unlock(c->loop);
        connection_free(c);
        return NULL;
    }
    c->alive = true;
    pw_core_add_listener(c->core, &c->core_listener, &core_events, c);
    c->registry = pw_core_get_registry(c->core, PW_VERSION_REGISTRY, 0);
    pw_registry_add_listener(c->registry, &c->registry_listener, &registry_events, c);
    int res = roundtrip_locked(c, timeout_ms);
    pw_thread_loop_unlock(c->loop);
    if (res < 0) {
        *error = res;
        connection_free(c);
        return NULL;
    }
    *error = 0;
    return c;
}

static void *close_elsewhere(void *connection) {
    connection_free(connection);
    return NULL;
}

void CPipeWire_connection_close(CPipeWire_Connection *c) {
    if (!c) return;
    if (!pw_thread_loop_in_thread(c->loop)) {
        connection_free(c);
        return;
    }
    // On the loop's own thread (the last reference went in a loop task or a lease given back there): stopping the
    // loop joins this very thread and frees the loop under the callback still running on it. The callbacks' context
    // goes with the caller, so none is called from here on (this thread holds the loop lock); a thread of its own
    // stops and frees the loop once this callback has returned.
    c->callbacks = (CPipeWire_RegistryCallbacks){0};
    pthread_t thread;
    pthread_attr_t attributes;
    pthread_attr_init(&attributes);
    pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&thread, &attributes, close_elsewhere, c) != 0) {
        // No thread to be had: leak the connection rather than crash (its loop thread idles on).
        pw_log_warn("OpenAVCapture: could not close a PipeWire connection off its loop thread");
    }
    pthread_attr_destroy(&attributes);
}

int CPipeWire_connection_roundtrip(CPipeWire_Connection *c, int timeout_ms) {
    pw_thread_loop_lock(c->loop);
    int res = roundtrip_locked(c, timeout_ms);
    pw_thread_loop_unlock(c->loop);
    return res;
}

bool CPipeWire_connection_is_alive(CPipeWire_Connection *c) {
    pw_thread_loop_lock(c->loop);
    bool alive = c->alive;
    pw_thread_loop_unlock(c->loop);
    return alive;
}

typedef struct {
    void (*task)(void *context);
    void *context;
} Task;

static int run_task(struct spa_loop *loop, bool async, uint32_t seq, const void *data, size_t size,
                    void *user_data) {
    (void)loop;
    (void)async;
    (void)seq;
    (void)size;
    (void)user_data;
    const Task *task = data;
    task->task(task->context);
    return 0;
}

int CPipeWire_connection_invoke(CPipeWire_Connection *c, void (*task)(void *context), void *context) {
    Task queued = {task, context};
    return pw_loop_invoke(pw_thread_loop_get_loop(c->loop), run_task, 0, &queued, sizeof(queued), false, NULL);
}

// MARK: Parsing formats

static CPipeWire_Pixels pixels_from_spa(uint32_t format) {
    switch (format) {
    case SPA_VIDEO_FORMAT_YUY2: return CPipeWire_PIXELS_YUY2;
    case SPA_VIDEO_FORMAT_NV12: return CPipeWire_PIXELS_NV12;
    case SPA_VIDEO_FORMAT_I420: return CPipeWire_PIXELS_I420;
    case SPA_VIDEO_FORMAT_UYVY: return CPipeWire_PIXELS_UYVY;
    case SPA_VIDEO_FORMAT_BGRx: return CPipeWire_PIXELS_BGRX;
    case SPA_VIDEO_FORMAT_BGRA: return CPipeWire_PIXELS_BGRA;
    default: return CPipeWire_PIXELS_UNKNOWN;
    }
}

static uint32_t pixels_to_spa(CPipeWire_Pixels pixels) {
    switch (pixels) {
    case CPipeWire_PIXELS_YUY2: return SPA_VIDEO_FORMAT_YUY2;
    case CPipeWire_PIXELS_NV12: return SPA_VIDEO_FORMAT_NV12;
    case CPipeWire_PIXELS_I420: return SPA_VIDEO_FORMAT_I420;
    case CPipeWire_PIXELS_UYVY: return SPA_VIDEO_FORMAT_UYVY;
    case CPipeWire_PIXELS_BGRX: return SPA_VIDEO_FORMAT_BGRx;
    case CPipeWire_PIXELS_BGRA: return SPA_VIDEO_FORMAT_BGRA;
    default: return SPA_VIDEO_FORMAT_UNKNOWN;
    }
}

static CPipeWire_Samples samples_from_spa(uint32_t format) {
    switch (format) {
    case SPA_AUDIO_FORMAT_S16: return CPipeWire_SAMPLES_S16;
    case SPA_AUDIO_FORMAT_F32: return CPipeWire_SAMPLES_F32;
    case SPA_AUDIO_FORMAT_S32: return CPipeWire_SAMPLES_S32;
    default: return CPipeWire_SAMPLES_UNKNOWN;
    }
}

static uint32_t samples_to_spa(CPipeWire_Samples samples) {
    switch (samples) {
    case CPipeWire_SAMPLES_S16: return SPA_AUDIO_FORMAT_S16;
    case CPipeWire_SAMPLES_F32: return SPA_AUDIO_FORMAT_F32;
    case CPipeWire_SAMPLES_S32: return SPA_AUDIO_FORMAT_S32;
    default: return SPA_AUDIO_FORMAT_UNKNOWN;
    }
}

/// The values of a property, its choice flattened: for a range the minimum, maximum and default (in that order);
/// for an enumeration the default then the alternatives not equal to it; for a plain value that value.
typedef struct {
    const void *values;
    uint32_t count;
    uint32_t size;
    uint32_t type;
    bool is_range;
} Values;

static Values values_of(const struct spa_pod *pod) {
    uint32_t count = 0, choice = SPA_CHOICE_None;
    const struct spa_pod *value = spa_pod_get_values(pod, &count, &choice);
    Values v = {SPA_POD_BODY_CONST(value), count, SPA_POD_BODY_SIZE(value), SPA_POD_TYPE(value), false};
    if ((choice == SPA_CHOICE_Range || choice == SPA_CHOICE_Step) && count >= 3) {
        v.is_range = true;
        v.count = 3;
    }
    return v;
}

/// Element `i` of a range in the shim's order (minimum, maximum, default), from SPA's (default, minimum, maximum).
static uint32_t range_index(uint32_t i) { return i == 0 ? 1 : (i == 1 ? 2 : 0); }

/// Appends (a, b) to two parallel arrays of 16, unless full or, when `unique`, already there (a range keeps its
/// minimum, maximum and default even when two are equal).
static void add_pair(uint32_t *as, uint32_t *bs, uint32_t *count, uint32_t a, uint32_t b, bool unique) {
    if (*count >= 16) return;
    for (uint32_t k = 0; k < *count && unique; k++)
        if (as[k] == a && bs[k] == b) return;
    as[*count] = a;
    bs[(*count)++] = b;
}

static void parse_video_property(const struct spa_pod_prop *prop, CPipeWire_Format *f) {
    Values v = values_of(&prop->value);
    switch (prop->key) {
    case SPA_FORMAT_VIDEO_format:
        if (v.type != SPA_TYPE_Id) return;
        for (uint32_t i = 0; i < v.count && f->pixels_count < 8; i++) {
            CPipeWire_Pixels p = pixels_from_spa(((const uint32_t *)v.values)[i]);
            bool seen = false;
            for (uint32_t k = 0; k < f->pixels_count; k++) seen |= f->pixels[k] == p;
            if (p != CPipeWire_PIXELS_UNKNOWN && !seen) f->pixels[f->pixels_count++] = p;
        }
        break;
    case SPA_FORMAT_VIDEO_size:
        if (v.type != SPA_TYPE_Rectangle) return;
        f->size_is_range = v.is_range;
        for (uint32_t i = 0; i < v.count; i++) {
            const struct spa_rectangle *r = (const struct spa_rectangle *)v.values + (v.is_range ? range_index(i) : i);
            add_pair(f->widths, f->heights, &f->sizes_count, r->width, r->height, !v.is_range);
        }
        break;
    case SPA_FORMAT_VIDEO_framerate:
        if (v.type != SPA_TYPE_Fraction) return;
        f->rate_is_range = v.is_range;
        for (uint32_t i = 0; i < v.count; i++) {
            const struct spa_fraction *r = (const struct spa_fraction *)v.values + (v.is_range ? range_index(i) : i);
            add_pair(f->rate_nums, f->rate_dens, &f->rates_count, r->num, r->denom, !v.is_range);
        }
        break;
    default: break;
    }
}

static void parse_audio_property(const struct spa_pod_prop *prop, CPipeWire_Format *f) {
    Values v = values_of(&prop->value);
    switch (prop->key) {
    case SPA_FORMAT_AUDIO_format:
        if (v.type != SPA_TYPE_Id) return;
        for (uint32_t i = 0; i < v.count && f->samples_count < 4; i++) {
            CPipeWire_Samples s = samples_from_spa(((const uint32_t *)v.values)[i]);
            bool seen = false;
            for (uint32_t k = 0; k < f->samples_count; k++) seen |= f->samples[k] == s;
            if (s != CPipeWire_SAMPLES_UNKNOWN && !seen) f->samples[f->samples_count++] = s;
        }
        break;
    case SPA_FORMAT_AUDIO_rate:
        // A range leaves the rate open (0); a list or a value gives its default.
        if (v.type == SPA_TYPE_Int && !v.is_range && v.count > 0) f->audio_rate = ((const uint32_t *)v.values)[0];
        break;
    case SPA_FORMAT_AUDIO_channels:
        if (v.type == SPA_TYPE_Int && !v.is_range && v.count > 0) f->audio_channels = ((const uint32_t *)v.values)[0];
        break;
    default: break;
    }
}

static bool parse_format(const struct spa_pod *param, CPipeWire_Format *f) {
    uint32_t media_type, media_subtype;
    if (!param || !spa_pod_is_object(param) || spa_format_parse(param, &media_type, &media_subtype) < 0) return false;
    memset(f, 0, sizeof(*f));
    if (media_type == SPA_MEDIA_TYPE_video) {
        switch (media_subtype) {
        case SPA_MEDIA_SUBTYPE_raw: f->media = CPipeWire_MEDIA_VIDEO_RAW; break;
        case SPA_MEDIA_SUBTYPE_mjpg: f->media = CPipeWire_MEDIA_VIDEO_MJPG; break;
        case SPA_MEDIA_SUBTYPE_h264: f->media = CPipeWire_MEDIA_VIDEO_H264; break;
        default: return false;
        }
    } else if (media_type == SPA_MEDIA_TYPE_audio && media_subtype == SPA_MEDIA_SUBTYPE_raw) {
        f->media = CPipeWire_MEDIA_AUDIO_RAW;
    } else {
        return false;
    }
    const struct spa_pod_object *object = (const struct spa_pod_object *)param;
    const struct spa_pod_prop *prop;
    SPA_POD_OBJECT_FOREACH(object, prop) {
        if (f->media == CPipeWire_MEDIA_AUDIO_RAW)
            parse_audio_property(prop, f);
        else
            parse_video_property(prop, f);
    }
    return true;
}

// MARK: Enumerating a node's formats

typedef struct {
    CPipeWire_Format *formats;
    int capacity;
    int count;
} Enumeration;

static void on_port_param(void *data, int seq, uint32_t id, uint32_t index, uint32_t next,
                          const struct spa_pod *param) {
    Enumeration *e = data;
    (void)seq;
    (void)index;
    (void)next;
    if (id != SPA_PARAM_EnumFormat || e->count >= e->capacity) return;
    if (parse_format(param, &e->formats[e->count])) e->count++;
}

static const struct pw_port_events port_events = {
    PW_VERSION_PORT_EVENTS,
    .param = on_port_param,
};

int CPipeWire_enum_formats(CPipeWire_Connection *c, uint32_t node_id, CPipeWire_Format *formats, int capacity,
                           int timeout_ms) {
    pw_thread_loop_lock(c->loop);
    int port_id = -1;
    for (uint32_t i = 0; i < c->ports_count; i++) {
        if (c->ports[i].node_id == node_id && c->ports[i].is_output) {
            port_id = (int)c->ports[i].id;
            break;
        }
    }
    if (port_id < 0 || !c->alive) {
        pw_thread_loop_unlock(c->loop);
        return c->alive ? -ENOENT : -EPIPE;
    }
    struct pw_port *port = pw_registry_bind(c->registry, (uint32_t)port_id, PW_TYPE_INTERFACE_Port, PW_VERSION_PORT, 0);
    if (!port) {
        pw_thread_loop_unlock(c->loop);
        return -ENOMEM;
    }
    Enumeration e = {formats, capacity, 0};
    struct spa_hook listener;
    spa_zero(listener);
    pw_port_add_listener(port, &listener, &port_events, &e);
    pw_port_enum_params(port, 0, SPA_PARAM_EnumFormat, 0, UINT32_MAX, NULL);
    int res = roundtrip_locked(c, timeout_ms);
    spa_hook_remove(&listener);
    pw_proxy_destroy((struct pw_proxy *)port);
    pw_thread_loop_unlock(c->loop);
    return res < 0 ? res : e.count;
}

// MARK: Streams

/// A buffer's memory as this shim mapped it, shared by the stream (until PipeWire removes the buffer) and by every
/// lease handed out (until given back). Freed, its mappings unmapped, when the last of them lets go.
typedef struct {
    int refs;
    bool removed;
    struct pw_stream *stream;
    struct pw_buffer *buffer;
    bool is_lendable;
    uint32_t planes_count;
    uint8_t *bases[4];
    void *maps[4];
    size_t map_sizes[4];
} Slot;

static void slot_unref(Slot *slot) {
    if (--slot->refs > 0) return;
    for (uint32_t i = 0; i < slot->planes_count; i++)
        if (slot->maps[i]) munmap(slot->maps[i], slot->map_sizes[i]);
    free(slot);
}

typedef struct {
    Slot *slot;
    struct pw_thread_loop *loop;
} Lease;

struct CPipeWire_Stream {
    CPipeWire_Connection *connection;
    struct pw_stream *stream;
    struct spa_hook listener;
    CPipeWire_StreamCallbacks callbacks;
    CPipeWire_StreamFormat wanted;
    uint32_t buffer_count;
    /// The slots of the buffers PipeWire has now, so destroying the stream can let go of them itself.
    Slot *slots[32];
    uint32_t slots_count;
};

static void forget_slot(CPipeWire_Stream *s, Slot *slot) {
    for (uint32_t i = 0; i < s->slots_count; i++) {
        if (s->slots[i] == slot) {
            s->slots[i] = s->slots[--s->slots_count];
            return;
        }
    }
}

static void on_stream_state(void *data, enum pw_stream_state old, enum pw_stream_state state, const char *error) {
    CPipeWire_Stream *s = data;
    (void)old;
    CPipeWire_StreamState mapped = (CPipeWire_StreamState)state;
    if (s->callbacks.state_changed) s->callbacks.state_changed(s->callbacks.context, mapped, error);
}

static void on_stream_param(void *data, uint32_t id, const struct spa_pod *param) {
    CPipeWire_Stream *s = data;
    if (id != SPA_PARAM_Format || !param) return;
    uint32_t media_type, media_subtype;
    if (spa_format_parse(param, &media_type, &media_subtype) < 0) return;
    CPipeWire_StreamFormat f = {0};
    uint8_t storage[1024];
    struct spa_pod_builder b = SPA_POD_BUILDER_INIT(storage, sizeof(storage));
    if (media_type == SPA_MEDIA_TYPE_audio) {
        struct spa_audio_info_raw info = {0};
        if (spa_format_audio_raw_parse(param, &info) < 0) return;
        f.media = CPipeWire_MEDIA_AUDIO_RAW;
        f.samples = samples_from_spa(info.format);
        f.audio_rate = info.rate;
        f.audio_channels = info.channels;
    } else {
        struct spa_rectangle size = {0};
        struct spa_fraction rate = {0};
        if (media_subtype == SPA_MEDIA_SUBTYPE_raw) {
            struct spa_video_info_raw info = {0};
            if (spa_format_video_raw_parse(param, &info) < 0) return;
            f.media = CPipeWire_MEDIA_VIDEO_RAW;
            f.pixels = pixels_from_spa(info.format);
            size = info.size;
            rate = info.framerate;
        } else if (media_subtype == SPA_MEDIA_SUBTYPE_mjpg) {
            struct spa_video_info_mjpg info = {0};
            if (spa_format_video_mjpg_parse(param, &info) < 0) return;
            f.media = CPipeWire_MEDIA_VIDEO_MJPG;
            size = info.size;
            rate = info.framerate;
        } else if (media_subtype == SPA_MEDIA_SUBTYPE_h264) {
            struct spa_video_info_h264 info = {0};
            if (spa_format_video_h264_parse(param, &info) < 0) return;
            f.media = CPipeWire_MEDIA_VIDEO_H264;
            size = info.size;
            rate = info.framerate;
        } else {
            return;
        }
        f.width = size.width;
        f.height = size.height;
        f.rate_num = rate.num;
        f.rate_den = rate.denom;
        // Buffers of any memory we can read, the header meta that carries each frame's time, and the cursor meta a
        // screen cast in cursor mode metadata sends: room for a bitmap of up to 1024x1024, as OBS asks (with at most
        // 256x256 mutter 43 sends no cursor meta at all: its size is larger); producers without it leave it out.
        const struct spa_pod *params[3];
        params[0] = spa_pod_builder_add_object(
            &b, SPA_TYPE_OBJECT_ParamBuffers, SPA_PARAM_Buffers, SPA_PARAM_BUFFERS_buffers,
            SPA_POD_CHOICE_RANGE_Int(s->buffer_count, 2, 16),
            // One block per buffer, planes one after another: producers that keep a frame in one memory (GStreamer's
            // pipewiresink crashes when asked for a block per plane) and V4L2's single-planar layout.
            SPA_PARAM_BUFFERS_blocks, SPA_POD_Int(1), SPA_PARAM_BUFFERS_dataType,
            SPA_POD_CHOICE_FLAGS_Int((1 << SPA_DATA_MemFd) | (1 << SPA_DATA_MemPtr) | (1 << SPA_DATA_DmaBuf)));
        params[1] = spa_pod_builder_add_object(&b, SPA_TYPE_OBJECT_ParamMeta, SPA_PARAM_Meta, SPA_PARAM_META_type,
                                               SPA_POD_Id(SPA_META_Header), SPA_PARAM_META_size,
                                               SPA_POD_Int(sizeof(struct spa_meta_header)));
        params[2] = spa_pod_builder_add_object(
            &b, SPA_TYPE_OBJECT_ParamMeta, SPA_PARAM_Meta, SPA_PARAM_META_type, SPA_POD_Id(SPA_META_Cursor),
            SPA_PARAM_META_size,
            SPA_POD_CHOICE_RANGE_Int(cursor_meta_size(64, 64), cursor_meta_size(1, 1), cursor_meta_size(1024, 1024)));
        pw_stream_update_params(s->stream, params, 3);
    }
    if (s->callbacks.format_changed) s->callbacks.format_changed(s->callbacks.context, &f);
}

static void on_add_buffer(void *data, struct pw_buffer *buffer) {
    CPipeWire_Stream *s = data;
    Slot *slot = s->slots_count < 32 ? calloc(1, sizeof(Slot)) : NULL;
    if (!slot) return;
    s->slots[s->slots_count++] = slot;
    slot->refs = 1;
    slot->stream = s->stream;
    slot->buffer = buffer;
    slot->is_lendable = true;
    struct spa_buffer *b = buffer->buffer;
    slot->planes_count = b->n_datas < 4 ? b->n_datas : 4;
    long page = sysconf(_SC_PAGESIZE);
    for (uint32_t i = 0; i < slot->planes_count; i++) {
        struct spa_data *d = &b->datas[i];
        if ((d->type == SPA_DATA_MemFd || d->type == SPA_DATA_DmaBuf) && d->fd >= 0) {
            // Our own mapping, so a frame lent downstream stays readable after PipeWire unmaps its own.
            off_t start = (off_t)d->mapoffset & ~((off_t)page - 1);
            size_t size = d->mapoffset - (uint32_t)start + d->maxsize;
            void *map = mmap(NULL, size, PROT_READ, MAP_SHARED, (int)d->fd, start);
            if (map == MAP_FAILED) continue;
            slot->maps[i] = map;
            slot->map_sizes[i] = size;
            slot->bases[i] = (uint8_t *)map + (d->mapoffset - (uint32_t)start);
        } else if (d->type == SPA_DATA_MemPtr && d->data) {
            // Across processes this is PipeWire's own mapping of the shared block that holds the buffers (the daemon
            // hands memory to a client stream so, whatever the producer chose), unmapped when the buffers go. Map the
            // same pages again at an address of our own (mremap with an old size of 0 does that for a shared
            // mapping), so a frame lent downstream outlives PipeWire's mapping as a MemFd one does. Private memory
            // cannot be mapped twice: it is copied.
            uintptr_t address = (uintptr_t)d->data;
            uintptr_t start = address & ~((uintptr_t)page - 1);
            size_t size = address - start + d->maxsize;
            void *map = mremap((void *)start, 0, size, MREMAP_MAYMOVE);
            if (map != MAP_FAILED) {
                slot->maps[i] = map;
                slot->map_sizes[i] = size;
                slot->bases[i] = (uint8_t *)map + (address - start);
            } else {
                slot->bases[i] = d->data;
                slot->is_lendable = false;
            }
        }
    }
    buffer->user_data = slot;
}

static void on_remove_buffer(void *data, struct pw_buffer *buffer) {
    Slot *slot = buffer->user_data;
    if (!slot) return;
    forget_slot(data, slot);
    buffer->user_data = NULL;
    slot->removed = true;
    slot_unref(slot);
}

static void on_process(void *data) {
    CPipeWire_Stream *s = data;
    if (s->callbacks.process) s->callbacks.process(s->callbacks.context);
}

static const struct pw_stream_events stream_events = {
    PW_VERSION_STREAM_EVENTS,
    .state_changed = on_stream_state,
    .param_changed = on_stream_param,
    .add_buffer = on_add_buffer,
    .remove_buffer = on_remove_buffer,
    .process = on_process,
};

static const struct spa_pod *build_request(struct spa_pod_builder *b, CPipeWire_StreamFormat f) {
    if (f.media == CPipeWire_MEDIA_AUDIO_RAW) {
        struct spa_audio_info_raw info = {
            .format = samples_to_spa(f.samples), .rate = f.audio_rate, .channels = f.audio_channels};
        return spa_format_audio_raw_build(b, SPA_PARAM_EnumFormat, &info);
    }
    uint32_t subtype = f.media == CPipeWire_MEDIA_VIDEO_MJPG   ? SPA_MEDIA_SUBTYPE_mjpg
                       : f.media == CPipeWire_MEDIA_VIDEO_H264 ? SPA_MEDIA_SUBTYPE_h264
                                                               : SPA_MEDIA_SUBTYPE_raw;
    struct spa_pod_frame frame;
    spa_pod_builder_push_object(b, &frame, SPA_TYPE_OBJECT_Format, SPA_PARAM_EnumFormat);
    spa_pod_builder_add(b, SPA_FORMAT_mediaType, SPA_POD_Id(SPA_MEDIA_TYPE_video), SPA_FORMAT_mediaSubtype,
                        SPA_POD_Id(subtype), 0);
    if (subtype == SPA_MEDIA_SUBTYPE_raw && (f.pixels == CPipeWire_PIXELS_BGRX || f.pixels == CPipeWire_PIXELS_BGRA)) {
        // Screen nodes offer either; both are BGRA in memory (the fourth byte unused in BGRx), so take what comes.
        spa_pod_builder_add(b, SPA_FORMAT_VIDEO_format,
                            SPA_POD_CHOICE_ENUM_Id(3, pixels_to_spa(f.pixels), SPA_VIDEO_FORMAT_BGRx,
                                                   SPA_VIDEO_FORMAT_BGRA),
                            0);
    } else if (subtype == SPA_MEDIA_SUBTYPE_raw) {
        spa_pod_builder_add(b, SPA_FORMAT_VIDEO_format, SPA_POD_Id(pixels_to_spa(f.pixels)), 0);
    }
    spa_pod_builder_add(b, SPA_FORMAT_VIDEO_size, SPA_POD_Rectangle(&SPA_RECTANGLE(f.width, f.height)), 0);
    if (f.rate_den > 0)
        spa_pod_builder_add(b, SPA_FORMAT_VIDEO_framerate, SPA_POD_Fraction(&SPA_FRACTION(f.rate_num, f.rate_den)),
                            0);
    return spa_pod_builder_pop(b, &frame);
}

CPipeWire_Stream *CPipeWire_stream_connect(CPipeWire_Connection *c, const char *target, const char *name,
                                           CPipeWire_StreamFormat format, uint32_t buffer_count,
                                           CPipeWire_StreamCallbacks callbacks, int *error) {
    CPipeWire_Stream *s = calloc(1, sizeof(*s));
    if (!s) {
        *error = -ENOMEM;
        return NULL;
    }
    s->connection = c;
    s->callbacks = callbacks;
    s->wanted = format;
    s->buffer_count = buffer_count;
    bool audio = format.media == CPipeWire_MEDIA_AUDIO_RAW;
    struct pw_properties *props = pw_properties_new(
        PW_KEY_MEDIA_TYPE, audio ? "Audio" : "Video", PW_KEY_MEDIA_CATEGORY, "Capture", PW_KEY_MEDIA_ROLE,
        audio ? "Production" : "Camera", PW_KEY_TARGET_OBJECT, target, PW_KEY_APP_NAME, "OpenAVCapture",
        // A node that goes away is a disconnect the session reports, not a reason to record another camera.
        PW_KEY_NODE_DONT_RECONNECT, "true", NULL);
    if (audio && format.audio_rate > 0) pw_properties_setf(props, PW_KEY_NODE_LATENCY, "%u/%u", format.audio_rate / 100, format.audio_rate);
    pw_thread_loop_lock(c->loop);
    if (!c->alive) {
        pw_thread_loop_unlock(c->loop);
        pw_properties_free(props);
        free(s);
        *error = -EPIPE;
        return NULL;
    }
    s->stream = pw_stream_new(c->core, name, props);
    if (!s->stream) {
        *error = errno ? -errno : -ENOMEM;
        pw_thread_loop_unlock(c->loop);
        free(s);
        return NULL;
    }
    pw_stream_add_listener(s->stream, &s->listener, &stream_events, s);
    uint8_t storage[1024];
    struct spa_pod_builder b = SPA_POD_BUILDER_INIT(storage, sizeof(storage));
    const struct spa_pod *params[1] = {build_request(&b, format)};
    int res = pw_stream_connect(s->stream, PW_DIRECTION_INPUT, PW_ID_ANY,
                                PW_STREAM_FLAG_AUTOCONNECT | PW_STREAM_FLAG_DONT_RECONNECT, params, 1);
    if (res < 0) {
        spa_hook_remove(&s->listener);
        pw_stream_destroy(s->stream);
        pw_thread_loop_unlock(c->loop);
        free(s);
        *error = res;
        return NULL;
    }
    pw_thread_loop_unlock(c->loop);
    *error = 0;
    return s;
}

/// Reads the buffer's cursor meta into `out`, its bitmap only where it lies wholly inside the meta.
static void read_cursor_meta(struct spa_buffer *b, CPipeWire_Buffer *out) {
    struct spa_meta *meta = spa_buffer_find_meta(b, SPA_META_Cursor);
    if (!meta || meta->size < sizeof(struct spa_meta_cursor)) return;
    struct spa_meta_cursor *cursor = meta->data;
    if (!spa_meta_cursor_is_valid(cursor)) return;
    out->cursor_is_valid = true;
    out->cursor_x = cursor->position.x;
    out->cursor_y = cursor->position.y;
    if (cursor->bitmap_offset < sizeof(*cursor) ||
        (uint64_t)cursor->bitmap_offset + sizeof(struct spa_meta_bitmap) > meta->size)
        return;
    struct spa_meta_bitmap *bitmap = SPA_PTROFF(cursor, cursor->bitmap_offset, struct spa_meta_bitmap);
    bool rgba = bitmap->format == SPA_VIDEO_FORMAT_RGBA;
    if (!rgba && bitmap->format != SPA_VIDEO_FORMAT_BGRA) return;
    uint64_t rows_end = (uint64_t)cursor->bitmap_offset + bitmap->offset +
                        (uint64_t)(bitmap->stride > 0 ? bitmap->stride : 0) * bitmap->size.height;
    if (bitmap->size.width > 0 && (bitmap->stride < (int32_t)(bitmap->size.width * 4) || rows_end > meta->size)) return;
    out->has_cursor_bitmap = true;
    out->cursor_hotspot_x = cursor->hotspot.x;
    out->cursor_hotspot_y = cursor->hotspot.y;
    out->cursor_bitmap_is_rgba = rgba;
    if (bitmap->size.width == 0 || bitmap->size.height == 0) return;  // No image: the cursor is hidden.
    out->cursor_bitmap = SPA_PTROFF(bitmap, bitmap->offset, const uint8_t);
    out->cursor_bitmap_width = bitmap->size.width;
    out->cursor_bitmap_height = bitmap->size.height;
    out->cursor_bitmap_stride = bitmap->stride;
}

int CPipeWire_stream_dequeue(CPipeWire_Stream *s, CPipeWire_Buffer *out) {
    pw_thread_loop_lock(s->connection->loop);
    struct pw_buffer *buffer = s->stream ? pw_stream_dequeue_buffer(s->stream) : NULL;
    if (!buffer) {
        pw_thread_loop_unlock(s->connection->loop);
        return -EAGAIN;
    }
    Slot *slot = buffer->user_data;
    Lease *lease = slot ? malloc(sizeof(Lease)) : NULL;
    if (!lease) {
        pw_stream_queue_buffer(s->stream, buffer);
        pw_thread_loop_unlock(s->connection->loop);
        return -ENOMEM;
    }
    slot->refs++;
    lease->slot = slot;
    lease->loop = s->connection->loop;
    memset(out, 0, sizeof(*out));
    out->handle = lease;
    out->is_lendable = slot->is_lendable;
    struct spa_buffer *b = buffer->buffer;
    out->planes_count = slot->planes_count;
    out->data_type = b->n_datas > 0 ? b->datas[0].type : 0;
    for (uint32_t i = 0; i < slot->planes_count; i++) {
        struct spa_data *d = &b->datas[i];
        uint32_t offset = d->maxsize ? d->chunk->offset % d->maxsize : 0;
        uint32_t size = d->chunk->size <= d->maxsize - offset ? d->chunk->size : d->maxsize - offset;
        out->planes[i] = slot->bases[i] ? slot->bases[i] + offset : NULL;
        out->plane_sizes[i] = slot->bases[i] ? size : 0;
        out->plane_strides[i] = d->chunk->stride;
    }
    struct spa_meta_header *header = spa_buffer_find_meta_data(b, SPA_META_Header, sizeof(*header));
    if (header) {
        out->has_header = true;
        out->header_pts = header->pts;
        out->header_sequence = header->seq;
        out->is_corrupted = (header->flags & SPA_META_HEADER_FLAG_CORRUPTED) != 0;
    }
    read_cursor_meta(b, out);
    struct pw_time time;
    if (pw_stream_get_time_n(s->stream, &time, sizeof(time)) == 0 && time.rate.denom > 0) {
        out->graph_now = time.now;
        out->delay_ns = time.delay * (int64_t)SPA_NSEC_PER_SEC * time.rate.num / time.rate.denom;
    }
    pw_thread_loop_unlock(s->connection->loop);
    return 0;
}

void CPipeWire_stream_queue(CPipeWire_Stream *s, void *handle) {
    (void)s;
    Lease *lease = handle;
    pw_thread_loop_lock(lease->loop);
    // A buffer PipeWire has removed (the stream disconnected meanwhile) is gone from the stream: only our mapping
    // is let go.
    if (!lease->slot->removed) pw_stream_queue_buffer(lease->slot->stream, lease->slot->buffer);
    slot_unref(lease->slot);
    pw_thread_loop_unlock(lease->loop);
    free(lease);
}

void CPipeWire_stream_destroy(CPipeWire_Stream *s) {
    if (!s) return;
    struct pw_thread_loop *loop = s->connection->loop;
    pw_thread_loop_lock(loop);
    spa_hook_remove(&s->listener);
    // No callback runs from here on, remove_buffer included: every slot is let go of here; leases still out keep
    // their mappings and no longer queue into the stream.
    for (uint32_t i = 0; i < s->slots_count; i++) {
        s->slots[i]->buffer->user_data = NULL;
        s->slots[i]->removed = true;
        slot_unref(s->slots[i]);
    }
    s->slots_count = 0;
    pw_stream_disconnect(s->stream);
    pw_stream_destroy(s->stream);
    s->stream = NULL;
    pw_thread_loop_unlock(loop);
    free(s);
}
