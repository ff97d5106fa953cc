/* clock-resample: the clockbridge resampler (resampler.c) as a filter, for
 * bench/dsp-resampler.ts.
 *
 *   clock-resample RATIO IN OUT     stereo F32LE files, RATIO input frames
 *                                   per output frame
 *   clock-resample --floor IN OUT   the same reads and writes, no
 *                                   resampling (the floor)
 *
 * 48000 -> 48048 Hz is RATIO = 48000 / 48048. */
#include "resampler.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHANNELS 2
#define BLOCK 4096

int
main (int argc, char **argv)
{
  static ClockResampler r;
  static float in[BLOCK * CHANNELS], out[2 * BLOCK * CHANNELS];
  ClockFifo f;
  int floor_only = argc == 4 && strcmp (argv[1], "--floor") == 0;
  double ratio = argc == 4 ? atof (argv[1]) : 0.0;
  FILE *fin, *fout;
  size_t n;

  if (argc != 4 || (!floor_only && (ratio < 0.99 || ratio > 1.01))) {
    fprintf (stderr, "usage: clock-resample RATIO|--floor IN OUT "
        "(RATIO 0.99..1.01)\n");
    return 2;
  }
  fin = fopen (argv[2], "rb");
  fout = fopen (argv[3], "wb");
  if (fin == NULL || fout == NULL) {
    perror ("clock-resample");
    return 1;
  }
  clock_resampler_init (&r);
  if (clock_fifo_init (&f, CHANNELS, 4 * BLOCK) != 0)
    return 1;
  clock_fifo_write_silence (&f, CLOCK_SINC_HALF - 1);
  while ((n = fread (in, sizeof (float) * CHANNELS, BLOCK, fin)) > 0) {
    size_t got;
    if (floor_only) {
      if (fwrite (in, sizeof (float) * CHANNELS, n, fout) != n)
        return 1;
      continue;
    }
    clock_fifo_write (&f, in, n);
    got = clock_resampler_run (&r, &f, ratio, out, 2 * BLOCK);
    if (fwrite (out, sizeof (float) * CHANNELS, got, fout) != got)
      return 1;
  }
  clock_fifo_clear (&f);
  fclose (fin);
  return fclose (fout) == 0 ? 0 : 1;
}
