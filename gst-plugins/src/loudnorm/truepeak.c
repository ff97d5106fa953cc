/* truepeak: ITU-R BS.1770-4 Annex 2 true-peak detection. */
#include "truepeak.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define LN_TP_SUB 32            /* frames per skip decision */
#define HIST (LN_TP_TAPS - 1)

/* ITU-R BS.1770-4 Annex 2, Table: 48-tap interpolating filter as 4 phases of
 * 12 taps; coefficient k of a phase multiplies x[n-k]. */
static const float tp_coef[LN_TP_PHASES][LN_TP_TAPS] = {
  {0.0017089843750f, 0.0109863281250f, -0.0196533203125f, 0.0332031250000f,
      -0.0594482421875f, 0.1373291015625f, 0.9721679687500f, -0.1022949218750f,
      0.0476074218750f, -0.0266113281250f, 0.0148925781250f, -0.0083007812500f},
  {-0.0291748046875f, 0.0292968750000f, -0.0517578125000f, 0.0891113281250f,
      -0.1665039062500f, 0.4650878906250f, 0.7797851562500f, -0.2003173828125f,
      0.1015625000000f, -0.0582275390625f, 0.0330810546875f, -0.0189208984375f},
  {-0.0189208984375f, 0.0330810546875f, -0.0582275390625f, 0.1015625000000f,
      -0.2003173828125f, 0.7797851562500f, 0.4650878906250f, -0.1665039062500f,
      0.0891113281250f, -0.0517578125000f, 0.0292968750000f, -0.0291748046875f},
  {-0.0083007812500f, 0.0148925781250f, -0.0266113281250f, 0.0476074218750f,
      -0.1022949218750f, 0.9721679687500f, 0.1373291015625f, -0.0594482421875f,
      0.0332031250000f, -0.0196533203125f, 0.0109863281250f, 0.0017089843750f},
};

/* The four phases side by side, taps reversed so that the loop walks memory
 * forwards: y_p[n] = sum_k rc[k][p] * x[n-11+k]; one 4-lane multiply-add per
 * tap computes all phases (GCC/Clang vector extension). */
typedef float v4f __attribute__ ((vector_size (16)));
static v4f rc[LN_TP_TAPS];
/* The same table twice over, for both channels of a stereo pass. */
typedef float v8f __attribute__ ((vector_size (32)));
static v8f rc8[LN_TP_TAPS];
static int rc_ready;

struct LnTruePeak
{
  unsigned channels;
  size_t max_block;
  float *lin;                   /* per channel: HIST history + max_block samples */
};

static void
init_rc (void)
{
  if (rc_ready)
    return;
  for (int p = 0; p < LN_TP_PHASES; p++)
    for (int k = 0; k < LN_TP_TAPS; k++)
      rc[k][p] = rc8[k][p] = rc8[k][p + LN_TP_PHASES] =
          tp_coef[p][LN_TP_TAPS - 1 - k];
  rc_ready = 1;
}

LnTruePeak *
ln_tp_new (unsigned channels, size_t max_block)
{
  LnTruePeak *tp = calloc (1, sizeof *tp);
  if (!tp)
    return NULL;
  init_rc ();
  tp->channels = channels;
  tp->max_block = max_block;
  tp->lin = calloc ((size_t) channels * (HIST + max_block), sizeof (float));
  if (!tp->lin) {
    free (tp);
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
  free (tp);
}

void
ln_tp_reset (LnTruePeak * tp)
{
  memset (tp->lin, 0,
      sizeof (float) * tp->channels * (HIST + tp->max_block));
}

static inline float
fir_peak (const float *w)
{
  /* w points at x[n-11]; returns max over phases of |y_p[n]| */
  v4f acc = { 0.0f, 0.0f, 0.0f, 0.0f };
  for (int k = 0; k < LN_TP_TAPS; k++)
    acc += rc[k] * w[k];
  float m = 0.0f;
  for (int p = 0; p < LN_TP_PHASES; p++) {
    float a = fabsf (acc[p]);
    m = a > m ? a : m;
  }
  return m;
}

/* Both channels of a stereo stretch at once: lanes 0-3 the four phases of the
 * left channel, lanes 4-7 those of the right. The same multiply-adds as
 * fir_peak, in the same order, so the results are identical; with AVX2 one
 * 8-lane operation does the work of two 4-lane ones. GCC builds both an AVX2
 * and a baseline version and picks one at load time (target_clones). */
__attribute__ ((target_clones ("avx2", "default")))
static float
fir_stretch_stereo (const float *l0, const float *l1, size_t s, size_t e,
    float *per_frame, float total)
{
  for (size_t i = s; i < e; i++) {
    v8f acc = { 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f };
    for (int k = 0; k < LN_TP_TAPS; k++) {
      const float a = l0[i + k], b = l1[i + k];
      const v8f w = { a, a, a, a, b, b, b, b };
      acc += rc8[k] * w;
    }
    float m = 0.0f;
    for (int p = 0; p < 2 * LN_TP_PHASES; p++) {
      float v = fabsf (acc[p]);
      m = v > m ? v : m;
    }
    float s0 = fabsf (l0[i + HIST - LN_TP_DELAY]);
    float s1 = fabsf (l1[i + HIST - LN_TP_DELAY]);
    m = s0 > m ? s0 : m;
    m = s1 > m ? s1 : m;
    if (per_frame && m > per_frame[i])
      per_frame[i] = m;
    total = m > total ? m : total;
  }
  return total;
}

float
ln_tp_process (LnTruePeak * tp, const float *x, size_t frames,
    float skip_below, float *per_frame)
{
  const unsigned nch = tp->channels;
  const size_t stride = HIST + tp->max_block;
  float total = 0.0f;

  if (frames > tp->max_block)
    frames = tp->max_block;     /* caller contract; never happens */

  /* de-interleave behind the history */
  for (unsigned c = 0; c < nch; c++) {
    float *l = tp->lin + c * stride + HIST;
    for (size_t i = 0; i < frames; i++)
      l[i] = x[i * nch + c];
  }
  if (per_frame)
    memset (per_frame, 0, frames * sizeof (float));

  for (size_t s = 0; s < frames; s += LN_TP_SUB) {
    size_t e = s + LN_TP_SUB < frames ? s + LN_TP_SUB : frames;
    /* bound over taps x[s-11 .. e-1] of all channels */
    float amax = 0.0f;
    for (unsigned c = 0; c < nch; c++) {
      const float *l = tp->lin + c * stride;
      for (size_t i = s; i < e + HIST; i++) {
        float a = fabsf (l[i]);
        amax = a > amax ? a : amax;
      }
    }
    if (amax * LN_TP_GAIN_BOUND <= skip_below) {
      /* no interpolated value can reach skip_below: sample peaks only */
      for (unsigned c = 0; c < nch; c++) {
        const float *l = tp->lin + c * stride;
        for (size_t i = s; i < e; i++) {
          float a = fabsf (l[i + HIST - LN_TP_DELAY]);
          if (per_frame && a > per_frame[i])
            per_frame[i] = a;
          total = a > total ? a : total;
        }
      }
      continue;
    }
    if (nch == 2) {
      total = fir_stretch_stereo (tp->lin, tp->lin + stride, s, e, per_frame,
          total);
      continue;
    }
    for (unsigned c = 0; c < nch; c++) {
      const float *l = tp->lin + c * stride;
      for (size_t i = s; i < e; i++) {
        float a = fir_peak (l + i);
        float sp = fabsf (l[i + HIST - LN_TP_DELAY]);
        a = sp > a ? sp : a;
        if (per_frame && a > per_frame[i])
          per_frame[i] = a;
        total = a > total ? a : total;
      }
    }
  }

  /* keep the last HIST samples as history */
  for (unsigned c = 0; c < nch; c++) {
    float *l = tp->lin + c * stride;
    memmove (l, l + frames, HIST * sizeof (float));
  }
  return total;
}
