/* Unit tests of the pure DSP (biquad.c) and the bands parser (bands.c):
 * no GStreamer. Plain asserts (compiled with NDEBUG undefined). */
#undef NDEBUG
#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "biquad.h"
#include "bands.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

#define CHECK_CLOSE(a, b, tol) do {                                        \
    double a_ = (a), b_ = (b);                                             \
    if (!(fabs (a_ - b_) <= (tol))) {                                      \
      fprintf (stderr, "%s:%d: %s = %.17g, expected %.17g (tol %g)\n",     \
          __FILE__, __LINE__, #a, a_, b_, (double) (tol));                 \
      abort ();                                                            \
    }                                                                      \
  } while (0)

static EqBand
band (double f, double g, double q)
{
  EqBand b;

  b.type = EQ_BAND_PEAK;
  b.freq = f;
  b.gain_db = g;
  b.q = q;
  return b;
}

static double
now_s (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Coefficients against values worked out by hand from the cookbook:
 *
 *  f0 = 1000 Hz, gain = +6 dB, Q = 1, Fs = 48000 Hz
 *    A     = 10^(6/40)             = 1.4125375446227544
 *    w0    = 2 pi 1000 / 48000     = 0.1308996938995747
 *    alpha = sin(w0) / 2           = 0.06526309611002579
 *    a0    = 1 + alpha / A         = 1.0462025...
 *    b0 = (1 + alpha A) / a0       = 1.0439530869903351
 *    b1 = a1 = -2 cos(w0) / a0     = -1.8953207239365961
 *    b2 = (1 - alpha A) / a0       = 0.86772228475985658
 *    a2 = (1 - alpha / A) / a0     = 0.91167537175019153
 *
 *  f0 = 100, -12 dB, Q = 0.5, Fs = 44100 and f0 = 10000, +3 dB, Q = 4,
 *  Fs = 96000 likewise. */
static void
test_coefficients (void)
{
  static const struct
  {
    double f0, g, q, fs, b0, b1, b2, a1, a2;
  } cases[] = {
    {1000, 6, 1, 48000, 1.0439530869903351, -1.8953207239365961,
        0.86772228475985658, -1.8953207239365961, 0.91167537175019153},
    {100, -12, 0.5, 44100, 0.97930212970820363, -1.9445206858130297,
        0.96541593552282623, -1.9445206858130297, 0.94471806523102997},
    {10000, 3, 4, 96000, 1.0248238040008049, -1.4912290782188702,
        0.85482931206403578, -1.4912290782188702, 0.87965311606484087},
  };
  size_t i;

  for (i = 0; i < sizeof (cases) / sizeof (cases[0]); i++) {
    EqBiquad c;

    assert (eq_biquad_peaking (&c, cases[i].f0, cases[i].g, cases[i].q,
            cases[i].fs) == 1);
    CHECK_CLOSE (c.b0, cases[i].b0, 1e-14);
    CHECK_CLOSE (c.b1, cases[i].b1, 1e-14);
    CHECK_CLOSE (c.b2, cases[i].b2, 1e-14);
    CHECK_CLOSE (c.a1, cases[i].a1, 1e-14);
    CHECK_CLOSE (c.a2, cases[i].a2, 1e-14);
  }

  /* gain 0 is exactly the identity, and skipped */
  {
    EqBiquad c;

    assert (eq_biquad_peaking (&c, 1000, 0, 1, 48000) == 0);
    assert (eq_biquad_is_identity (&c));
    /* above 0.49 fs: skipped */
    assert (eq_biquad_peaking (&c, 20000, 6, 1, 32000) == 0);
    assert (eq_biquad_is_identity (&c));
    assert (eq_biquad_peaking (&c, 0.49 * 32000, 6, 1, 32000) == 1);
    assert (!eq_biquad_is_identity (&c));
    /* nonsense */
    assert (eq_biquad_peaking (&c, NAN, 6, 1, 48000) == 0);
    assert (eq_biquad_peaking (&c, 1000, 6, 0, 48000) == 0);
    assert (eq_biquad_is_identity (&c));
  }
  printf ("ok coefficients\n");
}

/* |H|: exact values at f0 (A^2 = gain), at DC and at Nyquist (1), the
 * symmetry of the peak (|H| of +g and -g multiply to 1), and agreement with
 * the steady-state gain of the filter run on a sine. */
static void
test_magnitude (void)
{
  static const double gains[] = { -24, -12, -3, 0.5, 6, 24 };
  static const double qs[] = { 0.1, 0.3, 1, 2.5, 8, 30 };
  size_t gi, qi;

  for (gi = 0; gi < 6; gi++) {
    for (qi = 0; qi < 6; qi++) {
      EqBiquad c, inv;
      double g = gains[gi], q = qs[qi];

      assert (eq_biquad_peaking (&c, 1000, g, q, 48000));
      assert (eq_biquad_peaking (&inv, 1000, -g, q, 48000));
      CHECK_CLOSE (20 * log10 (eq_biquad_magnitude (&c, 1000, 48000)), g,
          1e-9);
      CHECK_CLOSE (eq_biquad_magnitude (&c, 0, 48000), 1.0, 1e-9);
      CHECK_CLOSE (eq_biquad_magnitude (&c, 24000, 48000), 1.0, 1e-9);
      CHECK_CLOSE (eq_biquad_magnitude (&c, 345, 48000) *
          eq_biquad_magnitude (&inv, 345, 48000), 1.0, 1e-9);
    }
  }

  /* the filter run on a sine: rms gain over whole periods matches |H| */
  {
    static const double freqs[] = { 50, 200, 700, 1000, 1500, 5000, 15000 };
    size_t fi;

    for (fi = 0; fi < 7; fi++) {
      EqCascade eq;
      EqBiquad c[2];
      EqBand bb[2] = { band (1000, 9, 2), band (3000, -5, 0.7) };
      const double fs = 48000, f = freqs[fi];
      const size_t n = 96000, skip = 48000;
      double *x = malloc (n * sizeof (double));
      double ein = 0, eout = 0, expect;
      size_t i;

      assert (x);
      assert (eq_biquad_peaking (&c[0], 1000, 9, 2, fs));
      assert (eq_biquad_peaking (&c[1], 3000, -5, 0.7, fs));
      assert (eq_cascade_init (&eq, 1) == 0);
      eq_cascade_set_bands (&eq, bb, 2, fs, 0);
      for (i = 0; i < n; i++)
        x[i] = 0.5 * sin (2 * M_PI * f * i / fs);
      for (i = skip; i < n; i++)
        ein += x[i] * x[i];
      eq_cascade_process_f64 (&eq, x, n);
      for (i = skip; i < n; i++)
        eout += x[i] * x[i];
      expect = 20 * log10 (eq_biquad_magnitude (&c[0], f, fs) *
          eq_biquad_magnitude (&c[1], f, fs));
      CHECK_CLOSE (10 * log10 (eout / ein), expect, 1e-3);
      eq_cascade_clear (&eq);
      free (x);
    }
  }
  printf ("ok magnitude\n");
}

/* Poles inside the unit circle over the whole parameter range, at several
 * rates; the impulse response decays. */
static void
test_stability (void)
{
  static const double rates[] = { 8000, 22050, 44100, 48000, 96000, 192000 };
  size_t ri;
  unsigned count = 0;

  for (ri = 0; ri < 6; ri++) {
    double f, g, q;

    for (f = 20; f <= 20000; f *= 1.25) {
      for (g = -24; g <= 24; g += 3) {
        for (q = 0.1; q <= 30; q *= 1.6) {
          EqBiquad c;
          double disc, r;

          if (!eq_biquad_peaking (&c, f, g, q, rates[ri]))
            continue;
          assert (eq_biquad_is_stable (&c));
          /* pole radius: complex poles have |p|^2 = a2 */
          disc = c.a1 * c.a1 - 4 * c.a2;
          if (disc < 0)
            r = sqrt (c.a2);
          else
            r = (fabs (c.a1) + sqrt (disc)) / 2;
          assert (r < 1.0);
          count++;
        }
      }
    }
  }
  assert (count > 5000);

  /* impulse response of the slowest band dies out: 20 Hz, +24 dB, q 30 has
   * its poles at radius 1 - pi f0 / (q A fs), a time constant of about
   * 7.6 s; over 60 s the envelope falls by e^-7.8 */
  {
    EqCascade eq;
    EqBiquad c;
    const size_t n = 48000 * 60;
    double *x = calloc (n, sizeof (double));
    double head = 0, tail = 0;
    size_t i;

    assert (x);
    EqBand bb = band (20, 24, 30);

    assert (eq_band_design (&bb, 48000, &c));
    assert (eq_cascade_init (&eq, 1) == 0);
    eq_cascade_set_bands (&eq, &bb, 1, 48000, 0);
    x[0] = 1.0;
    eq_cascade_process_f64 (&eq, x, n);
    for (i = 1; i < 48000; i++)
      head = fmax (head, fabs (x[i]));
    for (i = n - 48000; i < n; i++)
      tail = fmax (tail, fabs (x[i]));
    assert (head > 0 && tail < 1e-3 * head);
    eq_cascade_clear (&eq);
    free (x);
  }
  /* a convex combination of two stable biquads (what the ramp does between
   * its anchors) stays stable */
  {
    EqBiquad a, b, m;
    double t;

    assert (eq_biquad_peaking (&a, 20, 24, 30, 48000));
    assert (eq_biquad_peaking (&b, 20000, -24, 0.1, 48000));
    for (t = 0; t <= 1.0; t += 1.0 / 1024) {
      m.a1 = a.a1 + (b.a1 - a.a1) * t;
      m.a2 = a.a2 + (b.a2 - a.a2) * t;
      m.b0 = 1, m.b1 = m.b2 = 0;
      assert (eq_biquad_is_stable (&m));
    }
  }
  printf ("ok stability (%u filters)\n", count);
}

/* Digital silence after a loud burst through a slow (20 Hz, q 30) band:
 * the state is flushed to exactly 0 and the time per block does not blow
 * up (no denormals). */
static void
test_silence_speed (void)
{
  EqCascade eq;
  EqBand c[4] = { band (20, 24, 30), band (31, -24, 30), band (1000, 12, 0.1),
    band (15000, -12, 8)
  };
  const size_t block = 48000;   /* 1 s stereo blocks */
  const int blocks = 240;       /* 4 minutes */
  float *buf = malloc (block * 2 * sizeof (float));
  /* minimum times: a denormal slowdown would hit every block, scheduling
   * noise does not */
  double t_signal = 1e9, t_silence_last = 1e9, t;
  size_t i;
  int b;

  assert (buf);
  assert (eq_cascade_init (&eq, 2) == 0);
  eq_cascade_set_bands (&eq, c, 4, 48000, 0);

  /* a few seconds of loud noise, timed */
  srand (1);
  for (b = 0; b < 3; b++) {
    for (i = 0; i < block * 2; i++)
      buf[i] = (float) (rand () / (double) RAND_MAX - 0.5);
    t = now_s ();
    eq_cascade_process_f32 (&eq, buf, block);
    t_signal = fmin (t_signal, now_s () - t);
  }
  for (b = 0; b < blocks; b++) {
    memset (buf, 0, block * 2 * sizeof (float));
    t = now_s ();
    eq_cascade_process_f32 (&eq, buf, block);
    t = now_s () - t;
    if (b >= blocks - 10)
      t_silence_last = fmin (t_silence_last, t);
  }
  for (i = 0; i < 2 * EQ_MAX_BANDS * 2; i++)
    assert (eq.state[i] == 0.0);
  for (i = 0; i < block * 2; i++)
    assert (buf[i] == 0.0f);
  printf ("ok silence: %.3f ms per second of stereo signal (4 bands), %.3f ms "
      "per second of silence after 4 min of silence\n", t_signal * 1e3,
      t_silence_last * 1e3);
  /* denormal arithmetic is 10-100x slower */
  assert (t_silence_last < 2 * t_signal + 0.0005);
  eq_cascade_clear (&eq);
  free (buf);
}

/* Largest |y[n] - y[n-1]| in [from, to) */
static double
max_step (const double *y, size_t from, size_t to)
{
  double m = 0;
  size_t i;

  for (i = from + 1; i < to; i++)
    m = fmax (m, fabs (y[i] - y[i - 1]));
  return m;
}

/* Largest |y[n] - 2 y[n-1] + y[n-2]| in [from, to): a click detector that
 * is far more sensitive than the first difference (a sine of frequency f is
 * attenuated by (2 pi f / fs)^2, a step is not). */
static double
max_d2 (const double *y, size_t from, size_t to)
{
  double m = 0;
  size_t i;

  for (i = from + 2; i < to; i++)
    m = fmax (m, fabs (y[i] - 2 * y[i - 1] + y[i - 2]));
  return m;
}

/* A sine at freq through `up`, switched to `down` at a sample that is not a
 * zero crossing. Returns the largest sample-to-sample step around the change;
 * steady_step gets the largest step of the steady output before and after.
 * Checks the level after the change against |H| of `down`. */
static double
run_change (EqBand up, EqBand down, double freq, size_t ramp,
    double *steady_step, double *d2_ratio)
{
  const double fs = 48000, amp = 0.1;
  const size_t n = 48000, at = 24000 + 123;
  double *y = malloc (n * sizeof (double));
  EqCascade eq;
  EqBiquad d;
  double m;
  size_t i;

  assert (y);
  assert (eq_cascade_init (&eq, 1) == 0);
  eq_cascade_set_bands (&eq, &up, 1, fs, 0);
  for (i = 0; i < n; i++)
    y[i] = amp * sin (2 * M_PI * freq * i / fs);
  eq_cascade_process_f64 (&eq, y, at);
  eq_cascade_set_bands (&eq, &down, 1, fs, ramp);
  eq_cascade_process_f64 (&eq, y + at, n - at);
  *steady_step = fmax (max_step (y, at - 4800, at), max_step (y, n - 4800, n));
  m = max_step (y, at - 10, at + 4800);
  *d2_ratio = max_d2 (y, at - 10, at + 4800) /
      fmax (max_d2 (y, at - 4800, at), max_d2 (y, n - 4800, n));
  /* after the change: the level of `down` */
  {
    double e = 0;

    (void) eq_band_design (&down, fs, &d);
    for (i = n - 4800; i < n; i++)
      e += y[i] * y[i];
    CHECK_CLOSE (sqrt (e / 4800) * sqrt (2),
        amp * eq_biquad_magnitude (&d, freq, fs), 1e-3 * amp);
  }
  eq_cascade_clear (&eq);
  free (y);
  return m;
}

static void
test_ramp (void)
{
  static const struct
  {
    double f;
    EqBand up, down;
    int abrupt_clicks;
  } cases[] = {
    {100, {EQ_BAND_PEAK, 100, 12, 1}, {EQ_BAND_PEAK, 100, -12, 1}, 1},
    {100, {EQ_BAND_PEAK, 100, -12, 1}, {EQ_BAND_PEAK, 100, 12, 1}, 1},
    {200, {EQ_BAND_PEAK, 200, 12, 4}, {EQ_BAND_PEAK, 3000, 12, 4}, 1},
    {200, {EQ_BAND_PEAK, 3000, 12, 4}, {EQ_BAND_PEAK, 200, 12, 4}, 0},
    {150, {EQ_BAND_PEAK, 150, 0, 1}, {EQ_BAND_PEAK, 150, 24, 0.5}, 0},
    {150, {EQ_BAND_PEAK, 150, 24, 0.5}, {EQ_BAND_PEAK, 150, 0, 1}, 1},
    {80, {EQ_BAND_PEAK, 60, 9, 30}, {EQ_BAND_PEAK, 100, -9, 0.1}, 1},
    {1000, {EQ_BAND_PEAK, 1000, 6, 1}, {EQ_BAND_PEAK, 8000, -6, 2}, 1},
  };
  size_t k;

  for (k = 0; k < sizeof (cases) / sizeof (cases[0]); k++) {
    double steady, smooth, abrupt, d2s, d2a;

    smooth = run_change (cases[k].up, cases[k].down, cases[k].f, 960,
        &steady, &d2s);
    abrupt = run_change (cases[k].up, cases[k].down, cases[k].f, 0, &steady,
        &d2a);
    printf ("ramp %g:%g:%g -> %g:%g:%g on %g Hz: steady step %.6f, ramped "
        "change %.6f, abrupt %.6f; 2nd difference / steady: ramped %.2f, "
        "abrupt %.2f\n", cases[k].up.freq, cases[k].up.gain_db,
        cases[k].up.q, cases[k].down.freq, cases[k].down.gain_db,
        cases[k].down.q, cases[k].f, steady, smooth, abrupt, d2s, d2a);
    /* the brief's criterion: the largest step stays that of the steady
     * sine (+10 %: a fast sweep of a resonance over the tone modulates its
     * phase a little) */
    assert (smooth <= steady * 1.1);
    /* the sensitive one: no broadband content beyond a few times that of
     * the steady sine */
    assert (d2s <= 4.0);
    /* and the check does see clicks: switching abruptly makes one */
    if (cases[k].abrupt_clicks)
      assert (d2a > 5.0);
    (void) abrupt;
  }

  /* a ramp to flat ends with the cascade empty (its tail included) */
  {
    EqCascade eq;
    EqBand b = band (500, 6, 1);
    double x[4800];
    size_t i;

    assert (eq_cascade_init (&eq, 3) == 0);
    eq_cascade_set_bands (&eq, &b, 1, 48000, 0);
    for (i = 0; i < 4800; i++)
      x[i] = sin (i * 0.1);
    eq_cascade_process_f64 (&eq, x, 1600);
    eq_cascade_set_bands (&eq, NULL, 0, 48000, 960);
    assert (!eq_cascade_is_identity (&eq));
    for (i = 0; i < 4800; i++)
      x[i] = sin (i * 0.1);
    eq_cascade_process_f64 (&eq, x, 1600);
    assert (!eq_cascade_is_ramping (&eq));
    for (i = 0; i < 4800; i++)
      x[i] = sin (i * 0.1);
    eq_cascade_process_f64 (&eq, x, 1600);
    assert (eq_cascade_is_identity (&eq));
    for (i = 0; i < 3 * EQ_MAX_BANDS * 2; i++)
      assert (eq.state[i] == 0.0);
    eq_cascade_clear (&eq);
  }
  printf ("ok ramp to flat\n");

  /* a new target in the middle of a ramp: no click either */
  {
    EqCascade eq;
    EqBand b1 = band (100, 12, 1), b2 = band (100, -12, 1), b3 =
        band (300, 6, 2);
    const size_t n = 48000;
    double *y = malloc (n * sizeof (double)), steady, m;
    size_t i;

    assert (y);
    assert (eq_cascade_init (&eq, 1) == 0);
    eq_cascade_set_bands (&eq, &b1, 1, 48000, 0);
    for (i = 0; i < n; i++)
      y[i] = 0.1 * sin (2 * M_PI * 100 * i / 48000.0);
    eq_cascade_process_f64 (&eq, y, 24000);
    eq_cascade_set_bands (&eq, &b2, 1, 48000, 960);
    eq_cascade_process_f64 (&eq, y + 24000, 417);
    assert (eq_cascade_is_ramping (&eq));
    eq_cascade_set_bands (&eq, &b3, 1, 48000, 960);
    eq_cascade_process_f64 (&eq, y + 24417, n - 24417);
    steady = max_step (y, 24000 - 4800, 24000);
    m = max_step (y, 24000 - 10, 24000 + 4800);
    printf ("ok retarget mid-ramp: steady %.6f, around %.6f\n", steady, m);
    assert (m <= steady * 1.02);
    eq_cascade_clear (&eq);
    free (y);
  }
}

/* Channels are independent; float and double paths agree; 5 channels use
 * the paired + single kernels. */
static void
test_channels (void)
{
  const size_t n = 10000;
  const unsigned nch = 5;
  double *mono = malloc (n * sizeof (double));
  double *multi = malloc (n * nch * sizeof (double));
  float *multif = malloc (n * nch * sizeof (float));
  EqBand c[3] = { band (100, 4, 1), band (1000, -3, 2.5), band (8000, 2, 1) };
  EqCascade a, b, d;
  size_t i;
  unsigned ch;

  assert (mono && multi && multif);
  for (ch = 0; ch < nch; ch++) {
    for (i = 0; i < n; i++) {
      double v = sin (i * (0.01 + 0.05 * ch)) * 0.5;

      multi[i * nch + ch] = v;
      multif[i * nch + ch] = (float) v;
    }
  }
  assert (eq_cascade_init (&b, nch) == 0);
  assert (eq_cascade_init (&d, nch) == 0);
  eq_cascade_set_bands (&b, c, 3, 48000, 0);
  eq_cascade_set_bands (&d, c, 3, 48000, 0);
  eq_cascade_process_f64 (&b, multi, n);
  eq_cascade_process_f32 (&d, multif, n);
  for (ch = 0; ch < nch; ch++) {
    assert (eq_cascade_init (&a, 1) == 0);
    eq_cascade_set_bands (&a, c, 3, 48000, 0);
    for (i = 0; i < n; i++)
      mono[i] = sin (i * (0.01 + 0.05 * ch)) * 0.5;
    /* in odd pieces, to cross the block boundaries differently */
    eq_cascade_process_f64 (&a, mono, 333);
    eq_cascade_process_f64 (&a, mono + 333, n - 333);
    for (i = 0; i < n; i++) {
      assert (mono[i] == multi[i * nch + ch]);
      CHECK_CLOSE (multif[i * nch + ch], mono[i], 1e-6);
    }
    eq_cascade_clear (&a);
    /* F32 too: channel pairs (two lanes of a vector) and the channel left
     * over give exactly what the same channel gives alone */
    {
      float *monof = malloc (n * sizeof (float));

      assert (monof);
      assert (eq_cascade_init (&a, 1) == 0);
      eq_cascade_set_bands (&a, c, 3, 48000, 0);
      for (i = 0; i < n; i++)
        monof[i] = (float) (sin (i * (0.01 + 0.05 * ch)) * 0.5);
      eq_cascade_process_f32 (&a, monof, 333);
      eq_cascade_process_f32 (&a, monof + 333, n - 333);
      for (i = 0; i < n; i++)
        assert (monof[i] == multif[i * nch + ch]);
      eq_cascade_clear (&a);
      free (monof);
    }
  }
  eq_cascade_clear (&b);
  eq_cascade_clear (&d);
  free (mono);
  free (multi);
  free (multif);
  printf ("ok channels\n");
}

static void
expect_bad (const char *s)
{
  EqBand bands[EQ_MAX_BANDS];
  char err[160] = "";

  bands[0].freq = 1234;
  if (eq_bands_parse (s, bands, err, sizeof (err)) != -1) {
    fprintf (stderr, "accepted bad bands \"%s\"\n", s ? s : "(null)");
    abort ();
  }
  assert (err[0] != '\0');
  assert (bands[0].freq == 1234);       /* untouched */
}

static void
test_parse (void)
{
  EqBand b[EQ_MAX_BANDS];
  char err[160];
  int n;

  n = eq_bands_parse ("100:4,1000:-3:2.5", b, err, sizeof (err));
  assert (n == 2);
  assert (b[0].type == EQ_BAND_PEAK && b[0].freq == 100 && b[0].gain_db == 4
      && b[0].q == 1.0);
  assert (b[1].freq == 1000 && b[1].gain_db == -3 && b[1].q == 2.5);

  n = eq_bands_parse (" 20 : -24 : 0.1 , peak:20000:+24:30,\t0031.5:0.05:.5 ",
      b, err, sizeof (err));
  assert (n == 3);
  assert (b[0].freq == 20 && b[0].gain_db == -24 && b[0].q == 0.1);
  assert (b[1].freq == 20000 && b[1].gain_db == 24 && b[1].q == 30);
  assert (b[2].freq == 31.5 && b[2].gain_db == 0.05 && b[2].q == 0.5);

  n = eq_bands_parse ("1000:0", b, err, sizeof (err));
  assert (n == 1 && eq_bands_all_flat (b, n));
  n = eq_bands_parse ("1:1,2:2", b, err, sizeof (err));
  assert (n == -1);

  {
    char s[512] = "";
    int i;

    for (i = 0; i < 16; i++)
      strcat (s, i ? ",100:1" : "100:1");
    assert (eq_bands_parse (s, b, err, sizeof (err)) == 16);
    strcat (s, ",100:1");
    expect_bad (s);
  }

  expect_bad (NULL);
  expect_bad ("");
  expect_bad ("   ");
  expect_bad ("100");
  expect_bad ("100:");
  expect_bad (":4");
  expect_bad ("100:4,");
  expect_bad (",100:4");
  expect_bad ("100:4,,200:3");
  expect_bad ("100:4:1:2");
  expect_bad ("100:4:");
  expect_bad ("abc:4");
  expect_bad ("lowshelf:100:4");
  expect_bad ("peak:100");
  expect_bad ("100x:4");
  expect_bad ("1e3:4");
  expect_bad ("100:4.5.1");
  expect_bad ("100:-");
  expect_bad ("100:.");
  expect_bad ("100;4");
  expect_bad ("19.9:4");
  expect_bad ("20000.1:4");
  expect_bad ("100:24.01");
  expect_bad ("100:-25");
  expect_bad ("100:4:0.09");
  expect_bad ("100:4:31");
  expect_bad ("100:4:0");
  expect_bad ("100:4:nan");
  expect_bad ("100:inf");
  expect_bad ("100,4");
  printf ("ok parse\n");
}

int
main (void)
{
  setvbuf (stdout, NULL, _IOLBF, 0);
  test_coefficients ();
  test_magnitude ();
  test_stability ();
  test_channels ();
  test_ramp ();
  test_parse ();
  test_silence_speed ();
  return 0;
}
