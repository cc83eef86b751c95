// CDBus: libdbus-1 (the reference D-Bus library), plus what Swift cannot import from it. Every symbol this header
// adds starts with CDBus_.
//
// Swift does not import libdbus's variadic calls (dbus_message_append_args, dbus_message_get_args) nor its
// `((int) 's')` type macros, and walking a message with DBusMessageIter from Swift means a pointer dance per
// argument. So each argument shape the portal client sends or reads has one small function here, named after its
// D-Bus signature; the client's logic stays in Swift.
#ifndef CDBUS_H
#define CDBUS_H

#include <dbus/dbus.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/// `DBUS_TYPE_UNIX_FD` (`'h'`), for dbus_connection_can_send_type.
static inline int CDBus_typeUnixFD(void) { return DBUS_TYPE_UNIX_FD; }

// MARK: Appending arguments. Each returns false only when memory is exhausted.

/// Appends a string (`s`). `value` must be UTF-8 (libdbus aborts on invalid UTF-8; Swift strings always are).
static inline bool CDBus_appendString(DBusMessage *message, const char *value) {
    DBusMessageIter iter;
    dbus_message_iter_init_append(message, &iter);
    return dbus_message_iter_append_basic(&iter, DBUS_TYPE_STRING, &value);
}

/// Appends an unsigned 32-bit integer (`u`).
static inline bool CDBus_appendUInt32(DBusMessage *message, uint32_t value) {
    DBusMessageIter iter;
    dbus_message_iter_init_append(message, &iter);
    return dbus_message_iter_append_basic(&iter, DBUS_TYPE_UINT32, &value);
}

/// Appends a vardict (`a{sv}`, the portals' options and results): empty when `key` is NULL, else one entry whose
/// value is the string `value`.
static inline bool CDBus_appendVardict(DBusMessage *message, const char *key, const char *value) {
    DBusMessageIter iter, array, entry, variant;
    dbus_message_iter_init_append(message, &iter);
    if (!dbus_message_iter_open_container(&iter, DBUS_TYPE_ARRAY, "{sv}", &array)) return false;
    if (key != NULL) {
        if (!dbus_message_iter_open_container(&array, DBUS_TYPE_DICT_ENTRY, NULL, &entry)) goto fail_array;
        if (!dbus_message_iter_append_basic(&entry, DBUS_TYPE_STRING, &key)) goto fail_entry;
        if (!dbus_message_iter_open_container(&entry, DBUS_TYPE_VARIANT, DBUS_TYPE_STRING_AS_STRING, &variant))
            goto fail_entry;
        if (!dbus_message_iter_append_basic(&variant, DBUS_TYPE_STRING, &value)) {
            dbus_message_iter_abandon_container(&entry, &variant);
            goto fail_entry;
        }
        if (!dbus_message_iter_close_container(&entry, &variant)) goto fail_entry;
        if (!dbus_message_iter_close_container(&array, &entry)) goto fail_array;
    }
    return dbus_message_iter_close_container(&iter, &array);
fail_entry:
    dbus_message_iter_abandon_container(&array, &entry);
fail_array:
    dbus_message_iter_abandon_container(&iter, &array);
    return false;
}

// MARK: Reading arguments. Each returns false (or NULL, or -1) when the message has no such argument of that type.

/// Points `iter` at argument `index` (0-based); false when there are fewer arguments.
static inline bool CDBus_argument(DBusMessage *message, int index, DBusMessageIter *iter) {
    if (!dbus_message_iter_init(message, iter)) return false;
    for (int i = 0; i < index; i++) {
        if (!dbus_message_iter_next(iter)) return false;
    }
    return true;
}

/// Argument `index` when it is a string (`s`) or an object path (`o`). The text lives as long as the message.
static inline const char *CDBus_readString(DBusMessage *message, int index) {
    DBusMessageIter iter;
    if (!CDBus_argument(message, index, &iter)) return NULL;
    int type = dbus_message_iter_get_arg_type(&iter);
    if (type != DBUS_TYPE_STRING && type != DBUS_TYPE_OBJECT_PATH) return NULL;
    const char *value = NULL;
    dbus_message_iter_get_basic(&iter, &value);
    return value;
}

/// Argument `index` when it is an unsigned 32-bit integer (`u`).
static inline bool CDBus_readUInt32(DBusMessage *message, int index, uint32_t *value) {
    DBusMessageIter iter;
    if (!CDBus_argument(message, index, &iter) || dbus_message_iter_get_arg_type(&iter) != DBUS_TYPE_UINT32)
        return false;
    dbus_message_iter_get_basic(&iter, value);
    return true;
}

/// Argument `index` when it is a file descriptor (`h`): a new descriptor the caller owns and closes; -1 when absent.
static inline int CDBus_readUnixFD(DBusMessage *message, int index) {
    DBusMessageIter iter;
    if (!CDBus_argument(message, index, &iter) || dbus_message_iter_get_arg_type(&iter) != DBUS_TYPE_UNIX_FD)
        return -1;
    int fd = -1;
    dbus_message_iter_get_basic(&iter, &fd);
    return fd;
}

/// Points `variant` into the first argument when it is a variant (`v`, the reply of
/// org.freedesktop.DBus.Properties.Get) holding a value of `type`.
static inline bool CDBus_variantArgument(DBusMessage *message, int type, DBusMessageIter *variant) {
    DBusMessageIter iter;
    if (!CDBus_argument(message, 0, &iter) || dbus_message_iter_get_arg_type(&iter) != DBUS_TYPE_VARIANT) return false;
    dbus_message_iter_recurse(&iter, variant);
    return dbus_message_iter_get_arg_type(variant) == type;
}

/// The first argument when it is a variant holding a boolean (`b`).
static inline bool CDBus_readVariantBoolean(DBusMessage *message, bool *value) {
    DBusMessageIter variant;
    dbus_bool_t boolean = FALSE;
    if (!CDBus_variantArgument(message, DBUS_TYPE_BOOLEAN, &variant)) return false;
    dbus_message_iter_get_basic(&variant, &boolean);
    *value = boolean != FALSE;
    return true;
}

/// The first argument when it is a variant holding an unsigned 32-bit integer (`u`).
static inline bool CDBus_readVariantUInt32(DBusMessage *message, uint32_t *value) {
    DBusMessageIter variant;
    if (!CDBus_variantArgument(message, DBUS_TYPE_UINT32, &variant)) return false;
    dbus_message_iter_get_basic(&variant, value);
    return true;
}

/// In the first argument, a map from strings to string arrays (`a{sas}`: the permissions of
/// org.freedesktop.impl.portal.PermissionStore.Lookup, by application id), the strings stored for `key`: their
/// count, and the first in `*first` (NULL when there is none; it lives as long as the message). -1 when `key` has
/// no entry or the argument has another type.
static inline int CDBus_readStringArrayEntry(DBusMessage *message, const char *key, const char **first) {
    DBusMessageIter iter, array, entry, strings;
    *first = NULL;
    if (!CDBus_argument(message, 0, &iter) || dbus_message_iter_get_arg_type(&iter) != DBUS_TYPE_ARRAY ||
        dbus_message_iter_get_element_type(&iter) != DBUS_TYPE_DICT_ENTRY)
        return -1;
    dbus_message_iter_recurse(&iter, &array);
    for (; dbus_message_iter_get_arg_type(&array) == DBUS_TYPE_DICT_ENTRY; dbus_message_iter_next(&array)) {
        dbus_message_iter_recurse(&array, &entry);
        if (dbus_message_iter_get_arg_type(&entry) != DBUS_TYPE_STRING) return -1;
        const char *name = NULL;
        dbus_message_iter_get_basic(&entry, &name);
        if (strcmp(name, key) != 0) continue;
        if (!dbus_message_iter_next(&entry) || dbus_message_iter_get_arg_type(&entry) != DBUS_TYPE_ARRAY ||
            dbus_message_iter_get_element_type(&entry) != DBUS_TYPE_STRING)
            return -1;
        dbus_message_iter_recurse(&entry, &strings);
        int count = 0;
        for (; dbus_message_iter_get_arg_type(&strings) == DBUS_TYPE_STRING; dbus_message_iter_next(&strings)) {
            if (count == 0) dbus_message_iter_get_basic(&strings, first);
            count++;
        }
        return count;
    }
    return -1;
}

// MARK: Vardicts of several entries, and object paths (the ScreenCast portal's options and session handles).

/// One entry of a vardict to append: `type` is 'u' (`u` holds it), 'b' (`b`) or 's' (`s`, UTF-8).
typedef struct {
    const char *key;
    char type;
    uint32_t u;
    bool b;
    const char *s;
} CDBus_VardictEntry;

/// Appends a vardict (`a{sv}`) of `count` entries. False when memory is exhausted or an entry's type is unknown.
static inline bool CDBus_appendVardictEntries(DBusMessage *message, const CDBus_VardictEntry *entries, int count) {
    DBusMessageIter iter, array, entry, variant;
    dbus_message_iter_init_append(message, &iter);
    if (!dbus_message_iter_open_container(&iter, DBUS_TYPE_ARRAY, "{sv}", &array)) return false;
    for (int i = 0; i < count; i++) {
        const CDBus_VardictEntry *e = &entries[i];
        const char *signature = e->type == 'u' ? "u" : e->type == 'b' ? "b" : e->type == 's' ? "s" : NULL;
        if (signature == NULL) goto fail_array;
        if (!dbus_message_iter_open_container(&array, DBUS_TYPE_DICT_ENTRY, NULL, &entry)) goto fail_array;
        if (!dbus_message_iter_append_basic(&entry, DBUS_TYPE_STRING, &e->key)) goto fail_entry;
        if (!dbus_message_iter_open_container(&entry, DBUS_TYPE_VARIANT, signature, &variant)) goto fail_entry;
        bool appended;
        if (e->type == 'u') {
            appended = dbus_message_iter_append_basic(&variant, DBUS_TYPE_UINT32, &e->u);
        } else if (e->type == 'b') {
            dbus_bool_t value = e->b ? TRUE : FALSE;
            appended = dbus_message_iter_append_basic(&variant, DBUS_TYPE_BOOLEAN, &value);
        } else {
            appended = dbus_message_iter_append_basic(&variant, DBUS_TYPE_STRING, &e->s);
        }
        if (!appended) {
            dbus_message_iter_abandon_container(&entry, &variant);
            goto fail_entry;
        }
        if (!dbus_message_iter_close_container(&entry, &variant)) goto fail_entry;
        if (!dbus_message_iter_close_container(&array, &entry)) goto fail_array;
    }
    return dbus_message_iter_close_container(&iter, &array);
fail_entry:
    dbus_message_iter_abandon_container(&array, &entry);
fail_array:
    dbus_message_iter_abandon_container(&iter, &array);
    return false;
}

/// Appends an object path (`o`). `value` must be a valid path (libdbus aborts otherwise): callers pass paths a bus
/// sent them.
static inline bool CDBus_appendObjectPath(DBusMessage *message, const char *value) {
    DBusMessageIter iter;
    dbus_message_iter_init_append(message, &iter);
    return dbus_message_iter_append_basic(&iter, DBUS_TYPE_OBJECT_PATH, &value);
}

/// Points `value` at the variant's content of `key` in the vardict (`a{sv}`) that is argument `index`; false when
/// the argument is no vardict or has no such key.
static inline bool CDBus_vardictValue(DBusMessage *message, int index, const char *key, DBusMessageIter *value) {
    DBusMessageIter iter, array, entry;
    if (!CDBus_argument(message, index, &iter) || dbus_message_iter_get_arg_type(&iter) != DBUS_TYPE_ARRAY ||
        dbus_message_iter_get_element_type(&iter) != DBUS_TYPE_DICT_ENTRY)
        return false;
    dbus_message_iter_recurse(&iter, &array);
    for (; dbus_message_iter_get_arg_type(&array) == DBUS_TYPE_DICT_ENTRY; dbus_message_iter_next(&array)) {
        dbus_message_iter_recurse(&array, &entry);
        if (dbus_message_iter_get_arg_type(&entry) != DBUS_TYPE_STRING) return false;
        const char *name = NULL;
        dbus_message_iter_get_basic(&entry, &name);
        if (strcmp(name, key) != 0) continue;
        if (!dbus_message_iter_next(&entry) || dbus_message_iter_get_arg_type(&entry) != DBUS_TYPE_VARIANT)
            return false;
        dbus_message_iter_recurse(&entry, value);
        return true;
    }
    return false;
}

/// The string (or object path) under `key` in the vardict that is argument `index`; NULL when absent. The text
/// lives as long as the message.
static inline const char *CDBus_readVardictString(DBusMessage *message, int index, const char *key) {
    DBusMessageIter value;
    if (!CDBus_vardictValue(message, index, key, &value)) return NULL;
    int type = dbus_message_iter_get_arg_type(&value);
    if (type != DBUS_TYPE_STRING && type != DBUS_TYPE_OBJECT_PATH) return NULL;
    const char *text = NULL;
    dbus_message_iter_get_basic(&value, &text);
    return text;
}

/// One stream of a ScreenCast `Start` response (`streams`, `a(ua{sv})`): the PipeWire node and what the portal
/// says of it. `has_position`/`has_size` say whether those entries were given.
typedef struct {
    uint32_t node_id;
    uint32_t source_type;
    int32_t x, y, width, height;
    bool has_position, has_size;
} CDBus_ScreenCastStream;

/// Reads a `(ii)` struct into two integers.
static inline bool CDBus_readIntPair(DBusMessageIter *variant, int32_t *first, int32_t *second) {
    DBusMessageIter pair;
    if (dbus_message_iter_get_arg_type(variant) != DBUS_TYPE_STRUCT) return false;
    dbus_message_iter_recurse(variant, &pair);
    if (dbus_message_iter_get_arg_type(&pair) != DBUS_TYPE_INT32) return false;
    dbus_message_iter_get_basic(&pair, first);
    if (!dbus_message_iter_next(&pair) || dbus_message_iter_get_arg_type(&pair) != DBUS_TYPE_INT32) return false;
    dbus_message_iter_get_basic(&pair, second);
    return true;
}

/// The streams under `streams` in the vardict that is argument `index`, at most `capacity` into `streams`: their
/// count, or -1 when the entry is absent or of another type.
static inline int CDBus_readScreenCastStreams(
    DBusMessage *message, int index, CDBus_ScreenCastStream *streams, int capacity) {
    DBusMessageIter value, array, item, properties, entry, variant;
    if (!CDBus_vardictValue(message, index, "streams", &value) ||
        dbus_message_iter_get_arg_type(&value) != DBUS_TYPE_ARRAY ||
        dbus_message_iter_get_element_type(&value) != DBUS_TYPE_STRUCT)
        return -1;
    dbus_message_iter_recurse(&value, &array);
    int count = 0;
    for (; dbus_message_iter_get_arg_type(&array) == DBUS_TYPE_STRUCT && count < capacity;
         dbus_message_iter_next(&array)) {
        CDBus_ScreenCastStream *stream = &streams[count];
        memset(stream, 0, sizeof(*stream));
        dbus_message_iter_recurse(&array, &item);
        if (dbus_message_iter_get_arg_type(&item) != DBUS_TYPE_UINT32) return -1;
        dbus_message_iter_get_basic(&item, &stream->node_id);
        if (dbus_message_iter_next(&item) && dbus_message_iter_get_arg_type(&item) == DBUS_TYPE_ARRAY) {
            dbus_message_iter_recurse(&item, &properties);
            for (; dbus_message_iter_get_arg_type(&properties) == DBUS_TYPE_DICT_ENTRY;
                 dbus_message_iter_next(&properties)) {
                dbus_message_iter_recurse(&properties, &entry);
                if (dbus_message_iter_get_arg_type(&entry) != DBUS_TYPE_STRING) continue;
                const char *name = NULL;
                dbus_message_iter_get_basic(&entry, &name);
                if (!dbus_message_iter_next(&entry)) continue;
                dbus_message_iter_recurse(&entry, &variant);
                if (strcmp(name, "position") == 0) {
                    stream->has_position = CDBus_readIntPair(&variant, &stream->x, &stream->y);
                } else if (strcmp(name, "size") == 0) {
                    stream->has_size = CDBus_readIntPair(&variant, &stream->width, &stream->height);
                } else if (strcmp(name, "source_type") == 0 &&
                           dbus_message_iter_get_arg_type(&variant) == DBUS_TYPE_UINT32) {
                    dbus_message_iter_get_basic(&variant, &stream->source_type);
                }
            }
        }
        count++;
    }
    return count;
}

/// Appends a signed 32-bit integer (`i`).
static inline bool CDBus_appendInt32(DBusMessage *message, int32_t value) {
    DBusMessageIter iter;
    dbus_message_iter_init_append(message, &iter);
    return dbus_message_iter_append_basic(&iter, DBUS_TYPE_INT32, &value);
}

/// Appends a double (`d`).
static inline bool CDBus_appendDouble(DBusMessage *message, double value) {
    DBusMessageIter iter;
    dbus_message_iter_init_append(message, &iter);
    return dbus_message_iter_append_basic(&iter, DBUS_TYPE_DOUBLE, &value);
}

/// Appends a boolean (`b`).
static inline bool CDBus_appendBoolean(DBusMessage *message, bool value) {
    DBusMessageIter iter;
    dbus_bool_t boolean = value ? TRUE : FALSE;
    dbus_message_iter_init_append(message, &iter);
    return dbus_message_iter_append_basic(&iter, DBUS_TYPE_BOOLEAN, &boolean);
}

#endif
