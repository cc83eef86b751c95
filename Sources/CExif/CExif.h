// CExif: libexif, which builds and serializes the EXIF APP1 segment of a JPEG.
// Every symbol this header adds starts with CExif_.
#ifndef CEXIF_H
#define CEXIF_H

#include <libexif/exif-data.h>
#include <libexif/exif-entry.h>
#include <libexif/exif-ifd.h>
#include <libexif/exif-tag.h>
#include <libexif/exif-utils.h>
#include <libexif/exif-format.h>
#include <libexif/exif-mem.h>

/// The content of one IFD of `data` (Swift imports the `ifd` array as a tuple, which it cannot index).
static inline ExifContent *CExif_content(ExifData *data, ExifIfd ifd) { return data->ifd[ifd]; }

#endif
