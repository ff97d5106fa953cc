/* bridge: the clock bridge's DSP core (pure C, no GStreamer types): its
 * state machine.
 *
 * The input side writes frames when they arrive (the sender's clock); the
 * output side reads exactly as many frames as it asks for (the output
 * clock).  Between them: a planar FIFO (fifo.h), a windowed-sinc fractional
 * resampler (sinc.h) whose ratio the control loop (loop.h) steers so that
 * the FIFO stays at the target fill.  Three estimators watch the input:
 * its packet pattern (packets.h), the depth of the fill's saw-tooth
 * (depth.h) and its drift (drift.h).
 *
 * The target is the reserve: the lowest fill, just before a packet
 * arrives.  Input comes in packets: P frames arriving together, the
 * largest in the last 10-20 s of input; G, the longest time between them
 * (packets.h).  The fill is a saw-tooth; the loop keeps its average at the
 * setpoint target + D, D the saw-tooth's depth below its average (depth.h:
 * a quantile of the fill just before each packet, against the loop's
 * average, peak-hold, falling back toward the input's depth once it has
 * been steady, the output then playing faster by the fall rate so that
 * the fill follows; max(P, G) x CLOCK_BRIDGE_DEPTH_GUESS before the first
 * window, at most CLOCK_BRIDGE_MAX_DEPTH_S or the ceiling less the
 * target: clock_bridge_set_ceiling).  So the
 * usual packet pattern keeps the target as its reserve, and the target is
 * the margin for the packet that comes later than usual (a sender's
 * scheduling, the network).  The bridge measures D only while the loop
 * holds the setpoint (no settle window, the filtered fill near it) and
 * records a dip at each packet's first write while it does.
 *
 * The drift reported is not the loop's integrator but the slope of the
 * input against the output clock: the lower envelope of the arrival times
 * (drift.h), which lateness does not move.  The packet pattern and the
 * loop's corrections do not enter it; the integrator until the line spans
 * CLOCK_DRIFT_MIN_S.  Once it does, the line is the loop's integral part
 * (late packets then move the ratio only through the proportional part,
 * while they last).  A pause of the input longer than
 * CLOCK_BRIDGE_DRIFT_GAP_S (a caller gone or stalled: maybe another
 * sender) starts the line again; drift.h says how a step of the sender's
 * rate or offset is followed.

 * States:
 *   filling  output is digital silence.  The first write that brings the
 *            fill to target + P starts the output: the oldest frames above
 *            it are dropped and the audio fades in over CLOCK_BRIDGE_FADE_S
 *            (linear).
 *   running  the resampler reads the FIFO.  When it runs dry (no input:
 *            caller gone or stalled, or a packet later than the reserve)
 *            the audio fades out over what is left of it (at most
 *            CLOCK_BRIDGE_FADE_S; less than that or than the chunk less
 *            one frame is played on back and forth to that length first,
 *            so the fade is never steep), the rest of the chunk is silence, one
 *            underrun is counted and the bridge refills (the drift
 *            estimate and P are kept).  Input back within
 *            CLOCK_BRIDGE_PAUSE_S: the audio resumes, fading in, as soon as
 *            the FIFO holds the target + one packet (a late packet brings
 *            what was held up with it: usually at once), and nothing is
 *            trimmed; the silence counts as inserted
 *            (stats inserted_s: the input had audio, it came late).  The
 *            gap was the input's pattern (a packet later than the depth
 *            allowed for): the depth becomes at least that gap less half a
 *            packet, and the overrun limit allows for the audio it held up.
 *            Input back after a pause of CLOCK_BRIDGE_PAUSE_S or more
 *            (maybe another sender): the packet pattern and depth are
 *            learnt again, as for a new stream.  When a write brings the
 *            fill above the limit (setpoint + P + target +
 *            CLOCK_BRIDGE_OVERFLOW_S + the longest gap that ran it dry; a
 *            burst) one overrun is counted, the oldest frames are dropped
 *            down to target + P; the cut is spliced (the old position's
 *            next CLOCK_BRIDGE_FADE_S crossfaded into the new one's).
 *            Settle window: for CLOCK_BRIDGE_SETTLE_S after a start or an
 *            overrun (the rest of a burst: a sender catching up, a pipe's
 *            backlog, the rest of a packet) any fill above target + P +
 *            SETTLE_MARGIN at a read is trimmed the same way, no further
 *            overrun is counted, and the loop's filters restart.
 *   draining after clock_bridge_drain (end of stream): the FIFO plays out
 *            without control, then clock_bridge_drained() is true.
 *
 * Paced input (clock_bridge_new's `paced`): for an input that can wait (a
 * pipe or file: a station's Icecast source behind the harbor, which sends
 * Ogg pages of up to a second and faster than real time when it catches
 * up), nothing is ever dropped.  The element asks clock_bridge_full()
 * before each write and waits while it is true (the back-pressure reaches
 * the source through the pipe and TCP); no trim at a start, an overrun or
 * in the settle window; the depth kept below the average may grow to
 * CLOCK_BRIDGE_PACED_MAX_DEPTH_S; a start comes at the latest when the fill
 * reaches CLOCK_BRIDGE_PACED_MAX_FILL_S.  Audio that came early is played
 * late, never cut: the loop takes the fill back to its setpoint with the
 * ratio within CLOCK_BRIDGE_PACED_MAX_U of 1 (2000 ppm, 3.5 cents: the
 * drift of a +-1000 ppm sender and as much again to drain a backlog, about
 * 1000 s per second held).  A write that waited says nothing of the
 * sender's clock: the drift line starts again after it (the integrator is
 * reported until the line is long enough).
 *
 * The fill is measured from the interpolation point to the newest frame;
 * it includes the interpolator's look-ahead (CLOCK_SINC_HALF frames). */
#ifndef CLOCK_BRIDGE_H
#define CLOCK_BRIDGE_H

#include <stddef.h>
#include <stdint.h>

/* the estimators' constants are in packets.h (CLOCK_BRIDGE_CLUSTER_S,
 * _BACKLOG_RATIO, _PACKET_WINDOW_S, _PAUSE_S) and depth.h
 * (CLOCK_BRIDGE_SWING_*, _DIPS, _DIPS_MIN, _DIP_*) */
#define CLOCK_BRIDGE_FADE_S 0.005
#define CLOCK_BRIDGE_OVERFLOW_S 0.02
#define CLOCK_BRIDGE_SETTLE_S 0.5
#define CLOCK_BRIDGE_DEPTH_GUESS 0.5
#define CLOCK_BRIDGE_MAX_DEPTH_S 0.5
#define CLOCK_BRIDGE_PACED_MAX_DEPTH_S 2.0
#define CLOCK_BRIDGE_PACED_MAX_FILL_S 4.0
#define CLOCK_BRIDGE_PACED_MAX_U 0.002
#define CLOCK_BRIDGE_SETTLE_MARGIN_S 0.005
#define CLOCK_BRIDGE_DRIFT_GAP_S 1.0

typedef struct ClockBridge ClockBridge;

typedef struct
{
  double drift_ppm;             /* the input's slope against the output clock */
  /* the drift and its ~95 % half-width from about 10 s of input on,
   * whether drift_ppm is known or not (clock_drift_estimate), ppm; NAN
   * while there is none */
  double drift_estimate_ppm, drift_uncertainty_ppm;
  double fill_s;                /* filtered fill while running, raw while filling */
  double target_s;
  double packet_s;              /* P: the input's packet (burst) size */
  double setpoint_s;            /* the average fill the loop keeps */
  double ratio;                 /* input frames per output frame in use */
  double relax_rate;            /* of which the setpoint's fall (s per s) */
  uint64_t underruns, overruns;
  int running;
  uint64_t frames_in, frames_out;
  /* silence the output carried between an underrun and the input's
   * return within CLOCK_BRIDGE_PAUSE_S (the input was late, not gone):
   * in all, and the last such hole, s */
  double inserted_s, last_gap_s;
  /* the setpoint's part above the target (the saw-tooth's depth D) and
   * the setpoint's ceiling (target + the largest D), s; episodes in which
   * the input asked for a depth above the ceiling, and underruns while D
   * was held at it (the silence they inserted is in inserted_s) */
  double depth_s, ceiling_s;
  uint64_t ceiling_hits, ceiling_underruns;
} ClockBridgeStats;

/* NULL when out of memory; channels 1..8; paced: see above */
ClockBridge *clock_bridge_new (unsigned channels, unsigned rate,
    double target_s, int paced);
void clock_bridge_free (ClockBridge * b);
/* the ceiling of the setpoint (target + D), s: D at most ceiling_s -
 * target (and CLOCK_BRIDGE_MAX_DEPTH_S); 0: no ceiling of its own.  Not
 * for a paced input, which waits instead of running dry */
void clock_bridge_set_ceiling (ClockBridge * b, double ceiling_s);
/* back to filling, FIFO empty, counters and the drift estimate kept */
void clock_bridge_flush (ClockBridge * b);
/* t: the arrival time on the output clock, s (any origin, the same as
 * clock_bridge_read's) */
void clock_bridge_write (ClockBridge * b, const float *interleaved,
    size_t frames, double t);
/* paced: a write of `frames` now would exceed the limit; wait for reads
 * (always 0 unpaced, while filling or draining) */
int clock_bridge_full (const ClockBridge * b, size_t frames);
/* paced: the next write waited for room (it arrives on the output's pace,
 * not the sender's: the drift line starts again after it) */
void clock_bridge_waited (ClockBridge * b);
/* always fills frames interleaved frames; t: now on the output clock, s.
 * The loop is fed the time average of the fill since the last read.
 * Returns how many of the first frames are audio (the rest is silence: it
 * ran dry after them, or was not running). */
size_t clock_bridge_read (ClockBridge * b, float *interleaved, size_t frames,
    double t);
/* end of input: play out what is left */
void clock_bridge_drain (ClockBridge * b);
int clock_bridge_drained (const ClockBridge * b);
void clock_bridge_stats (const ClockBridge * b, ClockBridgeStats * s);

#endif
