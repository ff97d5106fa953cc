/* truepeak: ITU-R BS.1770-4 Annex 2 true-peak detection. */
#include "truepeak.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define LN_TP_SUB 32            /* frames per skip decision */
#define HIST (LN_TP_TAPS - 1)
#define PAD 8                   /* floats behind a lane's block: one vector */

/* Eight consecutive frames of one channel per vector (GCC/Clang vector
 * extension): one multiply-add per tap and phase computes eight outputs. */
typedef float v8f __attribute__ ((vector_size (32)));
typedef int v8i __attribute__ ((vector_size (32)));
#define V8 8
/* The v8f helpers below are always inlined into tp_process and never cross
 * a call boundary, so GCC's note that a 32-byte vector return changes the
 * ABI without AVX does not apply. */
#pragma GCC diagnostic ignored "-Wpsabi"

/* ITU-R BS.1770-4 Annex 2, Table: the 48-tap interpolating filter as 4
 * phases of 12 taps, with the taps reversed so that the loops walk memory
 * forwards: y_p[n] = sum_k vtc[p][k] * x[n-11+k] (the recommendation's
 * coefficient k of a phase multiplies x[n-k]). Each coefficient is repeated
 * in the eight lanes of a vector, so that each multiply-add of the
 * eight-frame kernel reads it straight from memory instead of broadcasting it
 * first. test_meter.c checks every frame against its own double-precision
 * copy of the table in the recommendation's order. */
#define B8(c) { c, c, c, c, c, c, c, c }
static const v8f vtc[LN_TP_PHASES][LN_TP_TAPS] = {
  {B8 (-0.0083007812500f), B8 (0.0148925781250f), B8 (-0.0266113281250f),
      B8 (0.0476074218750f), B8 (-0.1022949218750f), B8 (0.9721679687500f),
      B8 (0.1373291015625f), B8 (-0.0594482421875f), B8 (0.0332031250000f),
      B8 (-0.0196533203125f), B8 (0.0109863281250f), B8 (0.0017089843750f)},
  {B8 (-0.0189208984375f), B8 (0.0330810546875f), B8 (-0.0582275390625f),
      B8 (0.1015625000000f), B8 (-0.2003173828125f), B8 (0.7797851562500f),
      B8 (0.4650878906250f), B8 (-0.1665039062500f), B8 (0.0891113281250f),
      B8 (-0.0517578125000f), B8 (0.0292968750000f), B8 (-0.0291748046875f)},
  {B8 (-0.0291748046875f), B8 (0.0292968750000f), B8 (-0.0517578125000f),
      B8 (0.0891113281250f), B8 (-0.1665039062500f), B8 (0.4650878906250f),
      B8 (0.7797851562500f), B8 (-0.2003173828125f), B8 (0.1015625000000f),
      B8 (-0.0582275390625f), B8 (0.0330810546875f), B8 (-0.0189208984375f)},
  {B8 (0.0017089843750f), B8 (0.0109863281250f), B8 (-0.0196533203125f),
      B8 (0.0332031250000f), B8 (-0.0594482421875f), B8 (0.1373291015625f),
      B8 (0.9721679687500f), B8 (-0.1022949218750f), B8 (0.0476074218750f),
      B8 (-0.0266113281250f), B8 (0.0148925781250f), B8 (-0.0083007812500f)},
};
#undef B8

struct LnTruePeak
{
  unsigned channels;
  size_t max_block;
  float *lin;                   /* per channel: HIST history + max_block samples */
  float *scratch;               /* max_block peaks when the caller wants none */
};

LnTruePeak *
ln_tp_new (unsigned channels, size_t max_block)
{
  LnTruePeak *tp = calloc (1, sizeof *tp);
  if (!tp)
    return NULL;
  tp->channels = channels;
  tp->max_block = max_block;
  tp->lin = calloc ((size_t) channels * (HIST + max_block + PAD),
      sizeof (float));
  tp->scratch = calloc (max_block, sizeof (float));
  if (!tp->lin || !tp->scratch) {
    ln_tp_free (tp);
    return NULL;
  }
  return tp;
}

void
ln_tp_free (LnTruePeak * tp)
{
  if (!tp)
    return;
  free (tp->lin);
  free (tp->scratch);
  free (tp);
}

void
ln_tp_reset (LnTruePeak * tp)
{
  memset (tp->lin, 0,
      sizeof (float) * tp->channels * (HIST + tp->max_block + PAD));
}

static inline __attribute__ ((always_inline)) v8f
v8_load (const float *p)
{
  v8f v;
  memcpy (&v, p, sizeof v);
  return v;
}

static inline __attribute__ ((always_inline)) void
v8_store (float *p, v8f v)
{
  memcpy (p, &v, sizeof v);
}

static inline __attribute__ ((always_inline)) v8f
v8_abs (v8f v)
{
  return (v8f) ((v8i) v & 0x7fffffff);
}

static inline __attribute__ ((always_inline)) v8f
v8_max (v8f a, v8f b)
{
  v8i gt = a > b;
  return (v8f) (((v8i) a & gt) | ((v8i) b & ~gt));
}

static inline __attribute__ ((always_inline)) float
v8_hmax (v8f v)
{
  float m = 0.0f;
  for (int j = 0; j < V8; j++)
    m = v[j] > m ? v[j] : m;
  return m;
}

/* Frames i..i+7 of one channel: the delayed sample's magnitude (what a
 * frame reads when no interpolated value can matter). */
static inline __attribute__ ((always_inline)) v8f
sample8 (const float *l, size_t i)
{
  return v8_abs (v8_load (l + i + HIST - LN_TP_DELAY));
}

/* Frames i..i+7 of one channel (l: the channel's lane, history first): the
 * largest of the four phases' |y| and of the delayed sample, per frame. */
static inline __attribute__ ((always_inline)) v8f
fir8 (const float *l, size_t i)
{
  v8f y0 = { 0 }, y1 = { 0 }, y2 = { 0 }, y3 = { 0 };
#pragma GCC unroll 12
  for (int k = 0; k < LN_TP_TAPS; k++) {
    const v8f xk = v8_load (l + i + k);
    y0 += vtc[0][k] * xk;
    y1 += vtc[1][k] * xk;
    y2 += vtc[2][k] * xk;
    y3 += vtc[3][k] * xk;
  }
  v8f m = v8_max (v8_max (v8_abs (y0), v8_abs (y1)),
      v8_max (v8_abs (y2), v8_abs (y3)));
  return v8_max (m, sample8 (l, i));
}

/* peak[i..i+7] = max (peak[i..i+7], m); *vtotal = max (*vtotal, that) */
static inline __attribute__ ((always_inline)) void
merge8 (float *peak, size_t i, v8f m, v8f * vtotal)
{
  m = v8_max (m, v8_load (peak + i));
  v8_store (peak + i, m);
  *vtotal = v8_max (*vtotal, m);
}

/* Frames s..e-1 of one channel: peak[i] = max (peak[i], v[i]) with v the true
 * peak detected at frame i (filter) or the sample's magnitude (no filter);
 * returns the largest of them. The frames after the last full eight go
 * through the same eight-frame kernel (the lane has PAD floats behind the
 * block, whose lanes are computed and dropped), so every frame gets the same
 * value whatever the block boundaries, in either build. Callers pass filter
 * as a constant, so each inlined copy has one kernel. */
static inline __attribute__ ((always_inline)) float
peaks_channel (const float *l, size_t s, size_t e, float *peak, int filter)
{
  v8f vtotal = { 0 };
  float total = 0.0f;
  size_t i = s;
  for (; i + V8 <= e; i += V8)
    merge8 (peak, i, filter ? fir8 (l, i) : sample8 (l, i), &vtotal);
  if (i < e) {
    const v8f m = filter ? fir8 (l, i) : sample8 (l, i);
    for (size_t j = 0; i + j < e; j++) {
      float a = m[j] > peak[i + j] ? m[j] : peak[i + j];
      peak[i + j] = a;
      total = a > total ? a : total;
    }
  }
  float vt = v8_hmax (vtotal);
  return vt > total ? vt : total;
}

/* max |l[i]| for i in s..e-1 */
static inline __attribute__ ((always_inline)) float
abs_max (const float *l, size_t s, size_t e)
{
  v8f vm = { 0 };
  float m = 0.0f;
  size_t i = s;
  for (; i + V8 <= e; i += V8)
    vm = v8_max (vm, v8_abs (v8_load (l + i)));
  for (; i < e; i++) {
    float a = fabsf (l[i]);
    m = a > m ? a : m;
  }
  float v = v8_hmax (vm);
  return v > m ? v : m;
}

/* lanes of a, then b, that hold the even (left) and odd (right) floats of
 * sixteen interleaved stereo floats */
static const v8i EVEN = { 0, 2, 4, 6, 8, 10, 12, 14 };
static const v8i ODD = { 1, 3, 5, 7, 9, 11, 13, 15 };

/* The whole detector, built twice: GCC makes an x86-64-v3 (AVX2 + FMA) and a
 * baseline version and picks one at load time (target_clones). The v3 build
 * contracts each multiply-add into one FMA (GCC's default -ffp-contract=fast
 * for GNU C): fewer instructions, and one rounding instead of two, so the
 * two builds may differ in the last bit of a float (both stay within 1e-6 of
 * the double-precision reference in test_meter.c). Within one build, every
 * frame goes through the same kernel (fir8). */
__attribute__ ((target_clones ("arch=x86-64-v3", "default")))
static float
tp_process (LnTruePeak * tp, const float *x, size_t frames,
    float skip_below, float *per_frame)
{
  const unsigned nch = tp->channels;
  const size_t stride = HIST + tp->max_block + PAD;
  float *peak = per_frame ? per_frame : tp->scratch;
  float total = 0.0f;

  if (frames > tp->max_block)
    frames = tp->max_block;     /* caller contract; never happens */

  /* de-interleave behind the history */
  if (nch == 2) {
    float *l0 = tp->lin + HIST, *l1 = tp->lin + stride + HIST;
    size_t i = 0;
    for (; i + V8 <= frames; i += V8) {
      const v8f a = v8_load (x + 2 * i), b = v8_load (x + 2 * i + V8);
      v8_store (l0 + i, __builtin_shuffle (a, b, EVEN));
      v8_store (l1 + i, __builtin_shuffle (a, b, ODD));
    }
    for (; i < frames; i++) {
      l0[i] = x[2 * i];
      l1[i] = x[2 * i + 1];
    }
  } else {
    for (unsigned c = 0; c < nch; c++) {
      float *l = tp->lin + c * stride + HIST;
      for (size_t i = 0; i < frames; i++)
        l[i] = x[i * nch + c];
    }
  }
  memset (peak, 0, frames * sizeof (float));

  for (size_t s = 0; s < frames; s += LN_TP_SUB) {
    size_t e = s + LN_TP_SUB < frames ? s + LN_TP_SUB : frames;
    /* bound over taps x[s-11 .. e-1] of all channels */
    float amax = 0.0f;
    for (unsigned c = 0; c < nch; c++) {
      float a = abs_max (tp->lin + c * stride, s, e + HIST);
      amax = a > amax ? a : amax;
    }
    const int skip = amax * LN_TP_GAIN_BOUND <= skip_below;
    for (unsigned c = 0; c < nch; c++) {
      const float *l = tp->lin + c * stride;
      /* skip: no interpolated value can reach skip_below, sample peaks only */
      float t = skip ? peaks_channel (l, s, e, peak, 0)
          : peaks_channel (l, s, e, peak, 1);
      total = t > total ? t : total;
    }
  }

  /* keep the last HIST samples as history */
  for (unsigned c = 0; c < nch; c++) {
    float *l = tp->lin + c * stride;
    memmove (l, l + frames, HIST * sizeof (float));
  }
  return total;
}

float
ln_tp_process (LnTruePeak * tp, const float *x, size_t frames,
    float skip_below, float *per_frame)
{
  return tp_process (tp, x, frames, skip_below, per_frame);
}
