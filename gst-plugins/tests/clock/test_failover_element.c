/* clockbridge's failover through GstHarness with a GstTestClock: one
 * harness on the main pad (`sink` -> `src`), a second on the requested
 * `backup` pad; the test pushes 4 ms of each input before releasing each
 * chunk's clock wait, so every chunk's time is known exactly.
 *
 *   - main 1 kHz at 0.5, backup 440 Hz at 0.25; main stops for 2 s: a
 *     `failover` message main -> backup (loss) at failover-loss after
 *     main's last audio left the FIFO, with all its fields; the output
 *     carries the backup's tone (zero crossings); no 10 ms block of the
 *     output below -40 dBFS from the start of audio on, and no sample step
 *     above the tones' own steepest step + the crossfade's share (here,
 *     input and output in step, main's core runs dry exactly at a chunk's
 *     end, without a fade of its own: the mixer's mirrored tail); main
 *     back: backup -> main (return) after failover-return;
 *   - the periodic message's failover fields and types, with and without
 *     a backup pad (no backup-* fields without one);
 *   - select=backup while playing: a switch (manual) at once; auto: back;
 *   - a fallback file, no backup: main stops -> the file's samples
 *     (loss); a missing or wrong-size file fails READY->PAUSED. */
#include <gst/gst.h>
#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>
#include <glib/gstdio.h>
#include <math.h>
#include <unistd.h>

#define CAPS "audio/x-raw,format=F32LE,layout=interleaved,rate=48000,channels=2"
#define CHUNK 192               /* 4 ms */
#define RATE 48000
#define MAIN_AMP 0.5
#define BACKUP_AMP 0.25

typedef struct
{
  GstHarness *h, *hb;           /* main (sink -> src), backup (hb: NULL) */
  GstBus *bus;
  guint64 k;                    /* chunks pulled */
  double pm, pb;                /* tone phases */
  float *out;                   /* every output frame's left channel */
  gsize n_out, cap;
  GPtrArray *failovers;         /* GstStructure copies */
  GstStructure *stats;          /* the last clockbridge message */
} Rig;

static GstBuffer *
tone (double *phase, double freq, double amp)
{
  GstBuffer *b = gst_buffer_new_and_alloc (CHUNK * 2 * sizeof (gfloat));
  GstMapInfo map;
  gfloat *d;

  gst_buffer_map (b, &map, GST_MAP_WRITE);
  d = (gfloat *) map.data;
  for (guint i = 0; i < CHUNK; i++) {
    d[2 * i] = d[2 * i + 1] = (gfloat) (amp * sin (*phase));
    *phase += 2 * G_PI * freq / RATE;
  }
  gst_buffer_unmap (b, &map);
  return b;
}

static void
rig_start (Rig * r, gboolean backup, const gchar * fallback)
{
  GstElement *e = gst_element_factory_make ("clockbridge", NULL);

  memset (r, 0, sizeof (*r));
  g_object_set (e, "interval", (guint64) (100 * GST_MSECOND),
      "failover-return", (guint64) GST_SECOND, NULL);
  if (fallback)
    g_object_set (e, "fallback-file", fallback, NULL);
  r->h = gst_harness_new_with_element (e, "sink", "src");
  if (backup) {
    r->hb = gst_harness_new_with_element (e, "backup", NULL);
    gst_harness_set_src_caps_str (r->hb, CAPS);
  }
  gst_object_unref (e);
  r->bus = gst_bus_new ();
  gst_element_set_bus (r->h->element, r->bus);
  gst_harness_use_testclock (r->h);
  gst_harness_set_src_caps_str (r->h, CAPS);
  r->failovers = g_ptr_array_new_with_free_func ((GDestroyNotify)
      gst_structure_free);
  gst_harness_play (r->h);
}

static void
collect (Rig * r)
{
  GstMessage *m;

  while ((m = gst_bus_pop_filtered (r->bus, GST_MESSAGE_ELEMENT))) {
    const GstStructure *s = gst_message_get_structure (m);
    if (gst_structure_has_name (s, "failover")) {
      g_ptr_array_add (r->failovers, gst_structure_copy (s));
    } else if (gst_structure_has_name (s, "clockbridge")) {
      if (r->stats)
        gst_structure_free (r->stats);
      r->stats = gst_structure_copy (s);
    }
    gst_message_unref (m);
  }
}

/* n chunks: pushes what is on, releases the wait, keeps the output */
static void
run (Rig * r, guint n, gboolean main_on, gboolean backup_on)
{
  for (guint i = 0; i < n; i++, r->k++) {
    GstBuffer *b;
    GstMapInfo map;

    if (main_on)
      fail_unless_equals_int (gst_harness_push (r->h, tone (&r->pm, 1000.0,
                  MAIN_AMP)), GST_FLOW_OK);
    if (r->hb && backup_on)
      fail_unless_equals_int (gst_harness_push (r->hb, tone (&r->pb, 440.0,
                  BACKUP_AMP)), GST_FLOW_OK);
    fail_unless (gst_harness_crank_single_clock_wait (r->h));
    b = gst_harness_pull (r->h);
    fail_unless (b != NULL);
    fail_unless_equals_uint64 (GST_BUFFER_PTS (b), r->k * 4 * GST_MSECOND);
    if (r->n_out + CHUNK > r->cap) {
      r->cap = MAX (r->cap * 2, 65536);
      r->out = g_realloc (r->out, r->cap * sizeof (float));
    }
    gst_buffer_map (b, &map, GST_MAP_READ);
    for (guint j = 0; j < CHUNK; j++)
      r->out[r->n_out++] = ((gfloat *) map.data)[2 * j];
    gst_buffer_unmap (b, &map);
    gst_buffer_unref (b);
  }
  collect (r);
}

static void
rig_stop (Rig * r)
{
  gst_element_set_bus (r->h->element, NULL);
  gst_object_unref (r->bus);
  if (r->hb)
    gst_harness_teardown (r->hb);
  gst_harness_teardown (r->h);
  g_ptr_array_free (r->failovers, TRUE);
  if (r->stats)
    gst_structure_free (r->stats);
  g_free (r->out);
}

/* zero crossings per second of the output in [from, to) s */
static double
crossings (Rig * r, double from, double to)
{
  gsize a = (gsize) (from * RATE), b = (gsize) (to * RATE);
  guint n = 0;

  for (gsize i = a + 1; i < b && i < r->n_out; i++)
    n += (r->out[i - 1] < 0) != (r->out[i] < 0);
  return n / (to - from) / 2.0;
}

static double
str_double (const GstStructure * s, const gchar * f)
{
  gdouble v = NAN;
  fail_unless (gst_structure_get_double (s, f, &v), "no double %s", f);
  return v;
}

static void
check_status_fields (const GstStructure * s, gboolean backup)
{
  gboolean b;
  fail_unless (gst_structure_get_string (s, "active-input") != NULL);
  fail_unless (gst_structure_get_string (s, "selection") != NULL);
  fail_unless (gst_structure_get_boolean (s, "main-connected", &b));
  str_double (s, "main-level");
  str_double (s, "main-silent");
  str_double (s, "output-silent");
  fail_unless_equals_int (gst_structure_has_field (s, "backup-connected"),
      backup);
  if (backup) {
    fail_unless (gst_structure_get_boolean (s, "backup-connected", &b));
    str_double (s, "backup-level");
    str_double (s, "backup-silent");
  }
}

GST_START_TEST (test_backup_takes_over)
{
  Rig r;
  const GstStructure *f;
  gboolean b;
  guint64 rt;
  double worst = 0.0, quietest = 1.0, bound, main_stop, hz;
  gsize start = 0;

  rig_start (&r, TRUE, NULL);
  run (&r, 500, TRUE, TRUE);    /* 2 s */
  fail_unless_equals_int (r.failovers->len, 0);
  fail_unless (r.stats != NULL);
  check_status_fields (r.stats, TRUE);
  fail_unless_equals_string (gst_structure_get_string (r.stats,
          "active-input"), "main");
  fail_unless_equals_string (gst_structure_get_string (r.stats,
          "selection"), "auto");
  /* a 0.5 sine: -9.03 dBFS; 0.25: -15.05 */
  fail_unless (fabs (str_double (r.stats, "main-level") + 9.03) < 0.1);
  fail_unless (fabs (str_double (r.stats, "backup-level") + 15.05) < 0.1);
  hz = crossings (&r, 1.0, 2.0);
  fail_unless (fabs (hz - 1000.0) < 5, "main on air: %f Hz", hz);

  main_stop = r.k * 0.004;
  run (&r, 500, FALSE, TRUE);   /* main gone for 2 s */
  fail_unless_equals_int (r.failovers->len, 1);
  f = g_ptr_array_index (r.failovers, 0);
  fail_unless_equals_string (gst_structure_get_string (f, "from"), "main");
  fail_unless_equals_string (gst_structure_get_string (f, "to"), "backup");
  fail_unless_equals_string (gst_structure_get_string (f, "reason"), "loss");
  fail_unless (gst_structure_get_uint64 (f, "running-time", &rt));
  /* the FIFO plays main's last ~25 ms, then failover-loss */
  printf ("loss: the failover message %.3f s after main's last buffer "
      "(lost %.3f s)\n", rt / 1e9 - main_stop, str_double (f, "lost"));
  fail_unless (rt / 1e9 - main_stop > 0.3 && rt / 1e9 - main_stop < 0.5,
      "switch at %f", rt / 1e9 - main_stop);
  fail_unless (fabs (str_double (f, "lost") - 0.3) < 0.005);
  fail_unless (fabs (str_double (f, "backup-level") + 15.05) < 0.1);
  str_double (f, "main-level");
  str_double (f, "main-silent");
  str_double (f, "backup-silent");
  hz = crossings (&r, main_stop + 0.6, main_stop + 2.0);
  fail_unless (fabs (hz - 440.0) < 5, "backup on air: %f Hz", hz);
  check_status_fields (r.stats, TRUE);
  fail_unless_equals_string (gst_structure_get_string (r.stats,
          "active-input"), "backup");
  fail_unless (gst_structure_get_boolean (r.stats, "main-connected", &b));
  fail_unless (!b);
  fail_unless (str_double (r.stats, "main-level") == -200.0);
  fail_unless (str_double (r.stats, "main-silent") > 1.5);
  fail_unless (str_double (r.stats, "output-silent") == 0.0);

  run (&r, 500, TRUE, TRUE);    /* main back */
  fail_unless_equals_int (r.failovers->len, 2);
  f = g_ptr_array_index (r.failovers, 1);
  fail_unless_equals_string (gst_structure_get_string (f, "to"), "main");
  fail_unless_equals_string (gst_structure_get_string (f, "reason"),
      "return");
  fail_unless (gst_structure_get_uint64 (f, "running-time", &rt));
  printf ("return: %.3f s after main's first buffer (failover-return 1 s)\n",
      rt / 1e9 - (main_stop + 2.0));
  fail_unless (rt / 1e9 - (main_stop + 2.0) > 1.0
      && rt / 1e9 - (main_stop + 2.0) < 1.2);

  /* no hole, no click: from the first audio on */
  while (start < r.n_out && fabs (r.out[start]) < 0.4)
    start++;
  for (gsize i = start + 480; i + 480 <= r.n_out; i += 480) {
    double ss = 0.0;
    for (gsize j = i; j < i + 480; j++)
      ss += (double) r.out[j] * r.out[j];
    quietest = MIN (quietest, sqrt (ss / 480));
  }
  for (gsize i = start + 1; i < r.n_out; i++)
    worst = MAX (worst, fabs (r.out[i] - r.out[i - 1]));
  /* the steeper tone's own step, and the crossfade's share: |dw| (a + b)
   * over 240 frames (the core's fade the cover follows) */
  bound = 2 * sin (G_PI * 1000.0 / RATE) * MAIN_AMP +
      (MAIN_AMP + BACKUP_AMP) / 240.0;
  printf ("output: quietest 10 ms block %.1f dBFS, worst sample step %.4f "
      "(the 1 kHz tone's own %.4f, bound %.4f)\n", 20 * log10 (quietest),
      worst, 2 * sin (G_PI * 1000.0 / RATE) * MAIN_AMP, bound);
  fail_unless (quietest > 0.01, "a hole: %f", quietest);
  fail_unless (worst <= bound, "a click: %f", worst);
  rig_stop (&r);
}

GST_END_TEST;

GST_START_TEST (test_select_while_playing)
{
  Rig r;
  const GstStructure *f;

  rig_start (&r, TRUE, NULL);
  run (&r, 250, TRUE, TRUE);
  g_object_set (r.h->element, "select", 2, NULL);       /* backup */
  run (&r, 2, TRUE, TRUE);
  fail_unless_equals_int (r.failovers->len, 1);
  f = g_ptr_array_index (r.failovers, 0);
  fail_unless_equals_string (gst_structure_get_string (f, "to"), "backup");
  fail_unless_equals_string (gst_structure_get_string (f, "reason"),
      "manual");
  run (&r, 500, TRUE, TRUE);    /* held against main's return */
  fail_unless_equals_int (r.failovers->len, 1);
  fail_unless_equals_string (gst_structure_get_string (r.stats,
          "selection"), "backup");
  g_object_set (r.h->element, "select", 0, NULL);       /* auto */
  run (&r, 2, TRUE, TRUE);
  fail_unless_equals_int (r.failovers->len, 2);
  f = g_ptr_array_index (r.failovers, 1);
  fail_unless_equals_string (gst_structure_get_string (f, "to"), "main");
  fail_unless_equals_string (gst_structure_get_string (f, "reason"),
      "return");
  rig_stop (&r);
}

GST_END_TEST;

GST_START_TEST (test_main_only_fields)
{
  Rig r;

  rig_start (&r, FALSE, NULL);
  run (&r, 100, FALSE, FALSE);
  check_status_fields (r.stats, FALSE);
  fail_unless_equals_string (gst_structure_get_string (r.stats,
          "active-input"), "none");
  fail_unless (str_double (r.stats, "output-silent") > 0.3);
  run (&r, 300, TRUE, FALSE);
  fail_unless_equals_string (gst_structure_get_string (r.stats,
          "active-input"), "main");
  fail_unless_equals_int (r.failovers->len, 0);
  run (&r, 200, FALSE, FALSE);  /* no backup, no file: nothing to switch to */
  fail_unless_equals_int (r.failovers->len, 0);
  fail_unless_equals_string (gst_structure_get_string (r.stats,
          "active-input"), "none");
  rig_stop (&r);
}

GST_END_TEST;

static gchar *
write_file (gsize frames, gsize extra_bytes)
{
  gchar *path = NULL;
  gint fd = g_file_open_tmp ("clockbridge-fallback-XXXXXX.raw", &path, NULL);
  gfloat *d = g_new0 (gfloat, frames * 2 + 1);

  for (gsize i = 0; i < frames; i++)
    d[2 * i] = d[2 * i + 1] = (gfloat) (0.3 * sin (2 * G_PI * 250.0 * i /
            RATE));
  fail_unless (fd >= 0);
  fail_unless (write (fd, d, frames * 2 * sizeof (gfloat) + extra_bytes) ==
      (gssize) (frames * 2 * sizeof (gfloat) + extra_bytes));
  close (fd);
  g_free (d);
  return path;
}

GST_START_TEST (test_fallback_file)
{
  Rig r;
  gchar *path = write_file (48000, 0);
  const GstStructure *f;
  double hz;

  rig_start (&r, FALSE, path);
  run (&r, 250, TRUE, FALSE);
  run (&r, 500, FALSE, FALSE);
  fail_unless_equals_int (r.failovers->len, 1);
  f = g_ptr_array_index (r.failovers, 0);
  fail_unless_equals_string (gst_structure_get_string (f, "to"), "fallback");
  fail_unless_equals_string (gst_structure_get_string (f, "reason"), "loss");
  hz = crossings (&r, 1.5, 3.0);
  fail_unless (fabs (hz - 250.0) < 3, "the file: %f Hz", hz);
  fail_unless_equals_string (gst_structure_get_string (r.stats,
          "active-input"), "fallback");
  fail_unless (str_double (r.stats, "output-silent") == 0.0);
  run (&r, 100, TRUE, FALSE);   /* main back: at once */
  fail_unless_equals_int (r.failovers->len, 2);
  f = g_ptr_array_index (r.failovers, 1);
  fail_unless_equals_string (gst_structure_get_string (f, "to"), "main");
  rig_stop (&r);
  g_unlink (path);
  g_free (path);
}

GST_END_TEST;

GST_START_TEST (test_bad_fallback_file)
{
  gchar *odd = write_file (48000, 3), *small = write_file (100, 0);
  const gchar *paths[] = { "/nonexistent/fallback.raw", odd, small };

  for (guint i = 0; i < G_N_ELEMENTS (paths); i++) {
    GstElement *e = gst_element_factory_make ("clockbridge", NULL);
    GstBus *bus = gst_bus_new ();
    GstMessage *m;
    GError *err = NULL;

    gst_element_set_bus (e, bus);
    g_object_set (e, "fallback-file", paths[i], NULL);
    fail_unless_equals_int (gst_element_set_state (e, GST_STATE_READY),
        GST_STATE_CHANGE_SUCCESS);
    fail_unless_equals_int (gst_element_set_state (e, GST_STATE_PAUSED),
        GST_STATE_CHANGE_FAILURE);
    m = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);
    fail_unless (m != NULL);
    gst_message_parse_error (m, &err, NULL);
    fail_unless (strstr (err->message, "fallback-file") != NULL
        && strstr (err->message, paths[i]) != NULL, "%s", err->message);
    g_clear_error (&err);
    gst_message_unref (m);
    gst_element_set_state (e, GST_STATE_NULL);
    gst_element_set_bus (e, NULL);
    gst_object_unref (bus);
    gst_object_unref (e);
  }
  g_unlink (odd);
  g_unlink (small);
  g_free (odd);
  g_free (small);
}

GST_END_TEST;

static Suite *
failover_suite (void)
{
  Suite *s = suite_create ("clockbridge-failover");
  TCase *tc = tcase_create ("element");

  tcase_set_timeout (tc, 60);
  tcase_add_test (tc, test_backup_takes_over);
  tcase_add_test (tc, test_select_while_playing);
  tcase_add_test (tc, test_main_only_fields);
  tcase_add_test (tc, test_fallback_file);
  tcase_add_test (tc, test_bad_fallback_file);
  suite_add_tcase (s, tc);
  return s;
}

GST_CHECK_MAIN (failover);
