// CALSA: ALSA's libasound, plus what Swift cannot import from its headers.
// Every symbol this header adds starts with CALSA_.
#ifndef CALSA_H
#define CALSA_H

#include <alsa/asoundlib.h>

/// SND_PCM_NONBLOCK as a value (Swift imports it, but as a macro whose type varies).
static inline int CALSA_PCM_NONBLOCK(void) { return SND_PCM_NONBLOCK; }

/// snd_pcm_hw_params_alloca is a macro over alloca; Swift uses the malloc form instead.
/// Returns NULL when memory is exhausted. Free with snd_pcm_hw_params_free.
static inline snd_pcm_hw_params_t *CALSA_hwParamsCreate(void) {
    snd_pcm_hw_params_t *params = NULL;
    return snd_pcm_hw_params_malloc(&params) == 0 ? params : NULL;
}

/// snd_pcm_sw_params_alloca's malloc form. Free with snd_pcm_sw_params_free.
static inline snd_pcm_sw_params_t *CALSA_swParamsCreate(void) {
    snd_pcm_sw_params_t *params = NULL;
    return snd_pcm_sw_params_malloc(&params) == 0 ? params : NULL;
}

/// snd_pcm_status_alloca's malloc form. Free with snd_pcm_status_free.
static inline snd_pcm_status_t *CALSA_statusCreate(void) {
    snd_pcm_status_t *status = NULL;
    return snd_pcm_status_malloc(&status) == 0 ? status : NULL;
}

#endif
