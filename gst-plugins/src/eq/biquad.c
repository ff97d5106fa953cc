/* Pure biquad DSP for the parametriceq element (see biquad.h).
 *
 * Coefficients: Robert Bristow-Johnson, "Cookbook formulae for audio EQ
 * biquad filter coefficients" (the Audio EQ Cookbook),
 * https://www.w3.org/TR/audio-eq-cookbook/ (also musicdsp.org
 * Audio-EQ-Cookbook.txt). Peaking EQ:
 *
 *   A     = 10^(dBgain/40)
 *   w0    = 2 pi f0 / Fs
 *   alpha = sin(w0) / (2 Q)
 *   b0 = 1 + alpha A     a0 = 1 + alpha / A
 *   b1 = -2 cos(w0)      a1 = -2 cos(w0)
 *   b2 = 1 - alpha A     a2 = 1 - alpha / A
 *
 * all divided by a0. Filtering: transposed direct form II,
 *   y  = b0 x + s1
 *   s1 = b1 x - a1 y + s2
 *   s2 = b2 x - a2 y
 * with the state in double.
 *
 * Denormals: the state is double, so it only reaches the denormal range
 * (< 2.2e-308) after a long decay through digital silence. State values below
 * EQ_STATE_FLUSH (1e-25, about -500 dB) are set to exactly 0 after every
 * block of EQ_BLOCK frames; from 1e-25 a filter needs a pole radius below
 * 0.52 to reach the denormal range within one block, and such a filter
 * passes through it in a few dozen samples.
 */
#include "biquad.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

#define EQ_STATE_FLUSH 1e-25
#define EQ_BLOCK 1024

typedef double v2d __attribute__ ((vector_size (16)));

#if defined(__GNUC__)
#define EQ_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define EQ_ALWAYS_INLINE inline
#endif

void
eq_biquad_identity (EqBiquad * c)
{
  c->b0 = 1.0;
  c->b1 = c->b2 = c->a1 = c->a2 = 0.0;
}

int
eq_biquad_is_identity (const EqBiquad * c)
{
  return c->b0 == 1.0 && c->b1 == 0.0 && c->b2 == 0.0 && c->a1 == 0.0
      && c->a2 == 0.0;
}

int
eq_biquad_peaking (EqBiquad * c, double f0, double gain_db, double q,
    double fs)
{
  double A, w0, alpha, cw, a0;

  eq_biquad_identity (c);
  if (!isfinite (f0) || !isfinite (gain_db) || !isfinite (q) || !isfinite (fs))
    return 0;
  if (f0 <= 0.0 || q <= 0.0 || fs <= 0.0)
    return 0;
  if (gain_db == 0.0)
    return 0;
  if (f0 > EQ_MAX_FREQ_FRACTION * fs)
    return 0;

  A = pow (10.0, gain_db / 40.0);
  w0 = 2.0 * M_PI * f0 / fs;
  alpha = sin (w0) / (2.0 * q);
  cw = cos (w0);
  a0 = 1.0 + alpha / A;

  c->b0 = (1.0 + alpha * A) / a0;
  c->b1 = (-2.0 * cw) / a0;
  c->b2 = (1.0 - alpha * A) / a0;
  c->a1 = (-2.0 * cw) / a0;
  c->a2 = (1.0 - alpha / A) / a0;
  return 1;
}

double
eq_biquad_magnitude (const EqBiquad * c, double f, double fs)
{
  /* H(e^jw) = (b0 + b1 e^-jw + b2 e^-2jw) / (1 + a1 e^-jw + a2 e^-2jw) */
  double w = 2.0 * M_PI * f / fs;
  double c1 = cos (w), s1 = sin (w), c2 = cos (2.0 * w), s2 = sin (2.0 * w);
  double nr = c->b0 + c->b1 * c1 + c->b2 * c2;
  double ni = -(c->b1 * s1 + c->b2 * s2);
  double dr = 1.0 + c->a1 * c1 + c->a2 * c2;
  double di = -(c->a1 * s1 + c->a2 * s2);

  return sqrt ((nr * nr + ni * ni) / (dr * dr + di * di));
}

int
eq_biquad_is_stable (const EqBiquad * c)
{
  return fabs (c->a2) < 1.0 && fabs (c->a1) < 1.0 + c->a2;
}

int
eq_band_design (const EqBand * band, double fs, EqBiquad * out)
{
  switch (band->type) {
    case EQ_BAND_PEAK:
      return eq_biquad_peaking (out, band->freq, band->gain_db, band->q, fs);
  }
  eq_biquad_identity (out);
  return 0;
}

/* ---- cascade ----------------------------------------------------------
 *
 * Slots. Each of the EQ_MAX_BANDS slots is idle in one of three ways:
 *   band   to.gain != 0, cur = design(to)
 *   tail   to.gain == 0 but the slot carried audio: cur is the RBJ design at
 *          gain 0 (b == a: |H| = 1, but not the identity coefficients), run
 *          until its state has decayed below EQ_TAIL_DROP, then emptied
 *   empty  cur = identity (b0 = 1), zero state, not processed
 * The tail exists because swapping a b == a filter that holds state for the
 * identity coefficients would cut its state off: a step. For the same reason
 * ramp anchors are designed "raw", without the gain-0 shortcut: all filters
 * on the way keep b == a at 0 dB, also a linear mix of two such filters. */

/* tails are dropped below this state magnitude (-180 dBFS: far below float
 * resolution of the output) */
#define EQ_TAIL_DROP 1e-9

static void
empty_band (EqBand * b)
{
  b->type = EQ_BAND_PEAK;
  b->freq = 1000.0;
  b->gain_db = 0.0;
  b->q = 1.0;
}

/* The design without the gain-0 shortcut (for ramps and tails). */
static void
design_raw (const EqBand * band, double fs, EqBiquad * out)
{
  double A, w0, alpha, cw, a0;

  eq_biquad_identity (out);
  if (band->type != EQ_BAND_PEAK || !(band->freq > 0.0)
      || !(band->freq <= EQ_MAX_FREQ_FRACTION * fs) || !(band->q > 0.0)
      || !isfinite (band->gain_db) || !isfinite (band->q))
    return;
  A = pow (10.0, band->gain_db / 40.0);
  w0 = 2.0 * M_PI * band->freq / fs;
  alpha = sin (w0) / (2.0 * band->q);
  cw = cos (w0);
  a0 = 1.0 + alpha / A;
  out->b0 = (1.0 + alpha * A) / a0;
  out->b1 = (-2.0 * cw) / a0;
  out->b2 = (1.0 - alpha * A) / a0;
  out->a1 = (-2.0 * cw) / a0;
  out->a2 = (1.0 - alpha / A) / a0;
}

static double
slot_state_max (const EqCascade * eq, unsigned slot)
{
  unsigned c;
  double m = 0.0;

  if (eq->state == NULL)
    return 0.0;
  for (c = 0; c < eq->channels; c++) {
    const double *st = &eq->state[((size_t) c * EQ_MAX_BANDS + slot) * 2];

    m = fmax (m, fmax (fabs (st[0]), fabs (st[1])));
  }
  return m;
}

static void
slot_state_zero (EqCascade * eq, unsigned slot)
{
  unsigned c;

  if (eq->state == NULL)
    return;
  for (c = 0; c < eq->channels; c++) {
    double *st = &eq->state[((size_t) c * EQ_MAX_BANDS + slot) * 2];

    st[0] = st[1] = 0.0;
  }
}

/* Recomputes the list of slots to process. */
static void
update_active (EqCascade * eq)
{
  unsigned i, n = 0;
  int ramping = eq_cascade_is_ramping (eq);

  eq->prune_pending = 0;
  for (i = 0; i < EQ_MAX_BANDS; i++) {
    int need = !eq_biquad_is_identity (&eq->cur[i]);

    if (ramping)
      need = need || eq->from[i].gain_db != 0.0 || eq->to[i].gain_db != 0.0;
    else if (need && eq->to[i].gain_db == 0.0)
      eq->prune_pending = 1;    /* a tail */
    if (need)
      eq->active[n++] = i;
  }
  eq->n_active = n;
}

/* Empties tails whose state has died out. */
static void
prune_tails (EqCascade * eq)
{
  unsigned i;

  for (i = 0; i < EQ_MAX_BANDS; i++) {
    if (eq->to[i].gain_db == 0.0 && !eq_biquad_is_identity (&eq->cur[i])
        && slot_state_max (eq, i) < EQ_TAIL_DROP) {
      eq_biquad_identity (&eq->cur[i]);
      slot_state_zero (eq, i);
    }
  }
  update_active (eq);
}

int
eq_cascade_init (EqCascade * eq, unsigned channels)
{
  unsigned i;

  memset (eq, 0, sizeof (*eq));
  eq->fs = 48000.0;
  for (i = 0; i < EQ_MAX_BANDS; i++) {
    eq_biquad_identity (&eq->cur[i]);
    eq_biquad_identity (&eq->seg_a[i]);
    eq_biquad_identity (&eq->seg_b[i]);
    empty_band (&eq->from[i]);
    empty_band (&eq->to[i]);
  }
  return eq_cascade_set_channels (eq, channels);
}

void
eq_cascade_clear (EqCascade * eq)
{
  free (eq->state);
  eq->state = NULL;
  eq->channels = 0;
}

int
eq_cascade_set_channels (EqCascade * eq, unsigned channels)
{
  double *st;

  if (channels == 0 || channels > 65536)
    return -1;
  st = calloc ((size_t) channels * EQ_MAX_BANDS * 2, sizeof (double));
  if (st == NULL)
    return -1;
  free (eq->state);
  eq->state = st;
  eq->channels = channels;
  eq_cascade_reset (eq);
  return 0;
}

/* The band parameters at ramp position t (0..1) of a slot. */
static void
ramp_params (const EqBand * from, const EqBand * to, double t, EqBand * out)
{
  EqBand a = *from, b = *to;

  if (a.gain_db == 0.0 && b.gain_db == 0.0) {
    *out = b;
    return;
  }
  /* appearing / disappearing band: fade the gain at its own freq and q */
  if (a.gain_db == 0.0) {
    a = b;
    a.gain_db = 0.0;
  } else if (b.gain_db == 0.0) {
    b = a;
    b.gain_db = 0.0;
  }
  if (t >= 1.0) {
    *out = b;
    return;
  }
  out->type = b.type;
  out->freq = a.freq * pow (b.freq / a.freq, t);
  out->q = a.q * pow (b.q / a.q, t);
  out->gain_db = a.gain_db + (b.gain_db - a.gain_db) * t;
}

/* Puts every slot at the end of the ramp. Slots that carried audio and end
 * at gain 0 become tails. */
static void
finish_ramp (EqCascade * eq, int keep_tails)
{
  unsigned i;

  for (i = 0; i < EQ_MAX_BANDS; i++) {
    EqBand end;
    int had_audio = !eq_biquad_is_identity (&eq->cur[i])
        || eq->from[i].gain_db != 0.0;

    ramp_params (&eq->from[i], &eq->to[i], 1.0, &end);
    eq->to[i] = end;
    eq->from[i] = end;
    if (end.gain_db != 0.0) {
      (void) eq_band_design (&end, eq->fs, &eq->cur[i]);
    } else if (keep_tails && had_audio) {
      design_raw (&end, eq->fs, &eq->cur[i]);
    } else {
      eq_biquad_identity (&eq->cur[i]);
      slot_state_zero (eq, i);
    }
  }
  eq->ramp_pos = eq->ramp_len;
}

void
eq_cascade_reset (EqCascade * eq)
{
  if (eq->state)
    memset (eq->state, 0,
        (size_t) eq->channels * EQ_MAX_BANDS * 2 * sizeof (double));
  finish_ramp (eq, 0);
  update_active (eq);
}

/* A band as the cascade keeps it: skipped bands (above EQ_MAX_FREQ_FRACTION
 * x fs, or invalid) become gain 0 at a frequency that can be designed. */
static void
effective_band (const EqBand * in, double fs, EqBand * out)
{
  EqBiquad dummy;

  *out = *in;
  if (!eq_band_design (in, fs, &dummy)) {
    out->gain_db = 0.0;
    if (!(out->freq > 0.0 && out->freq <= EQ_MAX_FREQ_FRACTION * fs))
      out->freq = fmin (1000.0, EQ_MAX_FREQ_FRACTION * fs);
    if (!(out->q > 0.0 && isfinite (out->q)))
      out->q = 1.0;
  }
}

static int
same_band (const EqBand * a, const EqBand * b)
{
  return a->type == b->type && a->freq == b->freq && a->gain_db == b->gain_db
      && a->q == b->q;
}

void
eq_cascade_set_bands (EqCascade * eq, const EqBand * bands, unsigned n,
    double fs, size_t ramp_frames)
{
  unsigned i;
  int changed = 0;

  if (n > EQ_MAX_BANDS)
    n = EQ_MAX_BANDS;
  if (!(fs > 0.0))
    return;
  if (fs != eq->fs)
    ramp_frames = 0;

  for (i = 0; i < EQ_MAX_BANDS; i++) {
    /* where the slot is now (in the middle of a ramp: its current params) */
    if (eq_cascade_is_ramping (eq)) {
      EqBand now;

      ramp_params (&eq->from[i], &eq->to[i],
          (double) eq->ramp_pos / (double) eq->ramp_len, &now);
      eq->from[i] = now;
    } else {
      eq->from[i] = eq->to[i];
    }
    if (i < n)
      effective_band (&bands[i], fs, &eq->to[i]);
    else
      empty_band (&eq->to[i]);
    if (eq->from[i].gain_db == 0.0 && eq->to[i].gain_db == 0.0)
      eq->to[i] = eq->from[i];  /* flat stays flat (a tail runs on) */
    else if (!same_band (&eq->from[i], &eq->to[i]))
      changed = 1;
  }
  eq->fs = fs;

  if (!changed && ramp_frames != 0) {
    /* nothing moves: no ramp (a ramp in progress stops where it is) */
    finish_ramp (eq, 1);
    eq->ramp_len = eq->ramp_pos = 0;
  } else if (ramp_frames == 0) {
    /* abrupt: only for a start, after a reset or a rate change */
    finish_ramp (eq, 0);
    eq->ramp_len = eq->ramp_pos = 0;
  } else {
    /* the first segment starts from the coefficients in use */
    memcpy (eq->seg_b, eq->cur, sizeof (eq->seg_b));
    eq->seg_start = eq->seg_end = 0;
    eq->ramp_len = ramp_frames;
    eq->ramp_pos = 0;
  }
  update_active (eq);
}

int
eq_cascade_is_ramping (const EqCascade * eq)
{
  return eq->ramp_pos < eq->ramp_len;
}

int
eq_cascade_is_identity (const EqCascade * eq)
{
  return !eq_cascade_is_ramping (eq) && eq->n_active == 0;
}

static void
flush_state (EqCascade * eq)
{
  size_t i, n = (size_t) eq->channels * EQ_MAX_BANDS * 2;
  double *st = eq->state;

  for (i = 0; i < n; i++) {
    if (fabs (st[i]) < EQ_STATE_FLUSH)
      st[i] = 0.0;
  }
}

/* Moves to the next ramp segment: the old end anchor becomes the start, the
 * new end anchor is the exact (raw) design at the segment end. */
static void
next_segment (EqCascade * eq)
{
  unsigned i;
  size_t end = eq->seg_end + EQ_RAMP_SEGMENT;

  if (end > eq->ramp_len)
    end = eq->ramp_len;
  eq->seg_start = eq->seg_end;
  eq->seg_end = end;
  memcpy (eq->seg_a, eq->seg_b, sizeof (eq->seg_a));
  for (i = 0; i < eq->n_active; i++) {
    unsigned s = eq->active[i];
    EqBand b;

    ramp_params (&eq->from[s], &eq->to[s],
        (double) end / (double) eq->ramp_len, &b);
    design_raw (&b, eq->fs, &eq->seg_b[s]);
  }
}

/* Steady-state kernels. NB (bands) and NCH (channels processed together, 1
 * or 2) are compile-time constants at each call site, so the loops over them
 * unroll and coefficients and state live in registers. */
#define DEFINE_KERNEL(TYPE, SUFFIX)                                           \
static EQ_ALWAYS_INLINE void                                                  \
kernel_##SUFFIX (const EqCascade * eq, TYPE * data, size_t frames,           \
    unsigned stride, unsigned ch0, const unsigned NCH, const unsigned NB)     \
{                                                                             \
  double b0[EQ_MAX_BANDS], b1[EQ_MAX_BANDS], b2[EQ_MAX_BANDS];                \
  double a1[EQ_MAX_BANDS], a2[EQ_MAX_BANDS];                                  \
  double s1[2][EQ_MAX_BANDS], s2[2][EQ_MAX_BANDS];                            \
  unsigned k, c;                                                              \
  size_t f;                                                                   \
                                                                              \
  for (k = 0; k < NB; k++) {                                                  \
    const EqBiquad *q = &eq->cur[eq->active[k]];                              \
    b0[k] = q->b0; b1[k] = q->b1; b2[k] = q->b2;                              \
    a1[k] = q->a1; a2[k] = q->a2;                                             \
    for (c = 0; c < NCH; c++) {                                               \
      const double *st =                                                      \
          &eq->state[((ch0 + c) * EQ_MAX_BANDS + eq->active[k]) * 2];         \
      s1[c][k] = st[0]; s2[c][k] = st[1];                                     \
    }                                                                         \
  }                                                                           \
  for (f = 0; f < frames; f++) {                                              \
    TYPE *p = data + f * stride + ch0;                                        \
    for (c = 0; c < NCH; c++) {                                               \
      double x = p[c];                                                        \
      _Pragma ("GCC unroll 16")                                               \
      for (k = 0; k < NB; k++) {                                              \
        double y = b0[k] * x + s1[c][k];                                      \
        s1[c][k] = b1[k] * x - a1[k] * y + s2[c][k];                          \
        s2[c][k] = b2[k] * x - a2[k] * y;                                     \
        x = y;                                                                \
      }                                                                       \
      p[c] = (TYPE) x;                                                        \
    }                                                                         \
  }                                                                           \
  for (k = 0; k < NB; k++) {                                                  \
    for (c = 0; c < NCH; c++) {                                               \
      double *st =                                                            \
          &eq->state[((ch0 + c) * EQ_MAX_BANDS + eq->active[k]) * 2];         \
      st[0] = s1[c][k]; st[1] = s2[c][k];                                     \
    }                                                                         \
  }                                                                           \
}                                                                             \
                                                                              \
/* Two channels, one per lane of a two-double vector (GCC/Clang vector       \
 * extension, SSE2 on x86-64): the same operations in the same order as     \
 * kernel_##SUFFIX with NCH = 2, so the same results with fewer              \
 * instructions. */                                                          \
static EQ_ALWAYS_INLINE void                                                  \
pair_##SUFFIX (const EqCascade * eq, TYPE * data, size_t frames,             \
    unsigned stride, unsigned ch0, const unsigned NB)                         \
{                                                                             \
  v2d b0[EQ_MAX_BANDS], b1[EQ_MAX_BANDS], b2[EQ_MAX_BANDS];                   \
  v2d a1[EQ_MAX_BANDS], a2[EQ_MAX_BANDS];                                     \
  v2d s1[EQ_MAX_BANDS], s2[EQ_MAX_BANDS];                                     \
  unsigned k;                                                                 \
  size_t f;                                                                   \
                                                                              \
  for (k = 0; k < NB; k++) {                                                  \
    const EqBiquad *q = &eq->cur[eq->active[k]];                              \
    const double *st0 =                                                       \
        &eq->state[(ch0 * EQ_MAX_BANDS + eq->active[k]) * 2];                 \
    const double *st1 =                                                       \
        &eq->state[((ch0 + 1) * EQ_MAX_BANDS + eq->active[k]) * 2];           \
    b0[k] = (v2d) { q->b0, q->b0 }; b1[k] = (v2d) { q->b1, q->b1 };           \
    b2[k] = (v2d) { q->b2, q->b2 };                                           \
    a1[k] = (v2d) { q->a1, q->a1 }; a2[k] = (v2d) { q->a2, q->a2 };           \
    s1[k] = (v2d) { st0[0], st1[0] }; s2[k] = (v2d) { st0[1], st1[1] };       \
  }                                                                           \
  for (f = 0; f < frames; f++) {                                              \
    TYPE *p = data + f * stride + ch0;                                        \
    v2d x = { p[0], p[1] };                                                   \
    _Pragma ("GCC unroll 16")                                                 \
    for (k = 0; k < NB; k++) {                                                \
      v2d y = b0[k] * x + s1[k];                                              \
      s1[k] = b1[k] * x - a1[k] * y + s2[k];                                  \
      s2[k] = b2[k] * x - a2[k] * y;                                          \
      x = y;                                                                  \
    }                                                                         \
    p[0] = (TYPE) x[0];                                                       \
    p[1] = (TYPE) x[1];                                                       \
  }                                                                           \
  for (k = 0; k < NB; k++) {                                                  \
    double *st0 = &eq->state[(ch0 * EQ_MAX_BANDS + eq->active[k]) * 2];       \
    double *st1 =                                                             \
        &eq->state[((ch0 + 1) * EQ_MAX_BANDS + eq->active[k]) * 2];           \
    st0[0] = s1[k][0]; st0[1] = s2[k][0];                                     \
    st1[0] = s1[k][1]; st1[1] = s2[k][1];                                     \
  }                                                                           \
}                                                                             \
                                                                              \
/* Built twice (target_clones): with AVX the same operations take the       \
 * three-operand encoding and need no register copies; no FMA in either      \
 * build, so both give the same results. */                                  \
__attribute__ ((target_clones ("avx", "default")))                            \
static void                                                                   \
steady_##SUFFIX (const EqCascade * eq, TYPE * data, size_t frames,           \
    unsigned stride, unsigned ch0, const unsigned NCH)                        \
{                                                                             \
  if (NCH == 2) {                                                             \
    switch (eq->n_active) {                                                   \
      case 1: pair_##SUFFIX (eq, data, frames, stride, ch0, 1); return;       \
      case 2: pair_##SUFFIX (eq, data, frames, stride, ch0, 2); return;       \
      case 3: pair_##SUFFIX (eq, data, frames, stride, ch0, 3); return;       \
      case 4: pair_##SUFFIX (eq, data, frames, stride, ch0, 4); return;       \
      case 5: pair_##SUFFIX (eq, data, frames, stride, ch0, 5); return;       \
      case 6: pair_##SUFFIX (eq, data, frames, stride, ch0, 6); return;       \
      case 7: pair_##SUFFIX (eq, data, frames, stride, ch0, 7); return;       \
      case 8: pair_##SUFFIX (eq, data, frames, stride, ch0, 8); return;       \
      default: break;                                                         \
    }                                                                         \
  }                                                                           \
  switch (eq->n_active) {                                                     \
    case 1: kernel_##SUFFIX (eq, data, frames, stride, ch0, NCH, 1); break;   \
    case 2: kernel_##SUFFIX (eq, data, frames, stride, ch0, NCH, 2); break;   \
    case 3: kernel_##SUFFIX (eq, data, frames, stride, ch0, NCH, 3); break;   \
    case 4: kernel_##SUFFIX (eq, data, frames, stride, ch0, NCH, 4); break;   \
    case 5: kernel_##SUFFIX (eq, data, frames, stride, ch0, NCH, 5); break;   \
    case 6: kernel_##SUFFIX (eq, data, frames, stride, ch0, NCH, 6); break;   \
    case 7: kernel_##SUFFIX (eq, data, frames, stride, ch0, NCH, 7); break;   \
    case 8: kernel_##SUFFIX (eq, data, frames, stride, ch0, NCH, 8); break;   \
    default:                                                                  \
      kernel_##SUFFIX (eq, data, frames, stride, ch0, NCH, eq->n_active);     \
      break;                                                                  \
  }                                                                           \
}                                                                             \
                                                                              \
/* Ramp: exact designs every EQ_RAMP_SEGMENT frames, coefficients         \
 * interpolated linearly per frame in between, all channels of a frame */   \
static size_t                                                                 \
ramp_##SUFFIX (EqCascade * eq, TYPE * data, size_t frames)                    \
{                                                                             \
  const unsigned nch = eq->channels;                                          \
  size_t f, n = eq->ramp_len - eq->ramp_pos;                                  \
  unsigned i, c;                                                              \
                                                                              \
  if (n > frames)                                                             \
    n = frames;                                                               \
  for (f = 0; f < n; f++) {                                                   \
    size_t pos = eq->ramp_pos + f;                                            \
    double u;                                                                 \
                                                                              \
    if (pos >= eq->seg_end)                                                   \
      next_segment (eq);                                                      \
    u = (double) (pos + 1 - eq->seg_start) /                                  \
        (double) (eq->seg_end - eq->seg_start);                               \
    for (i = 0; i < eq->n_active; i++) {                                      \
      unsigned s = eq->active[i];                                             \
      const EqBiquad *A = &eq->seg_a[s], *B = &eq->seg_b[s];                  \
      EqBiquad *C = &eq->cur[s];                                              \
      C->b0 = A->b0 + (B->b0 - A->b0) * u;                                    \
      C->b1 = A->b1 + (B->b1 - A->b1) * u;                                    \
      C->b2 = A->b2 + (B->b2 - A->b2) * u;                                    \
      C->a1 = A->a1 + (B->a1 - A->a1) * u;                                    \
      C->a2 = A->a2 + (B->a2 - A->a2) * u;                                    \
    }                                                                         \
    for (c = 0; c < nch; c++) {                                               \
      TYPE *p = data + f * nch + c;                                           \
      double x = *p;                                                          \
      for (i = 0; i < eq->n_active; i++) {                                    \
        unsigned s = eq->active[i];                                           \
        const EqBiquad *q = &eq->cur[s];                                      \
        double *st = &eq->state[((size_t) c * EQ_MAX_BANDS + s) * 2];         \
        double y = q->b0 * x + st[0];                                         \
        st[0] = q->b1 * x - q->a1 * y + st[1];                                \
        st[1] = q->b2 * x - q->a2 * y;                                        \
        x = y;                                                                \
      }                                                                       \
      *p = (TYPE) x;                                                          \
    }                                                                         \
  }                                                                           \
  eq->ramp_pos += n;                                                          \
  if (eq->ramp_pos >= eq->ramp_len) {                                         \
    /* exactly the target; bands gone to 0 dB continue as tails */           \
    finish_ramp (eq, 1);                                                      \
    update_active (eq);                                                       \
  }                                                                           \
  return n;                                                                   \
}                                                                             \
                                                                              \
void                                                                          \
eq_cascade_process_##SUFFIX (EqCascade * eq, TYPE * data, size_t frames)      \
{                                                                             \
  const unsigned nch = eq->channels;                                          \
                                                                              \
  if (eq->state == NULL || nch == 0)                                          \
    return;                                                                   \
  while (frames > 0) {                                                        \
    size_t n;                                                                 \
                                                                              \
    if (eq_cascade_is_ramping (eq)) {                                         \
      n = ramp_##SUFFIX (eq, data, frames < EQ_BLOCK ? frames : EQ_BLOCK);    \
    } else {                                                                  \
      n = frames < EQ_BLOCK ? frames : EQ_BLOCK;                              \
      if (eq->n_active == 0) {                                                \
        /* identity */                                                        \
      } else if (nch == 1) {                                                  \
        steady_##SUFFIX (eq, data, n, 1, 0, 1);                               \
      } else if (nch == 2) {                                                  \
        steady_##SUFFIX (eq, data, n, 2, 0, 2);                               \
      } else {                                                                \
        unsigned c;                                                           \
        for (c = 0; c + 1 < nch; c += 2)                                      \
          steady_##SUFFIX (eq, data, n, nch, c, 2);                           \
        if (c < nch)                                                          \
          steady_##SUFFIX (eq, data, n, nch, c, 1);                           \
      }                                                                       \
    }                                                                         \
    flush_state (eq);                                                         \
    if (eq->prune_pending && !eq_cascade_is_ramping (eq))                     \
      prune_tails (eq);                                                       \
    data += n * nch;                                                          \
    frames -= n;                                                              \
  }                                                                           \
}

DEFINE_KERNEL (float, f32)
DEFINE_KERNEL (double, f64)
