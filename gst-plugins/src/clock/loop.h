/* loop: the clock bridge's control loop (pure C, no GStreamer types).
 *
 * Keeps the FIFO fill at the target by steering the resampling ratio
 * (input frames consumed per output frame).  The plant: with the input
 * running at (1 + d) times the output clock and the ratio at 1 + u, the
 * fill (in seconds) moves at d - u seconds per second.
 *
 * The fill is measured once per output chunk.  Input arrives in packets
 * (21 ms AAC frames, 80 ms Icecast bursts), so the raw fill is a saw-tooth;
 * the loop sees it through two cascaded one-pole low-passes of
 * CLOCK_LOOP_FILTER_S each.  The error e = filtered fill - target drives a
 * PI controller, written as a second-order loop with damping 1:
 *
 *   u = 2 w e + I,   dI/dt = w^2 e      (w: natural frequency, rad/s)
 *
 * I converges to the input's drift d: it is the drift estimate (held
 * while u is at its bound, so a recovery does not disturb it).  The loop
 * starts fast and slows down (gain scheduling):
 *
 *   w(t) = W_SLOW + (W_FAST - W_SLOW) exp(-t / SCHEDULE_S)
 *
 * with t the time since the last (re)start: 1/w = 3.3 s at a start, so a
 * new caller's clock is acquired in seconds, 20 s once settled, so that a
 * busy host's late and bunched packets leave the pitch alone (the
 * proportional part is 2 w e: 1 ms of fill error is 100 ppm of pitch).
 * Nothing but a restart (a new stream, a refill) makes it fast again: the
 * filtered fill of a loaded host wanders by several ms for seconds, and a
 * loop that took every such excursion for a step of the input rate and
 * restarted fast followed that noise with its pitch (a mean
 * |ratio - 1| of 2000 ppm at 24 pipelines on one shared sender).  A real
 * step of the input rate is met by the slow loop (a 2000 ppm step peaks at
 * 2000e-6 / (e W_SLOW) = 15 ms of fill error, inside the jitter reserve)
 * and by the drift line, which becomes I once it is ready (bridge.c).
 * u is bounded to +-CLOCK_LOOP_MAX_U (or max_u, set after init: the
 * bridge's paced input drains a backlog more gently), I to
 * +-CLOCK_LOOP_MAX_DRIFT; I integrates e bounded to +-CLOCK_LOOP_NEAR_S and
 * holds while u is at its bound (anti-windup: a large error is a fill
 * offset, not a drift).  When the setpoint jumps up by more than
 * CLOCK_LOOP_SETPOINT_STEP_S, I also holds until the fill is within that
 * of the new setpoint, at most CLOCK_LOOP_HOLD_S: the P term moves the
 * fill, I keeps the drift. */
#ifndef CLOCK_LOOP_H
#define CLOCK_LOOP_H

#define CLOCK_LOOP_FILTER_S 0.25
#define CLOCK_LOOP_W_FAST 0.3
#define CLOCK_LOOP_W_SLOW 0.05
#define CLOCK_LOOP_SCHEDULE_S 20.0
#define CLOCK_LOOP_ZETA 1.0
/* an error this small is the loop's own ripple (bridge.c: steady) */
#define CLOCK_LOOP_NEAR_S 0.002
#define CLOCK_LOOP_SETPOINT_STEP_S 0.0005
#define CLOCK_LOOP_HOLD_S 5.0
#define CLOCK_LOOP_MAX_U 0.005
#define CLOCK_LOOP_MAX_DRIFT 0.003

typedef struct
{
  double target;                /* s */
  double lp1, lp2;              /* the fill through the low-passes, s */
  double integ;                 /* I */
  double u;                     /* the ratio offset in use */
  double t;                     /* s since the last restart */
  int hold;                     /* I holds: the setpoint moved */
  double hold_t;                /* s since it moved */
  double max_u;                 /* u's bound: CLOCK_LOOP_MAX_U unless set */
} ClockLoop;

void clock_loop_init (ClockLoop * l, double target_s);
/* after a refill: the filters restart at fill, the schedule restarts fast;
 * the drift estimate is kept (the same sender usually comes back) */
void clock_loop_restart (ClockLoop * l, double fill_s);
/* the average fill to keep, s */
void clock_loop_set_target (ClockLoop * l, double target_s);
/* one step: the raw fill now, dt seconds since the last step; returns the
 * ratio (1 + u) to use until the next step */
double clock_loop_update (ClockLoop * l, double fill_s, double dt);
/* the filtered fill, s */
double clock_loop_fill (const ClockLoop * l);

#endif
