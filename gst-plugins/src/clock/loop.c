/* loop: see loop.h. */
#include "loop.h"

#include <math.h>

static double
clamp (double v, double lim)
{
  return v > lim ? lim : v < -lim ? -lim : v;
}

void
clock_loop_init (ClockLoop * l, double target_s)
{
  l->target = target_s;
  l->integ = 0.0;
  l->max_u = CLOCK_LOOP_MAX_U;
  clock_loop_restart (l, target_s);
}

void
clock_loop_set_target (ClockLoop * l, double target_s)
{
  /* a setpoint that jumps up is an offset to move, not a drift to learn:
   * the integrator holds until the fill has reached it (falls are slow) */
  if (target_s - l->target > CLOCK_LOOP_SETPOINT_STEP_S) {
    l->hold = 1;
    l->hold_t = 0.0;
  }
  l->target = target_s;
}

void
clock_loop_restart (ClockLoop * l, double fill_s)
{
  l->lp1 = l->lp2 = fill_s;
  l->hold = 0;
  l->u = l->integ;
  l->t = 0.0;
}

double
clock_loop_update (ClockLoop * l, double fill_s, double dt)
{
  double a = 1.0 - exp (-dt / CLOCK_LOOP_FILTER_S);
  double w = CLOCK_LOOP_W_SLOW + (CLOCK_LOOP_W_FAST - CLOCK_LOOP_W_SLOW) *
      exp (-l->t / CLOCK_LOOP_SCHEDULE_S);
  double e;

  l->lp1 += a * (fill_s - l->lp1);
  l->lp2 += a * (l->lp1 - l->lp2);
  e = l->lp2 - l->target;
  /* anti-windup: a large error is a fill offset (a burst, a start), not a
   * drift: the integrator sees at most +-NEAR and stops while u is
   * at its bound */
  l->hold_t += dt;
  if (l->hold && (fabs (e) < CLOCK_LOOP_SETPOINT_STEP_S
          || l->hold_t > CLOCK_LOOP_HOLD_S))
    l->hold = 0;
  if (!l->hold && fabs (2.0 * CLOCK_LOOP_ZETA * w * e + l->integ) <
      l->max_u)
    l->integ = clamp (l->integ + w * w * clamp (e, CLOCK_LOOP_NEAR_S) *
        dt, CLOCK_LOOP_MAX_DRIFT);
  l->u = clamp (2.0 * CLOCK_LOOP_ZETA * w * e + l->integ, l->max_u);
  l->t += dt;
  return 1.0 + l->u;
}

double
clock_loop_fill (const ClockLoop * l)
{
  return l->lp2;
}
