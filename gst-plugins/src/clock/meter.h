/* meter: the level of the bridge's output over fixed intervals, per channel,
 * as GStreamer's `level` element reports it (the element it replaces after
 * the bridge in the engine's graphs: one element and one buffer pass less in
 * the output thread per chunk).
 *
 * Per interval of `interval` frames and per channel c:
 *   rms_db[c]  = 20 log10 (sqrt (sum x^2 / frames) + 1e-35)
 *   peak_db[c] = 10 log10 (max x^2 + 1e-35)
 * the formulas of level 1.22 (its EPSILON), so digital silence reads -700 and
 * -350 dB as it does there, and every interval is exactly `interval` frames:
 * a chunk that crosses an interval's end is split there, as level splits a
 * buffer.  Pure C, no GStreamer types. */
#ifndef CLOCK_METER_H
#define CLOCK_METER_H

#include <stddef.h>
#include <stdint.h>

#define METER_MAX_CHANNELS 8

typedef struct
{
  unsigned channels;
  uint64_t interval;            /* frames per report */
  uint64_t done;                /* frames of the current interval */
  double sumsq[METER_MAX_CHANNELS];
  double peaksq[METER_MAX_CHANNELS];
  /* the last completed interval */
  uint64_t reports;             /* intervals completed so far */
  double rms_db[METER_MAX_CHANNELS];
  double peak_db[METER_MAX_CHANNELS];
} OutputMeter;

/* channels 1..METER_MAX_CHANNELS, interval >= 1 frame; returns 0, or -1 for
 * values outside those */
int output_meter_init (OutputMeter * m, unsigned channels, uint64_t interval);

/* adds `frames` interleaved frames; returns how many intervals they
 * completed (0, or 1 and more), the last one's figures in rms_db/peak_db;
 * *end_offset is then the frame of x just after the last completed
 * interval (0..frames) */
unsigned output_meter_add (OutputMeter * m, const float *x, size_t frames,
    size_t * end_offset);

#endif
