/* resampler: see resampler.h. */
#include "resampler.h"

#include <stdint.h>
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

/* The position within a frame as a 40-bit fraction: the top 8 bits are the
 * table row (CLOCK_SINC_PHASES = 256), the next 24 the weight of the row
 * above.  Integer steps are cheaper than double conversions per frame, and
 * 40 bits keep the ratio to 1e-12 (a 997 Hz tone stays within 1e-7 of a
 * sample of its analytic phase over minutes). */
#define FRAC_BITS 40
#define FRAC_ONE 1099511627776.0        /* 2^40 */
#define FRAC_MASK ((UINT64_C (1) << FRAC_BITS) - 1)

INLINE int
row_of (uint64_t frac, float *a)
{
  *a = (float) ((frac >> (FRAC_BITS - 32)) & 0xffffffu) * (1.0f / 16777216.0f);
  return (int) (frac >> (FRAC_BITS - 8));
}

/* the coefficients for frac: row p + a x (row p + 1 - row p) */
INLINE void
coefs (const ClockSinc * s, uint64_t frac, float *c)
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
interpolate2 (const ClockSinc * s, uint64_t frac, const float *x0,
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
  {
    /* both sums at once: halves, then the two quarters side by side */
    const v8si half = { 4, 5, 6, 7, 0, 1, 2, 3 };
    const v8si lows = { 0, 1, 2, 3, 8, 9, 10, 11 };
    const v8si quarter = { 2, 3, 0, 1, 6, 7, 4, 5 };
    const v8si pair = { 1, 0, 3, 2, 5, 4, 7, 6 };
    v8sf t;

    s0 += __builtin_shuffle (s0, half);
    s1 += __builtin_shuffle (s1, half);
    t = __builtin_shuffle (s0, s1, lows);
    t += __builtin_shuffle (t, quarter);
    t += __builtin_shuffle (t, pair);
    *y0 = t[0];
    *y1 = t[4];
  }
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
 * C), so the two builds may differ in the last bit of a float.
 * CLOCK_NO_CLONES builds the baseline alone (tests/clock: the baseline
 * build is tested on machines that would pick the v3 one). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(CLOCK_NO_CLONES)
__attribute__ ((target_clones ("arch=x86-64-v3", "default")))
#endif
size_t
clock_resampler_run (ClockResampler * r, ClockFifo * f, double ratio,
    float *out, size_t frames)
{
  unsigned ch = f->channels;
  /* position and step in 24.40 fixed point */
  uint64_t pos = (uint64_t) (r->frac * FRAC_ONE);
  uint64_t step = (uint64_t) (ratio * FRAC_ONE + 0.5);
  size_t k;

  for (k = 0; k < frames && clock_resampler_can_read (f); k++) {
    uint64_t frac = pos;

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
    pos += step;
    f->start += (size_t) (pos >> FRAC_BITS);
    pos &= FRAC_MASK;
  }
  r->frac = (double) pos / FRAC_ONE;
  return k;
}

double
clock_resampler_ahead (const ClockResampler * r, const ClockFifo * f)
{
  double n = (double) clock_fifo_frames (f) - (CLOCK_SINC_HALF - 1);

  return n > r->frac ? n - r->frac : 0.0;
}
