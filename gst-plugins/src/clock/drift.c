/* drift: see drift.h. */
#include "drift.h"

#include <math.h>
#include <string.h>

void
clock_drift_init (ClockDrift * d)
{
  memset (d, 0, sizeof (*d));
}

void
clock_drift_restart (ClockDrift * d)
{
  clock_drift_init (d);
}

/* the bins in time order: k = 0 the oldest */
static const ClockDriftPoint *
bin_at (const ClockDrift * d, unsigned k)
{
  unsigned first = (d->next + CLOCK_DRIFT_BINS - d->n) % CLOCK_DRIFT_BINS;

  return &d->bins[(first + k) % CLOCK_DRIFT_BINS];
}

/* least squares through bins [from, to) whose residual against (a, b, tm)
 * is at most `reject` (all when reject < 0); 0 when fewer than 3 */
static int
fit (const ClockDrift * d, unsigned from, unsigned to, double reject,
    double *a, double *b, double *tm, double *se)
{
  double sw = 0, st = 0, so = 0, stt = 0, sto = 0;
  double a0 = *a, b0 = *b, tm0 = *tm;

  for (unsigned k = from; k < to; k++) {
    const ClockDriftPoint *p = bin_at (d, k);
    if (reject >= 0 && p->o - (a0 + b0 * (p->t - tm0)) > reject)
      continue;
    sw += 1;
    st += p->t;
    so += p->o;
  }
  if (sw < 3)
    return 0;
  *tm = st / sw;
  *a = so / sw;
  for (unsigned k = from; k < to; k++) {
    const ClockDriftPoint *p = bin_at (d, k);
    double x, y;
    if (reject >= 0 && p->o - (a0 + b0 * (p->t - tm0)) > reject)
      continue;
    x = p->t - *tm;
    y = p->o - *a;
    stt += x * x;
    sto += x * y;
  }
  if (stt <= 0)
    return 0;
  *b = sto / stt;
  if (se != NULL) {
    /* the slope's standard error, from the scatter about the line */
    double rr = 0;
    for (unsigned k = from; k < to; k++) {
      const ClockDriftPoint *p = bin_at (d, k);
      double r;
      if (reject >= 0 && p->o - (a0 + b0 * (p->t - tm0)) > reject)
        continue;
      r = p->o - (*a + *b * (p->t - *tm));
      rr += r * r;
    }
    *se = sw > 2 ? sqrt (rr / (sw - 2) / stt) : INFINITY;
  }
  return 1;
}

/* a fit through bins [from, to) without the late ones, twice refitted */
static int
robust_fit (const ClockDrift * d, unsigned from, unsigned to, double *a,
    double *b, double *tm, double *se)
{
  if (!fit (d, from, to, -1, a, b, tm, se))
    return 0;
  for (int pass = 0; pass < 2; pass++) {
    double a1 = *a, b1 = *b, tm1 = *tm, se1 = INFINITY;
    if (!fit (d, from, to, CLOCK_DRIFT_REJECT_S, &a1, &b1, &tm1, &se1))
      return 1;                 /* too few left: keep the plain fit */
    *a = a1;
    *b = b1;
    *tm = tm1;
    if (se != NULL)
      *se = se1;
  }
  return 1;
}

/* Checks the last CLOCK_DRIFT_STEP_BINS minima against the line of the bins
 * before them.  All off it on one side by more than CLOCK_DRIFT_STEP_S:
 * when they lie flat (their own trend moves them less than
 * CLOCK_DRIFT_STEP_FLAT_S), the offset stepped (a sender that fell behind
 * for good, a demuxer that now holds a frame less) and the older bins are
 * moved by the step, so the slope keeps what they know; otherwise the rate
 * stepped, and the line starts again from the last bins. */
static void
check_step (ClockDrift * d)
{
  unsigned old = d->n - CLOCK_DRIFT_STEP_BINS;
  double a = 0, b = 0, tm = 0, sr = 0, st = 0, stt = 0, str = 0, trend;
  int above = 0, below = 0;

  if (d->n < CLOCK_DRIFT_STEP_BINS + 5
      || !robust_fit (d, 0, old, &a, &b, &tm, NULL))
    return;
  for (unsigned k = old; k < d->n; k++) {
    const ClockDriftPoint *p = bin_at (d, k);
    double r = p->o - (a + b * (p->t - tm));
    above += r > CLOCK_DRIFT_STEP_S;
    below += r < -CLOCK_DRIFT_STEP_S;
    sr += r;
    st += p->t;
  }
  if (above < CLOCK_DRIFT_STEP_BINS && below < CLOCK_DRIFT_STEP_BINS)
    return;
  sr /= CLOCK_DRIFT_STEP_BINS;
  st /= CLOCK_DRIFT_STEP_BINS;
  for (unsigned k = old; k < d->n; k++) {
    const ClockDriftPoint *p = bin_at (d, k);
    double r = p->o - (a + b * (p->t - tm));
    stt += (p->t - st) * (p->t - st);
    str += (p->t - st) * (r - sr);
  }
  trend = stt > 0 ? fabs (str / stt) * (bin_at (d, d->n - 1)->t -
      bin_at (d, old)->t) : 0.0;
  if (trend < CLOCK_DRIFT_STEP_FLAT_S) {
    for (unsigned k = 0; k < old; k++) {
      unsigned first = (d->next + CLOCK_DRIFT_BINS - d->n) % CLOCK_DRIFT_BINS;
      d->bins[(first + k) % CLOCK_DRIFT_BINS].o += sr;
    }
    return;
  }
  {
    ClockDriftPoint keep[CLOCK_DRIFT_STEP_BINS];
    for (unsigned k = 0; k < CLOCK_DRIFT_STEP_BINS; k++)
      keep[k] = *bin_at (d, old + k);
    d->n = CLOCK_DRIFT_STEP_BINS;
    d->next = CLOCK_DRIFT_STEP_BINS % CLOCK_DRIFT_BINS;
    memcpy (d->bins, keep, sizeof (keep));
  }
}

static void
close_bin (ClockDrift * d)
{
  d->bins[d->next] = d->cur;
  d->next = (d->next + 1) % CLOCK_DRIFT_BINS;
  if (d->n < CLOCK_DRIFT_BINS)
    d->n++;
  check_step (d);
  /* the line through the bins a step could not yet have been seen in:
   * the newest CLOCK_DRIFT_STEP_BINS wait (an offset step would pull the
   * line until check_step sees it) */
  {
    unsigned upto = d->n > CLOCK_DRIFT_STEP_BINS + 3 ?
        d->n - CLOCK_DRIFT_STEP_BINS : d->n;
    d->fitted = robust_fit (d, 0, upto, &d->a, &d->b, &d->tm, &d->se);
    d->span = upto > 1 ? bin_at (d, upto - 1)->t - bin_at (d, 0)->t : 0.0;
  }
}

void
clock_drift_note (ClockDrift * d, double t, unsigned long frames,
    unsigned rate)
{
  double tt, o;

  if (!d->have_t0) {
    d->t0 = t;
    d->have_t0 = 1;
  }
  d->y += (double) frames / rate;
  tt = t - d->t0;
  o = tt - d->y;
  if (d->have_cur && tt - d->bin_t0 >= CLOCK_DRIFT_BIN_S) {
    close_bin (d);
    d->have_cur = 0;
  }
  if (!d->have_cur) {
    d->bin_t0 = tt;
    d->cur.t = tt;
    d->cur.o = o;
    d->have_cur = 1;
  } else if (o < d->cur.o) {
    d->cur.t = tt;
    d->cur.o = o;
  }
}

int
clock_drift_ready (const ClockDrift * d)
{
  return d->fitted && d->span >= CLOCK_DRIFT_MIN_S;
}

double
clock_drift_rate (const ClockDrift * d)
{
  /* o = t - y falls by d per second for a sender at (1 + d) */
  return -d->b;
}
