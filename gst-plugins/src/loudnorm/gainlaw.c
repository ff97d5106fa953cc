/* gainlaw: the causal normalisation gain.  See gainlaw.h. */
#include "gainlaw.h"

#include <math.h>

#define STEP_S 0.1              /* ln_gain_update period */

void
ln_gain_defaults (LnGainParams * p)
{
  p->target = -23.0;
  p->max_gain = 20.0;
  p->min_gain = -40.0;
  p->lra_half = 5.5;
  p->tau_fall = 0.4;
  p->tau_rise = 2.0;
  p->tau_onset = 0.08;
  p->onset_lu = 6.0;
  p->integ_tau = 90.0;
  p->integ_bound = 8.0;
}

void
ln_gain_init (LnGainLaw * g, const LnGainParams * p)
{
  g->p = *p;
  g->desired = 0.0;
  g->current = 0.0;
  g->corr = 0.0;
  g->onset = 0;
  g->started = 0;
  g->frozen = 1;
}

static double
clampd (double v, double lo, double hi)
{
  return v < lo ? lo : v > hi ? hi : v;
}

void
ln_gain_update (LnGainLaw * g, double in_m, double in_s, double in_ref,
    int ref_ok, double out_long, int out_ok)
{
  const LnGainParams *p = &g->p;
  double ref = ref_ok ? in_ref : in_s;

  g->onset = 0;
  if (!(in_m >= -70.0) || !(in_s > -HUGE_VAL) || (ref_ok && in_s < ref - 20.0)) {
    g->frozen = 1;              /* pause or noise: never pulled up */
    return;
  }
  g->frozen = 0;

  double want = p->target + clampd (in_s - ref, -p->lra_half, p->lra_half) + g->corr;
  double d = want - in_s;
  if (in_m > in_s + p->onset_lu) {
    double want_m = p->target + clampd (in_m - ref, -p->lra_half, p->lra_half) + g->corr;
    double dm = want_m - in_m;
    if (dm < d) {
      d = dm;
      g->onset = 1;
    }
  }
  g->desired = clampd (d, p->min_gain, p->max_gain);
  /* the first second of programme: reach the first estimates fast, both
   * ways, rather than ramping slowly from 0 dB */
  if (g->started < 10) {
    g->started++;
    g->onset = 1;
  }

  /* anti-windup: integrate only while the applied gain has settled, so the
   * transient of a level change does not wind the correction up */
  if (out_ok && out_long > -HUGE_VAL && fabs (g->desired - g->current) < 1.0) {
    g->corr += (p->target - out_long) * STEP_S / p->integ_tau;
    g->corr = clampd (g->corr, -p->integ_bound, p->integ_bound);
  }
}

double
ln_gain_advance (LnGainLaw * g, size_t n, unsigned rate)
{
  double tau;
  if (g->onset && g->started <= 10 && g->started > 0 && g->desired > g->current)
    tau = g->p.tau_onset;
  else if (g->desired < g->current)
    tau = g->onset ? g->p.tau_onset : g->p.tau_fall;
  else
    tau = g->p.tau_rise;
  double a = exp (-(double) n / (tau * rate));
  g->current = g->desired + (g->current - g->desired) * a;
  return g->current;
}
