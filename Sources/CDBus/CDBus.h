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

#endif
