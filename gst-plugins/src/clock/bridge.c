/* bridge: see bridge.h. */
#include "bridge.h"

#include "depth.h"
#include "drift.h"
#include "fifo.h"
#include "loop.h"
#include "packets.h"
#include "resampler.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct ClockBridge
{
  unsigned channels, rate;
  size_t target;                /* frames */
  ClockFifo fifo;
  ClockResampler rs;
  ClockLoop loop;
  double ratio;
  int paced;                    /* the input waits: nothing is dropped */
  int waited;                   /* paced: the next write waited for room */
  int running, draining, drained;
  size_t fade_pos, fade_len;
  /* a trim while running: the old stream's next fade_len output frames,
   * crossfaded into the new position's (a splice, no step) */
  float *splice, *scratch;
  size_t splice_len, splice_pos;
  size_t settle_left;           /* output frames left in the settle window */
  uint64_t underruns, overruns, frames_in, frames_out;
  uint64_t ceiling_underruns;   /* underruns while D was at its ceiling */
  /* the fill as a function of time (see advance_to): its value at the last
   * event, the time of that event, the area under it since the last read */
  double cont_fill, cont_t, area, area_t0;
  int have_t;
  /* the estimators: the input's packet pattern P and G (packets.h), the
   * saw-tooth's depth D (depth.h), the drift: the lower envelope of the
   * arrival times (drift.h) */
  ClockPackets packets;
  ClockDepth depth;
  ClockDrift drift;
  /* an underrun while the input was on: refilling, and how long (output
   * frames of silence) since it ran dry */
  int refill;
  uint64_t refill_frames;
  uint64_t late_frames;         /* silence of underruns the input came back from */
  double last_gap_s;            /* the last such underrun's silence */
  double late_max;              /* s: the longest gap that ran it dry in
                                 * this stream (the overrun limit allows
                                 * for what it held up) */
};

ClockBridge *
clock_bridge_new (unsigned channels, unsigned rate, double target_s,
    int paced)
{
  ClockBridge *b;
  size_t limit;

  if (channels < 1 || channels > CLOCK_FIFO_MAX_CHANNELS || rate == 0)
    return NULL;
  b = calloc (1, sizeof (*b));
  if (b == NULL)
    return NULL;
  b->channels = channels;
  b->rate = rate;
  b->target = (size_t) llround (target_s * rate);
  b->paced = paced != 0;
  /* the FIFO: 2 x target + 20 ms (paced: the largest fill), one second of
   * input in a single write above that, and the taps */
  limit = 2 * b->target + (size_t) llround ((paced ?
          CLOCK_BRIDGE_PACED_MAX_FILL_S : CLOCK_BRIDGE_OVERFLOW_S) * rate);
  b->fade_len = (size_t) llround (CLOCK_BRIDGE_FADE_S * rate);
  b->splice = calloc (2 * b->fade_len * channels, sizeof (float));
  b->scratch = b->splice + b->fade_len * channels;
  if (b->splice == NULL || clock_fifo_init (&b->fifo, channels,
          2 * (limit + rate) + 2 * CLOCK_SINC_TAPS) != 0) {
    free (b->splice);
    free (b);
    return NULL;
  }
  clock_resampler_init (&b->rs);
  clock_packets_init (&b->packets, rate, b->paced);
  clock_depth_init (&b->depth, (double) b->target / rate,
      b->paced ? CLOCK_BRIDGE_PACED_MAX_DEPTH_S : CLOCK_BRIDGE_MAX_DEPTH_S);
  clock_drift_init (&b->drift);
  clock_loop_init (&b->loop, target_s);
  if (b->paced)
    b->loop.max_u = CLOCK_BRIDGE_PACED_MAX_U;
  b->ratio = 1.0;
  return b;
}

void
clock_bridge_set_ceiling (ClockBridge * b, double ceiling_s)
{
  double most = CLOCK_BRIDGE_MAX_DEPTH_S;

  if (b->paced)
    return;
  if (ceiling_s > 0.0 && ceiling_s - (double) b->target / b->rate < most)
    most = ceiling_s - (double) b->target / b->rate;
  clock_depth_set_max (&b->depth, most);
}

void
clock_bridge_free (ClockBridge * b)
{
  if (b == NULL)
    return;
  clock_fifo_clear (&b->fifo);
  free (b->splice);
  free (b);
}

/* frames from the interpolation point to the newest frame */
static double
fill_frames (const ClockBridge * b)
{
  return clock_resampler_ahead (&b->rs, &b->fifo);
}

/* The fill between events, in seconds: it falls at `ratio` seconds per
 * second while the output plays (the output consumes continuously; the
 * chunks are a detail of the implementation), and jumps at writes.  The
 * loop gets its exact time average over each read interval, so input
 * packets of any size and phase do not alias into the measurement. */
static void
advance_to (ClockBridge * b, double t)
{
  double dt = b->have_t ? t - b->cont_t : 0.0;
  double r = b->running ? b->ratio : 0.0;

  if (dt < 0.0)
    dt = 0.0;
  b->area += b->cont_fill * dt - r * dt * dt / 2.0;
  b->cont_fill -= r * dt;
  if (b->running)
    clock_depth_low (&b->depth, b->cont_fill);
  b->cont_t = t;
  if (!b->have_t) {
    b->area_t0 = t;
    b->have_t = 1;
  }
}

/* a new stream or sender: the drift line starts again */
static void
drift_restart (ClockBridge * b)
{
  clock_drift_restart (&b->drift);
}

/* one write of `frames` arriving at t: a point of the drift line */
static void
drift_note (ClockBridge * b, size_t frames, double t)
{
  /* a pause of the input (a caller gone, a stall): maybe another clock;
   * a write that waited for room came at the output's pace */
  if (clock_packets_idle (&b->packets, t, CLOCK_BRIDGE_DRIFT_GAP_S)
      || b->waited)
    drift_restart (b);
  b->waited = 0;
  clock_drift_note (&b->drift, t, frames, b->rate);
}

/* the drift in ppm (the long view's once it is long enough, whether the
 * line is ready or not: drift.h), or the loop's integrator while neither
 * is; NAN while it is not known yet (clock_drift_report_known) */
static double
drift_ppm (const ClockBridge * b)
{
  if (!clock_drift_report_known (&b->drift))
    return NAN;
  if (clock_drift_long_ready (&b->drift) || clock_drift_ready (&b->drift))
    return clock_drift_report_rate (&b->drift) * 1e6;
  return b->loop.integ * 1e6;
}

static void
empty_fifo (ClockBridge * b)
{
  clock_fifo_drop (&b->fifo, clock_fifo_frames (&b->fifo));
  b->rs.frac = 0.0;
}

void
clock_bridge_flush (ClockBridge * b)
{
  empty_fifo (b);
  clock_packets_reset (&b->packets);
  clock_depth_reset (&b->depth);
  b->running = b->draining = b->drained = 0;
  b->refill = 0;
  b->late_max = 0.0;
  drift_restart (b);
  b->ratio = 1.0 + b->loop.integ;
}

/* the largest depth kept below the average fill (the ceiling) */
static double
max_depth_s (const ClockBridge * b)
{
  return b->depth.max_s;
}

/* a write of frames at t in the packet pattern, and what the bridge learns
 * from it: a new stream (the depth is learnt again; the input stopped, so
 * an underrun was not a late packet); a gap that ran the FIFO dry (the
 * overrun limit allows for what it held up, which comes after it); the
 * packet after such a gap complete and large: the gap was late input, not
 * lost (the depth kept below the average is at least the gap less half
 * that packet) */
static void
note_write (ClockBridge * b, size_t frames, double t)
{
  ClockPacketsNote note;

  clock_packets_note (&b->packets, frames, t, b->running, &note);
  if (note.new_stream) {
    clock_depth_reset (&b->depth);
    b->refill = 0;
    b->late_max = 0.0;
  }
  if (note.late_gap_s > 0.0)
    clock_depth_at_least (&b->depth, note.late_gap_s -
        0.5 * (double) note.late_packet / b->rate);
  if (note.dry_gap_s > b->late_max)
    b->late_max = note.dry_gap_s < max_depth_s (b) ? note.dry_gap_s :
        max_depth_s (b);
}

/* the fill right after a packet at which the lowest fill, just before the
 * next packet, is the target: the target is the reserve below the
 * packets' saw-tooth.  Before the depth of the saw-tooth has been measured
 * (a new stream: a few packets and gaps seen) half a packet more: a later
 * packet than those seen while filling does not run it dry. */
static double
start_fill (const ClockBridge * b)
{
  double p = (double) (b->running ? clock_packets_closed (&b->packets) :
      clock_packets_size (&b->packets));
  double g = clock_packets_gap (&b->packets);
  double fill = (double) b->target + (g > p ? g : p);

  return clock_depth_known (&b->depth) ? fill : fill + 0.5 * p;
}

/* the fill at which the audio resumes after an underrun the input came
 * back from: the target + the packet (see clock_bridge_write) */
static double
resume_fill (const ClockBridge * b)
{
  return (double) b->target + (double) clock_packets_closed (&b->packets);
}

/* the average fill the loop keeps: target + the saw-tooth's depth below
 * its average (measured; P/2 until a window has been measured) */
static double
setpoint_s (const ClockBridge * b)
{
  double depth = clock_depth_known (&b->depth) ? clock_depth_s (&b->depth) :
      CLOCK_BRIDGE_DEPTH_GUESS * clock_packets_gap (&b->packets) / b->rate;

  return (double) b->target / b->rate + depth;
}

/* above it a write is an overrun: the setpoint + a packet + the target +
 * CLOCK_BRIDGE_OVERFLOW_S */
static double
limit_frames (const ClockBridge * b)
{
  return setpoint_s (b) * b->rate +
      (double) clock_packets_closed (&b->packets) + (double) b->target +
      (CLOCK_BRIDGE_OVERFLOW_S + b->late_max) * b->rate;
}

/* the loop holds the setpoint: no transient (the settle window), the
 * filtered fill near it (it still ripples by a fraction of a large
 * packet); only then is the saw-tooth's depth measured */
static int
steady (const ClockBridge * b)
{
  return b->settle_left == 0
      && fabs (clock_loop_fill (&b->loop) - setpoint_s (b)) <
      fmax (CLOCK_LOOP_NEAR_S,
          0.25 * (double) clock_packets_closed (&b->packets) / b->rate);
}

/* drops the oldest frames down to start_fill().  At a start the audio
 * fades in from silence; while running (an overrun, the settle window) the
 * cut is a splice: the old stream's next fade_len frames are resampled
 * first and crossfaded into the new position's over the next reads, so
 * the output has no step.  Paced: nothing is dropped (the fade is the
 * start's, from silence) */
static void
trim_to_target (ClockBridge * b)
{
  double excess;

  if (b->paced) {
    if (!b->running)
      b->fade_pos = 0;
    return;
  }
  if (b->running && b->fade_pos >= b->fade_len && fill_frames (b) >=
      b->fade_len + CLOCK_SINC_TAPS) {
    unsigned ch = b->channels;
    size_t k = clock_resampler_run (&b->rs, &b->fifo, b->ratio, b->scratch,
        b->fade_len);
    /* the tail is what the output would have played: a splice still in
     * progress (trims come one after another in a burst) mixed in */
    for (size_t i = 0; i < k && b->splice_pos < b->splice_len; i++) {
      float gain = (float) (b->splice_pos + 1) / (float) (b->splice_len + 1);
      const float *old = b->splice + b->splice_pos++ * ch;
      for (unsigned c = 0; c < ch; c++)
        b->scratch[i * ch + c] = gain * b->scratch[i * ch + c] +
            (1.0f - gain) * old[c];
    }
    memcpy (b->splice, b->scratch, k * ch * sizeof (float));
    b->splice_len = k;
    b->splice_pos = 0;
  } else {
    b->splice_len = b->splice_pos = 0;
  }
  excess = fill_frames (b) - start_fill (b);
  if (excess >= 1.0)
    clock_fifo_drop (&b->fifo, (size_t) excess);
  if (b->splice_len < b->fade_len)
    b->splice_len = b->fade_pos = 0;    /* no splice: fade in */
  clock_depth_skip_window (&b->depth);
}

/* paced: the fill a write may not exceed (a packet above the saw-tooth's
 * top, at most CLOCK_BRIDGE_PACED_MAX_FILL_S) */
static double
paced_limit_frames (const ClockBridge * b)
{
  double most = CLOCK_BRIDGE_PACED_MAX_FILL_S * b->rate;
  double limit = limit_frames (b);

  return limit < most ? limit : most;
}

void
clock_bridge_waited (ClockBridge * b)
{
  b->waited = 1;
}

int
clock_bridge_full (const ClockBridge * b, size_t frames)
{
  double fill, limit;

  if (!b->paced || !b->running || b->draining)
    return 0;
  fill = fill_frames (b);
  limit = paced_limit_frames (b);
  /* a write larger than the limit goes in once half of it has played */
  return fill + (double) frames > limit && fill > 0.5 * limit;
}

static void
open_settle_window (ClockBridge * b)
{
  b->settle_left = (size_t) llround (CLOCK_BRIDGE_SETTLE_S * b->rate);
  /* the filters start at the expected average */
  clock_loop_set_target (&b->loop, setpoint_s (b));
  clock_loop_restart (&b->loop, setpoint_s (b));
  b->ratio = 1.0 + b->loop.u;
}

static void
start (ClockBridge * b)
{
  clock_depth_new_window (&b->depth);
  trim_to_target (b);
  b->running = 1;
  open_settle_window (b);
}

/* the input came back after an underrun: play from here */
static void
resume (ClockBridge * b)
{
  b->late_frames += b->refill_frames;
  b->last_gap_s = (double) b->refill_frames / b->rate;
  b->refill = 0;
  b->running = 1;
  b->fade_pos = 0;
  clock_depth_new_window (&b->depth);
  clock_depth_skip_window (&b->depth);  /* not the usual pattern */
  clock_loop_set_target (&b->loop, setpoint_s (b));
  clock_loop_restart (&b->loop, fill_frames (b) / b->rate);
  b->ratio = 1.0 + b->loop.u;
}

void
clock_bridge_write (ClockBridge * b, const float *interleaved, size_t frames,
    double t)
{
  ClockFifo *f = &b->fifo;

  if (b->draining || frames == 0)
    return;
  advance_to (b, t);
  /* a packet begins (not the rest of one): its dip, while the loop holds */
  if (b->running && b->settle_left == 0
      && clock_packets_idle (&b->packets, t, CLOCK_BRIDGE_CLUSTER_S))
    clock_depth_dip (&b->depth, clock_loop_fill (&b->loop) - b->cont_fill);
  drift_note (b, frames, t);
  b->frames_in += frames;
  if (frames > f->capacity / 2) {       /* keep the newest part only */
    interleaved += (frames - f->capacity / 2) * b->channels;
    frames = f->capacity / 2;
  }
  if (!b->running && clock_fifo_frames (f) == 0)
    /* the interpolator's history before the first frame */
    clock_fifo_write_silence (f, CLOCK_SINC_HALF - 1);
  if (clock_fifo_room (f) < frames)
    clock_fifo_drop (f, frames - clock_fifo_room (f));
  {
    /* measured against the complete packets: a burst is not a packet */
    double limit = limit_frames (b);

    clock_fifo_write (f, interleaved, frames);
    note_write (b, frames, t);
    if (!b->running && b->refill) {
      /* input back after an underrun: the audio resumes at the reserve +
       * one packet (a late packet brings what was held up with it, usually
       * that much, so the hole is about as long as the input was late) and
       * nothing is trimmed.  Not at the start fill: its G is now the gap
       * that ran it dry, and waiting for target + that gap made the hole
       * 2-3 times the lateness (24 pipelines' recordings at 50 ms:
       * 169-191 ms holes for 86-121 ms late, 37-61 ms now) and played the
       * backlog late for long after (average fill up to 284 ms at 20 ms,
       * 179 now).  Resuming at one packet without the reserve stuttered
       * on bursty input, each hole running it dry again before the loop
       * had built the reserve up */
      if (fill_frames (b) >= resume_fill (b))
        resume (b);
    } else if (!b->running) {
      /* two packets seen: the packet size is known (paced: at the latest
       * when the largest fill is reached; the input waits from then on) */
      if ((clock_packets_count (&b->packets) >= 2
              && fill_frames (b) >= start_fill (b))
          || (b->paced && fill_frames (b) >=
              CLOCK_BRIDGE_PACED_MAX_FILL_S * b->rate))
        start (b);
    } else if (!b->paced && fill_frames (b) > limit) {
      if (b->settle_left == 0)  /* once per episode */
        b->overruns++;
      /* the drift line counts every frame received, trimmed or not: its
       * offset does not jump */
      clock_packets_burst (&b->packets);        /* not a packet */
      trim_to_target (b);
      open_settle_window (b);
    }
  }
  b->cont_fill = fill_frames (b) / b->rate;
}

size_t
clock_bridge_read (ClockBridge * b, float *out, size_t frames, double t)
{
  unsigned ch = b->channels;
  size_t k = 0;
  double span;

  b->frames_out += frames;
  if (b->running && b->settle_left > 0) {
    /* a burst left the fill above its saw-tooth's peak: trim again */
    if (!b->paced && fill_frames (b) > start_fill (b) +
        CLOCK_BRIDGE_SETTLE_MARGIN_S * b->rate) {
      trim_to_target (b);
      clock_loop_restart (&b->loop, setpoint_s (b));
      b->cont_fill = fill_frames (b) / b->rate;
    }
    b->settle_left = b->settle_left > frames ? b->settle_left - frames : 0;
  }
  advance_to (b, t);
  span = t - b->area_t0;
  if (b->running && !b->draining) {
    double avg = span > 0.0 ? b->area / span : b->cont_fill;
    clock_depth_window (&b->depth, span, clock_loop_fill (&b->loop),
        steady (b));
    clock_loop_set_target (&b->loop, setpoint_s (b));
    /* the drift line, once it is long enough, is the loop's integral
     * part: the fill's disturbances (late packets on a busy host) then
     * only act through the proportional part, for as long as they last */
    if (!b->paced && clock_drift_ready (&b->drift))
      b->loop.integ = clock_drift_rate (&b->drift);
    /* a falling depth: the output plays that much faster, so the fill
     * follows the setpoint down instead of lagging it (the loop alone
     * follows a ramp of r s per s r / (2 w) behind: 20 ms at 2 ms per s,
     * far enough from the setpoint that no window is measured) */
    b->ratio = clock_loop_update (&b->loop, avg, (double) frames / b->rate) +
        clock_depth_fall_rate (&b->depth);
  }
  b->area = 0.0;
  b->area_t0 = t;

  if (b->running) {
    k = clock_resampler_run (&b->rs, &b->fifo, b->ratio, out, frames);
    for (size_t i = 0; i < k && b->splice_pos < b->splice_len; i++) {
      float gain = (float) (b->splice_pos + 1) / (float) (b->splice_len + 1);
      const float *old = b->splice + b->splice_pos++ * ch;
      for (unsigned c = 0; c < ch; c++)
        out[i * ch + c] = gain * out[i * ch + c] + (1.0f - gain) * old[c];
    }
    for (size_t i = 0; i < k && b->fade_pos < b->fade_len; i++) {
      float gain = (float) (b->fade_pos++ + 1) / (float) b->fade_len;
      for (unsigned c = 0; c < ch; c++)
        out[i * ch + c] *= gain;
    }
    if (k < frames) {
      /* dry: the audio fades out over what is left of it, the rest is
       * silence.  Fewer frames left than a fade (or the chunk less one,
       * if that is shorter: a dry chunk is one with fewer frames than
       * asked for, failover.c's model of this fade) would make a steep
       * fade, a click: the last frames are played on, back and forth (a
       * reflection, no step), to that length and faded out over it */
      size_t want = frames - 1 < b->fade_len ? frames - 1 : b->fade_len;
      size_t n;
      if (k > 0 && k < want) {
        for (size_t t = 0; t < want - k; t++) {
          size_t p = t % (2 * k);
          size_t src = p < k ? k - 1 - p : p - k;
          memcpy (out + (k + t) * ch, out + src * ch, ch * sizeof (float));
        }
        k = want;
      }
      n = k < b->fade_len ? k : b->fade_len;
      for (size_t j = 0; j < n; j++) {
        float gain = (float) (n - j) / (float) (n + 1);
        for (unsigned c = 0; c < ch; c++)
          out[(k - n + j) * ch + c] *= gain;
      }
      if (b->draining) {
        b->drained = 1;
      } else {
        b->underruns++;
        if (clock_depth_at_max (&b->depth))
          b->ceiling_underruns++;
        b->refill = 1;
        b->refill_frames = 0;
      }
      b->running = 0;
      b->splice_len = b->splice_pos = 0;
      empty_fifo (b);
      clock_packets_emptied (&b->packets, !b->draining);
    }
  }
  if (k < frames) {
    memset (out + k * ch, 0, (frames - k) * ch * sizeof (float));
    if (b->refill)
      b->refill_frames += frames - k;
  }
  if (b->draining && !b->running)
    b->drained = 1;
  /* re-anchored on the FIFO itself after each read */
  b->cont_fill = fill_frames (b) / b->rate;
  return k;
}

void
clock_bridge_drain (ClockBridge * b)
{
  b->draining = 1;
  if (!b->running && fill_frames (b) >= CLOCK_SINC_HALF + 1) {
    b->running = 1;
    b->fade_pos = 0;
  }
}

int
clock_bridge_drained (const ClockBridge * b)
{
  return b->drained;
}

void
clock_bridge_stats (const ClockBridge * b, ClockBridgeStats * s)
{
  s->drift_ppm = drift_ppm (b);
  if (clock_drift_estimate (&b->drift, &s->drift_estimate_ppm,
          &s->drift_uncertainty_ppm)) {
    s->drift_estimate_ppm *= 1e6;
    s->drift_uncertainty_ppm *= 1e6;
  } else {
    s->drift_estimate_ppm = s->drift_uncertainty_ppm = NAN;
  }
  s->fill_s = b->running ? clock_loop_fill (&b->loop) :
      fill_frames (b) / b->rate;
  s->target_s = (double) b->target / b->rate;
  s->packet_s = (double) clock_packets_size (&b->packets) / b->rate;
  s->setpoint_s = setpoint_s (b);
  s->ratio = b->ratio;
  s->relax_rate = b->running ? clock_depth_fall_rate (&b->depth) : 0.0;
  s->underruns = b->underruns;
  s->overruns = b->overruns;
  s->running = b->running;
  s->frames_in = b->frames_in;
  s->frames_out = b->frames_out;
  s->inserted_s = (double) b->late_frames / b->rate;
  s->last_gap_s = b->last_gap_s;
  s->depth_s = s->setpoint_s - s->target_s;
  s->ceiling_s = s->target_s + max_depth_s (b);
  s->ceiling_hits = clock_depth_limited (&b->depth);
  s->ceiling_underruns = b->ceiling_underruns;
}
