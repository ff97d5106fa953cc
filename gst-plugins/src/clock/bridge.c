/* bridge: see bridge.h. */
#include "bridge.h"

#include "drift.h"
#include "fifo.h"
#include "loop.h"
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
  /* the input's packet P: frames arriving together (writes less than
   * CLOCK_BRIDGE_CLUSTER_S and half a write apart), the largest in this and
   * the previous CLOCK_BRIDGE_PACKET_WINDOW_S window of input time */
  size_t cluster, pkt_cur, pkt_prev, last_write;
  double gap_cur, gap_prev;     /* the longest gap between packets, frames */
  double last_write_t, pkt_window_t0;
  int have_write;
  unsigned episode_clusters;    /* packets completed since filling began */
  int ran_dry;                  /* an underrun, no packet since */
  double dry_gap;               /* s: the gap that ran it dry, its packet
                                 * still arriving */
  /* the saw-tooth's depth: average minus lowest fill per window of
   * CLOCK_BRIDGE_SWING_WINDOW_S output, and its peak-hold (s) */
  double win_min, win_time, swing;
  int have_swing, win_trimmed;
  size_t settle_left;           /* output frames left in the settle window */
  uint64_t underruns, overruns, frames_in, frames_out;
  /* the fill as a function of time (see advance_to): its value at the last
   * event, the time of that event, the area under it since the last read */
  double cont_fill, cont_t, area, area_t0;
  int have_t;
  /* the fill just before each packet below the loop's average (s), a ring */
  double dips[CLOCK_BRIDGE_DIPS];
  unsigned n_dips, next_dip;
  /* the drift: the lower envelope of the arrival times (drift.h) */
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
  if (clock_fifo_init (&b->fifo, channels,
          2 * (limit + rate) + 2 * CLOCK_SINC_TAPS) != 0) {
    free (b);
    return NULL;
  }
  clock_resampler_init (&b->rs);
  clock_drift_init (&b->drift);
  clock_loop_init (&b->loop, target_s);
  if (b->paced)
    b->loop.max_u = CLOCK_BRIDGE_PACED_MAX_U;
  b->ratio = 1.0;
  return b;
}

void
clock_bridge_free (ClockBridge * b)
{
  if (b == NULL)
    return;
  clock_fifo_clear (&b->fifo);
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
  if (b->running && b->cont_fill < b->win_min)
    b->win_min = b->cont_fill;
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
  if (b->have_write && (t - b->last_write_t > CLOCK_BRIDGE_DRIFT_GAP_S
          || b->waited))
    drift_restart (b);
  b->waited = 0;
  clock_drift_note (&b->drift, t, frames, b->rate);
}

/* the drift in ppm, or the loop's integrator while the line is short */
static double
drift_ppm (const ClockBridge * b)
{
  if (clock_drift_ready (&b->drift))
    return clock_drift_rate (&b->drift) * 1e6;
  return b->loop.integ * 1e6;
}

static void
empty_fifo (ClockBridge * b)
{
  b->episode_clusters = 0;
  clock_fifo_drop (&b->fifo, clock_fifo_frames (&b->fifo));
  b->rs.frac = 0.0;
}

void
clock_bridge_flush (ClockBridge * b)
{
  empty_fifo (b);
  b->cluster = b->pkt_cur = b->pkt_prev = 0;
  b->gap_cur = b->gap_prev = 0.0;
  b->have_write = b->have_swing = 0;
  b->running = b->draining = b->drained = 0;
  b->n_dips = b->next_dip = 0;
  b->ran_dry = 0;
  b->refill = 0;
  b->late_max = 0.0;
  b->dry_gap = 0.0;
  drift_restart (b);
  b->ratio = 1.0 + b->loop.integ;
}

static double setpoint_s (const ClockBridge * b);

/* the largest depth kept below the average fill */
static double
max_depth_s (const ClockBridge * b)
{
  return b->paced ? CLOCK_BRIDGE_PACED_MAX_DEPTH_S : CLOCK_BRIDGE_MAX_DEPTH_S;
}

/* P from the packets that are complete (what a burst is measured against) */
static size_t
packet_closed (const ClockBridge * b)
{
  return b->pkt_cur > b->pkt_prev ? b->pkt_cur : b->pkt_prev;
}

/* G: the longest time without input between packets (frames), in this and
 * the previous window; at least P */
static double
gap_frames (const ClockBridge * b)
{
  double g = b->gap_cur > b->gap_prev ? b->gap_cur : b->gap_prev;
  double p = (double) packet_closed (b);

  return g > p ? g : p;
}

/* P including the packet arriving now */
static size_t
packet_frames (const ClockBridge * b)
{
  size_t p = packet_closed (b);

  return p > b->cluster ? p : b->cluster;
}

/* A gap that ran the FIFO dry, input back within CLOCK_BRIDGE_PAUSE_S, and
 * the packet that ended it complete: when that packet carries at least half
 * the gap's audio it was late, not lost (a burst pattern: the sender held
 * the audio), and the gap is learnt: the next start fill covers it and the
 * depth kept below the average is at least the gap less half a packet.  A
 * small packet after the gap is a stall (the audio of the gap is gone). */
static void
learn_dry_gap (ClockBridge * b)
{
  double gap = b->dry_gap;

  b->dry_gap = 0.0;
  if ((double) b->cluster >= 0.5 * gap * b->rate) {
    double need = gap - 0.5 * (double) b->cluster / b->rate;

    if (gap * b->rate > b->gap_cur)
      b->gap_cur = gap * b->rate;
    if (need > max_depth_s (b))
      need = max_depth_s (b);
    if (!b->have_swing || need > b->swing) {
      b->swing = need;
      b->have_swing = 1;
    }
  }
}

/* records a write of frames at t in the packet estimate */
static void
note_write (ClockBridge * b, size_t frames, double t)
{
  double gap = t - b->last_write_t;

  /* input back after a pause: maybe another sender (an SRT caller after
   * the last left), whose packets need not look like the last one's: the
   * pattern is learnt again (the drift line restarts too, drift_note) */
  if (b->have_write && gap >= CLOCK_BRIDGE_PAUSE_S) {
    b->have_write = 0;
    b->have_swing = 0;
    b->n_dips = b->next_dip = 0;
    b->cluster = 0;
    b->dry_gap = 0.0;
    b->ran_dry = 0;
    b->refill = 0;              /* the input stopped: not a late packet */
    b->late_max = 0.0;
  }
  if (!b->have_write || t - b->pkt_window_t0 >= CLOCK_BRIDGE_PACKET_WINDOW_S) {
    b->pkt_prev = b->have_write ? b->pkt_cur : 0;
    b->pkt_cur = 0;
    b->gap_prev = b->have_write ? b->gap_cur : 0.0;
    b->gap_cur = 0.0;
    b->pkt_window_t0 = t;
  }
  /* together: less than half the previous write's duration apart */
  if (b->have_write && gap <= CLOCK_BRIDGE_CLUSTER_S
      && gap < 0.5 * (double) b->last_write / b->rate) {
    b->cluster += frames;
  } else {
    /* the first packet after (re)connecting may be a backlog (a demuxer
     * releasing what it held, a sender catching up): not a packet; nor is
     * one that carried much more audio than the time to the next (a late
     * packet's backlog on a busy host, the start of a stream released at
     * once): the sender's packets are as long as the time between them
     * (a paced input's bursts are its pages: they count) */
    if (b->cluster > b->pkt_cur && (b->running || b->episode_clusters > 0)
        && (b->paced
            || (double) b->cluster <= CLOCK_BRIDGE_BACKLOG_RATIO * gap * b->rate))
      b->pkt_cur = b->cluster;
    if (b->have_write && !b->running)
      b->episode_clusters++;
    if (b->dry_gap > 0.0)       /* the packet after a dry gap is complete */
      learn_dry_gap (b);
    b->cluster = frames;
    if (b->have_write && b->ran_dry && gap < CLOCK_BRIDGE_PAUSE_S) {
      b->dry_gap = gap;         /* judged when its packet is complete */
      /* what was held up comes after it: not an overrun */
      if (gap > b->late_max)
        b->late_max = gap < max_depth_s (b) ? gap : max_depth_s (b);
    } else if (b->have_write && (b->running || (b->episode_clusters > 1
                && gap < CLOCK_BRIDGE_PAUSE_S)) && gap * b->rate > b->gap_cur) {
      /* while running, and between the packets seen while filling (not
       * the one after the first: that may end a backlog) */
      b->gap_cur = gap * b->rate;
    }
    b->ran_dry = 0;
  }
  b->last_write_t = t;
  b->last_write = frames;
  b->have_write = 1;
}

/* the fill right after a packet at which the lowest fill, just before the
 * next packet, is the target: the target is the reserve below the
 * packets' saw-tooth.  Before the depth of the saw-tooth has been measured
 * (a new stream: a few packets and gaps seen) half a packet more: a later
 * packet than those seen while filling does not run it dry. */
static double
start_fill (const ClockBridge * b)
{
  double p = (double) (b->running ? packet_closed (b) : packet_frames (b));
  double g = gap_frames (b);
  double fill = (double) b->target + (g > p ? g : p);

  return b->have_swing ? fill : fill + 0.5 * p;
}

/* the average fill the loop keeps: target + the saw-tooth's depth below
 * its average (measured; P/2 until a window has been measured) */
static double
setpoint_s (const ClockBridge * b)
{
  double depth = b->have_swing ? b->swing :
      CLOCK_BRIDGE_DEPTH_GUESS * gap_frames (b) / b->rate;

  return (double) b->target / b->rate + depth;
}

/* above it a write is an overrun: the setpoint + a packet + the target +
 * CLOCK_BRIDGE_OVERFLOW_S */
static double
limit_frames (const ClockBridge * b)
{
  return setpoint_s (b) * b->rate + (double) packet_closed (b) +
      (double) b->target + (CLOCK_BRIDGE_OVERFLOW_S + b->late_max) * b->rate;
}

static int
compare_doubles (const void *a, const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;

  return x < y ? -1 : x > y;
}

/* the depth the recorded dips ask for: their CLOCK_BRIDGE_DIP_QUANTILE
 * quantile keeps `target` as the reserve below the usual packets; and the
 * deepest dip keeps at least CLOCK_BRIDGE_DIP_GUARD_S below the rarest
 * (a packet a busy host delivered tens of ms late: with the quantile
 * alone the next one like it runs the FIFO dry) */
static double
dip_depth (const ClockBridge * b)
{
  double sorted[CLOCK_BRIDGE_DIPS];
  double q, deepest;
  size_t k;

  memcpy (sorted, b->dips, b->n_dips * sizeof (double));
  qsort (sorted, b->n_dips, sizeof (double), compare_doubles);
  k = (size_t) llround (CLOCK_BRIDGE_DIP_QUANTILE * (b->n_dips - 1));
  q = sorted[k];
  deepest = q + CLOCK_BRIDGE_DIP_SPREAD * (sorted[b->n_dips - 1] - q) +
      CLOCK_BRIDGE_DIP_GUARD_S - (double) b->target / b->rate;
  return q > deepest ? q : deepest;
}

/* after each read while running: the depth of the window (the dips'
 * quantile, or the lowest fill of the window against the loop's average
 * while few dips are known).  Windows with a trim (start, overrun, settle)
 * in them are not measured. */
static void
note_swing (ClockBridge * b, double span)
{
  double w;

  b->win_time += span;
  if (b->win_time < CLOCK_BRIDGE_SWING_WINDOW_S)
    return;
  w = b->n_dips >= CLOCK_BRIDGE_DIPS_MIN ? dip_depth (b) :
      clock_loop_fill (&b->loop) - b->win_min;
  if (w > max_depth_s (b))      /* bounds the FIFO's use */
    w = max_depth_s (b);
  /* measured only while the loop holds the setpoint (no transient; the
   * filtered fill still ripples by a fraction of a large packet) */
  if (b->settle_left == 0 && !b->win_trimmed && w >= 0.0
      && fabs (clock_loop_fill (&b->loop) - setpoint_s (b)) <
      fmax (CLOCK_LOOP_REACQUIRE_S,
          0.25 * (double) packet_closed (b) / b->rate)) {
    if (!b->have_swing || w > b->swing) {
      b->swing = w;
    } else {
      /* down slowly: the loop follows a falling setpoint with a bias of
       * the fall rate, at most CLOCK_BRIDGE_SWING_FALL (s per s) */
      double fall = (b->swing - w) * b->win_time / CLOCK_BRIDGE_SWING_DECAY_S;
      double most = CLOCK_BRIDGE_SWING_FALL * b->win_time;
      b->swing -= fall < most ? fall : most;
    }
    b->have_swing = 1;
  }
  b->win_time = 0.0;
  b->win_min = 1e9;
  b->win_trimmed = 0;
}

/* drops the oldest frames down to start_fill(); the cut fades in.  Paced:
 * nothing is dropped (the fade is the start's, from silence) */
static void
trim_to_target (ClockBridge * b)
{
  double excess;

  if (b->paced) {
    if (!b->running)
      b->fade_pos = 0;
    return;
  }
  excess = fill_frames (b) - start_fill (b);
  if (excess >= 1.0)
    clock_fifo_drop (&b->fifo, (size_t) excess);
  b->fade_pos = 0;
  b->win_trimmed = 1;
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
  b->win_time = 0.0;
  b->win_min = 1e9;
  trim_to_target (b);
  b->running = 1;
  open_settle_window (b);
}

/* after an underrun: the start fill of the packet pattern known so far (a
 * late packet brings what was held up with it, and usually that much; a
 * smaller resume, one packet, stutters on bursty input: each hole runs it
 * dry again before the loop has built the reserve up) */
static double
resume_fill (const ClockBridge * b)
{
  return start_fill (b);
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
  b->win_time = 0.0;
  b->win_min = 1e9;
  b->win_trimmed = 1;           /* this window is not the usual pattern */
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
  if (b->running && b->settle_left == 0 && b->have_write
      && t - b->last_write_t > CLOCK_BRIDGE_CLUSTER_S) {
    b->dips[b->next_dip] = clock_loop_fill (&b->loop) - b->cont_fill;
    b->next_dip = (b->next_dip + 1) % CLOCK_BRIDGE_DIPS;
    if (b->n_dips < CLOCK_BRIDGE_DIPS)
      b->n_dips++;
  }
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
      /* input back after an underrun: the audio resumes as soon as a
       * packet is in (a late packet brings what was held up with it), not
       * after a refill to the start fill: the hole is as long as the
       * input was late, no longer; nothing is trimmed */
      if (fill_frames (b) >= resume_fill (b))
        resume (b);
    } else if (!b->running) {
      /* two packets seen: the packet size is known (paced: at the latest
       * when the largest fill is reached; the input waits from then on) */
      if ((b->episode_clusters >= 2 && fill_frames (b) >= start_fill (b))
          || (b->paced && fill_frames (b) >=
              CLOCK_BRIDGE_PACED_MAX_FILL_S * b->rate))
        start (b);
    } else if (!b->paced && fill_frames (b) > limit) {
      if (b->settle_left == 0)  /* once per episode */
        b->overruns++;
      /* the drift line counts every frame received, trimmed or not: its
       * offset does not jump */
      b->cluster = 0;           /* a burst is not a packet */
      trim_to_target (b);
      open_settle_window (b);
    }
  }
  b->cont_fill = fill_frames (b) / b->rate;
}

void
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
    note_swing (b, span);
    clock_loop_set_target (&b->loop, setpoint_s (b));
    /* the drift line, once it is long enough, is the loop's integral
     * part: the fill's disturbances (late packets on a busy host) then
     * only act through the proportional part, for as long as they last */
    if (!b->paced && clock_drift_ready (&b->drift))
      b->loop.integ = clock_drift_rate (&b->drift);
    b->ratio = clock_loop_update (&b->loop, avg, (double) frames / b->rate);
  }
  b->area = 0.0;
  b->area_t0 = t;

  if (b->running) {
    k = clock_resampler_run (&b->rs, &b->fifo, b->ratio, out, frames);
    for (size_t i = 0; i < k && b->fade_pos < b->fade_len; i++) {
      float gain = (float) (b->fade_pos++ + 1) / (float) b->fade_len;
      for (unsigned c = 0; c < ch; c++)
        out[i * ch + c] *= gain;
    }
    if (k < frames) {
      /* dry: the audio fades out over what is left of it, the rest is
       * silence */
      size_t n = k < b->fade_len ? k : b->fade_len;
      for (size_t j = 0; j < n; j++) {
        float gain = (float) (n - j) / (float) (n + 1);
        for (unsigned c = 0; c < ch; c++)
          out[(k - n + j) * ch + c] *= gain;
      }
      if (b->draining) {
        b->drained = 1;
      } else {
        b->underruns++;
        b->ran_dry = 1;
        b->refill = 1;
        b->refill_frames = 0;
      }
      b->running = 0;
      empty_fifo (b);
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
  s->fill_s = b->running ? clock_loop_fill (&b->loop) :
      fill_frames (b) / b->rate;
  s->target_s = (double) b->target / b->rate;
  s->packet_s = (double) packet_frames (b) / b->rate;
  s->setpoint_s = setpoint_s (b);
  s->ratio = b->ratio;
  s->underruns = b->underruns;
  s->overruns = b->overruns;
  s->running = b->running;
  s->frames_in = b->frames_in;
  s->frames_out = b->frames_out;
  s->inserted_s = (double) b->late_frames / b->rate;
  s->last_gap_s = b->last_gap_s;
}
