/* depth: see depth.h. */
#include "depth.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void
clock_depth_init (ClockDepth * d, double target_s, double max_s)
{
  memset (d, 0, sizeof (*d));
  d->target_s = target_s;
  d->max_s = max_s;
}

void
clock_depth_reset (ClockDepth * d)
{
  d->have_swing = 0;
  d->n_dips = d->next_dip = 0;
  d->since_rise = 0.0;
  d->fall_rate = 0.0;
  d->at_max = 0;
}

void
clock_depth_set_max (ClockDepth * d, double max_s)
{
  d->max_s = max_s > 0.0 ? max_s : 0.0;
  if (d->swing > d->max_s)
    d->swing = d->max_s;
}

/* a depth asked for, bounded by the ceiling; asking above it begins an
 * episode (counted once until a window asks for less) */
static double
bounded (ClockDepth * d, double want_s, int measured)
{
  if (want_s > d->max_s) {
    if (!d->at_max)
      d->limited++;
    d->at_max = 1;
    return d->max_s;
  }
  if (measured)
    d->at_max = 0;
  return want_s;
}

void
clock_depth_dip (ClockDepth * d, double dip_s)
{
  d->dips[d->next_dip] = dip_s;
  d->next_dip = (d->next_dip + 1) % CLOCK_BRIDGE_DIPS;
  if (d->n_dips < CLOCK_BRIDGE_DIPS)
    d->n_dips++;
}

void
clock_depth_low (ClockDepth * d, double fill_s)
{
  if (fill_s < d->win_min)
    d->win_min = fill_s;
}

void
clock_depth_new_window (ClockDepth * d)
{
  d->win_time = 0.0;
  d->win_min = 1e9;
}

void
clock_depth_skip_window (ClockDepth * d)
{
  d->win_trimmed = 1;
}

static int
compare_doubles (const void *a, const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;

  return x < y ? -1 : x > y;
}

/* the CLOCK_BRIDGE_DIP_QUANTILE quantile keeps the target as the reserve
 * below the usual packets; and the deepest dip keeps at least
 * CLOCK_BRIDGE_DIP_GUARD_S below the rarest (a packet a busy host delivered
 * tens of ms late: with the quantile alone the next one like it runs the
 * FIFO dry) */
double
clock_depth_of_dips (const ClockDepth * d)
{
  double sorted[CLOCK_BRIDGE_DIPS];
  double q, deepest;
  size_t k;

  memcpy (sorted, d->dips, d->n_dips * sizeof (double));
  qsort (sorted, d->n_dips, sizeof (double), compare_doubles);
  k = (size_t) llround (CLOCK_BRIDGE_DIP_QUANTILE * (d->n_dips - 1));
  q = sorted[k];
  deepest = q + CLOCK_BRIDGE_DIP_SPREAD * (sorted[d->n_dips - 1] - q) +
      CLOCK_BRIDGE_DIP_GUARD_S - d->target_s;
  return q > deepest ? q : deepest;
}

void
clock_depth_window (ClockDepth * d, double span_s, double avg_s, int steady)
{
  double w;

  d->win_time += span_s;
  if (d->win_time < CLOCK_BRIDGE_SWING_WINDOW_S)
    return;
  /* the window's depth: the dips' quantile, or its lowest fill against the
   * average while few dips are known */
  w = d->n_dips >= CLOCK_BRIDGE_DIPS_MIN ? clock_depth_of_dips (d) :
      avg_s - d->win_min;
  d->fall_rate = 0.0;
  d->since_rise += d->win_time;
  if (steady && !d->win_trimmed && w >= 0.0) {
    w = bounded (d, w, 1);      /* the ceiling bounds the FIFO's use */
    if (!d->have_swing || w > d->swing) {
      d->swing = w;
      d->since_rise = 0.0;
    } else if (d->since_rise >= CLOCK_BRIDGE_SWING_HOLD_S) {
      /* steady input for a while: down toward the windows' depth, at
       * most CLOCK_BRIDGE_SWING_FALL (s per s), which the bridge plays
       * faster by while it falls */
      double fall = (d->swing - w) * d->win_time / CLOCK_BRIDGE_SWING_DECAY_S;
      double most = CLOCK_BRIDGE_SWING_FALL * d->win_time;
      fall = fall < most ? fall : most;
      d->swing -= fall;
      d->fall_rate = fall / d->win_time;
    }
    d->have_swing = 1;
  }
  d->win_time = 0.0;
  d->win_min = 1e9;
  d->win_trimmed = 0;
}

void
clock_depth_at_least (ClockDepth * d, double need_s)
{
  need_s = bounded (d, need_s, 0);
  if (!d->have_swing || need_s > d->swing) {
    d->swing = need_s;
    d->have_swing = 1;
    d->since_rise = 0.0;
    d->fall_rate = 0.0;
  }
}

int
clock_depth_known (const ClockDepth * d)
{
  return d->have_swing;
}

double
clock_depth_s (const ClockDepth * d)
{
  return d->swing;
}

double
clock_depth_fall_rate (const ClockDepth * d)
{
  return d->fall_rate;
}

unsigned long
clock_depth_limited (const ClockDepth * d)
{
  return d->limited;
}

int
clock_depth_at_max (const ClockDepth * d)
{
  return d->have_swing && d->swing >= d->max_s - 1e-9;
}
