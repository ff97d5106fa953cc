/* GstHarness tests of the parametriceq element (loaded from the built
 * audioengine plugin through GST_PLUGIN_PATH).
 *
 * The expected magnitudes come from an implementation of the RBJ cookbook
 * written here again, independently of biquad.c. */
#include <gst/gst.h>
#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>
#include <gst/base/gstbasetransform.h>
#include <gst/audio/audio.h>

#include <complex.h>
#include <math.h>
#include <string.h>

#define RATE 48000
#define STEP_FRAMES (RATE * 5 / 4)      /* 1.25 s per frequency */
#define MEASURE_FRAMES RATE     /* the last second */
#define BUF_FRAMES 1000

/* ISO 1/3-octave centres from 31.5 Hz to 20 kHz, rounded to whole Hz so a
 * one-second window holds whole periods */
static const gint iso_freqs[] = {
  31, 40, 50, 63, 80, 100, 125, 160, 200, 250, 315, 400, 500, 630, 800,
  1000, 1250, 1600, 2000, 2500, 3150, 4000, 5000, 6300, 8000, 10000, 12500,
  16000, 20000
};

#define N_FREQS G_N_ELEMENTS (iso_freqs)

typedef struct
{
  double f0, gain, q;
} RefBand;

/* |H(e^jw)| of one RBJ peaking biquad, straight from the cookbook */
static double
ref_peak_mag (const RefBand * b, double f, double fs)
{
  double A = pow (10.0, b->gain / 40.0);
  double w0 = 2.0 * G_PI * b->f0 / fs;
  double alpha = sin (w0) / (2.0 * b->q);
  double complex z1 = cexp (-I * 2.0 * G_PI * f / fs);
  double complex num = (1.0 + alpha * A) - 2.0 * cos (w0) * z1
      + (1.0 - alpha * A) * z1 * z1;
  double complex den = (1.0 + alpha / A) - 2.0 * cos (w0) * z1
      + (1.0 - alpha / A) * z1 * z1;

  return cabs (num / den);
}

static double
ref_db (const RefBand * bands, gint n, double f, double fs)
{
  double m = 1.0;
  gint i;

  for (i = 0; i < n; i++)
    m *= ref_peak_mag (&bands[i], f, fs);
  return 20.0 * log10 (m);
}

static GstHarness *
new_harness (const gchar * format, gint rate, gint channels)
{
  GstHarness *h = gst_harness_new ("parametriceq");
  gchar *caps = g_strdup_printf ("audio/x-raw,format=%s,rate=%d,channels=%d,"
      "layout=interleaved%s", format, rate, channels,
      channels > 2 ? ",channel-mask=(bitmask)0" : "");

  gst_harness_set_src_caps_str (h, caps);
  g_free (caps);
  return h;
}

static gboolean
is_f64 (const gchar * format)
{
  return g_str_has_prefix (format, "F64");
}

/* Pushes frames (interleaved doubles, converted to the harness format) and
 * returns the output as doubles. Buffers of BUF_FRAMES. */
static void
push_pull (GstHarness * h, const gchar * format, gint channels,
    const double *in, double *out, gsize frames)
{
  gsize pos = 0;
  gboolean f64 = is_f64 (format);
  gsize bps = f64 ? 8 : 4;

  while (pos < frames) {
    gsize n = MIN (BUF_FRAMES, frames - pos), i;
    gsize ns = n * channels;
    GstBuffer *buf = gst_harness_create_buffer (h, ns * bps);
    GstBuffer *outbuf;
    GstMapInfo map;

    fail_unless (buf != NULL);
    fail_unless (gst_buffer_map (buf, &map, GST_MAP_WRITE));
    for (i = 0; i < ns; i++) {
      if (f64)
        ((gdouble *) map.data)[i] = in[pos * channels + i];
      else
        ((gfloat *) map.data)[i] = (gfloat) in[pos * channels + i];
    }
    gst_buffer_unmap (buf, &map);
    outbuf = gst_harness_push_and_pull (h, buf);
    fail_unless (outbuf != NULL);
    fail_unless (gst_buffer_map (outbuf, &map, GST_MAP_READ));
    fail_unless_equals_uint64 (map.size, ns * bps);
    for (i = 0; i < ns; i++)
      out[pos * channels + i] = f64 ? ((gdouble *) map.data)[i]
          : ((gfloat *) map.data)[i];
    gst_buffer_unmap (outbuf, &map);
    gst_buffer_unref (outbuf);
    pos += n;
  }
}

/* Stepped sines through the element: returns the largest deviation (dB)
 * from the reference over all ISO frequencies. */
static double
measure_response (const gchar * format, const gchar * bands_str,
    const RefBand * ref, gint n_ref)
{
  GstHarness *h = new_harness (format, RATE, 1);
  double *in = g_new (double, STEP_FRAMES);
  double *out = g_new (double, STEP_FRAMES);
  double worst = 0.0;
  guint fi;

  g_object_set (h->element, "bands", bands_str, NULL);
  for (fi = 0; fi < N_FREQS; fi++) {
    double ein = 0, eout = 0, got, want;
    gsize i;

    for (i = 0; i < STEP_FRAMES; i++) {
      double v = 0.5 * sin (2.0 * G_PI * iso_freqs[fi] * (double) i / RATE);

      /* round to the format first so the input rms is the one fed in */
      in[i] = is_f64 (format) ? v : (double) (gfloat) v;
    }
    push_pull (h, format, 1, in, out, STEP_FRAMES);
    for (i = STEP_FRAMES - MEASURE_FRAMES; i < STEP_FRAMES; i++) {
      ein += in[i] * in[i];
      eout += out[i] * out[i];
    }
    got = 10.0 * log10 (eout / ein);
    want = ref_db (ref, n_ref, iso_freqs[fi], RATE);
    GST_LOG ("%s %s %5d Hz: %+.4f dB, expected %+.4f", format, bands_str,
        iso_freqs[fi], got, want);
    if (fabs (got - want) > 0.1)
      GST_ERROR ("%s %s %d Hz: %+.4f dB, expected %+.4f", format, bands_str,
          iso_freqs[fi], got, want);
    worst = MAX (worst, fabs (got - want));
  }
  g_free (in);
  g_free (out);
  gst_harness_teardown (h);
  return worst;
}

static void
check_response (const gchar * bands_str, const RefBand * ref, gint n_ref)
{
  static const gchar *formats[] = { "F32LE", "F64LE" };
  guint i;

  for (i = 0; i < G_N_ELEMENTS (formats); i++) {
    double worst = measure_response (formats[i], bands_str, ref, n_ref);

    /* not GST_INFO: the figures go to the test log for the docs */
    g_print ("response %-5s %-46s %2u freqs 31-20000 Hz: max |error| "
        "%.1e dB\n", formats[i], bands_str, (guint) N_FREQS, worst);
    fail_unless (worst < 0.1, "%s \"%s\": error %.4f dB", formats[i],
        bands_str, worst);
  }
}

GST_START_TEST (test_response_wide)
{
  const RefBand b[] = { {1000, 12, 0.3} };
  check_response ("1000:12:0.3", b, 1);
}

GST_END_TEST;

GST_START_TEST (test_response_narrow)
{
  const RefBand b[] = { {1000, -12, 8} };
  const RefBand c[] = { {100, 15, 8} };
  check_response ("1000:-12:8", b, 1);
  check_response ("100:15:8", c, 1);
}

GST_END_TEST;

GST_START_TEST (test_response_default_q)
{
  const RefBand b[] = { {250, -6, 1}, {4000, 6, 1} };
  check_response ("250:-6,4000:6", b, 2);
}

GST_END_TEST;

GST_START_TEST (test_response_several)
{
  const RefBand b[] = {
    {63, 6, 0.7}, {250, -4, 2}, {1000, 9, 1.4}, {4000, -8, 4}, {12000, 5, 0.5},
    {16000, -24, 30}
  };
  check_response ("63:6:0.7,250:-4:2,1000:9:1.4,4000:-8:4,12000:5:0.5,"
      "16000:-24:30", b, 6);
}

GST_END_TEST;

GST_START_TEST (test_response_engine_bands)
{
  /* the bands the engine uses in the bench */
  const RefBand b[] = { {100, 4, 1}, {1000, -3, 2.5}, {8000, 2, 1} };
  check_response ("100:4,1000:-3:2.5,8000:2", b, 3);
}

GST_END_TEST;

static void
fill_noise (double *x, gsize n, guint32 seed)
{
  GRand *r = g_rand_new_with_seed (seed);
  gsize i;

  for (i = 0; i < n; i++)
    x[i] = g_rand_double_range (r, -0.9, 0.9);
  g_rand_free (r);
}

/* Pushes noise and checks the output is bit-identical (and the element in
 * pass-through). */
static void
check_bit_exact (GstHarness * h, const gchar * format, gint channels,
    gboolean expect_identical)
{
  const gsize frames = 4096;
  gsize bps = is_f64 (format) ? 8 : 4;
  gsize bytes = frames * channels * bps;
  double *noise = g_new (double, frames * channels);
  GstBuffer *buf = gst_harness_create_buffer (h, bytes), *out;
  GstMapInfo map;
  guint8 *copy;
  gsize i;

  fill_noise (noise, frames * channels, 7);
  fail_unless (gst_buffer_map (buf, &map, GST_MAP_WRITE));
  for (i = 0; i < frames * channels; i++) {
    if (bps == 8)
      ((gdouble *) map.data)[i] = noise[i];
    else
      ((gfloat *) map.data)[i] = (gfloat) noise[i];
  }
  copy = g_memdup2 (map.data, bytes);
  gst_buffer_unmap (buf, &map);
  out = gst_harness_push_and_pull (h, buf);
  fail_unless (out != NULL);
  fail_unless (gst_buffer_map (out, &map, GST_MAP_READ));
  fail_unless_equals_uint64 (map.size, bytes);
  if (expect_identical)
    fail_unless (memcmp (map.data, copy, bytes) == 0, "not bit exact");
  else
    fail_if (memcmp (map.data, copy, bytes) == 0, "no change");
  gst_buffer_unmap (out, &map);
  gst_buffer_unref (out);
  g_free (copy);
  g_free (noise);
}

GST_START_TEST (test_passthrough)
{
  static const gchar *formats[] = { "F32LE", "F64LE" };
  guint fi;

  for (fi = 0; fi < G_N_ELEMENTS (formats); fi++) {
    GstHarness *h = new_harness (formats[fi], RATE, 2);
    GstBaseTransform *bt = GST_BASE_TRANSFORM (h->element);
    gint i;

    /* the default is flat */
    check_bit_exact (h, formats[fi], 2, TRUE);
    fail_unless (gst_base_transform_is_passthrough (bt));

    g_object_set (h->element, "bands", "100:0,1000:0:3,15000:0:0.2", NULL);
    check_bit_exact (h, formats[fi], 2, TRUE);
    fail_unless (gst_base_transform_is_passthrough (bt));

    /* a real band: processing */
    g_object_set (h->element, "bands", "100:0,1000:3", NULL);
    check_bit_exact (h, formats[fi], 2, FALSE);
    fail_if (gst_base_transform_is_passthrough (bt));

    /* flat again: after the ramp (20 ms < one buffer of 4096 frames plus the
     * one-sample tail) the element is bit exact again */
    g_object_set (h->element, "bands", "1000:0", NULL);
    check_bit_exact (h, formats[fi], 2, FALSE);
    for (i = 0; i < 3; i++)
      check_bit_exact (h, formats[fi], 2, TRUE);
    fail_unless (gst_base_transform_is_passthrough (bt));
    gst_harness_teardown (h);
  }
}

GST_END_TEST;

/* max |y[n] - 2 y[n-1] + y[n-2]| over [from, to) of channel ch: far more
 * sensitive to clicks than the first difference */
static double
max_d2 (const double *y, gint channels, gint ch, gsize from, gsize to)
{
  double m = 0;
  gsize i;

  for (i = from + 2; i < to; i++)
    m = MAX (m, fabs (y[i * channels + ch] - 2 * y[(i - 1) * channels + ch]
            + y[(i - 2) * channels + ch]));
  return m;
}

/* max |y[n] - y[n-1]| over [from, to) of channel ch */
static double
max_step (const double *y, gint channels, gint ch, gsize from, gsize to)
{
  double m = 0;
  gsize i;

  for (i = from + 1; i < to; i++)
    m = MAX (m, fabs (y[i * channels + ch] - y[(i - 1) * channels + ch]));
  return m;
}

/* A sine at the band frequency, bands changed mid-stream (between two
 * buffers): the largest sample-to-sample step around the change stays
 * within the largest step of the steady sine before/after. (That an abrupt
 * switch does break this bound on the same kind of signal is shown in the
 * DSP unit test, test_ramp in test_biquad.c.) */
static void
check_change (const gchar * format, double freq, const gchar * from,
    const gchar * to, double amp)
{
  const gint ch = 2;
  /* not at a zero crossing of the sine */
  const gsize half = RATE / 2 + 123, frames = RATE;
  double *in = g_new (double, frames * ch);
  double *out = g_new (double, frames * ch);
  GstHarness *h = new_harness (format, RATE, ch);
  double before, after, around;
  gsize i;

  for (i = 0; i < frames; i++) {
    in[i * ch] = amp * sin (2 * G_PI * freq * i / RATE);
    in[i * ch + 1] = amp * cos (2 * G_PI * freq * i / RATE);
  }
  g_object_set (h->element, "bands", from, NULL);
  push_pull (h, format, ch, in, out, half);
  g_object_set (h->element, "bands", to, NULL);
  push_pull (h, format, ch, in + half * ch, out + half * ch, frames - half);

  for (i = 0; i < (gsize) ch; i++) {
    double d2_steady, d2_around;

    before = max_step (out, ch, i, half - RATE / 10, half);
    after = max_step (out, ch, i, frames - RATE / 10, frames);
    around = max_step (out, ch, i, half - 100, half + RATE / 10);
    d2_steady = MAX (max_d2 (out, ch, i, half - RATE / 10, half),
        max_d2 (out, ch, i, frames - RATE / 10, frames));
    d2_around = max_d2 (out, ch, i, half - 100, half + RATE / 10);
    g_print ("change %s %s -> %s at %.0f Hz, ch %u: steady steps %.5f / "
        "%.5f, around the change %.5f; 2nd difference around / steady "
        "%.2f\n", format, from, to, freq, (guint) i, before, after, around,
        d2_around / d2_steady);
    /* +10 %: a fast sweep of a resonance over the tone modulates its phase
     * a little */
    fail_unless (around <= 1.1 * MAX (before, after),
        "click: step %.5f around the change, steady %.5f / %.5f", around,
        before, after);
    fail_unless (d2_around <= 4.0 * d2_steady, "click: 2nd difference %.3g "
        "around the change, steady %.3g", d2_around, d2_steady);
  }
  g_free (in);
  g_free (out);
  gst_harness_teardown (h);
}

GST_START_TEST (test_click_free)
{
  check_change ("F32LE", 100, "100:12", "100:-12", 0.2);
  check_change ("F64LE", 100, "100:-12", "100:12", 0.2);
  check_change ("F64LE", 200, "200:12:4", "3000:12:4,50:-6", 0.2);
  check_change ("F32LE", 150, "150:0", "150:24:0.5", 0.05);
  check_change ("F32LE", 150, "150:24:0.5", "150:0", 0.05);
}

GST_END_TEST;

static gchar *
get_bands (GstElement * e)
{
  gchar *s = NULL;

  g_object_get (e, "bands", &s, NULL);
  fail_unless (s != NULL);
  return s;
}

GST_START_TEST (test_property)
{
  GstElement *e = gst_element_factory_make ("parametriceq", NULL);
  GParamSpec *pspec;
  gchar *s;
  guint i;
  static const gchar *bad[] = {
    "", "100", "100:4,", "abc:4", "lowshelf:100:4", "10:4", "100:30",
    "100:4:50", "100:4:1:1", "100;4", "1,000:3",
    "1:1,2:1,3:1,4:1,5:1,6:1,7:1,8:1,9:1,10:1,11:1,12:1,13:1,14:1,15:1,16:1,"
        "17:1",
  };

  fail_unless (e != NULL);
  pspec = g_object_class_find_property (G_OBJECT_GET_CLASS (e), "bands");
  fail_unless (pspec != NULL);
  fail_unless (pspec->flags & GST_PARAM_MUTABLE_PLAYING);
  fail_unless (pspec->flags & G_PARAM_READWRITE);

  s = get_bands (e);
  fail_unless_equals_string (s, "1000:0");
  g_free (s);

  g_object_set (e, "bands", "100:4,1000:-3:2.5", NULL);
  s = get_bands (e);
  fail_unless_equals_string (s, "100:4,1000:-3:2.5");
  g_free (s);

  /* the way gst-launch sets it */
  gst_util_set_object_arg (G_OBJECT (e), "bands",
      " peak:31.5:+1.5:0.7 , 20000:-24:30 ");
  s = get_bands (e);
  fail_unless_equals_string (s, "31.5:1.5:0.7,20000:-24:30");
  g_free (s);

  for (i = 0; i < G_N_ELEMENTS (bad); i++) {
    ASSERT_WARNING (g_object_set (e, "bands", bad[i], NULL));
    s = get_bands (e);
    fail_unless_equals_string (s, "31.5:1.5:0.7,20000:-24:30");
    g_free (s);
  }
  ASSERT_WARNING (g_object_set (e, "bands", NULL, NULL));
  s = get_bands (e);
  fail_unless_equals_string (s, "31.5:1.5:0.7,20000:-24:30");
  g_free (s);

  /* 16 bands is fine */
  g_object_set (e, "bands", "20:1,40:1,60:1,80:1,100:1,120:1,140:1,160:1,"
      "180:1,200:1,220:1,240:1,260:1,280:1,300:1,320:1:0.1", NULL);
  s = get_bands (e);
  fail_unless_equals_string (s, "20:1,40:1,60:1,80:1,100:1,120:1,140:1,160:1,"
      "180:1,200:1,220:1,240:1,260:1,280:1,300:1,320:1:0.1");
  g_free (s);
  gst_object_unref (e);
}

GST_END_TEST;

/* A bad string while playing keeps the running filter unchanged. */
GST_START_TEST (test_bad_string_keeps_filter)
{
  GstHarness *h = new_harness ("F64LE", RATE, 1);
  const RefBand b[] = { {1000, 6, 1} };
  double *in = g_new (double, RATE), *out = g_new (double, RATE);
  double ein = 0, eout = 0;
  gsize i;

  g_object_set (h->element, "bands", "1000:6", NULL);
  for (i = 0; i < RATE; i++)
    in[i] = 0.3 * sin (2 * G_PI * 1000 * i / RATE);
  push_pull (h, "F64LE", 1, in, out, RATE / 4);
  ASSERT_WARNING (g_object_set (h->element, "bands", "1000:6:", NULL));
  push_pull (h, "F64LE", 1, in + RATE / 4, out + RATE / 4, RATE * 3 / 4);
  for (i = RATE / 2; i < RATE; i++) {
    ein += in[i] * in[i];
    eout += out[i] * out[i];
  }
  fail_unless (fabs (10 * log10 (eout / ein) - ref_db (b, 1, 1000, RATE)) <
      0.01);
  g_free (in);
  g_free (out);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* Caps change F32 mono 48 kHz -> F64 stereo 44.1 kHz: the filter is
 * designed again for the new rate. A band above 0.49 x rate is skipped. */
GST_START_TEST (test_format_change)
{
  GstHarness *h = new_harness ("F32LE", RATE, 1);
  const RefBand b[] = { {3000, 9, 2} };
  double *in = g_new (double, 2 * RATE), *out = g_new (double, 2 * RATE);
  double e[2][2] = { {0, 0}, {0, 0} };
  gsize i;
  gint c;

  g_object_set (h->element, "bands", "3000:9:2,20000:12", NULL);
  for (i = 0; i < RATE; i++)
    in[i] = (gfloat) (0.3 * sin (2 * G_PI * 3000 * i / RATE));
  push_pull (h, "F32LE", 1, in, out, RATE / 2);
  for (i = RATE / 4; i < RATE / 2; i++) {
    e[0][0] += in[i] * in[i];
    e[0][1] += out[i] * out[i];
  }
  /* at 48 kHz the 20 kHz band is in (0.49 x 48000 = 23520): it adds its
   * gain at 3 kHz too */
  {
    const RefBand both[] = { {3000, 9, 2}, {20000, 12, 1} };
    fail_unless (fabs (10 * log10 (e[0][1] / e[0][0]) - ref_db (both, 2,
                3000, RATE)) < 0.01);
  }

  gst_harness_set_src_caps_str (h, "audio/x-raw,format=F64LE,rate=32000,"
      "channels=2,layout=interleaved");
  for (i = 0; i < (gsize) 32000; i++) {
    in[2 * i] = 0.3 * sin (2 * G_PI * 3000 * i / 32000.0);
    in[2 * i + 1] = 0.3 * cos (2 * G_PI * 3000 * i / 32000.0);
  }
  memset (e, 0, sizeof (e));
  push_pull (h, "F64LE", 2, in, out, 32000);
  for (i = 16000; i < 32000; i++) {
    for (c = 0; c < 2; c++) {
      e[c][0] += in[2 * i + c] * in[2 * i + c];
      e[c][1] += out[2 * i + c] * out[2 * i + c];
    }
  }
  /* at 32 kHz the 20 kHz band (> 15680 Hz) is skipped */
  for (c = 0; c < 2; c++)
    fail_unless (fabs (10 * log10 (e[c][1] / e[c][0]) - ref_db (b, 1, 3000,
                32000)) < 0.01, "ch %d: %f dB", c, 10 * log10 (e[c][1] /
            e[c][0]));
  g_free (in);
  g_free (out);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* FLUSH_STOP resets the filter: silence after a flush comes out as exact
 * zeros (no ringing tail of the audio before the flush). Without the flush
 * the tail is there. */
static gboolean
tail_after (gboolean flush)
{
  GstHarness *h = new_harness ("F64LE", RATE, 1);
  double *in = g_new0 (double, RATE), *out = g_new (double, RATE);
  gboolean tail = FALSE;
  gsize i;

  g_object_set (h->element, "bands", "50:24:30", NULL);
  fill_noise (in, RATE / 2, 3);
  push_pull (h, "F64LE", 1, in, out, RATE / 2);
  if (flush) {
    GstSegment seg;

    fail_unless (gst_harness_push_event (h, gst_event_new_flush_start ()));
    fail_unless (gst_harness_push_event (h, gst_event_new_flush_stop (TRUE)));
    gst_segment_init (&seg, GST_FORMAT_TIME);
    fail_unless (gst_harness_push_event (h, gst_event_new_segment (&seg)));
  }
  push_pull (h, "F64LE", 1, in + RATE / 2, out + RATE / 2, RATE / 2);
  for (i = RATE / 2; i < RATE; i++)
    tail |= (out[i] != 0.0);
  g_free (in);
  g_free (out);
  gst_harness_teardown (h);
  return tail;
}

GST_START_TEST (test_flush_resets)
{
  fail_unless (tail_after (FALSE));
  fail_if (tail_after (TRUE));
}

GST_END_TEST;

/* The whole element in a real pipeline, written the way the engine does. */
GST_START_TEST (test_pipeline)
{
  GError *err = NULL;
  GstElement *p = gst_parse_launch ("audiotestsrc num-buffers=10 ! "
      "audioconvert ! parametriceq bands=\"100:4,1000:-3:2.5\" ! fakesink",
      &err);
  GstBus *bus;
  GstMessage *msg;

  fail_unless (p != NULL && err == NULL, "%s", err ? err->message : "");
  fail_unless (gst_element_set_state (p, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);
  bus = gst_element_get_bus (p);
  msg = gst_bus_timed_pop_filtered (bus, 10 * GST_SECOND,
      GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  fail_unless (msg != NULL);
  fail_unless_equals_int (GST_MESSAGE_TYPE (msg), GST_MESSAGE_EOS);
  gst_message_unref (msg);
  gst_object_unref (bus);
  fail_unless (gst_element_set_state (p, GST_STATE_NULL) ==
      GST_STATE_CHANGE_SUCCESS);
  gst_object_unref (p);
}

GST_END_TEST;

static Suite *
parametriceq_suite (void)
{
  Suite *s = suite_create ("parametriceq");
  TCase *tc = tcase_create ("general");

  tcase_set_timeout (tc, 300);
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_property);
  tcase_add_test (tc, test_passthrough);
  tcase_add_test (tc, test_click_free);
  tcase_add_test (tc, test_bad_string_keeps_filter);
  tcase_add_test (tc, test_format_change);
  tcase_add_test (tc, test_flush_resets);
  tcase_add_test (tc, test_pipeline);
  tcase_add_test (tc, test_response_wide);
  tcase_add_test (tc, test_response_narrow);
  tcase_add_test (tc, test_response_default_q);
  tcase_add_test (tc, test_response_several);
  tcase_add_test (tc, test_response_engine_bands);
  return s;
}

GST_CHECK_MAIN (parametriceq);
