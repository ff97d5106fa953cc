/* drift: see drift.h. */
#include "drift.h"

#include <math.h>
#include <stdlib.h>
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

/* A line with one slope and an intercept per segment (the bins between two
 * offset steps): o = a[g] + b (t - tm[g]) for a bin of segment seg0 + g. */
typedef struct
{
  double b;
  unsigned seg0, nseg;
  double a[CLOCK_DRIFT_BINS], tm[CLOCK_DRIFT_BINS];
} Line;

static double
residual (const Line * l, const ClockDriftPoint * p)
{
  unsigned g = p->seg - l->seg0;

  if (g >= l->nseg)             /* newer than the line: its last segment */
    g = l->nseg - 1;
  return p->o - (l->a[g] + l->b * (p->t - l->tm[g]));
}

/* The envelope point of bin k: its own minimum; on a coarse line the
 * earliest offset of the bins of its segment in the
 * CLOCK_DRIFT_ENVELOPE_BINS up to it, each moved along the slope b to bin
 * k's time.  A shared sender's 1 s minima scatter by
 * several ms (a bin's earliest write is early only when a PES ends near
 * the start of a 1316-byte packet); the earliest of 10 s does not. */
static void
envelope (const ClockDrift * d, double b, ClockDriftPoint * env)
{
  unsigned w = d->coarse ? CLOCK_DRIFT_ENVELOPE_BINS : 1;

  for (unsigned k = 0; k < d->n; k++) {
    const ClockDriftPoint *p = bin_at (d, k);
    ClockDriftPoint e = *p;
    for (unsigned j = k > w - 1 ? k - (w - 1) : 0; j < k; j++) {
      const ClockDriftPoint *q = bin_at (d, j);
      double o = q->o + b * (p->t - q->t);
      if (q->seg == p->seg && o < e.o)
        e.o = o;
    }
    env[k] = e;
  }
}

/* least squares with a common slope and an intercept per segment through
 * points [from, to) of pts whose residual against `ref` is at most
 * `reject` (all when ref is NULL); 0 when fewer than 3 points or no slope
 * to see */
static int
fit (const ClockDriftPoint * pts, unsigned from, unsigned to,
    const Line * ref, double reject, Line * out, double *se)
{
  double sw[CLOCK_DRIFT_BINS], st[CLOCK_DRIFT_BINS], so[CLOCK_DRIFT_BINS];
  double n = 0, stt = 0, sto = 0;
  unsigned seg0, nseg;
  int used = 0;

  if (to <= from)
    return 0;
  seg0 = pts[from].seg;
  nseg = pts[to - 1].seg - seg0 + 1;
  for (unsigned g = 0; g < nseg; g++)
    sw[g] = st[g] = so[g] = 0.0;
  for (unsigned k = from; k < to; k++) {
    const ClockDriftPoint *p = &pts[k];
    unsigned g = p->seg - seg0;
    if (ref != NULL && residual (ref, p) > reject)
      continue;
    sw[g] += 1;
    st[g] += p->t;
    so[g] += p->o;
    n += 1;
  }
  if (n < 3)
    return 0;
  out->seg0 = seg0;
  out->nseg = nseg;
  for (unsigned g = 0; g < nseg; g++) {
    if (sw[g] > 0) {
      out->tm[g] = st[g] / sw[g];
      out->a[g] = so[g] / sw[g];
      used++;
    } else {
      out->tm[g] = out->a[g] = 0.0;
    }
  }
  for (unsigned k = from; k < to; k++) {
    const ClockDriftPoint *p = &pts[k];
    unsigned g = p->seg - seg0;
    double x;
    if (ref != NULL && residual (ref, p) > reject)
      continue;
    x = p->t - out->tm[g];
    stt += x * x;
    sto += x * (p->o - out->a[g]);
  }
  if (stt <= 0)
    return 0;
  out->b = sto / stt;
  /* a segment without a point takes the line of the one before it */
  for (unsigned g = 0; g < nseg; g++)
    if (sw[g] == 0 && g > 0) {
      out->tm[g] = out->tm[g - 1];
      out->a[g] = out->a[g - 1];
    }
  if (se != NULL) {
    /* the slope's standard error, from the scatter about the line */
    double rr = 0;
    for (unsigned k = from; k < to; k++) {
      const ClockDriftPoint *p = &pts[k];
      double r;
      if (ref != NULL && residual (ref, p) > reject)
        continue;
      r = residual (out, p);
      rr += r * r;
    }
    *se = n > used + 1 ? sqrt (rr / (n - used - 1) / stt) : INFINITY;
  }
  return 1;
}

/* How far the line l through points [from, to) could be tilted by a
 * wander its slope cannot tell from drift: W, the largest minus the
 * smallest of the least residuals of each run of CLOCK_DRIFT_WANDER_BINS
 * points, and T, the span of one segment of evenly spread points with the
 * same spread about their segments' mean times (sqrt (12 mean (t - tm)^2)):
 * a wander of W that changes sign half way tilts a least-squares line over
 * T by 1.5 W / T, W measured about the true line.  About the fitted line,
 * which has taken in part of the wander, W comes out smaller: with 1.5 a
 * step of 1.4 ms in the arrivals' floor at 57 s, in 1 s minima that
 * scatter by +-1.5 ms, tilted a line by 22 ppm whose tilt read 13-18
 * (ffmpeg-16-step-*), and over the lines not coarse of the ffmpeg
 * recordings (tests/clock/arrivals' and the 16 of that run) the error
 * reached 1.97 times 1.5 W / T.  So
 * CLOCK_DRIFT_WANDER_TILT is twice that, 3.  A line cut into segments at
 * offset steps has a shorter T than its span.  With runs of `run` points
 * (1: W is the range of all the residuals, the uncertainty's band). */
static double
wander_tilt_runs (const ClockDriftPoint * pts, unsigned from, unsigned to,
    const Line * l, unsigned run)
{
  double hi = -INFINITY, lo = INFINITY, stt = 0.0;

  for (unsigned g = from; g < to; g += run) {
    double m = INFINITY;
    for (unsigned k = g; k < g + run && k < to; k++) {
      double r = residual (l, &pts[k]);
      if (r < m)
        m = r;
    }
    hi = fmax (hi, m);
    lo = fmin (lo, m);
  }
  for (unsigned k = from; k < to; k++) {
    unsigned g = pts[k].seg - l->seg0;
    double x = pts[k].t - l->tm[g < l->nseg ? g : l->nseg - 1];
    stt += x * x;
  }
  if (stt <= 0.0)                /* no points, or one time */
    return INFINITY;
  return CLOCK_DRIFT_WANDER_TILT * (hi > lo ? hi - lo : 0.0)
      / sqrt (12.0 * stt / (to - from));
}

static double
wander_tilt (const ClockDriftPoint * pts, unsigned from, unsigned to,
    const Line * l)
{
  return wander_tilt_runs (pts, from, to, l, CLOCK_DRIFT_WANDER_BINS);
}

/* a fit through bins [from, to) without the late ones, twice refitted */
static int
robust_fit (const ClockDriftPoint * pts, unsigned from, unsigned to, Line * l,
    double *se)
{
  if (!fit (pts, from, to, NULL, 0.0, l, se))
    return 0;
  for (int pass = 0; pass < 2; pass++) {
    Line l1;
    double se1 = INFINITY;
    if (!fit (pts, from, to, l, CLOCK_DRIFT_REJECT_S, &l1, &se1))
      return 1;                 /* too few left: keep the plain fit */
    *l = l1;
    if (se != NULL)
      *se = se1;
  }
  return 1;
}

static int
cmp_double (const void *x, const void *y)
{
  double a = *(const double *) x, b = *(const double *) y;

  return (a > b) - (a < b);
}

/* the median of v[0..n) (sorts it); 0 for none */
static double
median (double *v, unsigned n)
{
  if (n == 0)
    return 0.0;
  qsort (v, n, sizeof (v[0]), cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* the minima's scatter about the line over bins [from, to): the
 * median of |residual| x 1.4826 (a standard deviation where it is normal;
 * late bins and a step not yet seen do not move it) */
static double
scatter (const ClockDriftPoint * pts, unsigned from, unsigned to,
    const Line * l)
{
  double r[CLOCK_DRIFT_BINS];
  unsigned n = 0;

  for (unsigned k = from; k < to; k++) {
    const ClockDriftPoint *p = &pts[k];
    r[n++] = fabs (residual (l, p));
  }
  return 1.4826 * median (r, n);
}

/* the newest bins a step test waits for (and the line leaves out) */
static unsigned
step_bins (const ClockDrift * d)
{
  return d->coarse ? CLOCK_DRIFT_COARSE_STEP_BINS : CLOCK_DRIFT_STEP_BINS;
}

/* Checks the last step_bins() points against the line of the points
 * before them, judged against the scatter s of those bins about their line:
 * a step is when all of them lie off it on one side by more than
 * max (CLOCK_DRIFT_STEP_S, CLOCK_DRIFT_STEP_SIGMAS s) (scatter alone: a
 * busy host, a sender whose packets and PES boundaries beat, puts a few
 * minima in a row ms above the line, never all of them that far).  Then an
 * offset step with the old slope is what it is unless the minima's own trend
 * moves them by more than max (CLOCK_DRIFT_STEP_FLAT_S,
 * CLOCK_DRIFT_RATE_SIGMAS x its standard error from s) over their span: an
 * offset step (a sender that fell behind for good, a demuxer that now holds
 * a frame less) moves the older bins by the step, so the slope keeps what
 * they know; a rate step starts the line again from the last bins. */
static void
check_step (ClockDrift * d, const ClockDriftPoint * env)
{
  unsigned nstep = step_bins (d);
  unsigned old = d->n - nstep;
  double sr = 0, st = 0, stt = 0, str = 0, trend, rr = 0;
  double s, thr, span, se_trend;
  unsigned above = 0, below = 0;
  Line l;

  if (d->n < nstep + (d->coarse ? CLOCK_DRIFT_COARSE_BASE_BINS :
          CLOCK_DRIFT_STEP_BASE_BINS)
      || !robust_fit (env, 0, old, &l, NULL))
    return;
  s = scatter (env, 0, old, &l);
  thr = fmax (CLOCK_DRIFT_STEP_S, CLOCK_DRIFT_STEP_SIGMAS * s);
  for (unsigned k = old; k < d->n; k++) {
    double r = residual (&l, &env[k]);
    above += r > thr;
    below += r < -thr;
    sr += r;
    st += env[k].t;
  }
  if (above < nstep && below < nstep)
    return;
  sr /= nstep;
  st /= nstep;
  for (unsigned k = old; k < d->n; k++) {
    const ClockDriftPoint *p = &env[k];
    stt += (p->t - st) * (p->t - st);
    str += (p->t - st) * (residual (&l, p) - sr);
  }
  /* the new minima's own scatter about their trend: after a step the
   * pattern may scatter more than before it */
  for (unsigned k = old; k < d->n; k++) {
    const ClockDriftPoint *p = &env[k];
    double r = residual (&l, p) - sr -
        (stt > 0 ? str / stt : 0.0) * (p->t - st);
    rr += r * r;
  }
  s = fmax (s, sqrt (rr / (nstep - 2)));
  span = bin_at (d, d->n - 1)->t - bin_at (d, old)->t;
  trend = stt > 0 ? fabs (str / stt) * span : 0.0;
  se_trend = stt > 0 ? s / sqrt (stt) * span : 0.0;
  d->steps++;
  /* a coarse line's points are its envelope's sliding minima: their trend
   * says nothing of the rate (the step is in them for a window before
   * they all lie off the line), and a line started again from 12 s of a
   * scatter of ms would read hundreds of ppm off: every step of it is an
   * offset step */
  if (d->coarse || trend < fmax (CLOCK_DRIFT_STEP_FLAT_S,
          CLOCK_DRIFT_RATE_SIGMAS * se_trend)) {
    /* an offset step: the new bins start a segment of their own, with
     * the same slope and an intercept of its own */
    unsigned first = (d->next + CLOCK_DRIFT_BINS - d->n) % CLOCK_DRIFT_BINS;
    d->seg++;
    for (unsigned k = old; k < d->n; k++)
      d->bins[(first + k) % CLOCK_DRIFT_BINS].seg = d->seg;
    return;
  }
  d->restarts++;
  {
    ClockDriftPoint keep[CLOCK_DRIFT_COARSE_STEP_BINS];
    for (unsigned k = 0; k < nstep; k++)
      keep[k] = *bin_at (d, old + k);
    d->n = nstep;
    d->next = nstep % CLOCK_DRIFT_BINS;
    memcpy (d->bins, keep, sizeof (keep));
  }
}

/* Takes an arrival (tt, o) into a block `width` s long; 1 when it closed
 * the block before it first, that block's earliest point in *closed. */
static int
block_take (ClockDriftBlock * b, double width, double tt, double o,
    ClockDriftPoint * closed)
{
  int done = b->open && tt - b->t0 >= width;

  if (done) {
    *closed = b->min;
    b->open = 0;
  }
  if (!b->open) {
    b->t0 = tt;
    b->min.t = tt;
    b->min.o = o;
    b->open = 1;
  } else if (o < b->min.o) {
    b->min.t = tt;
    b->min.o = o;
  }
  return done;
}

static void
close_bin (ClockDrift * d, ClockDriftPoint p)
{
  p.seg = d->seg;
  d->bins[d->next] = p;
  d->next = (d->next + 1) % CLOCK_DRIFT_BINS;
  if (d->n < CLOCK_DRIFT_BINS)
    d->n++;
  /* a sender whose 1 s minima scatter by ms: the line is coarse from
   * then on (until a restart) */
  if (!d->coarse && d->n >= CLOCK_DRIFT_COARSE_MIN_BINS) {
    ClockDriftPoint raw[CLOCK_DRIFT_BINS];
    Line l;
    for (unsigned k = 0; k < d->n; k++)
      raw[k] = *bin_at (d, k);
    if (robust_fit (raw, 0, d->n, &l, NULL)
        && scatter (raw, 0, d->n, &l) > CLOCK_DRIFT_COARSE_S)
      d->coarse = 1;
  }
  /* the envelope along the last slope; the step test on it */
  {
    ClockDriftPoint env[CLOCK_DRIFT_BINS];
    envelope (d, d->fitted ? d->b : 0.0, env);
    check_step (d, env);
  }
  /* the line through the points a step could not yet have been seen in:
   * the newest step_bins() wait (an offset step would pull the line until
   * check_step sees it); while a coarse line is short, the newest third */
  {
    unsigned nstep = step_bins (d), wait;
    unsigned upto;
    ClockDriftPoint env[CLOCK_DRIFT_BINS];
    Line l;
    double b;
    if (d->coarse)
      wait = d->n / 3 < nstep ? d->n / 3 : nstep;
    else
      wait = d->n > nstep + 3 ? nstep : 0;
    upto = d->n - wait;
    /* the slope of the bins' minima first; a coarse line's envelope then
     * twice along the slope it gives */
    for (unsigned k = 0; k < d->n; k++)
      env[k] = *bin_at (d, k);
    d->fitted = robust_fit (env, 0, upto, &l, &d->se);
    b = d->fitted ? l.b : 0.0;
    for (int pass = 0; pass < 2 && d->fitted && d->coarse; pass++) {
      envelope (d, b, env);
      d->fitted = robust_fit (env, 0, upto, &l, &d->se);
      if (!d->fitted)
        break;
      b = l.b;
    }
    if (d->fitted) {
      d->tilt = wander_tilt (env, 0, upto, &l);
      d->band = wander_tilt_runs (env, 0, upto, &l, 1);
      d->b = l.b;
      d->a = l.a[l.nseg - 1];
      d->tm = l.tm[l.nseg - 1];
    }
    d->span = upto > 1 ? bin_at (d, upto - 1)->t - bin_at (d, 0)->t : 0.0;
  }
}

/* ---- the long view (the reported drift; drift.h) ---------------------- */

/* the long view's blocks in time order: k = 0 the oldest */
static unsigned
long_index (const ClockDrift * d, unsigned k)
{
  return (d->lnext + CLOCK_DRIFT_LONG_POINTS - d->ln + k) %
      CLOCK_DRIFT_LONG_POINTS;
}

static const ClockDriftPoint *
long_at (const ClockDrift * d, unsigned k)
{
  return &d->lpts[long_index (d, k)];
}

/* p's offset above the line of slope b through run r's means (the last
 * fit's) */
static double
long_residual (const ClockDrift * d, double b, unsigned r,
    const ClockDriftPoint * p)
{
  return p->o - (d->lom[r] + b * (p->t - d->ltm[r]));
}

static void
long_forget (ClockDrift * d)
{
  d->ln = d->lnext = d->lseg = d->ldisagree = d->lpend = 0;
  d->lblock.open = d->lfitted = 0;
  d->lb = d->lspan = 0.0;
}

/* Is point p of run r (the last fit's run means) within the rejection
 * bound of the last fit's line?  Every point is, before the first fit. */
static int
long_kept (const ClockDrift * d, int fitted, double b, unsigned r,
    const ClockDriftPoint * p)
{
  return !fitted || long_residual (d, b, r, p) <= CLOCK_DRIFT_LONG_REJECT_S;
}

/* One slope, an intercept per run of one segment, through the blocks but
 * the pending ones (off the line, maybe an offset step); twice refitted
 * without the late ones.  Then the scatter of the kept blocks about it. */
static void
long_fit (ClockDrift * d)
{
  unsigned char keep[CLOCK_DRIFT_LONG_POINTS];
  double b = 0.0;
  int fitted = 0;

  for (int pass = 0; pass < 3; pass++) {
    double sxx = 0.0, sxy = 0.0;
    unsigned used = 0, r = 0, k = 0, m = d->ln - d->lpend;
    while (k < m) {
      unsigned seg = long_at (d, k)->seg, j = k, n = 0;
      double st = 0.0, so = 0.0, tm, om;
      while (j < m && long_at (d, j)->seg == seg)
        j++;
      for (unsigned i = k; i < j; i++) {
        keep[i] = long_kept (d, fitted, b, r, long_at (d, i));
        n += keep[i];
      }
      /* a run whose every block was late keeps them all */
      if (n == 0)
        memset (keep + k, 1, j - k);
      n = 0;
      for (unsigned i = k; i < j; i++) {
        if (keep[i]) {
          st += long_at (d, i)->t;
          so += long_at (d, i)->o;
          n++;
        }
      }
      tm = st / n;
      om = so / n;
      for (unsigned i = k; i < j; i++) {
        const ClockDriftPoint *p = long_at (d, i);
        if (keep[i]) {
          sxx += (p->t - tm) * (p->t - tm);
          sxy += (p->t - tm) * (p->o - om);
          used++;
        }
      }
      d->ltm[r] = tm;
      d->lom[r] = om;
      r++;
      k = j;
    }
    d->lruns = r;
    if (used < 3 || sxx <= 0.0)
      break;
    b = sxy / sxx;
    fitted = 1;
  }
  d->lfitted = fitted;
  d->lb = b;
  d->lsigma = d->lsxx = d->lwander = 0.0;
  d->lused = 0;
  if (fitted) {
    double res[CLOCK_DRIFT_LONG_POINTS], hi = -INFINITY, lo = INFINITY;
    unsigned m = d->ln - d->lpend, nres = 0, r = 0;
    for (unsigned k = 0; k < m; k++) {
      const ClockDriftPoint *p = long_at (d, k);
      double e;
      if (k > 0 && p->seg != long_at (d, k - 1)->seg)
        r++;
      if (!keep[k])
        continue;
      e = long_residual (d, b, r, p);
      hi = fmax (hi, e);
      lo = fmin (lo, e);
      d->lsxx += (p->t - d->ltm[r]) * (p->t - d->ltm[r]);
      res[nres++] = fabs (e);
    }
    d->lused = nres;
    d->lwander = nres > 0 ? hi - lo : 0.0;
    d->lsigma = 1.4826 * median (res, nres);
  }
  d->lspan = d->ln > 1 ? long_at (d, d->ln - 1)->t - long_at (d, 0)->t : 0.0;
}

/* The slope of the newest CLOCK_DRIFT_LONG_AGREE_BLOCKS blocks alone: the
 * median of the slopes between each two of them (Theil-Sen: a late block
 * or two does not move it). */
static double
recent_slope (const ClockDrift * d)
{
  double sl[CLOCK_DRIFT_LONG_AGREE_BLOCKS * CLOCK_DRIFT_LONG_AGREE_BLOCKS];
  unsigned n = 0;

  for (unsigned i = d->ln - CLOCK_DRIFT_LONG_AGREE_BLOCKS; i < d->ln; i++)
    for (unsigned j = i + 1; j < d->ln; j++) {
      const ClockDriftPoint *p = long_at (d, i), *q = long_at (d, j);
      if (q->t > p->t)
        sl[n++] = (q->o - p->o) / (q->t - p->t);
    }
  return n > 0 ? median (sl, n) : d->lb;
}

/* -1, 0 or +1: p lies that far below or above the long view's line (the
 * newest run's intercept) by more than the step bound (drift.h) */
static int
long_side (const ClockDrift * d, const ClockDriftPoint * p)
{
  double res = long_residual (d, d->lb, d->lruns - 1, p);
  double bound = CLOCK_DRIFT_LONG_STEP_SIGMAS * d->lsigma;

  if (bound < CLOCK_DRIFT_LONG_STEP_S)
    bound = CLOCK_DRIFT_LONG_STEP_S;
  return res > bound ? 1 : res < -bound ? -1 : 0;
}

/* A block closed: its earliest point joins the long view.  Off the line
 * it is pending (out of the fit); CLOCK_DRIFT_LONG_STEP_BLOCKS pending in
 * a row on one side are an offset step and start a segment of their own. */
static void
long_close_block (ClockDrift * d, ClockDriftPoint p)
{
  int side = d->lfitted ? long_side (d, &p) : 0;

  p.seg = d->lseg;
  d->lpts[d->lnext] = p;
  d->lnext = (d->lnext + 1) % CLOCK_DRIFT_LONG_POINTS;
  if (d->ln < CLOCK_DRIFT_LONG_POINTS)
    d->ln++;
  if (side == 0)
    d->lpend = 0;
  else if (d->lpend > 0 && side == d->lpside)
    d->lpend++;
  else
    d->lpend = 1;
  d->lpside = side;
  if (d->lpend >= d->ln)
    d->lpend = d->ln - 1;
  if (d->lpend >= CLOCK_DRIFT_LONG_STEP_BLOCKS) {
    d->lseg++;
    for (unsigned k = d->ln - d->lpend; k < d->ln; k++)
      d->lpts[long_index (d, k)].seg = d->lseg;
    d->lpend = 0;
  }
  long_fit (d);
  /* a rate step: the newest blocks' own slope leaves the long one */
  if (d->lfitted && d->ln >= 2 * CLOCK_DRIFT_LONG_AGREE_BLOCKS
      && fabs (d->lb - recent_slope (d)) > CLOCK_DRIFT_LONG_AGREE) {
    if (++d->ldisagree >= CLOCK_DRIFT_LONG_AGREE_BLOCKS) {
      long_forget (d);
      d->lforgets++;
    }
  } else {
    d->ldisagree = 0;
  }
}

/* An arrival at tt with offset o, after the line took it: the long view
 * follows the line's stream (a restart of the line is a new one for it
 * too) and takes blocks from CLOCK_DRIFT_LONG_START_S on (not the start-up
 * backlog), whether the line is ready or not: at 24 pipelines of one
 * shared sender a line read beyond CLOCK_DRIFT_MAX_RATE for the first
 * 139 s, and a long view that waited for it was not ready in 320 s.  A
 * starved input's long view is steeper than any clock's: not ready. */
static void
long_note (ClockDrift * d, double tt, double o)
{
  ClockDriftPoint closed;

  if (d->restarts != d->lrestarts) {
    long_forget (d);
    d->lrestarts = d->restarts;
  }
  if (tt < CLOCK_DRIFT_LONG_START_S) {
    d->lblock.open = 0;
    return;
  }
  if (block_take (&d->lblock, CLOCK_DRIFT_LONG_BLOCK_S, tt, o, &closed))
    long_close_block (d, closed);
}

void
clock_drift_note (ClockDrift * d, double t, unsigned long frames,
    unsigned rate)
{
  double tt, o;
  ClockDriftPoint closed;

  if (!d->have_t0) {
    d->t0 = t;
    d->have_t0 = 1;
  }
  d->y += (double) frames / rate;
  tt = t - d->t0;
  o = tt - d->y;
  if (block_take (&d->bin, CLOCK_DRIFT_BIN_S, tt, o, &closed))
    close_bin (d, closed);
  long_note (d, tt, o);
}

int
clock_drift_ready (const ClockDrift * d)
{
  /* a slope beyond any clock's is an input that arrives starved (a host
   * so busy that a minute brings a third of a minute of audio) */
  return d->fitted && d->span >= CLOCK_DRIFT_MIN_S
      && fabs (d->b) <= CLOCK_DRIFT_MAX_RATE && d->se <= CLOCK_DRIFT_MAX_SE;
}

double
clock_drift_rate (const ClockDrift * d)
{
  /* o = t - y falls by d per second for a sender at (1 + d) */
  return -d->b;
}

int
clock_drift_long_ready (const ClockDrift * d)
{
  return d->lfitted && d->lspan >= CLOCK_DRIFT_LONG_MIN_S
      && fabs (d->lb) <= CLOCK_DRIFT_MAX_RATE;
}

int
clock_drift_report_known (const ClockDrift * d)
{
  if (clock_drift_long_ready (d))
    return 1;
  return !d->coarse && (!clock_drift_ready (d)
      || (d->se <= CLOCK_DRIFT_REPORT_MAX_SE
          && d->tilt <= CLOCK_DRIFT_REPORT_TOL));
}

double
clock_drift_report_rate (const ClockDrift * d)
{
  if (clock_drift_long_ready (d))
    return -d->lb;
  return clock_drift_report_known (d) ? clock_drift_rate (d) : NAN;
}

/* the long view's slope, with its half-width: 2 standard errors from the
 * blocks' scatter and the tilt their wander could give it (wander_tilt:
 * each block's earliest point is already the least of its 10 s) */
static int
long_estimate (const ClockDrift * d, double *rate, double *half)
{
  double se, tilt;

  if (!d->lfitted || d->lused < 3 || d->lsxx <= 0.0
      || d->lused <= d->lruns + 1 || fabs (d->lb) > CLOCK_DRIFT_MAX_RATE)
    return 0;
  se = d->lsigma / sqrt (d->lsxx);
  tilt = CLOCK_DRIFT_WANDER_TILT * d->lwander
      / sqrt (12.0 * d->lsxx / d->lused);
  *rate = -d->lb;
  *half = 2.0 * se + tilt;
  return 1;
}

int
clock_drift_estimate (const ClockDrift * d, double *rate, double *half)
{
  double lr, lh;
  int line = d->fitted && d->n >= CLOCK_DRIFT_ESTIMATE_BINS
      && d->span >= CLOCK_DRIFT_ESTIMATE_MIN_S
      && fabs (d->b) <= CLOCK_DRIFT_MAX_RATE
      && isfinite (d->se) && isfinite (d->band);
  int lng = long_estimate (d, &lr, &lh);

  if (line) {
    *rate = clock_drift_rate (d);
    *half = 2.0 * d->se + d->band;
  }
  if (lng && (!line || lh < *half)) {
    *rate = lr;
    *half = lh;
  }
  return line || lng;
}
