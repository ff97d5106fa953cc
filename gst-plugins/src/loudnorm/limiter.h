/* limiter: look-ahead true-peak limiter (pure C, no GStreamer types).
 *
 * Detection: 4x oversampled true peak (ITU-R BS.1770-4 Annex 2) of the
 * signal fed in; required gain r = min(1, threshold / peak); the gain is a
 * sliding minimum of r over the look-ahead (instant attack, then a one-pole
 * release) smoothed by a moving average of the look-ahead length, so it is
 * fully down exactly when the peak leaves the delay line.  The FIR runs only
 * where a peak can reach the threshold. */
#ifndef LN_LIMITER_H
#define LN_LIMITER_H

#include <stddef.h>

typedef struct LnLimiter LnLimiter;

LnLimiter *ln_limiter_new (unsigned channels, unsigned rate,
    double lookahead_s, double release_s);
void ln_limiter_free (LnLimiter * l);
void ln_limiter_reset (LnLimiter * l);
/* ceiling in dBTP; the limiter aims margin_db under it */
void ln_limiter_set_ceiling (LnLimiter * l, double ceiling_db, double margin_db);
/* total delay in frames (look-ahead + interpolator delay) */
unsigned ln_limiter_delay (const LnLimiter * l);
/* in place: x receives the input delayed by ln_limiter_delay() frames,
 * times the limiter gain */
void ln_limiter_process (LnLimiter * l, float *x, size_t frames);
/* smallest gain applied since the last call (linear) */
double ln_limiter_take_min_gain (LnLimiter * l);

#endif
