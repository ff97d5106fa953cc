/* The drift estimator alone (drift.c): synthetic arrival times of a
 * sender's writes, 1024 frames each at (1 + d) x 48000 frames per second of
 * the output clock, each arriving late by a random, one-sided amount
 * (never early; a late write delays the ones queued behind it), from a
 * seeded PRNG of this file.  Checked:
 *   - d = 0, +-100, -250, +-1000 ppm: from FROM_S on the slope is within
 *     TOL_PPM of d; not ready before CLOCK_DRIFT_MIN_S, ready after;
 *   - lateness that grows over the run (a host getting busier): a
 *     least-squares line through every arrival is off by more than
 *     10 x TOL_PPM, the lower envelope is not;
 *   - an offset step of +-10 ms at 60 s (a sender that fell behind for
 *     good, a demuxer that now holds a frame less): the slope stays within
 *     TOL_PPM of d throughout;
 *   - a step of the rate -500 -> +500 ppm at 60 s: the line starts again
 *     (not ready for a while) and then gives the new rate;
 *   - whole bins of late arrivals (2.5 s of every 6 s in the second half
 *     15 ms late: stalls of the input thread longer than a bin, shorter
 *     than CLOCK_DRIFT_STEP_BINS bins): rejected, the slope stays within
 *     TOL_PPM;
 *   - clock_drift_restart forgets the old sender;
 *   - a shared sender's pattern (scale bench, 16 pipelines): writes in
 *     groups of 4 (a PES), each group late by 0..41 ms (where the PES ends
 *     in the 1316-byte packets), so that the 1 s minima scatter by 0..13 ms:
 *     no step is seen in that scatter (the line never starts again; the
 *     step test of a fixed 2 ms read it as steps and rate steps) and the
 *     slope is within SCATTER_TOL_PPM from 60 s on; the same with an offset
 *     step of -150 ms at 80 s (the scale bench's pipelines each took one of
 *     140-230 ms at about 25 s): an offset step, the line goes on with a
 *     segment of its own, within SCATTER_TOL_PPM;
 *   - an input that arrives starved (a third of real time: a host too busy
 *     to bring it) is not a clock: not ready;
 *   - a line whose slope's standard error is above CLOCK_DRIFT_MAX_SE (its
 *     minima do not lie on it) is not ready either;
 *   - the long view (the reported drift): the shared sender's pattern with a
 *     wander of every arrival by up to 4.5 ms over minutes (what 16 live
 *     pipelines fed by one sender received, in step) at 0 and +500 ppm for
 *     600 s: the report is not known (NAN) while the line is coarse and the
 *     long view spans less than CLOCK_DRIFT_LONG_MIN_S (the line's while it
 *     is not coarse and its se small), then known and within LONG_TOL_PPM
 *     from 240 s on and LONG_END_TOL_PPM at the end, where the line reads
 *     the wander; with a
 *     -30 ms offset step at 400 s the same; a rate step -500 -> +500 ppm at
 *     300 s (the coarse line sees offset steps and follows as the old rate
 *     leaves it): the long view starts again and reports the new rate;
 *   - before the long view, a line that is not coarse is the report only
 *     while the wander of its 10 s minima could not tilt it by
 *     REPORT_TOL_PPM: on clean arrivals a figure from FROM_S on, within
 *     TOL_PPM; on arrivals whose 5 s blocks wander by up to 3 ms (40 runs
 *     of 240 s) at most a quarter of the runs with a figure more than
 *     REPORT_TOL_PPM off that the line alone would give (7 of 40 against
 *     37; 21 when the tilt was 1.5 W / T: the rule is a screen, a wander
 *     that lines up over the line's span looks like drift; only the long
 *     view holds the bar). */
#include "drift.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>

#define RATE 48000
#define WRITE 1024
#define FROM_S 30.0
#define TOL_PPM 3.0
#define SCATTER_TOL_PPM 25.0
#define LONG_TOL_PPM 12.0
#define LONG_END_TOL_PPM 5.0
#define REPORT_TOL_PPM 20.0
#define WANDER_RUNS 40

static int failures;

#define CHECK(cond, ...) do { if (!(cond)) { failures++; \
  printf ("FAIL: "); printf (__VA_ARGS__); printf ("\n"); } } while (0)

/* xorshift64*: the same sequence on every host and libc */
static uint64_t rng_state;

static void
rng_seed (uint64_t seed)
{
  rng_state = seed * 0x9E3779B97F4A7C15ull + 1;
}

/* uniform in [0, 1) */
static double
rng_uniform (void)
{
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return (double) ((rng_state * 0x2545F4914F6CDD1Dull) >> 11) /
      9007199254740992.0;
}

/* one-sided lateness: a third of the writes on time (within 0.2 ms), the
 * rest late by an exponential amount of mean `mean` s */
static double
lateness (double mean)
{
  if (rng_uniform () < 0.3)
    return 0.0002 * rng_uniform ();
  return -mean * log (1.0 - rng_uniform ());
}

typedef struct
{
  const char *name;
  double ppm, ppm_after;        /* the sender's rate before and after step_s */
  double step_s;                /* < 0: no step */
  double offset_step_s;         /* arrivals this much later from step_s on */
  double late_mean_s, late_mean_end_s;  /* mean lateness at 0 s and the end */
  int late_bins;                /* stalls in the second half */
  double duration_s;
  double check_from_s;          /* the slope is checked from here on */
} Case;

/* feeds one case; returns the largest |rate - truth| from check_from_s on,
 * and the naive least-squares slope through every arrival; *restarted:
 * the line was ready and then not (it started again) */
static double
run (const Case * c, ClockDrift * d, double *naive_ppm, int *restarted)
{
  double y = 0.0, t_send = 0.0, prev = -1.0, worst = 0.0;
  double sw = 0, st = 0, so = 0, stt = 0, sto = 0;
  int was_ready = 0;

  clock_drift_init (d);
  *restarted = 0;
  while (t_send < c->duration_s) {
    int after = c->step_s >= 0 && t_send >= c->step_s;
    double ppm = after ? c->ppm_after : c->ppm;
    double mean = c->late_mean_s + (c->late_mean_end_s - c->late_mean_s) *
        t_send / c->duration_s;
    double arrive = t_send + lateness (mean);

    if (after)
      arrive += c->offset_step_s;
    if (c->late_bins && t_send >= c->duration_s / 2
        && fmod (t_send, 6.0) < 2.5)
      arrive += 0.015;
    if (arrive < prev)          /* queued behind a late write */
      arrive = prev;
    prev = arrive;
    clock_drift_note (d, arrive, WRITE, RATE);
    y += (double) WRITE / RATE;
    /* the naive line: every offset arrival - input time */
    sw += 1;
    st += arrive;
    so += arrive - y;
    stt += arrive * arrive;
    sto += arrive * (arrive - y);
    if (was_ready && !clock_drift_ready (d))
      *restarted = 1;
    was_ready = clock_drift_ready (d);
    if (t_send >= c->check_from_s) {
      double err = clock_drift_ready (d) ?
          fabs (clock_drift_rate (d) * 1e6 - ppm) : INFINITY;
      if (err > worst)
        worst = err;
    }
    t_send += (double) WRITE / (RATE * (1.0 + ppm * 1e-6));
  }
  *naive_ppm = -(sto - st * so / sw) / (stt - st * st / sw) * 1e6;
  return worst;
}

static void
rates (void)
{
  const double ppms[] = { 0, 100, -100, -250, 1000, -1000 };

  for (size_t i = 0; i < sizeof (ppms) / sizeof (ppms[0]); i++) {
    Case c = { "rate", ppms[i], ppms[i], -1, 0, 0.004, 0.004, 0, 120, FROM_S };
    ClockDrift d;
    double naive, worst;
    int restarted;

    rng_seed (1 + i);
    worst = run (&c, &d, &naive, &restarted);
    printf ("%+6.0f ppm: %+9.3f ppm at the end, |error| from %.0f s at most "
        "%.3f ppm (se %.3f ppm)\n", ppms[i], clock_drift_rate (&d) * 1e6,
        FROM_S, worst, d.se * 1e6);
    CHECK (worst <= TOL_PPM, "%+.0f ppm: off by %.3f ppm", ppms[i], worst);
    CHECK (!restarted, "%+.0f ppm: the line restarted", ppms[i]);
  }
}

/* not ready while the line spans less than CLOCK_DRIFT_MIN_S */
static void
readiness (void)
{
  ClockDrift d;
  double t = 0.0;
  int ready_early = 0, ready_late = 0;

  rng_seed (7);
  clock_drift_init (&d);
  while (t < 20.0) {
    clock_drift_note (&d, t + lateness (0.004), WRITE, RATE);
    if (t < CLOCK_DRIFT_MIN_S && clock_drift_ready (&d))
      ready_early = 1;
    t += (double) WRITE / RATE;
  }
  ready_late = clock_drift_ready (&d);
  printf ("ready before %.0f s: %s; at 20 s: %s\n", CLOCK_DRIFT_MIN_S,
      ready_early ? "yes" : "no", ready_late ? "yes" : "no");
  CHECK (!ready_early, "ready before %.0f s", CLOCK_DRIFT_MIN_S);
  CHECK (ready_late, "not ready after 20 s");
}

static void
busier (void)
{
  Case c = { "busier", 200, 200, -1, 0, 0.001, 0.030, 0, 120, FROM_S };
  ClockDrift d;
  double naive, worst;
  int restarted;

  rng_seed (11);
  worst = run (&c, &d, &naive, &restarted);
  printf ("lateness 1 -> 30 ms: envelope |error| at most %.3f ppm, a line "
      "through every arrival %+.1f ppm (true %+.0f)\n", worst, naive, c.ppm);
  CHECK (worst <= TOL_PPM, "busier host: off by %.3f ppm", worst);
  CHECK (fabs (naive - c.ppm) > 10 * TOL_PPM,
      "busier host: the naive line is not biased (%.1f ppm): the case "
      "tests nothing", naive);
}

static void
offset_steps (void)
{
  const double steps[] = { 0.010, -0.010 };

  for (size_t i = 0; i < 2; i++) {
    /* checked from FROM_S through the step to the end */
    Case c = { "offset", -300, -300, 60, steps[i], 0.004, 0.004, 0, 150,
      FROM_S
    };
    ClockDrift d;
    double naive, worst;
    int restarted;

    rng_seed (20 + i);
    worst = run (&c, &d, &naive, &restarted);
    printf ("offset step %+.0f ms at 60 s: |error| from %.0f s at most "
        "%.3f ppm, restarted: %s\n", steps[i] * 1e3, FROM_S, worst,
        restarted ? "yes" : "no");
    CHECK (worst <= TOL_PPM, "offset step %+.0f ms: off by %.3f ppm",
        steps[i] * 1e3, worst);
    CHECK (!restarted, "offset step %+.0f ms: the line restarted",
        steps[i] * 1e3);
  }
}

static void
rate_step (void)
{
  /* checked from FROM_S after the step */
  Case c = { "rate step", -500, 500, 60, 0, 0.004, 0.004, 0, 150,
    60 + FROM_S
  };
  ClockDrift d;
  double naive, worst;
  int restarted;

  rng_seed (30);
  worst = run (&c, &d, &naive, &restarted);
  printf ("rate step -500 -> +500 ppm at 60 s: restarted: %s, |error| "
      "from %.0f s after it at most %.3f ppm\n", restarted ? "yes" : "no",
      FROM_S, worst);
  CHECK (restarted, "rate step: the line did not start again");
  CHECK (worst <= TOL_PPM, "rate step: off by %.3f ppm", worst);
}

static void
late_bins (void)
{
  Case c = { "late bins", 400, 400, -1, 0, 0.004, 0.004, 1, 120, FROM_S };
  ClockDrift d;
  double naive, worst;
  int restarted;

  rng_seed (40);
  worst = run (&c, &d, &naive, &restarted);
  printf ("2.5 s of every 6 s of the second half 15 ms late: |error| from "
      "%.0f s at most %.3f ppm\n", FROM_S, worst);
  CHECK (worst <= TOL_PPM, "late bins: off by %.3f ppm", worst);
  CHECK (!restarted, "late bins: the line restarted");
}

static void
restart (void)
{
  ClockDrift d;
  double t = 0.0;

  rng_seed (50);
  clock_drift_init (&d);
  for (; t < 30.0; t += (double) WRITE / (RATE * (1 + 800e-6)))
    clock_drift_note (&d, t + lateness (0.004), WRITE, RATE);
  CHECK (clock_drift_ready (&d) && fabs (clock_drift_rate (&d) * 1e6 - 800)
      <= TOL_PPM, "restart: the first sender's rate %.3f ppm",
      clock_drift_rate (&d) * 1e6);
  clock_drift_restart (&d);
  CHECK (!clock_drift_ready (&d), "restart: still ready");
  /* another sender, 1 s later, at -800 ppm */
  for (t += 1.0; t < 61.0; t += (double) WRITE / (RATE * (1 - 800e-6)))
    clock_drift_note (&d, t + lateness (0.004), WRITE, RATE);
  printf ("restart: the next sender %+.3f ppm (true -800)\n",
      clock_drift_rate (&d) * 1e6);
  CHECK (clock_drift_ready (&d) && fabs (clock_drift_rate (&d) * 1e6 + 800)
      <= TOL_PPM, "restart: the next sender's rate %.3f ppm",
      clock_drift_rate (&d) * 1e6);
}

/* The arrivals of a shared sender: groups of 4 writes, each group 0..41 ms
 * late, in order; `extra_s` moves one arrival further (a step, a wander). */
typedef struct
{
  double late, prev;
  unsigned k;
} SharedArrivals;

static double
shared_arrive (SharedArrivals * a, double t_send, double extra_s)
{
  double arrive;

  if (a->k++ % 4 == 0)
    a->late = 0.041 * rng_uniform ();
  arrive = t_send + a->late + extra_s;
  if (arrive < a->prev)
    arrive = a->prev;
  a->prev = arrive;
  return arrive;
}

/* a shared sender's pattern: groups of 4 writes, each group 0..41 ms late;
 * an offset step of `step_s` at 80 s; returns the largest |rate - ppm|
 * from 60 s on */
static double
shared_pattern (double ppm, double step_s, ClockDrift * d)
{
  SharedArrivals a = { 0.0, -1.0, 0 };
  double t_send = 0.0, worst = 0.0;

  clock_drift_init (d);
  while (t_send < 150.0) {
    clock_drift_note (d, shared_arrive (&a, t_send,
            t_send >= 80.0 ? step_s : 0.0), WRITE, RATE);
    if (t_send >= 60.0) {
      double err = clock_drift_ready (d) ?
          fabs (clock_drift_rate (d) * 1e6 - ppm) : INFINITY;
      if (err > worst)
        worst = err;
    }
    t_send += (double) WRITE / (RATE * (1.0 + ppm * 1e-6));
  }
  return worst;
}

static void
shared_sender (void)
{
  const double ppms[] = { 0, 500 };

  for (size_t i = 0; i < 2; i++) {
    ClockDrift d;
    double worst;

    rng_seed (60 + i);
    worst = shared_pattern (ppms[i], 0.0, &d);
    printf ("shared sender's scatter at %+.0f ppm: |error| from 60 s at most "
        "%.3f ppm, steps %u, rate steps %u\n", ppms[i], worst, d.steps,
        d.restarts);
    CHECK (worst <= SCATTER_TOL_PPM, "shared sender %+.0f ppm: off by %.3f "
        "ppm", ppms[i], worst);
    CHECK (d.restarts == 0, "shared sender %+.0f ppm: the line started "
        "again %u times", ppms[i], d.restarts);
    rng_seed (70 + i);
    worst = shared_pattern (ppms[i], -0.150, &d);
    printf ("... and a -150 ms offset step at 80 s: |error| from 60 s at most "
        "%.3f ppm, steps %u, rate steps %u\n", worst, d.steps, d.restarts);
    CHECK (worst <= SCATTER_TOL_PPM, "shared sender %+.0f ppm, -150 ms step: "
        "off by %.3f ppm", ppms[i], worst);
    CHECK (d.steps >= 1 && d.restarts == 0, "shared sender %+.0f ppm, -150 ms "
        "step: %u steps, %u rate steps", ppms[i], d.steps, d.restarts);
  }
}

/* The shared sender's pattern (shared_pattern) for duration_s, each
 * arrival also moved by a slow wander of up to 4.5 ms, an offset step of
 * step_s from 400 s on, and the rate ppm_after from rate_step_s on (< 0:
 * none).  Returns the largest |report - truth| from 240 s on; *line_worst
 * the line's own (clock_drift_rate) over the same time; *before: the
 * largest |report - line| while the long view is short and the line not
 * coarse; *misreported: the writes while the long view is short and the
 * line coarse whose report was a figure (not NAN), and those from 240 s on
 * whose report was NAN; *end: the report's error at the end. */
static double
wander_pattern (double ppm, double ppm_after, double rate_step_s,
    double step_s, double duration_s, ClockDrift * d, double *line_worst,
    double *before, unsigned *misreported, double *end)
{
  SharedArrivals a = { 0.0, -1.0, 0 };
  double t_send = 0.0, worst = 0.0;

  clock_drift_init (d);
  *line_worst = *before = 0.0;
  *misreported = 0;
  *end = INFINITY;
  while (t_send < duration_s) {
    double truth = rate_step_s >= 0 && t_send >= rate_step_s ? ppm_after : ppm;
    double wander = 0.003 * sin (2 * M_PI * t_send / 170.0)
        + 0.0015 * sin (2 * M_PI * t_send / 47.0 + 1.0);
    clock_drift_note (d, shared_arrive (&a, t_send,
            wander + (t_send >= 400.0 ? step_s : 0.0)), WRITE, RATE);
    if (clock_drift_ready (d)) {
      double report = clock_drift_report_rate (d) * 1e6;
      double line = clock_drift_rate (d) * 1e6;
      int coarse_short = d->coarse && !clock_drift_long_ready (d);
      if ((coarse_short && !isnan (report)) || (t_send >= 240.0
              && isnan (report)))
        (*misreported)++;
      if (!clock_drift_long_ready (d) && !d->coarse
          && fabs (report - line) > *before)
        *before = fabs (report - line);
      if (t_send >= 240.0 && (rate_step_s < 0 || t_send >= rate_step_s
              + CLOCK_DRIFT_BINS)) {
        if (fabs (report - truth) > worst)
          worst = fabs (report - truth);
        if (fabs (line - truth) > *line_worst)
          *line_worst = fabs (line - truth);
      }
      *end = fabs (report - truth);
    }
    t_send += (double) WRITE / (RATE * (1.0 + truth * 1e-6));
  }
  return worst;
}

static void
long_view (void)
{
  const double ppms[] = { 0, 500 };

  for (size_t i = 0; i < 2; i++) {
    ClockDrift d;
    double worst, line, before, end;
    unsigned misreported;

    for (int step = 0; step < 2; step++) {
      rng_seed (90 + 2 * i + step);
      worst = wander_pattern (ppms[i], 0, -1, step ? -0.030 : 0.0, 600.0, &d,
          &line, &before, &misreported, &end);
      printf ("long view, a wander of 4.5 ms at %+.0f ppm%s: |report - truth| "
          "from 240 s at most %.3f ppm, %.3f at 600 s (the line: %.3f); "
          "report - line before the long view (not coarse) %.3f; coarse %d, "
          "reports known when they could not be or not known from 240 s "
          "%u\n", ppms[i], step ? ", a -30 ms step at 400 s" : "", worst, end,
          line, before, d.coarse, misreported);
      CHECK (worst <= LONG_TOL_PPM, "long view %+.0f ppm%s: off by %.3f ppm",
          ppms[i], step ? " (step)" : "", worst);
      CHECK (end <= LONG_END_TOL_PPM, "long view %+.0f ppm%s: off by %.3f "
          "ppm at the end", ppms[i], step ? " (step)" : "", end);
      CHECK (before == 0.0, "long view %+.0f ppm: reported before it was "
          "long (%.3f ppm from the line)", ppms[i], before);
      CHECK (misreported == 0, "long view %+.0f ppm: %u writes with a figure "
          "on a coarse line before the long view or none from 240 s on",
          ppms[i], misreported);
    }
  }
  {
    /* a coarse line takes a rate step for offset steps and follows the new
     * rate only as the old one leaves its 180 s: the long view must not keep
     * the old rate meanwhile */
    ClockDrift d;
    double line, before, end;
    unsigned misreported;
    rng_seed (99);
    (void) wander_pattern (-500, 500, 300.0, 0.0, 900.0, &d, &line, &before,
        &misreported, &end);
    printf ("long view, a rate step -500 -> +500 ppm at 300 s: the long view "
        "started again %u times, |report - truth| at 900 s %.3f ppm\n",
        d.lforgets, end);
    CHECK (d.lforgets >= 1, "long view: kept the rate before the step");
    CHECK (end <= SCATTER_TOL_PPM, "long view: %.3f ppm off at 900 s after "
        "a rate step", end);
  }
}

/* Arrivals of a line that is not coarse (the writes late by an exponential
 * 2 ms, a third on time), each 5 s block of them moved by its own offset
 * of 0..0.6 wander_s and all by a slow swing of 0.2 wander_s over 150 s
 * (16 pipelines of one shared sender on a quiet host: the 5 s minima
 * scattered by 3-5 ms about a trend while the 1 s minima kept within 2 ms:
 * shared-16-wander-*), for 240 s (the long view is not ready before).
 * Returns the largest |report - truth| of the figures from FROM_S on;
 * *line_worst: the same for the line itself wherever its se is at most
 * CLOCK_DRIFT_REPORT_MAX_SE (the report before the wander was judged);
 * *known_at: the first figure's time (-1: none). */
static double
fine_wander (double ppm, double wander_s, ClockDrift * d, double *line_worst,
    double *known_at)
{
  double t_send = 0.0, prev = -1.0, worst = 0.0;
  double block = 0.0, block_offset = 0.0;

  clock_drift_init (d);
  *known_at = -1.0;
  *line_worst = 0.0;
  while (t_send < 240.0) {
    double arrive;
    if (t_send >= block) {
      block += 5.0;
      block_offset = wander_s * 0.6 * rng_uniform ();
    }
    arrive = t_send + lateness (0.002) + block_offset
        + wander_s * 0.2 * sin (2 * M_PI * t_send / 150.0);
    if (arrive < prev)
      arrive = prev;
    prev = arrive;
    clock_drift_note (d, arrive, WRITE, RATE);
    /* (a line not ready: the bridge reports its loop's integrator) */
    if (t_send >= FROM_S && clock_drift_ready (d)) {
      double report = clock_drift_report_rate (d) * 1e6;
      double line = clock_drift_rate (d) * 1e6;
      if (!isnan (report)) {
        if (*known_at < 0)
          *known_at = t_send;
        worst = fmax (worst, fabs (report - ppm));
      }
      if (!d->coarse && d->se <= CLOCK_DRIFT_REPORT_MAX_SE)
        *line_worst = fmax (*line_worst, fabs (line - ppm));
    }
    t_send += (double) WRITE / (RATE * (1.0 + ppm * 1e-6));
  }
  return worst;
}

/* a line that is not coarse is the report before the long view only while
 * the wander of its 10 s minima could not tilt it by REPORT_TOL_PPM
 * (drift.h): on clean arrivals from the start; on wandering ones that rule
 * is a screen, not a proof (a wander that lines up over the line's span
 * looks like drift), so it is judged over many of them */
static void
wandering_line (void)
{
  const double ppms[] = { 0, 500 };
  unsigned wrong = 0, line_wrong = 0, known = 0;

  for (size_t i = 0; i < 2; i++) {
    ClockDrift d;
    double known_at, worst, line;
    rng_seed (110 + i);
    worst = fine_wander (ppms[i], 0.0, &d, &line, &known_at);
    printf ("a line not coarse at %+.0f ppm, no wander: the report known "
        "from %.0f s, at most %.3f ppm off\n", ppms[i], known_at, worst);
    CHECK (!d.coarse, "a line with writes late by 2 ms read as coarse");
    CHECK (known_at >= 0 && known_at < FROM_S + 1.0, "a clean line at "
        "%+.0f ppm: not known from %.0f s (%.0f)", ppms[i], FROM_S, known_at);
    CHECK (worst <= TOL_PPM, "a clean line at %+.0f ppm: %.3f ppm off",
        ppms[i], worst);
  }
  for (unsigned seed = 0; seed < WANDER_RUNS; seed++) {
    ClockDrift d;
    double known_at, worst, line;
    rng_seed (1000 + seed);
    worst = fine_wander (0.0, 0.005, &d, &line, &known_at);
    wrong += worst > REPORT_TOL_PPM;
    line_wrong += line > REPORT_TOL_PPM;
    known += known_at >= 0;
  }
  printf ("a line not coarse with a wander of 5 ms, %u runs of 240 s: a "
      "figure more than %.0f ppm off in %u (the line alone: %u), a figure "
      "at all in %u\n", WANDER_RUNS, REPORT_TOL_PPM, wrong, line_wrong,
      known);
  CHECK (4 * wrong <= line_wrong, "a wandering line: %u runs with a "
      "figure more than %.0f ppm off, the line alone %u: more than a "
      "quarter", wrong, REPORT_TOL_PPM, line_wrong);
}

static void
starved (void)
{
  ClockDrift d;
  double t = 0.0;
  int ready = 0;

  rng_seed (80);
  clock_drift_init (&d);
  /* 1024 frames every 64 ms: the input brings a third of real time */
  for (; t < 60.0; t += 3.0 * WRITE / RATE) {
    clock_drift_note (&d, t + lateness (0.004), WRITE, RATE);
    ready |= clock_drift_ready (&d);
  }
  printf ("input at a third of real time: slope %+.0f ppm, ready: %s\n",
      clock_drift_rate (&d) * 1e6, ready ? "yes" : "no");
  CHECK (!ready, "a starved input read as a clock (%+.0f ppm)",
      clock_drift_rate (&d) * 1e6);
}

/* the rule itself: a fitted line of a clock's slope over CLOCK_DRIFT_MIN_S
 * is an estimate only while its minima lie on it (24 pipelines on one
 * shared sender: a line at +2700..+3830 ppm with se 370-470 ppm drove the
 * loop for a sender on the host's clock) */
static void
unfit (void)
{
  ClockDrift d;

  clock_drift_init (&d);
  d.fitted = 1;
  d.span = 2 * CLOCK_DRIFT_MIN_S;
  d.b = -0.0036;
  d.se = 0.00045;
  CHECK (!clock_drift_ready (&d), "a line with se %.0f ppm is ready",
      d.se * 1e6);
  d.se = CLOCK_DRIFT_MAX_SE;
  CHECK (clock_drift_ready (&d), "a line with se %.0f ppm is not ready",
      d.se * 1e6);
  d.se = 0.00002;
  d.b = -2 * CLOCK_DRIFT_MAX_RATE;
  CHECK (!clock_drift_ready (&d), "a line of %.0f ppm is ready", -d.b * 1e6);
  printf ("a line is ready at se <= %.0f ppm and |slope| <= %.0f ppm\n",
      CLOCK_DRIFT_MAX_SE * 1e6, CLOCK_DRIFT_MAX_RATE * 1e6);
}

int
main (void)
{
  rates ();
  readiness ();
  busier ();
  offset_steps ();
  rate_step ();
  late_bins ();
  restart ();
  shared_sender ();
  starved ();
  unfit ();
  long_view ();
  wandering_line ();
  printf ("%s\n", failures ? "FAILED" : "ok");
  return failures ? 1 : 0;
}
