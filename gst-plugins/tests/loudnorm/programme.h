/* A deterministic programme-like test signal: 4 s segments alternating
 * speech-like (noise with a syllabic 3-5 Hz envelope) and music-like
 * (chords of partials plus a little noise) material whose level jumps at
 * random within +-15 dB around `centre_db`, with 1.5 s of digital silence
 * every 19.3 s.  Streaming: call prog_fill repeatedly. */
#ifndef LN_TEST_PROGRAMME_H
#define LN_TEST_PROGRAMME_H

#include <math.h>
#include <stdint.h>
#include <stddef.h>

typedef struct
{
  unsigned rate, ch;
  double centre_db;
  uint64_t n;
  uint32_t seed;
  double level, lp1, lp2, ph[4], f[4];
  int speech;
} Prog;

static double
prog_rnd (Prog * p)
{
  p->seed = p->seed * 1664525u + 1013904223u;
  return ((p->seed >> 8) / 16777216.0) * 2.0 - 1.0;
}

static void
prog_init (Prog * p, unsigned rate, unsigned ch, double centre_db, uint32_t seed)
{
  *p = (Prog) { 0 };
  p->rate = rate;
  p->ch = ch;
  p->centre_db = centre_db;
  p->seed = seed;
}

static void
prog_fill (Prog * p, float *x, size_t frames)
{
  for (size_t i = 0; i < frames; i++, p->n++) {
    if (p->n % (4 * p->rate) == 0) {
      p->level = pow (10.0, (p->centre_db + 15.0 * prog_rnd (p)) / 20.0);
      p->speech = !p->speech;
      for (int k = 0; k < 4; k++)
        p->f[k] = 110.0 * pow (2.0, (int) (12 * (prog_rnd (p) + 1)) / 12.0) * (k + 1);
    }
    double t = (double) p->n / p->rate;
    int silent = fmod (t, 19.3) > 17.8;
    double v = 0.0;
    if (!silent) {
      if (p->speech) {
        double env = pow (fabs (sin (M_PI * 4.0 * t)), 2.0);
        p->lp1 = 0.7 * p->lp1 + 0.3 * prog_rnd (p);
        p->lp2 = 0.95 * p->lp2 + 0.05 * p->lp1;
        v = 2.5 * env * (p->lp1 + 3.0 * p->lp2);
      } else {
        for (int k = 0; k < 4; k++) {
          p->ph[k] += 2 * M_PI * p->f[k] / p->rate;
          if (p->ph[k] > 2 * M_PI)
            p->ph[k] -= 2 * M_PI;
          v += 0.35 / (k + 1) * sin (p->ph[k]);
        }
        v += 0.05 * prog_rnd (p);
      }
    }
    for (unsigned c = 0; c < p->ch; c++)
      x[i * p->ch + c] = (float) (p->level * v * (c ? 0.9 : 1.0));
  }
}

#endif
