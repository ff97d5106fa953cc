/* pack: F32 to S24BE (pack.h). */
#include "pack.h"

#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

/* the largest float whose 32-bit value stays below 2^31 - 128 (so the
 * rounding below cannot carry past 2^23 - 1); from it up to 1.0 all give
 * 2^23 - 1, as audioconvert's clipping */
#define HIGHEST (1.0f - 1.0f / 8388608.0f)
/* samples converted per pass (a multiple of 4) */
#define BLOCK 64

/* one sample's 24-bit value */
static inline int32_t
to_s24 (float x)
{
  int32_t t;

  /* clipped to [-1, HIGHEST]; NaN to HIGHEST, no comparison holding for it */
  x = x < HIGHEST ? x : HIGHEST;
  x = x > -1.0f ? x : -1.0f;
  /* to 32 bits, towards zero: exact, a float has 24 bits of mantissa */
  t = (int32_t) (x * 2147483648.0f);
  /* to 24 bits: (t + 2^7) >> 8 without the overflow, = floor (t / 256 + 0.5) */
  return (t >> 8) + ((t >> 7) & 1);
}

/* n values, four at a time where the CPU has SSE2 (every x86-64): the same
 * steps, minps and maxps clipping as the comparisons above (NaN in the
 * first operand gives the second) */
static void
to_s24_block (const float *in, int32_t * s, size_t n)
{
  size_t i = 0;
#ifdef __SSE2__
  const __m128 hi = _mm_set1_ps (HIGHEST), lo = _mm_set1_ps (-1.0f);
  const __m128 scale = _mm_set1_ps (2147483648.0f);
  const __m128i one = _mm_set1_epi32 (1);

  for (; i + 4 <= n; i += 4) {
    __m128 x = _mm_max_ps (_mm_min_ps (_mm_loadu_ps (in + i), hi), lo);
    __m128i t = _mm_cvttps_epi32 (_mm_mul_ps (x, scale));
    __m128i v = _mm_add_epi32 (_mm_srai_epi32 (t, 8),
        _mm_and_si128 (_mm_srai_epi32 (t, 7), one));
    _mm_storeu_si128 ((__m128i *) (s + i), v);
  }
#endif
  for (; i < n; i++)
    s[i] = to_s24 (in[i]);
}

/* one 24-bit value's three bytes, most significant first */
static inline void
put_s24be (uint8_t * p, int32_t v)
{
  p[0] = (uint8_t) ((uint32_t) v >> 16);
  p[1] = (uint8_t) ((uint32_t) v >> 8);
  p[2] = (uint8_t) v;
}

static inline void
put_be32 (uint8_t * p, uint32_t w)
{
  w = __builtin_bswap32 (w);
  memcpy (p, &w, 4);
}

void
pack_f32_s24be (const float *in, uint8_t * out, size_t samples)
{
  int32_t s[BLOCK];

  while (samples > 0) {
    size_t n = samples < BLOCK ? samples : BLOCK, i = 0;

    to_s24_block (in, s, n);
    /* four samples' 12 bytes as three big-endian words */
    for (; i + 4 <= n; i += 4) {
      uint32_t a = (uint32_t) s[i], b = (uint32_t) s[i + 1],
          c = (uint32_t) s[i + 2], d = (uint32_t) s[i + 3];
      put_be32 (out + 3 * i, a << 8 | (b >> 16 & 0xff));
      put_be32 (out + 3 * i + 4, b << 16 | (c >> 8 & 0xffff));
      put_be32 (out + 3 * i + 8, c << 24 | (d & 0xffffff));
    }
    for (; i < n; i++)
      put_s24be (out + 3 * i, s[i]);
    in += n;
    out += 3 * n;
    samples -= n;
  }
}

void
pack_f32_s24be_scalar (const float *in, uint8_t * out, size_t samples)
{
  for (size_t i = 0; i < samples; i++)
    put_s24be (out + 3 * i, to_s24 (in[i]));
}
