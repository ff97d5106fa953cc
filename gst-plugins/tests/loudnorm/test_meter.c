/* Unit test of the pure loudness meter (meter.c, truepeak.c) against
 * libebur128 fed with the same samples. */
#include "meter.h"
#include "truepeak.h"

#include <ebur128.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static int failures;

#define EB(call) do { int rc_ = (call); if (rc_ != EBUR128_SUCCESS) { \
      fprintf (stderr, "%s:%d: %s failed: %d\n", __FILE__, __LINE__, #call, rc_); \
      exit (1); } } while (0)

static void
check (const char *what, double got, double want, double tol)
{
  int ok = (isinf (got) && isinf (want) && got == want) || fabs (got - want) <= tol;
  printf ("  %-34s got %10.4f want %10.4f tol %.3f %s\n", what, got, want, tol,
      ok ? "ok" : "FAIL");
  if (!ok)
    failures++;
}

static uint32_t lcg = 12345;
static double
rnd (void)
{
  lcg = lcg * 1664525u + 1013904223u;
  return ((lcg >> 8) / 16777216.0) * 2.0 - 1.0;
}

/* programme-like signal: noise + tones whose level steps every 2.5 s between
 * -45 and -10 dBFS, with a stretch of digital silence */
static void
synth (float *x, size_t frames, unsigned ch, unsigned rate)
{
  double lvl = 0.1, ph = 0.0, lp = 0.0;
  for (size_t i = 0; i < frames; i++) {
    if (i % (rate * 5 / 2) == 0)
      lvl = pow (10.0, (-45.0 + 35.0 * (rnd () * 0.5 + 0.5)) / 20.0);
    int silent = (i / rate) % 17 == 16;
    ph += 2 * M_PI * (200.0 + 30.0 * (i / rate % 7)) / rate;
    lp = 0.9 * lp + 0.1 * rnd ();
    for (unsigned c = 0; c < ch; c++) {
      double v = silent ? 0.0 : lvl * (0.5 * sin (ph + c) + 0.8 * lp + 0.3 * rnd ());
      x[i * ch + c] = (float) v;
    }
  }
}

static void
run_case (unsigned rate, unsigned ch, double seconds)
{
  static const double w5[] = { 1.0, 1.0, 1.0, 1.41, 1.41 };
  static const double w6[] = { 1.0, 1.0, 1.0, 0.0, 1.41, 1.41 };
  const double *w = ch == 5 ? w5 : ch == 6 ? w6 : NULL;
  size_t frames = (size_t) (seconds * rate);
  float *x = malloc (frames * ch * sizeof (float));
  synth (x, frames, ch, rate);

  printf ("rate %u, %u channels, %.0f s\n", rate, ch, seconds);
  LnMeterConfig cfg = { rate, ch, w, 1, 100, 0 };
  LnMeter *m = ln_meter_new (&cfg);
  cfg.lra_step = 10;
  LnMeter *m10 = ln_meter_new (&cfg);
  ebur128_state *st = ebur128_init (ch, rate,
      EBUR128_MODE_I | EBUR128_MODE_S | EBUR128_MODE_LRA | EBUR128_MODE_TRUE_PEAK);
  if (!m || !m10 || !st) {
    fprintf (stderr, "init failed\n");
    exit (1);
  }
  if (ch == 5) {
    EB (ebur128_set_channel (st, 3, EBUR128_LEFT_SURROUND));
    EB (ebur128_set_channel (st, 4, EBUR128_RIGHT_SURROUND));
  } else if (ch == 6) {
    EB (ebur128_set_channel (st, 3, EBUR128_UNUSED));
    EB (ebur128_set_channel (st, 4, EBUR128_LEFT_SURROUND));
    EB (ebur128_set_channel (st, 5, EBUR128_RIGHT_SURROUND));
  } else if (ch == 1) {
    EB (ebur128_set_channel (st, 0, EBUR128_LEFT));
  }
  size_t chunk = 7 * (rate / 100);      /* 70 ms: checks on 10 ms boundaries */
  double maxdm = 0.0, maxds = 0.0;
  for (size_t off = 0; off < frames; off += chunk) {
    size_t n = frames - off < chunk ? frames - off : chunk;
    ln_meter_process (m, x + off * ch, n);
    ln_meter_process (m10, x + off * ch, n);
    EB (ebur128_add_frames_float (st, x + off * ch, n));
    if (n == chunk && off + n >= rate * 3) {
      double em, es;
      EB (ebur128_loudness_momentary (st, &em));
      EB (ebur128_loudness_shortterm (st, &es));
      double gm = ln_meter_momentary (m), gs = ln_meter_short_term (m);
      if (em > -70.0 && fabs (gm - em) > maxdm)
        maxdm = fabs (gm - em);
      if (es > -70.0 && fabs (gs - es) > maxds)
        maxds = fabs (gs - es);
    }
  }
  check ("momentary max |diff| (LU)", maxdm, 0.0, 0.001);
  check ("short-term max |diff| (LU)", maxds, 0.0, 0.001);
  double ei, elra;
  EB (ebur128_loudness_global (st, &ei));
  EB (ebur128_loudness_range (st, &elra));
  check ("integrated (LUFS)", ln_meter_integrated (m), ei, 0.02);
  check ("loudness range, 1 s steps (LU)", ln_meter_loudness_range (m), elra, 0.1);
  /* 100 ms steps sample other short-term values than libebur128's 1 s: a
   * statistic of another sample set, so only a sanity bound */
  check ("loudness range, 100 ms steps (LU)", ln_meter_loudness_range (m10), elra, 2.0);
  double tpmax = 0.0;
  for (unsigned c = 0; c < ch; c++) {
    double t;
    EB (ebur128_true_peak (st, c, &t));
    tpmax = t > tpmax ? t : tpmax;
  }
  /* libebur128 uses its own interpolator (and 2x at 96 kHz), not the
   * Annex 2 filter: compare loosely */
  check ("true peak (dBTP)", 20 * log10 (ln_meter_true_peak (m)),
      20 * log10 (tpmax), 0.25);
  ln_meter_free (m);
  ln_meter_free (m10);
  ebur128_destroy (&st);
  free (x);
}

/* silence: everything at the floor, no denormal trouble */
static void
run_silence (void)
{
  printf ("silence\n");
  LnMeterConfig cfg = { 48000, 2, NULL, 1, 10, 300 };
  LnMeter *m = ln_meter_new (&cfg);
  float *z = calloc (48000 * 2, sizeof (float));
  for (int i = 0; i < 10; i++)
    ln_meter_process (m, z, 48000);
  check ("momentary", ln_meter_momentary (m), -HUGE_VAL, 0);
  check ("integrated", ln_meter_integrated (m), -HUGE_VAL, 0);
  check ("loudness range", ln_meter_loudness_range (m), 0.0, 0);
  check ("window", ln_meter_window (m), -HUGE_VAL, 0);
  ln_meter_free (m);
  free (z);
}

/* the sliding window forgets: 40 s at -20 then 40 s at -30 with a 30 s
 * window reads -30 */
static void
run_window (void)
{
  printf ("sliding window\n");
  LnMeterConfig cfg = { 48000, 1, NULL, 0, 10, 300 };
  LnMeter *m = ln_meter_new (&cfg);
  float *x = malloc (48000 * sizeof (float));
  for (int s = 0; s < 80; s++) {
    double a = pow (10.0, (s < 40 ? -20.0 : -30.0) / 20.0);
    for (int i = 0; i < 48000; i++)
      x[i] = (float) (a * sin (2 * M_PI * 1000.0 * i / 48000));
    ln_meter_process (m, x, 48000);
  }
  /* mono 1 kHz at A dBFS reads A - 3.01 + 0.69... compare with integrated of
   * a fresh meter over the last 30 s instead */
  LnMeter *r = ln_meter_new (&cfg);
  for (int s = 0; s < 30; s++)
    ln_meter_process (r, x, 48000);
  check ("window = fresh integrated", ln_meter_window (m), ln_meter_integrated (r), 0.02);
  ln_meter_free (m);
  ln_meter_free (r);
  free (x);
}

/* ln_meter_reset_measurement: 20 s of loud programme, a reset, 20 s of quiet
 * programme.  Integrated, LRA and true peak then equal libebur128 fed the
 * quiet part alone; momentary, short-term, the sliding window and the frame
 * count are bit for bit those of a meter without the reset; integrated is
 * -inf until the first 400 ms block after the reset completes. */
static void
run_reset_measurement (void)
{
  const unsigned rate = 48000, ch = 2;
  const size_t part = 20 * rate;
  float *loud = malloc (part * ch * sizeof (float));
  float *quiet = malloc (part * ch * sizeof (float));
  synth (loud, part, ch, rate);
  synth (quiet, part, ch, rate);
  for (size_t i = 0; i < part * ch; i++) {
    loud[i] *= 3.0f;            /* about +10 dB */
    quiet[i] *= 0.3f;           /* about -10 dB */
  }
  printf ("reset of the measurement (20 s loud, reset, 20 s quiet)\n");
  LnMeterConfig cfg = { rate, ch, NULL, 1, 100, 300 };
  LnMeter *m = ln_meter_new (&cfg), *plain = ln_meter_new (&cfg);
  ebur128_state *st = ebur128_init (ch, rate,
      EBUR128_MODE_I | EBUR128_MODE_LRA | EBUR128_MODE_TRUE_PEAK);
  ln_meter_process (m, loud, part);
  ln_meter_process (plain, loud, part);
  ln_meter_reset_measurement (m);
  check ("integrated right after the reset", ln_meter_integrated (m),
      -HUGE_VAL, 0);
  check ("measured seconds right after", ln_meter_measured_seconds (m), 0.0, 0);
  check ("true peak right after", ln_meter_true_peak (m), 0.0, 0);
  /* 390 ms: no block yet; 400 ms: the first */
  size_t k = rate * 39 / 100;
  ln_meter_process (m, quiet, k);
  ln_meter_process (plain, quiet, k);
  check ("integrated after 390 ms", ln_meter_integrated (m), -HUGE_VAL, 0);
  ln_meter_process (m, quiet + k * ch, rate / 100);
  ln_meter_process (plain, quiet + k * ch, rate / 100);
  k += rate / 100;
  int first = isfinite (ln_meter_integrated (m));
  printf ("  integrated finite after 400 ms: %s\n", first ? "ok" : "FAIL");
  failures += !first;
  int same = 1;
  for (; k < part; k += rate / 10) {
    size_t n = part - k < rate / 10 ? part - k : rate / 10;
    ln_meter_process (m, quiet + k * ch, n);
    ln_meter_process (plain, quiet + k * ch, n);
    same &= ln_meter_momentary (m) == ln_meter_momentary (plain)
        && ln_meter_short_term (m) == ln_meter_short_term (plain)
        && ln_meter_window (m) == ln_meter_window (plain)
        && ln_meter_window_count (m) == ln_meter_window_count (plain);
  }
  printf ("  momentary, short-term, window bit-identical to no reset: %s\n",
      same ? "ok" : "FAIL");
  failures += !same;
  check ("frames (since ln_meter_reset)", (double) ln_meter_frames (m),
      (double) (2 * part), 0);
  check ("measured seconds", ln_meter_measured_seconds (m), 20.0, 1e-9);
  EB (ebur128_add_frames_float (st, quiet, part));
  double i_ref, lra_ref, tp0, tp1;
  EB (ebur128_loudness_global (st, &i_ref));
  EB (ebur128_loudness_range (st, &lra_ref));
  EB (ebur128_true_peak (st, 0, &tp0));
  EB (ebur128_true_peak (st, 1, &tp1));
  LnMeter *fresh = ln_meter_new (&cfg);
  ln_meter_process (fresh, quiet, part);
  check ("integrated = fresh meter on the quiet part", ln_meter_integrated (m),
      ln_meter_integrated (fresh), 0.001);
  check ("LRA = fresh meter on the quiet part", ln_meter_loudness_range (m),
      ln_meter_loudness_range (fresh), 0.001);
  ln_meter_free (fresh);
  /* 0.05 LU apart on this signal: the 0.1 LU bin at the relative gate */
  check ("integrated = libebur128, quiet part", ln_meter_integrated (m), i_ref,
      0.1);
  check ("LRA = libebur128, quiet part", ln_meter_loudness_range (m), lra_ref, 0.1);
  check ("true peak (dB) = libebur128, quiet",
      20 * log10 (ln_meter_true_peak (m)), 20 * log10 (fmax (tp0, tp1)), 0.2);
  printf ("  (without the reset: integrated %.2f, LRA %.2f, true peak %.2f dB)\n",
      ln_meter_integrated (plain), ln_meter_loudness_range (plain),
      20 * log10 (ln_meter_true_peak (plain)));
  if (!(ln_meter_integrated (plain) > i_ref + 5.0)) {
    printf ("  the loud part does not dominate the plain meter: FAIL\n");
    failures++;
  }
  ebur128_destroy (&st);
  ln_meter_free (m);
  ln_meter_free (plain);
  free (loud);
  free (quiet);
}

/* ITU-R BS.1770-4 Annex 2 interpolation filter, phase p tap k multiplies
 * x[n-k]: the reference for ln_tp_process, copied from the recommendation
 * independently of truepeak.c. */
static const double ref_coef[4][12] = {
  {0.0017089843750, 0.0109863281250, -0.0196533203125, 0.0332031250000,
      -0.0594482421875, 0.1373291015625, 0.9721679687500, -0.1022949218750,
      0.0476074218750, -0.0266113281250, 0.0148925781250, -0.0083007812500},
  {-0.0291748046875, 0.0292968750000, -0.0517578125000, 0.0891113281250,
      -0.1665039062500, 0.4650878906250, 0.7797851562500, -0.2003173828125,
      0.1015625000000, -0.0582275390625, 0.0330810546875, -0.0189208984375},
  {-0.0189208984375, 0.0330810546875, -0.0582275390625, 0.1015625000000,
      -0.2003173828125, 0.7797851562500, 0.4650878906250, -0.1665039062500,
      0.0891113281250, -0.0517578125000, 0.0292968750000, -0.0291748046875},
  {-0.0083007812500, 0.0148925781250, -0.0266113281250, 0.0476074218750,
      -0.1022949218750, 0.9721679687500, 0.1373291015625, -0.0594482421875,
      0.0332031250000, -0.0196533203125, 0.0109863281250, 0.0017089843750},
};

/* The peak detected when frame n arrives: max over channels of the four
 * interpolated values and of |x[n-6]|, in double, one frame at a time. */
static double
ref_peak (const float *x, size_t n, unsigned ch)
{
  double m = 0.0;
  for (unsigned c = 0; c < ch; c++) {
    if (n >= LN_TP_DELAY)
      m = fmax (m, fabs (x[(n - LN_TP_DELAY) * ch + c]));
    for (int p = 0; p < 4; p++) {
      double y = 0.0;
      for (int k = 0; k < 12; k++)
        if (n >= (size_t) k)
          y += ref_coef[p][k] * x[(n - k) * ch + c];
      m = fmax (m, fabs (y));
    }
  }
  return m;
}

/* The k-th block length of the schedule (1..maxb frames, every length
 * occurs), cut to what is left of total frames after off. */
static size_t
block_len (size_t k, size_t off, size_t total, size_t maxb)
{
  size_t n = (k * 37 + 5) % maxb + 1;
  return off + n > total ? total - off : n;
}

/* ln_tp_process against the reference, frame by frame, with block sizes from
 * 1 to 480 frames (so every split of the eight-frame vectors and the 32-frame
 * skip stretches occurs) and for 1, 2 and 6 channels. With skip_below 0 every
 * frame is filtered (to 1e-6 of the double-precision formula); with a
 * threshold, a frame may read only its sample peak, and then its true peak
 * must be at or under the threshold. */
static void
run_truepeak_reference (void)
{
  enum { MAXB = 480, FRAMES = 48000 * 4 };
  static const unsigned chans[] = { 1, 2, 6 };
  printf ("true peak: ln_tp_process against the BS.1770 formula\n");
  for (unsigned ci = 0; ci < 3; ci++) {
    const unsigned ch = chans[ci];
    float *x = malloc (sizeof (float) * ch * FRAMES);
    float pf[MAXB];
    synth (x, FRAMES, ch, 48000);
    for (size_t i = 0; i < (size_t) ch * FRAMES; i++)
      x[i] *= (float) (1.0 + 8.0 * (i / ch % 9600 < 4800)); /* loud stretches too */
    for (int mode = 0; mode < 2; mode++) {
      const float skip_below = mode ? 0.05f : 0.0f;
      LnTruePeak *tp = ln_tp_new (ch, MAXB);
      double worst = 0.0, largest = 0.0, got_largest = 0.0;
      long bad = 0, sample_only = 0;
      size_t off = 0, k = 0;
      while (off < FRAMES) {
        size_t n = block_len (k++, off, FRAMES, MAXB);
        float total = ln_tp_process (tp, x + off * ch, n, skip_below, pf);
        float tmax = 0.0f;
        for (size_t i = 0; i < n; i++) {
          double want = ref_peak (x, off + i, ch);
          double sp = 0.0;
          for (unsigned c = 0; c < ch; c++)
            if (off + i >= LN_TP_DELAY)
              sp = fmax (sp, fabs (x[(off + i - LN_TP_DELAY) * ch + c]));
          /* filtered: the formula's value; or skipped: the sample peak, and
           * then the true peak cannot reach the threshold */
          double err = fabs (pf[i] - want);
          if (pf[i] == (float) sp && want <= skip_below)
            sample_only++;
          else if (err <= 1e-6)
            worst = fmax (worst, err);
          else
            bad++;
          tmax = pf[i] > tmax ? pf[i] : tmax;
          largest = fmax (largest, want);
        }
        got_largest = fmax (got_largest, total);
        if (total != tmax)
          bad++;        /* the return value is the block's largest */
        off += n;
      }
      char what[64];
      snprintf (what, sizeof what, "%u ch, skip %.2f: worst |error|", ch, skip_below);
      check (what, worst, 0.0, 1e-6);
      snprintf (what, sizeof what, "%u ch, skip %.2f: frames wrong", ch, skip_below);
      check (what, (double) bad, 0.0, 0.0);
      snprintf (what, sizeof what, "%u ch, skip %.2f: largest peak", ch, skip_below);
      check (what, got_largest, largest, 1e-5);
      if (mode == 0) {
        /* every frame the same value, bit for bit, whatever the block
         * boundaries: the blocks of 1..480 above against the same frames cut
         * into blocks of 1..7 */
        LnTruePeak *tb = ln_tp_new (ch, MAXB);
        LnTruePeak *tc = ln_tp_new (ch, MAXB);
        float pb[MAXB], pc[MAXB];
        long differ = 0;
        size_t ob = 0, kk = 0;
        while (ob < FRAMES) {
          size_t n = block_len (kk++, ob, FRAMES, MAXB);
          /* the same frames twice: in one block, and in blocks of 1..7 */
          ln_tp_process (tb, x + ob * ch, n, 0.0f, pb);
          for (size_t o = 0; o < n;) {
            size_t m = (o % 7) + 1;
            if (o + m > n)
              m = n - o;
            ln_tp_process (tc, x + (ob + o) * ch, m, 0.0f, pc + o);
            o += m;
          }
          for (size_t i = 0; i < n; i++)
            differ += pb[i] != pc[i];
          ob += n;
        }
        snprintf (what, sizeof what, "%u ch: frames that depend on the block size", ch);
        check (what, (double) differ, 0.0, 0.0);
        ln_tp_free (tb);
        ln_tp_free (tc);
      }
      printf ("    worst |error| %.2e; %ld frames read only their sample peak\n",
          worst, sample_only);
      ln_tp_free (tp);
    }
    free (x);
  }
}

int
main (void)
{
  run_case (48000, 2, 75);
  run_case (44100, 1, 40);
  run_case (96000, 2, 30);
  run_case (48000, 5, 30);
  run_case (48000, 6, 30);
  run_silence ();
  run_window ();
  run_reset_measurement ();
  /* last: its synth() calls move the shared random sequence of the cases above */
  run_truepeak_reference ();
  printf ("%s (%d failures)\n", failures ? "FAILED" : "PASSED", failures);
  return failures ? 1 : 0;
}
