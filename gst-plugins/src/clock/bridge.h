/* bridge: the clock bridge's DSP core (pure C, no GStreamer types).
 *
 * The input side writes frames when they arrive (the sender's clock); the
 * output side reads exactly as many frames as it asks for (the output
 * clock).  Between them: a planar FIFO (fifo.h), a windowed-sinc fractional
 * resampler (sinc.h) whose ratio the control loop (loop.h) steers so that
 * the FIFO stays at the target fill.
 *
 * States:
 *   filling  output is digital silence.  The first write that brings the
 *            fill to target + P/2 starts the output (P: the largest write
 *            since filling began; input comes in packets, so the fill falls
 *            by up to P between writes and its average is then the
 *            target): the oldest frames above target + P/2 are dropped and
 *            the audio fades in over CLOCK_BRIDGE_FADE_S (linear).
 *   running  the resampler reads the FIFO.  When it runs dry (no input:
 *            caller gone or stalled) the rest of the chunk is silence, one
 *            underrun is counted and the bridge goes back to filling (the
 *            drift estimate is kept).  When a write brings the fill above
 *            the limit (2 x target + CLOCK_BRIDGE_OVERFLOW_S + P; a burst)
 *            one overrun is counted, the oldest frames are dropped down to
 *            target + P/2 and the audio fades in again.
 *   draining after clock_bridge_drain (end of stream): the FIFO plays out
 *            without control, then clock_bridge_drained() is true.
 *
 * The fill is measured from the interpolation point to the newest frame;
 * it includes the interpolator's look-ahead (CLOCK_SINC_HALF frames). */
#ifndef CLOCK_BRIDGE_H
#define CLOCK_BRIDGE_H

#include <stddef.h>
#include <stdint.h>

#define CLOCK_BRIDGE_FADE_S 0.005
#define CLOCK_BRIDGE_OVERFLOW_S 0.1

typedef struct ClockBridge ClockBridge;

typedef struct
{
  double drift_ppm;             /* the loop's drift estimate */
  double fill_s;                /* filtered fill while running, raw while filling */
  double target_s;
  double ratio;                 /* input frames per output frame in use */
  uint64_t underruns, overruns;
  int running;
  uint64_t frames_in, frames_out;
} ClockBridgeStats;

/* NULL when out of memory; channels 1..8 */
ClockBridge *clock_bridge_new (unsigned channels, unsigned rate,
    double target_s);
void clock_bridge_free (ClockBridge * b);
/* back to filling, FIFO empty, counters and the drift estimate kept */
void clock_bridge_flush (ClockBridge * b);
/* t: the arrival time on the output clock, s (any origin, the same as
 * clock_bridge_read's) */
void clock_bridge_write (ClockBridge * b, const float *interleaved,
    size_t frames, double t);
/* always fills frames interleaved frames; t: now on the output clock, s.
 * The loop is fed the time average of the fill since the last read. */
void clock_bridge_read (ClockBridge * b, float *interleaved, size_t frames,
    double t);
/* end of input: play out what is left */
void clock_bridge_drain (ClockBridge * b);
int clock_bridge_drained (const ClockBridge * b);
void clock_bridge_stats (const ClockBridge * b, ClockBridgeStats * s);

#endif
