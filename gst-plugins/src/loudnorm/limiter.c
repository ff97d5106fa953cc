/* limiter: look-ahead true-peak limiter.  See limiter.h.
 *
 * With W the look-ahead (moving-average length), the sliding minimum holds
 * over H = W + 2 frames.  A peak detected when frame n0 arrives lies between
 * frames n0-6 and n0-5 (interpolator delay); the averaged gain is at or
 * under r[n0] for outputs n0+W-1 .. n0+W+1, so the delay line is
 * D = W + LN_TP_DELAY - 1 frames long: frames n0-6 and n0-5 leave it at
 * n0+W-1 and n0+W. */
#include "limiter.h"
#include "truepeak.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define BLOCK 512

struct LnLimiter
{
  unsigned channels, rate;
  unsigned W, H, D;
  LnTruePeak *tp;
  float thr;                    /* linear threshold */
  double rel_k;
  float peaks[BLOCK];
  /* sliding minimum: monotonic deque of (value, index) */
  float *dq_val;
  unsigned long long *dq_idx;
  unsigned dq_head, dq_len, dq_cap;
  unsigned long long n;         /* frames detected */
  double hrel;                  /* h after release */
  /* moving average */
  float *avg_ring;
  unsigned avg_pos;
  double avg_sum;
  /* delay line */
  float *delay;
  unsigned delay_pos;
  double min_gain;
};

LnLimiter *
ln_limiter_new (unsigned channels, unsigned rate, double lookahead_s,
    double release_s)
{
  LnLimiter *l = calloc (1, sizeof *l);
  if (!l)
    return NULL;
  l->channels = channels;
  l->rate = rate;
  l->W = (unsigned) lround (lookahead_s * rate);
  if (l->W < 1)
    l->W = 1;
  l->H = l->W + 2;
  l->D = l->W + LN_TP_DELAY - 1;
  l->dq_cap = 1;                /* power of two: index with a mask */
  while (l->dq_cap < l->H + 1)
    l->dq_cap <<= 1;
  l->rel_k = 1.0 - exp (-1.0 / (release_s * rate));
  l->tp = ln_tp_new (channels, BLOCK);
  l->dq_val = calloc (l->dq_cap, sizeof (float));
  l->dq_idx = calloc (l->dq_cap, sizeof (unsigned long long));
  l->avg_ring = calloc (l->W, sizeof (float));
  l->delay = calloc ((size_t) l->D * channels, sizeof (float));
  if (!l->tp || !l->dq_val || !l->dq_idx || !l->avg_ring || !l->delay) {
    ln_limiter_free (l);
    return NULL;
  }
  ln_limiter_set_ceiling (l, -1.0, 0.1);
  ln_limiter_reset (l);
  return l;
}

void
ln_limiter_free (LnLimiter * l)
{
  if (!l)
    return;
  ln_tp_free (l->tp);
  free (l->dq_val);
  free (l->dq_idx);
  free (l->avg_ring);
  free (l->delay);
  free (l);
}

void
ln_limiter_reset (LnLimiter * l)
{
  ln_tp_reset (l->tp);
  l->dq_head = l->dq_len = 0;
  l->n = 0;
  l->hrel = 1.0;
  for (unsigned i = 0; i < l->W; i++)
    l->avg_ring[i] = 1.0f;
  l->avg_sum = l->W;
  l->avg_pos = 0;
  memset (l->delay, 0, sizeof (float) * l->D * l->channels);
  l->delay_pos = 0;
  l->min_gain = 1.0;
}

void
ln_limiter_set_ceiling (LnLimiter * l, double ceiling_db, double margin_db)
{
  l->thr = (float) pow (10.0, (ceiling_db - margin_db) / 20.0);
}

unsigned
ln_limiter_delay (const LnLimiter * l)
{
  return l->D;
}

double
ln_limiter_take_min_gain (LnLimiter * l)
{
  double g = l->min_gain;
  l->min_gain = 1.0;
  return g;
}

static void
process_block (LnLimiter * l, float *x, size_t frames)
{
  const unsigned nch = l->channels;
  const float thr = l->thr;
  const unsigned mask = l->dq_cap - 1;
  const float invW = 1.0f / (float) l->W;

  float pmax = ln_tp_process (l->tp, x, frames, thr, l->peaks);

  /* idle fast path: no gain reduction in the state and no peak over the
   * threshold in the block: the gain stays exactly 1, only delay */
  if (pmax <= thr && l->hrel == 1.0 && l->avg_sum == (double) l->W
      && l->dq_len > 0 && l->dq_val[l->dq_head] == 1.0f) {
    l->n += frames;
    l->dq_head = 0;
    l->dq_len = 1;
    l->dq_val[0] = 1.0f;
    l->dq_idx[0] = l->n - 1;
    l->avg_pos = (unsigned) ((l->avg_pos + frames) % l->W);
    for (size_t i = 0; i < frames; i++) {
      float *d = l->delay + (size_t) l->delay_pos * nch;
      float *xi = x + i * nch;
      for (unsigned c = 0; c < nch; c++) {
        float in = xi[c];
        xi[c] = d[c];
        d[c] = in;
      }
      if (++l->delay_pos == l->D)
        l->delay_pos = 0;
    }
    return;
  }

  for (size_t i = 0; i < frames; i++) {
    float p = l->peaks[i];
    float r = p > thr ? thr / p : 1.0f;
    unsigned long long n = l->n++;

    /* sliding minimum over H frames */
    while (l->dq_len > 0
        && l->dq_val[(l->dq_head + l->dq_len - 1) & mask] >= r)
      l->dq_len--;
    l->dq_val[(l->dq_head + l->dq_len) & mask] = r;
    l->dq_idx[(l->dq_head + l->dq_len) & mask] = n;
    l->dq_len++;
    while (l->dq_idx[l->dq_head] + l->H <= n) {
      l->dq_head = (l->dq_head + 1) & mask;
      l->dq_len--;
    }
    double h = l->dq_val[l->dq_head];

    /* instant attack, one-pole release */
    if (h <= l->hrel)
      l->hrel = h;
    else
      l->hrel += (h - l->hrel) * l->rel_k;

    /* moving average over W frames */
    float hv = (float) l->hrel;
    l->avg_sum += (double) hv - (double) l->avg_ring[l->avg_pos];
    l->avg_ring[l->avg_pos] = hv;
    if (++l->avg_pos == l->W) {
      l->avg_pos = 0;
      double s = 0.0;           /* re-sum against drift */
      for (unsigned k = 0; k < l->W; k++)
        s += l->avg_ring[k];
      l->avg_sum = s;
    }
    float g = (float) l->avg_sum * invW;
    if (g > 1.0f)
      g = 1.0f;
    if (g < l->min_gain)
      l->min_gain = g;

    /* delay line, in place */
    float *d = l->delay + (size_t) l->delay_pos * nch;
    float *xi = x + i * nch;
    for (unsigned c = 0; c < nch; c++) {
      float in = xi[c];
      xi[c] = d[c] * g;
      d[c] = in;
    }
    if (++l->delay_pos == l->D)
      l->delay_pos = 0;
  }
}

void
ln_limiter_process (LnLimiter * l, float *x, size_t frames)
{
  while (frames > 0) {
    size_t n = frames < BLOCK ? frames : BLOCK;
    process_block (l, x, n);
    x += n * l->channels;
    frames -= n;
  }
}
