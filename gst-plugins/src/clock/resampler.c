/* resampler: see resampler.h. */
#include "resampler.h"

#include <string.h>

/* eight floats; GCC/clang vector extensions: SSE pairs in the baseline
 * build, AVX2 registers (and FMA) in the x86-64-v3 build below */
typedef float v8sf __attribute__ ((vector_size (32)));
/* the helpers below are always inlined into the clones: no v8sf crosses a
 * call, so the ABI note about 32-byte vectors does not apply */
#pragma GCC diagnostic ignored "-Wpsabi"
#define INLINE static inline __attribute__ ((always_inline))

INLINE v8sf
load8 (const float *p)
{
  v8sf v;

  memcpy (&v, p, sizeof (v));
  return v;
}

typedef int v8si __attribute__ ((vector_size (32)));

/* the sum of the eight lanes, by halving: three shuffles and three adds */
INLINE float
sum8 (v8sf v)
{
  const v8si half = { 4, 5, 6, 7, 0, 1, 2, 3 };
  const v8si quarter = { 2, 3, 0, 1, 6, 7, 4, 5 };
  const v8si pair = { 1, 0, 3, 2, 5, 4, 7, 6 };

  v += __builtin_shuffle (v, half);
  v += __builtin_shuffle (v, quarter);
  v += __builtin_shuffle (v, pair);
  return v[0];
}

/* the table row below frac and the weight of the row above */
INLINE int
row_of (double frac, float *a)
{
  double pos = frac * CLOCK_SINC_PHASES;
  int p = (int) pos;

  if (p >= CLOCK_SINC_PHASES)   /* frac rounded up to 1.0 */
    p = CLOCK_SINC_PHASES - 1;
  *a = (float) (pos - p);
  return p;
}

/* the coefficients for frac: row p + a x (row p + 1 - row p) */
INLINE void
coefs (const ClockSinc * s, double frac, float *c)
{
  float a;
  int p = row_of (frac, &a);
  v8sf av = { a, a, a, a, a, a, a, a };

  for (int j = 0; j < CLOCK_SINC_TAPS; j += 8) {
    v8sf v = load8 (s->coef[p] + j) + av * load8 (s->delta[p] + j);
    memcpy (c + j, &v, sizeof (v));
  }
}

INLINE float
dot (const float *c, const float *x)
{
  v8sf acc = { 0 };

  for (int j = 0; j < CLOCK_SINC_TAPS; j += 8)
    acc += load8 (c + j) * load8 (x + j);
  return sum8 (acc);
}

/* two channels, the coefficients computed on the fly (no store) */
INLINE void
interpolate2 (const ClockSinc * s, double frac, const float *x0,
    const float *x1, float *y0, float *y1)
{
  float a;
  int p = row_of (frac, &a);
  const float *coef = s->coef[p], *delta = s->delta[p];
  v8sf av = { a, a, a, a, a, a, a, a };
  v8sf s0 = { 0 }, s1 = { 0 };

  for (int j = 0; j < CLOCK_SINC_TAPS; j += 8) {
    v8sf c = load8 (coef + j) + av * load8 (delta + j);
    s0 += c * load8 (x0 + j);
    s1 += c * load8 (x1 + j);
  }
  *y0 = sum8 (s0);
  *y1 = sum8 (s1);
}

void
clock_resampler_init (ClockResampler * r)
{
  clock_sinc_init (&r->sinc);
  r->frac = 0.0;
}

/* Built twice (target_clones): GCC makes an x86-64-v3 (AVX2 + FMA) and a
 * baseline version and picks one at load time.  The v3 build contracts
 * each multiply-add into one FMA (GCC's default -ffp-contract=fast for GNU
 * C), so the two builds may differ in the last bit of a float. */
#if defined(__x86_64__) && defined(__GNUC__)
__attribute__ ((target_clones ("arch=x86-64-v3", "default")))
#endif
size_t
clock_resampler_run (ClockResampler * r, ClockFifo * f, double ratio,
    float *out, size_t frames)
{
  unsigned ch = f->channels;
  double frac = r->frac;
  size_t k;

  for (k = 0; k < frames && clock_resampler_can_read (f); k++) {

    if (ch == 2) {
      interpolate2 (&r->sinc, frac, clock_fifo_channel (f, 0),
          clock_fifo_channel (f, 1), out + 2 * k, out + 2 * k + 1);
    } else {
      coefs (&r->sinc, frac, r->coefs);
      for (unsigned c = 0; c < ch; c++)
        out[k * ch + c] = dot (r->coefs, clock_fifo_channel (f, c));
    }
    /* ratio < 2: the point moves on by one frame, or two, or none; the
     * FIFO keeps 2 x HALF frames, so it is never emptied here */
    frac += ratio;
    while (frac >= 1.0) {
      frac -= 1.0;
      f->start++;
    }
  }
  r->frac = frac;
  return k;
}

double
clock_resampler_ahead (const ClockResampler * r, const ClockFifo * f)
{
  double n = (double) clock_fifo_frames (f) - (CLOCK_SINC_HALF - 1);

  return n > r->frac ? n - r->frac : 0.0;
}
