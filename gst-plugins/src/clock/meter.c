/* meter: see meter.h. */
#include "meter.h"

#include <math.h>
#include <string.h>

/* level 1.22's EPSILON: silence is 20 log10 (1e-35) = -700 dB RMS and
 * 10 log10 (1e-35) = -350 dB peak */
#define METER_EPSILON 1e-35

int
output_meter_init (OutputMeter * m, unsigned channels, uint64_t interval)
{
  memset (m, 0, sizeof *m);
  if (channels < 1 || channels > METER_MAX_CHANNELS || interval < 1)
    return -1;
  m->channels = channels;
  m->interval = interval;
  return 0;
}

static void
accumulate (OutputMeter * m, const float *x, size_t frames)
{
  unsigned ch = m->channels;

  for (unsigned c = 0; c < ch; c++) {
    double sum = 0.0, peak = m->peaksq[c];

    for (size_t j = 0; j < frames; j++) {
      double v = (double) x[j * ch + c];
      double sq = v * v;

      sum += sq;
      if (sq > peak)
        peak = sq;
    }
    m->sumsq[c] += sum;
    m->peaksq[c] = peak;
  }
  m->done += frames;
}

static void
report (OutputMeter * m)
{
  for (unsigned c = 0; c < m->channels; c++) {
    double rms = sqrt (m->sumsq[c] / (double) m->done);

    m->rms_db[c] = 20.0 * log10 (rms + METER_EPSILON);
    m->peak_db[c] = 10.0 * log10 (m->peaksq[c] + METER_EPSILON);
    m->sumsq[c] = 0.0;
    m->peaksq[c] = 0.0;
  }
  m->done = 0;
  m->reports++;
}

unsigned
output_meter_add (OutputMeter * m, const float *x, size_t frames,
    size_t * end_offset)
{
  unsigned completed = 0;
  size_t at = 0;

  while (at < frames) {
    uint64_t left = m->interval - m->done;
    size_t n = frames - at < left ? frames - at : (size_t) left;

    accumulate (m, x + at * m->channels, n);
    at += n;
    if (m->done == m->interval) {
      report (m);
      completed++;
      if (end_offset != NULL)
        *end_offset = at;
    }
  }
  return completed;
}
