/* The output meter alone (meter.c), against figures computed here by hand:
 *   - a full-scale square wave of +-0.5 on channel 0 and a sine of amplitude
 *     0.25 on channel 1, 100 ms intervals (4800 frames) fed in 4 ms chunks:
 *     a report every 25 chunks, rms -6.0206 / -15.0515 dB (0.5 and
 *     0.25 / sqrt 2), peak -6.0206 / -12.0412 dB (0.25 and 0.0625 squared);
 *   - digital silence: -700 and -350 dB, level's figures;
 *   - an interval that ends inside a chunk (100 ms in 7 ms chunks): reported
 *     at the right frame, the rest of the chunk counted in the next interval
 *     (a level change exactly at the boundary lands in the right report);
 *   - one add that completes two intervals (a 30 ms chunk, 10 ms intervals):
 *     2, the last one's figures and end;
 *   - 8 channels kept apart; refused settings. */
#include "meter.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static int failures;

static void
check (const char *what, int ok)
{
  printf ("%s %s\n", ok ? "ok    " : "FAILED", what);
  if (!ok)
    failures++;
}

static int
near (double a, double b, double tol)
{
  return fabs (a - b) <= tol;
}

static void
test_tones (void)
{
  OutputMeter m;
  float x[192 * 2];
  unsigned reports = 0, at_chunk = 0;
  size_t end = 99;

  check ("init 2 channels, 4800 frames", output_meter_init (&m, 2, 4800) == 0);
  for (unsigned k = 0; k < 50; k++) {
    for (unsigned j = 0; j < 192; j++) {
      unsigned n = k * 192 + j;
      x[2 * j] = (n / 24) % 2 ? 0.5f : -0.5f;
      /* 1 kHz: 48 samples a period, 100 per interval */
      x[2 * j + 1] = (float) (0.25 * sin (2.0 * M_PI * n / 48.0));
    }
    unsigned r = output_meter_add (&m, x, 192, &end);
    if (r > 0 && reports == 0)
      at_chunk = k;
    reports += r;
  }
  check ("two reports in 50 chunks of 4 ms", reports == 2 && m.reports == 2);
  check ("the first after the 25th chunk, at its end", at_chunk == 24 && end == 192);
  check ("square +-0.5: rms -6.0206 dB", near (m.rms_db[0], 20 * log10 (0.5), 1e-9));
  check ("square +-0.5: peak -6.0206 dB", near (m.peak_db[0], 10 * log10 (0.25), 1e-9));
  check ("sine 0.25: rms -15.0515 dB", near (m.rms_db[1], 20 * log10 (0.25 / sqrt (2.0)), 1e-6));
  check ("sine 0.25: peak -12.0412 dB", near (m.peak_db[1], 10 * log10 (0.0625), 1e-6));
}

static void
test_silence (void)
{
  OutputMeter m;
  float x[480] = { 0 };

  output_meter_init (&m, 1, 480);
  check ("silence: one report", output_meter_add (&m, x, 480, NULL) == 1);
  check ("silence: rms -700 dB (level's)", near (m.rms_db[0], -700.0, 1e-9));
  check ("silence: peak -350 dB (level's)", near (m.peak_db[0], -350.0, 1e-9));
}

static void
test_split (void)
{
  OutputMeter m;
  float x[336];                 /* 7 ms, mono */
  unsigned total = 0, first_chunk = 0;
  size_t first_end = 0;
  double first_rms = 0.0, second_rms = 0.0;

  output_meter_init (&m, 1, 4800);
  /* 0.5 up to frame 4800, 0.25 after it: 4800 = 14 x 336 + 96 */
  for (unsigned k = 0; k < 29; k++) {
    size_t end = 0;
    for (unsigned j = 0; j < 336; j++)
      x[j] = k * 336 + j < 4800 ? 0.5f : 0.25f;
    unsigned r = output_meter_add (&m, x, 336, &end);
    if (r > 0 && total == 0) {
      first_chunk = k;
      first_end = end;
      first_rms = m.rms_db[0];
    } else if (r > 0) {
      second_rms = m.rms_db[0];
    }
    total += r;
  }
  check ("7 ms chunks: the interval ends 96 frames into the 15th", first_chunk == 14 && first_end == 96);
  check ("the first interval all 0.5", near (first_rms, 20 * log10 (0.5), 1e-9));
  check ("the second all 0.25 (the rest of the 15th chunk in it)", total == 2 && near (second_rms, 20 * log10 (0.25), 1e-9));
}

static void
test_two_in_one (void)
{
  OutputMeter m;
  float x[1440];
  size_t end = 0;

  output_meter_init (&m, 1, 480);
  for (unsigned j = 0; j < 1440; j++)
    x[j] = j < 960 ? 0.5f : 0.125f;
  check ("30 ms into 10 ms intervals: 3 reports", output_meter_add (&m, x, 1440, &end) == 3);
  check ("the last one's end and figures", end == 1440 && near (m.rms_db[0], 20 * log10 (0.125), 1e-9));
  for (unsigned j = 0; j < 1440; j++)
    x[j] = j < 240 ? 0.5f : 0.125f;
  check ("half an interval: none", output_meter_add (&m, x, 240, &end) == 0);
  check ("then 1000 frames: two more, the last 720 frames in", output_meter_add (&m, x + 240, 1000, &end) == 2 && end == 720);
}

static void
test_channels (void)
{
  OutputMeter m;
  float x[48 * 8];

  check ("8 channels", output_meter_init (&m, 8, 48) == 0);
  for (unsigned j = 0; j < 48; j++)
    for (unsigned c = 0; c < 8; c++)
      x[j * 8 + c] = (float) (c + 1) / 16.0f;
  output_meter_add (&m, x, 48, NULL);
  int apart = 1;
  for (unsigned c = 0; c < 8; c++)
    apart = apart && near (m.rms_db[c], 20 * log10 ((c + 1) / 16.0), 1e-6);
  check ("each channel its own level", apart);
  check ("0 channels refused", output_meter_init (&m, 0, 48) == -1);
  check ("9 channels refused", output_meter_init (&m, 9, 48) == -1);
  check ("an interval of 0 frames refused", output_meter_init (&m, 2, 0) == -1);
}

int
main (void)
{
  test_tones ();
  test_silence ();
  test_split ();
  test_two_in_one ();
  test_channels ();
  if (failures)
    printf ("%d check(s) failed\n", failures);
  return failures ? 1 : 0;
}
