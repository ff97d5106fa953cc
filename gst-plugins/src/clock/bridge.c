/* bridge: see bridge.h. */
#include "bridge.h"

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
  size_t limit;                 /* frames: above it a write is an overrun */
  ClockFifo fifo;
  ClockResampler rs;
  ClockLoop loop;
  double ratio;
  int running, draining, drained;
  size_t fade_pos, fade_len;
  size_t max_write;             /* largest write since the last start */
  uint64_t underruns, overruns, frames_in, frames_out;
  /* the fill as a function of time (see fill_at): its value at the last
   * event, the time of that event, the area under it since the last read */
  double cont_fill, cont_t, area, area_t0;
  int have_t;
};

ClockBridge *
clock_bridge_new (unsigned channels, unsigned rate, double target_s)
{
  ClockBridge *b;

  if (channels < 1 || channels > CLOCK_FIFO_MAX_CHANNELS || rate == 0)
    return NULL;
  b = calloc (1, sizeof (*b));
  if (b == NULL)
    return NULL;
  b->channels = channels;
  b->rate = rate;
  b->target = (size_t) llround (target_s * rate);
  b->limit = 2 * b->target + (size_t) llround (CLOCK_BRIDGE_OVERFLOW_S * rate);
  b->fade_len = (size_t) llround (CLOCK_BRIDGE_FADE_S * rate);
  /* above the limit, one second of input in a single write, the taps */
  if (clock_fifo_init (&b->fifo, channels,
          2 * (b->limit + rate) + 2 * CLOCK_SINC_TAPS) != 0) {
    free (b);
    return NULL;
  }
  clock_resampler_init (&b->rs);
  clock_loop_init (&b->loop, target_s);
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
  b->cont_t = t;
  if (!b->have_t) {
    b->area_t0 = t;
    b->have_t = 1;
  }
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
  b->max_write = 0;
  b->running = b->draining = b->drained = 0;
  b->ratio = 1.0 + b->loop.integ;
}

/* the fill right after a write at which the average fill is the target:
 * input comes in packets, so the fill drops by up to a packet between them */
static double
start_fill (const ClockBridge * b)
{
  return (double) b->target + (double) b->max_write / 2.0;
}

/* drops the oldest frames down to start_fill(); the cut fades in */
static void
trim_to_target (ClockBridge * b)
{
  double excess = fill_frames (b) - start_fill (b);

  if (excess >= 1.0)
    clock_fifo_drop (&b->fifo, (size_t) excess);
  b->fade_pos = 0;
}

static void
start (ClockBridge * b)
{
  trim_to_target (b);
  b->running = 1;
  /* the filters start at the expected average, the target */
  clock_loop_restart (&b->loop, (double) b->target / b->rate);
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
  clock_fifo_write (f, interleaved, frames);

  if (!b->running) {
    if (frames > b->max_write)
      b->max_write = frames;
    if (fill_frames (b) >= start_fill (b))
      start (b);
  } else if (fill_frames (b) > (double) b->limit + (double) b->max_write) {
    b->overruns++;
    trim_to_target (b);
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
  advance_to (b, t);
  span = t - b->area_t0;
  if (b->running && !b->draining) {
    double avg = span > 0.0 ? b->area / span : b->cont_fill;
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
      /* dry: the rest is silence */
      if (b->draining)
        b->drained = 1;
      else
        b->underruns++;
      b->running = 0;
      b->max_write = 0;
      empty_fifo (b);
    }
  }
  if (k < frames)
    memset (out + k * ch, 0, (frames - k) * ch * sizeof (float));
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
  s->drift_ppm = b->loop.integ * 1e6;
  s->fill_s = b->running ? clock_loop_fill (&b->loop) :
      fill_frames (b) / b->rate;
  s->target_s = (double) b->target / b->rate;
  s->ratio = b->ratio;
  s->underruns = b->underruns;
  s->overruns = b->overruns;
  s->running = b->running;
  s->frames_in = b->frames_in;
  s->frames_out = b->frames_out;
}
