/* meter: a lean ITU-R BS.1770-4 / EBU R128 loudness meter (pure C, no
 * GStreamer types).
 *
 * K-weighting: two biquads per channel in double, coefficients derived for
 * the sample rate exactly as libebur128 derives them.  Weighted energy is
 * summed into 10 ms sub-blocks; momentary (400 ms) and short-term (3 s) are
 * running sums over a ring of sub-blocks.  Integrated loudness and loudness
 * range are kept as histograms of 0.1 LU bins (count + energy sum per bin),
 * so memory is constant however long the stream; the programme measurement
 * (integrated, LRA, true peak) can be restarted without touching the rest.  A second, sliding gated
 * measure over the last `window_blocks` gating blocks serves as the
 * reference of the normaliser. */
#ifndef LN_METER_H
#define LN_METER_H

#include <stddef.h>

#define LN_METER_FLOOR (-HUGE_VAL)

typedef struct LnMeter LnMeter;

typedef struct
{
  unsigned rate;                /* Hz; sub-blocks are rate/100 frames */
  unsigned channels;
  const double *weights;        /* per channel; NULL: all 1.0 */
  int true_peak;                /* measure the true peak */
  unsigned lra_step;            /* short-term values for LRA every lra_step
                                 * sub-blocks (10 = 100 ms; 100 = 1 s as
                                 * libebur128); 0 means 10 */
  unsigned window_blocks;       /* sliding gated window, in 100 ms blocks;
                                 * 0 disables it */
} LnMeterConfig;

LnMeter *ln_meter_new (const LnMeterConfig * cfg);
void ln_meter_free (LnMeter * m);
void ln_meter_reset (LnMeter * m);

/* Frames until the next 100 ms step boundary (1..rate/10). */
size_t ln_meter_frames_to_step (const LnMeter * m);

/* Feeds interleaved frames; returns the number of 100 ms steps completed. */
unsigned ln_meter_process (LnMeter * m, const float *x, size_t frames);

/* Results in LUFS / LU / linear; -HUGE_VAL when there is nothing yet. */
double ln_meter_momentary (const LnMeter * m);
double ln_meter_short_term (const LnMeter * m);
double ln_meter_integrated (const LnMeter * m);
double ln_meter_loudness_range (const LnMeter * m);
double ln_meter_window (const LnMeter * m);     /* sliding gated loudness */
unsigned ln_meter_window_count (const LnMeter * m);     /* blocks above -70 in it */
void ln_meter_reset_window (LnMeter * m);       /* forget the sliding window only */
double ln_meter_true_peak (const LnMeter * m);  /* linear, max of the measurement */
unsigned long long ln_meter_frames (const LnMeter * m); /* since ln_meter_reset */

/* Programme measurement: integrated loudness, loudness range and true peak
 * describe the audio since ln_meter_reset or the last call of this, which
 * forgets them (the gating blocks, the short-term values of the LRA, the
 * maximum true peak) and keeps everything else: filter states, momentary,
 * short-term, the sliding window and ln_meter_frames.  Afterwards only
 * audio fed after the call counts, as for a meter started at that instant:
 * a gating block (400 ms) or an LRA short-term value (3 s) counts only if
 * it lies wholly after the call (so ln_meter_integrated is -HUGE_VAL until
 * 400 ms have been fed, the LRA starts after 3 s), and the true peaks that
 * the interpolator reports for the LN_TP_DELAY frames after the call (which
 * describe the waveform before it) are left out.  Called in the middle of a
 * 10 ms sub-block, the measurement starts at the end of that sub-block. */
void ln_meter_reset_measurement (LnMeter * m);
/* Seconds of audio fed since ln_meter_reset or the last
 * ln_meter_reset_measurement. */
double ln_meter_measured_seconds (const LnMeter * m);

/* K-weighting coefficients for a rate: b[0..2], a[1..2] of the shelving
 * stage then of the high-pass stage (as libebur128 derives them). */
void ln_kweight_coefs (unsigned rate, double b1[3], double a1[3],
    double b2[3], double a2[3]);

#endif
