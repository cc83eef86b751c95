// CFFmpeg: FFmpeg 5.1's libraries, plus what Swift cannot import from their headers.
// Every symbol this header adds starts with CFFmpeg_. Macros become static inline functions;
// variadic calls get a fixed-argument bridge.
#ifndef CFFMPEG_H
#define CFFMPEG_H

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavfilter/avfilter.h>
#include <libavfilter/buffersink.h>
#include <libavfilter/buffersrc.h>
#include <libavutil/avutil.h>
#include <libavutil/error.h>
#include <libavutil/imgutils.h>
#include <libavutil/md5.h>
#include <libavutil/opt.h>
#include <libavutil/channel_layout.h>
#include <libavutil/pixdesc.h>
#include <libavutil/samplefmt.h>
#include <libswresample/swresample.h>
#include <libswscale/swscale.h>

/// AVERROR(e): an FFmpeg error code from a POSIX errno value.
static inline int CFFmpeg_AVERROR(int posixErrno) { return AVERROR(posixErrno); }

/// AVERROR_EOF: the end of a stream.
static inline int CFFmpeg_AVERROR_EOF(void) { return AVERROR_EOF; }

/// AVERROR(EAGAIN): "send more input" / "take output first".
static inline int CFFmpeg_AVERROR_EAGAIN(void) { return AVERROR(EAGAIN); }

/// MKTAG(a, b, c, d): a little-endian four-character code.
static inline unsigned int CFFmpeg_MKTAG(char a, char b, char c, char d) {
    return MKTAG(a, b, c, d);
}

/// AV_NOPTS_VALUE: "no timestamp".
static inline int64_t CFFmpeg_AV_NOPTS_VALUE(void) { return AV_NOPTS_VALUE; }

/// AV_TIME_BASE_Q: FFmpeg's internal time base, 1/1000000.
static inline AVRational CFFmpeg_AV_TIME_BASE_Q(void) { return (AVRational){1, AV_TIME_BASE}; }

/// av_err2str without the compound literal: writes the message for `errnum` into `buffer`
/// (at least AV_ERROR_MAX_STRING_SIZE bytes) and returns `buffer`.
static inline const char *CFFmpeg_errorString(int errnum, char *buffer, size_t size) {
    av_make_error_string(buffer, size, errnum);
    return buffer;
}

/// The size av_err2str uses.
static inline size_t CFFmpeg_errorStringCapacity(void) { return AV_ERROR_MAX_STRING_SIZE; }

/// av_log with an already formatted message: Swift cannot call variadic C functions.
static inline void CFFmpeg_log(void *context, int level, const char *message) {
    av_log(context, level, "%s", message);
}

/// Puts FFmpeg's own log callback (stderr) back after a custom one was installed.
static inline void CFFmpeg_useDefaultLogCallback(void) { av_log_set_callback(av_log_default_callback); }

/// AVFrame.data[plane]: the tuple Swift imports is awkward to index.
static inline uint8_t *CFFmpeg_frameData(const AVFrame *frame, int plane) {
    return (plane >= 0 && plane < AV_NUM_DATA_POINTERS) ? frame->data[plane] : NULL;
}

/// AVFrame.linesize[plane].
static inline int CFFmpeg_frameLinesize(const AVFrame *frame, int plane) {
    return (plane >= 0 && plane < AV_NUM_DATA_POINTERS) ? frame->linesize[plane] : 0;
}

/// Sets AVFrame.data[plane] and linesize[plane], for frames that wrap memory FFmpeg does not own.
static inline void CFFmpeg_frameSetPlane(AVFrame *frame, int plane, uint8_t *data, int linesize) {
    if (plane >= 0 && plane < AV_NUM_DATA_POINTERS) {
        frame->data[plane] = data;
        frame->linesize[plane] = linesize;
    }
}

/// The number of plane slots in an AVFrame.
static inline int CFFmpeg_frameMaxPlanes(void) { return AV_NUM_DATA_POINTERS; }

#endif
