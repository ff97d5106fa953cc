/* pack (src/pack/pack.c): F32 to S24BE with the values GStreamer 1.22's
 * audioconvert writes (measured with audioconvert on these inputs): to 32
 * bits towards zero, then half an LSB up and floor to 24 bits, clipped to
 * [-2^23, 2^23 - 1]; big-endian bytes.  The four-at-a-time path (SSE2)
 * and the one-at-a-time path write the same bytes, for every length. */
#include "pack.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RANDOM 1003             /* not a multiple of 4 or of the block */

static int failures;

static int32_t
unpack (const uint8_t * b)
{
  int32_t v = (int32_t) ((uint32_t) b[0] << 16 | (uint32_t) b[1] << 8 | b[2]);
  return v >= 0x800000 ? v - 0x1000000 : v;
}

int
main (void)
{
  const double L = 8388608.0;
  /* input x 2^23, and audioconvert's output for it */
  const struct
  {
    double scaled;
    int32_t want;
  } cases[] = {
    {0.0, 0}, {L, 8388607}, {-L, -8388608}, {1.5 * L, 8388607},
    {-1.5 * L, -8388608}, {0.5 * L, 4194304}, {-0.5 * L, -4194304},
    {1.0, 1}, {0.5, 1}, {0.49, 0}, {0.51, 1}, {-0.5, 0}, {-0.51, -1},
    {1.5, 2}, {2.5, 3}, {-1.5, -1}, {-0.49, 0}, {-1.49, -1}, {3.5, 4},
    {1035630.625, 1035631}, {-8285045.0, -8285045}, {8388607.5, 8388607},
    {8388606.5, 8388607}, {-8388607.5, -8388607}, {-8388608.5, -8388608},
    /* the float just below 0.5 (0.5 - 2^-25): 0, not a rounding of 1.0 */
    {0.5 - 1.0 / 33554432.0, 0},
    /* cut towards zero at 32 bits first: not -9039 */
    {-9038.5029296875, -9038},
  };
  const size_t n = sizeof cases / sizeof cases[0];
  float in[64];
  uint8_t out[3 * 64 + 3];

  out[3 * n] = 0xa5;            /* a guard byte: nothing written past the end */
  for (size_t i = 0; i < n; i++)
    in[i] = (float) (cases[i].scaled / L);
  for (int p = 0; p < 2; p++) {
    (p == 0 ? pack_f32_s24be : pack_f32_s24be_scalar) (in, out, n);
    for (size_t i = 0; i < n; i++) {
      int32_t got = unpack (out + 3 * i);
      if (got != cases[i].want) {
        printf ("FAIL: %s: %.9g x 2^23 -> %d, want %d\n",
            p == 0 ? "four at a time" : "one at a time", cases[i].scaled, got,
            cases[i].want);
        failures++;
      }
    }
  }
  if (out[3 * n] != 0xa5) {
    printf ("FAIL: wrote past the end\n");
    failures++;
  }
  /* big-endian: 0x123456 as 12 34 56, and the sign's bytes */
  in[0] = (float) (0x123456 / L);
  in[1] = (float) (-1.0 / L);
  in[2] = NAN;
  pack_f32_s24be (in, out, 3);
  if (out[0] != 0x12 || out[1] != 0x34 || out[2] != 0x56 || out[3] != 0xff
      || out[4] != 0xff || out[5] != 0xff) {
    printf ("FAIL: bytes %02x %02x %02x %02x %02x %02x\n", out[0], out[1],
        out[2], out[3], out[4], out[5]);
    failures++;
  }
  if (unpack (out + 6) != 8388607) {
    printf ("FAIL: NaN -> %d, want 8388607 (clipped, never undefined)\n",
        unpack (out + 6));
    failures++;
  }
  /* both paths on seeded random samples over +-1.5, with NaN and the
   * infinities, for every length up to RANDOM */
  {
    static float r[RANDOM];
    static uint8_t a[3 * RANDOM], b[3 * RANDOM];
    srand (26);
    for (size_t i = 0; i < RANDOM; i++)
      r[i] = (float) ((double) rand () / RAND_MAX * 3.0 - 1.5);
    r[5] = NAN;
    r[70] = INFINITY;
    r[71] = -INFINITY;
    for (size_t len = 0; len <= RANDOM; len += len < 70 ? 1 : 37) {
      memset (a, 0, sizeof a);
      memset (b, 0, sizeof b);
      pack_f32_s24be (r, a, len);
      pack_f32_s24be_scalar (r, b, len);
      if (memcmp (a, b, sizeof a) != 0) {
        printf ("FAIL: the two paths differ for %zu samples\n", len);
        failures++;
        break;
      }
    }
  }
  printf ("%s: %zu values, the byte order, both paths alike\n",
      failures ? "FAIL" : "ok", n);
  return failures ? 1 : 0;
}
