/* bridge: the clock bridge's DSP core (pure C, no GStreamer types).
 *
 * The input side writes frames when they arrive (the sender's clock); the
 * output side reads exactly as many frames as it asks for (the output
 * clock).  Between them: a planar FIFO (fifo.h), a windowed-sinc fractional
 * resampler (sinc.h) whose ratio the control loop (loop.h) steers so that
 * the FIFO stays at the target fill.
 *
 * The target is the reserve: the lowest fill, just before a packet
 * arrives.  Input comes in packets (P frames arriving together: writes
 * less than half a write's duration and CLOCK_BRIDGE_CLUSTER_S apart; the
 * largest in the last 10-20 s of input).  An ffmpeg MPEG-TS sender packs 8
 * AAC frames (170 ms) per PES, decoded back to back; a steady sender one
 * frame (21 ms); an Icecast source leaves 93 ms holes and then catches up.
 * The fill is a saw-tooth; the loop keeps its average at the setpoint
 * target + D, D the saw-tooth's depth below its average: the fill just
 * before each packet (its dip) is recorded against the loop's average, and
 * D is the CLOCK_BRIDGE_DIP_QUANTILE quantile of the last
 * CLOCK_BRIDGE_DIPS dips (per 1 s window of output; the window's lowest
 * fill until CLOCK_BRIDGE_DIPS_MIN dips are known, max(P, G)/2 before the
 * first window), peak-hold, falling toward smaller depths with a 30 s time
 * constant but at most 0.02 ms per s.  So the usual packet pattern keeps
 * the target as its reserve, and the target is the margin for the packet
 * that comes later than usual (a sender's scheduling, the network); a
 * quantile, not the deepest dip, so that such a packet does not move the
 * setpoint (and the latency) each time it comes.
 *
 * The drift reported is not the loop's integrator but the slope of the
 * input against the output clock: a least-squares line through (arrival
 * time, frames received) of every packet since the stream (re)started,
 * weighted with a CLOCK_BRIDGE_DRIFT_WINDOW_S forgetting time.  The packet
 * pattern and the loop's corrections do not enter it; the integrator
 * until CLOCK_BRIDGE_DRIFT_MIN_S of input have been seen.  A pause of the
 * input longer than CLOCK_BRIDGE_DRIFT_GAP_S (a caller gone or stalled:
 * maybe another sender) or an overrun (a burst: the line's offset jumped)
 * starts the line again, and so does a line that disagrees with the
 * integrator by more than CLOCK_BRIDGE_DRIFT_AGREE_PPM for
 * CLOCK_BRIDGE_DRIFT_AGREE_S (the sender's rate stepped); while they
 * disagree the integrator is reported.

 * States:
 *   filling  output is digital silence.  The first write that brings the
 *            fill to target + P starts the output: the oldest frames above
 *            it are dropped and the audio fades in over CLOCK_BRIDGE_FADE_S
 *            (linear).
 *   running  the resampler reads the FIFO.  When it runs dry (no input:
 *            caller gone or stalled) the rest of the chunk is silence, one
 *            underrun is counted and the bridge goes back to filling (the
 *            drift estimate and P are kept).  When input comes back within
 *            CLOCK_BRIDGE_PAUSE_S, the gap was the input's pattern (a
 *            packet later than the depth allowed for): the depth becomes
 *            at least that gap less half a packet, and the next start
 *            fill covers the gap.  Input back after a pause of CLOCK_BRIDGE_PAUSE_S or
 *            more (maybe another sender): the packet pattern and depth
 *            are learnt again, as for a new stream.  When a write brings the fill
 *            above the limit (2 x target + CLOCK_BRIDGE_OVERFLOW_S + P; a
 *            burst) one overrun is counted, the oldest frames are dropped
 *            down to target + P and the audio fades in again.
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

#define CLOCK_BRIDGE_FADE_S 0.005
#define CLOCK_BRIDGE_OVERFLOW_S 0.02
#define CLOCK_BRIDGE_SETTLE_S 0.5
#define CLOCK_BRIDGE_CLUSTER_S 0.005
#define CLOCK_BRIDGE_PACKET_WINDOW_S 10.0
#define CLOCK_BRIDGE_SWING_WINDOW_S 1.0
#define CLOCK_BRIDGE_SWING_DECAY_S 30.0
#define CLOCK_BRIDGE_SWING_FALL 0.00002
#define CLOCK_BRIDGE_DEPTH_GUESS 0.5
#define CLOCK_BRIDGE_MAX_DEPTH_S 0.5
#define CLOCK_BRIDGE_PACED_MAX_DEPTH_S 2.0
#define CLOCK_BRIDGE_PACED_MAX_FILL_S 4.0
#define CLOCK_BRIDGE_PACED_MAX_U 0.002
#define CLOCK_BRIDGE_SETTLE_MARGIN_S 0.005
#define CLOCK_BRIDGE_DIPS 256
#define CLOCK_BRIDGE_DIPS_MIN 8
#define CLOCK_BRIDGE_DIP_QUANTILE 0.95
#define CLOCK_BRIDGE_DRIFT_WINDOW_S 60.0
#define CLOCK_BRIDGE_DRIFT_MIN_S 10.0
#define CLOCK_BRIDGE_DRIFT_GAP_S 1.0
#define CLOCK_BRIDGE_PAUSE_S 1.0
#define CLOCK_BRIDGE_DRIFT_AGREE_PPM 500.0
#define CLOCK_BRIDGE_DRIFT_AGREE_S 5.0

typedef struct ClockBridge ClockBridge;

typedef struct
{
  double drift_ppm;             /* the input's slope against the output clock */
  double fill_s;                /* filtered fill while running, raw while filling */
  double target_s;
  double packet_s;              /* P: the input's packet (burst) size */
  double setpoint_s;            /* the average fill the loop keeps */
  double ratio;                 /* input frames per output frame in use */
  uint64_t underruns, overruns;
  int running;
  uint64_t frames_in, frames_out;
} ClockBridgeStats;

/* NULL when out of memory; channels 1..8; paced: see above */
ClockBridge *clock_bridge_new (unsigned channels, unsigned rate,
    double target_s, int paced);
void clock_bridge_free (ClockBridge * b);
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
 * The loop is fed the time average of the fill since the last read. */
void clock_bridge_read (ClockBridge * b, float *interleaved, size_t frames,
    double t);
/* end of input: play out what is left */
void clock_bridge_drain (ClockBridge * b);
int clock_bridge_drained (const ClockBridge * b);
void clock_bridge_stats (const ClockBridge * b, ClockBridgeStats * s);

#endif
