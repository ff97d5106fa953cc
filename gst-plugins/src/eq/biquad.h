/* Pure biquad DSP for the parametriceq element: no GStreamer or GLib types.
 *
 * - RBJ "Audio EQ Cookbook" peaking coefficients, computed in double.
 * - A cascade of up to EQ_MAX_BANDS biquads in transposed direct form II,
 *   state in double per channel, for interleaved float and double buffers.
 * - Click-free changes: the cascade moves the band parameters from the old
 *   set to the new one over a ramp (see eq_cascade_set_bands).
 */
#ifndef AUDIOENGINE_EQ_BIQUAD_H
#define AUDIOENGINE_EQ_BIQUAD_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define EQ_MAX_BANDS 16

/* A band above this fraction of the sample rate is not designed: it becomes
 * the identity filter (skipped). */
#define EQ_MAX_FREQ_FRACTION 0.49

/* Normalised biquad (a0 == 1):
 *   H(z) = (b0 + b1 z^-1 + b2 z^-2) / (1 + a1 z^-1 + a2 z^-2) */
typedef struct
{
  double b0, b1, b2, a1, a2;
} EqBiquad;

/* The identity biquad: b0 = 1, everything else 0. */
void eq_biquad_identity (EqBiquad * c);
int eq_biquad_is_identity (const EqBiquad * c);

/* RBJ peaking EQ. Returns 1 when designed, 0 when the band was replaced by
 * the identity filter: gain_db == 0, or f0 > EQ_MAX_FREQ_FRACTION * fs, or
 * arguments that are not finite / not positive. */
int eq_biquad_peaking (EqBiquad * c, double f0, double gain_db, double q,
    double fs);

/* |H(e^{j 2 pi f / fs})| of one biquad, evaluated analytically. */
double eq_biquad_magnitude (const EqBiquad * c, double f, double fs);

/* 1 when both poles are strictly inside the unit circle (stability triangle:
 * |a2| < 1 and |a1| < 1 + a2). */
int eq_biquad_is_stable (const EqBiquad * c);

/* ---- bands ------------------------------------------------------------ */

typedef enum
{
  EQ_BAND_PEAK = 0
      /* room for shelves and passes later */
} EqBandType;

typedef struct
{
  EqBandType type;
  double freq;                  /* Hz */
  double gain_db;
  double q;
} EqBand;

/* Designs the biquad of one band at sample rate fs. Returns 1 when designed,
 * 0 when the band is the identity (gain 0, or freq above
 * EQ_MAX_FREQ_FRACTION * fs: skipped). */
int eq_band_design (const EqBand * band, double fs, EqBiquad * out);

/* ---- cascade ---------------------------------------------------------- */

/* Frames between two exact designs while ramping; the coefficients are
 * interpolated linearly between these anchors, sample by sample. */
#define EQ_RAMP_SEGMENT 32

typedef struct
{
  unsigned channels;
  double fs;
  /* coefficients currently applied (interpolated while ramping) */
  EqBiquad cur[EQ_MAX_BANDS];
  /* band parameters at the start and end of the ramp; a slot without a band
   * (or with a skipped band) has gain 0 */
  EqBand from[EQ_MAX_BANDS];
  EqBand to[EQ_MAX_BANDS];
  /* the anchors of the current ramp segment */
  EqBiquad seg_a[EQ_MAX_BANDS];
  EqBiquad seg_b[EQ_MAX_BANDS];
  size_t seg_start, seg_end;
  /* slots processed: indices of non-identity slots (of cur when idle, of
   * from or to while ramping) */
  unsigned active[EQ_MAX_BANDS];
  unsigned n_active;
  size_t ramp_len;              /* frames */
  size_t ramp_pos;              /* ramp_pos >= ramp_len: not ramping */
  /* some slot is a tail: a band ramped to 0 dB that still runs (as the
   * RBJ design at 0 dB) until its state has decayed, then is dropped */
  int prune_pending;
  /* channels * EQ_MAX_BANDS * 2 doubles: s1, s2 of each slot of each channel */
  double *state;
} EqCascade;

/* Returns 0 on success, -1 on bad arguments or allocation failure. The
 * cascade starts empty (identity) with zero state. */
int eq_cascade_init (EqCascade * eq, unsigned channels);
void eq_cascade_clear (EqCascade * eq);

/* Changes the channel count (state reset). Returns 0 or -1. */
int eq_cascade_set_channels (EqCascade * eq, unsigned channels);

/* Zeroes the filter state and ends any ramp (jumps to the target). */
void eq_cascade_reset (EqCascade * eq);

/* New bands (n <= EQ_MAX_BANDS; slots n.. become empty) at sample rate fs.
 * ramp_frames == 0 (or a new fs) switches at once: use it when no audio went
 * through yet, or after a reset. Otherwise the band parameters move from the
 * current ones to the new ones over ramp_frames frames: frequency and q
 * geometrically, gain linearly in dB; a band that appears or disappears
 * fades its gain from or to 0 dB at its own frequency. Every intermediate
 * filter is a proper peaking filter (stable, gain between the two ends),
 * designed exactly every EQ_RAMP_SEGMENT frames, with the coefficients
 * interpolated linearly in between (a convex combination of two stable
 * biquads is stable: the stability triangle in (a1, a2) is convex). A call
 * during a ramp starts a new ramp from where the old one was. */
void eq_cascade_set_bands (EqCascade * eq, const EqBand * bands, unsigned n,
    double fs, size_t ramp_frames);

/* 1 when not ramping and every slot is the identity (nothing to do). */
int eq_cascade_is_identity (const EqCascade * eq);
int eq_cascade_is_ramping (const EqCascade * eq);

/* In-place processing of interleaved frames (eq->channels per frame). */
void eq_cascade_process_f32 (EqCascade * eq, float *data, size_t frames);
void eq_cascade_process_f64 (EqCascade * eq, double *data, size_t frames);

#ifdef __cplusplus
}
#endif
#endif
