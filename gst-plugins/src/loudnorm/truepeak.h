/* truepeak: ITU-R BS.1770-4 Annex 2 true-peak detection (4x oversampling,
 * 48-tap / 4-phase interpolation filter). Pure C, no GStreamer types. */
#ifndef LN_TRUEPEAK_H
#define LN_TRUEPEAK_H

#include <stddef.h>

#define LN_TP_TAPS 12           /* taps per phase */
#define LN_TP_PHASES 4
/* Group delay of the interpolator: the four phases computed when frame n
 * arrives describe the waveform between frames n-6 and n-5. */
#define LN_TP_DELAY 6
/* Largest sum of |h| over one phase: |interpolated| <= LN_TP_GAIN_BOUND *
 * max |x| over the 12 taps.  Used to skip the FIR where no peak can reach
 * a threshold. */
#define LN_TP_GAIN_BOUND 2.0230f

typedef struct LnTruePeak LnTruePeak;

/* max_block: the largest number of frames passed to one ln_tp_process call. */
LnTruePeak *ln_tp_new (unsigned channels, size_t max_block);
void ln_tp_free (LnTruePeak * tp);
void ln_tp_reset (LnTruePeak * tp);

/* Feeds `frames` interleaved frames.  If per_frame is not NULL, per_frame[i]
 * receives the peak (linear, max over channels of the 4 interpolated phases
 * and of the sample itself, |x[i-6]|) detected when frame i arrived.
 * Stretches of LN_TP_SUB frames where even the bound
 * LN_TP_GAIN_BOUND * max|x| does not exceed skip_below are not filtered: their
 * per_frame values are then only the (lower) sample peaks.
 * Returns the largest value found in the call (same lower-bound caveat). */
float ln_tp_process (LnTruePeak * tp, const float *x, size_t frames,
    float skip_below, float *per_frame);

#endif
