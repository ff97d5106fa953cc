/* Metering of the loudnorm element: the input-* fields of its last message
 * on synthesised EBU Tech 3341 / Tech 3342 signals, within the EBU
 * tolerances (+-0.1 LU; true peak +0.2/-0.4 dB; LRA +-1 LU). */
#include "harness.h"

#define S2(a) { a, a }

static Run *
measure (unsigned rate, unsigned ch, guint64 mask, double freq,
    const Seg * segs, int n)
{
  Run *r = run_new ("loudnorm interval=18446744073709551615", rate, ch, mask,
      NULL, NULL);
  run_sines (r, freq, segs, n);
  run_eos (r);
  return r;
}

static void
tech3341_loudness (void)
{
  static const Seg c1[] = { {20, S2 (-23)} };
  static const Seg c2[] = { {20, S2 (-33)} };
  static const Seg c3[] = { {10, S2 (-36)}, {60, S2 (-23)}, {10, S2 (-36)} };
  static const Seg c4[] = { {10, S2 (-72)}, {10, S2 (-36)}, {60, S2 (-23)},
  {10, S2 (-36)}, {10, S2 (-72)}
  };
  static const Seg c5[] = { {20, S2 (-26)}, {20.1, S2 (-20)}, {20, S2 (-26)} };
  static const Seg c6[] = { {20, {-28, -28, -24, -30, -30}} };
  /* 5.1 with a loud LFE: LFE weight 0 */
  static const Seg c6b[] = { {20, {-28, -28, -24, -10, -30, -30}} };
  struct
  {
    const char *name;
    unsigned rate, ch;
    guint64 mask;
    const Seg *segs;
    int n;
    double i, ms_end;
  } cases[] = {
    {"case 1 (48 kHz)", 48000, 2, 0, c1, 1, -23, -23},
    {"case 1 (44.1 kHz)", 44100, 2, 0, c1, 1, -23, -23},
    {"case 1 (96 kHz)", 96000, 2, 0, c1, 1, -23, -23},
    {"case 2", 48000, 2, 0, c2, 1, -33, -33},
    {"case 3", 48000, 2, 0, c3, 3, -23, -36},
    {"case 4", 48000, 2, 0, c4, 5, -23, -72},
    {"case 5", 48000, 2, 0, c5, 3, -23, -26},
    /* FL FR FC RL RR */
    {"case 6 (5.0)", 48000, 5, 0x37, c6, 1, -23, -23},
    /* FL FR FC LFE RL RR */
    {"case 6 (5.1, loud LFE)", 48000, 6, 0x3f, c6b, 1, -23, -23},
  };
  for (unsigned k = 0; k < G_N_ELEMENTS (cases); k++) {
    char what[96];
    printf ("Tech 3341 %s\n", cases[k].name);
    Run *r = measure (cases[k].rate, cases[k].ch, cases[k].mask, 1000.0,
        cases[k].segs, cases[k].n);
    snprintf (what, sizeof what, "input-integrated (LUFS)");
    check_near (what, field (r, "input-integrated"), cases[k].i, 0.1);
    check_near ("input-momentary at end (LUFS)", field (r, "input-momentary"),
        cases[k].ms_end, 0.1);
    check_near ("input-short-term at end (LUFS)", field (r, "input-short-term"),
        cases[k].ms_end, 0.1);
    run_free (r);
  }
}

static void
tech3341_true_peak (void)
{
  /* sample-phase sines: amplitude A, frequency fs/k, initial phase ph */
  struct
  {
    const char *name;
    unsigned rate;
    double div, phase_deg, amp_db, expect;
  } cases[] = {
    {"case 15: fs/4, 0 deg", 48000, 4, 0, -6.0, -6.0},
    {"case 16: fs/4, 45 deg", 48000, 4, 45, -6.0, -6.0},
    {"case 17: fs/6, 60 deg", 48000, 6, 60, -6.0, -6.0},
    {"case 18: fs/8, 67.5 deg", 48000, 8, 67.5, -6.0, -6.0},
    {"case 19: fs/4, 45 deg, samples at 0 dBFS", 48000, 4, 45, 20 * log10 (M_SQRT2), 3.0103},
    /* beyond the EBU's own files: the same constructions at the other rates */
    {"'20': fs/4, 45 deg at 44.1 kHz", 44100, 4, 45, -6.0, -6.0},
    {"'21': fs/6, 60 deg at 96 kHz", 96000, 6, 60, -6.0, -6.0},
    {"'22': fs/8, 67.5 deg at 44.1 kHz", 44100, 8, 67.5, -6.0, -6.0},
    {"'23': fs/4, 45 deg at 96 kHz, 0 dBTP", 96000, 4, 45, 0.0, 0.0},
  };
  for (unsigned k = 0; k < G_N_ELEMENTS (cases); k++) {
    printf ("Tech 3341 true peak %s\n", cases[k].name);
    Run *r = run_new ("loudnorm interval=18446744073709551615", cases[k].rate,
        2, 0, NULL, NULL);
    unsigned rate = cases[k].rate;
    size_t n = rate * 2;
    float *x = g_new (float, n * 2);
    double a = pow (10.0, cases[k].amp_db / 20.0);
    for (size_t i = 0; i < n; i++) {
      double v = a * sin (2 * M_PI * i / cases[k].div + cases[k].phase_deg * M_PI / 180);
      /* 20 ms raised-cosine fade-in: a sine switched on at a non-zero sample
       * is a step, whose interpolated overshoot is not what is tested */
      if (i < rate / 50)
        v *= 0.5 - 0.5 * cos (M_PI * i / (rate / 50));
      x[2 * i] = x[2 * i + 1] = (float) v;
    }
    run_push (r, x, n);
    run_eos (r);
    check_range ("input-true-peak (dBTP)", field (r, "input-true-peak"),
        cases[k].expect - 0.4, cases[k].expect + 0.2);
    g_free (x);
    run_free (r);
  }
}

static void
tech3342_lra (void)
{
  static const Seg c1[] = { {20, S2 (-20)}, {20, S2 (-30)} };
  static const Seg c2[] = { {20, S2 (-20)}, {20, S2 (-15)} };
  static const Seg c3[] = { {20, S2 (-40)}, {20, S2 (-20)} };
  static const Seg c4[] = { {20, S2 (-50)}, {20, S2 (-35)}, {20, S2 (-20)},
  {20, S2 (-35)}, {20, S2 (-50)}
  };
  struct
  {
    const char *name;
    const Seg *segs;
    int n;
    double lra;
  } cases[] = {
    {"case 1", c1, 2, 10}, {"case 2", c2, 2, 5}, {"case 3", c3, 2, 20},
    {"case 4", c4, 5, 15},
  };
  for (unsigned k = 0; k < G_N_ELEMENTS (cases); k++) {
    printf ("Tech 3342 %s\n", cases[k].name);
    Run *r = measure (48000, 2, 0, 1000.0, cases[k].segs, cases[k].n);
    check_near ("input-loudness-range (LU)", field (r, "input-loudness-range"),
        cases[k].lra, 1.0);
    run_free (r);
  }
}

int
main (int argc, char **argv)
{
  gst_init (&argc, &argv);
  tech3341_loudness ();
  tech3341_true_peak ();
  tech3342_lra ();
  printf ("%s (%d failures)\n", failures ? "FAILED" : "PASSED", failures);
  return failures ? 1 : 0;
}
