/* clockbridge through GstHarness with a GstTestClock: the harness pushes
 * input when the test says so and releases the element's clock waits one by
 * one, so every chunk's time is known exactly.
 *
 *   - cadence: PTS k x 4 ms from 0, DURATION 4 ms, 192 frames each, silence
 *     before any input, own stream-start/caps/segment;
 *   - audio starts once the FIFO holds the target, fading in over 5 ms;
 *   - input stops: silence on time, one underrun per episode, input-active
 *     false; input resumes: the fade-in again;
 *   - the clockbridge message with the documented fields and types;
 *   - LATENCY: live, chunk + 1 ms; after the sinks' LATENCY event a chunk
 *     is read when the sink is due to send it (PTS + that latency), and the
 *     message's latency adds the steps' part of it;
 *   - EOS on the sink pad: the FIFO plays out, then EOS downstream;
 *   - pace-input: 6 s pushed at once all come out (the push waits while
 *     the FIFO is full), no overrun, input-frames counts them;
 *   - refused settings fail the state change. */
#include <gst/gst.h>
#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>
#include <math.h>

#define CAPS "audio/x-raw,format=F32LE,layout=interleaved,rate=48000,channels=2"
#define CHUNK_FRAMES 192        /* 4 ms */
#define AMP 0.5

static guint64 in_phase;

/* frames of a 997 Hz tone (continuous across calls) */
static GstBuffer *
tone (guint frames)
{
  GstBuffer *b = gst_buffer_new_and_alloc (frames * 2 * sizeof (gfloat));
  GstMapInfo map;
  gfloat *d;

  gst_buffer_map (b, &map, GST_MAP_WRITE);
  d = (gfloat *) map.data;
  for (guint i = 0; i < frames; i++, in_phase++)
    d[2 * i] = d[2 * i + 1] =
        (gfloat) (AMP * sin (2 * G_PI * 997.0 * in_phase / 48000.0));
  gst_buffer_unmap (b, &map);
  return b;
}

static GstHarness *
make_harness_paced (GstBus ** bus, gboolean paced)
{
  GstElement *e = gst_element_factory_make ("clockbridge", NULL);
  GstHarness *h;

  /* set before the harness starts the element */
  g_object_set (e, "interval", (guint64) (100 * GST_MSECOND),
      "pace-input", paced, NULL);
  h = gst_harness_new_with_element (e, "sink", "src");
  gst_object_unref (e);
  *bus = gst_bus_new ();
  gst_element_set_bus (h->element, *bus);
  gst_harness_use_testclock (h);
  gst_harness_set_src_caps_str (h, CAPS);
  in_phase = 0;
  return h;
}

static GstHarness *
make_harness (GstBus ** bus)
{
  return make_harness_paced (bus, FALSE);
}

/* releases the next chunk's wait and pulls the chunk; returns its peak */
static gdouble
step (GstHarness * h, guint64 k, gfloat * first)
{
  GstBuffer *b;
  GstMapInfo map;
  gdouble peak = 0.0;

  fail_unless (gst_harness_crank_single_clock_wait (h));
  b = gst_harness_pull (h);
  fail_unless (b != NULL);
  fail_unless_equals_uint64 (GST_BUFFER_PTS (b), k * 4 * GST_MSECOND);
  fail_unless_equals_uint64 (GST_BUFFER_DURATION (b), 4 * GST_MSECOND);
  fail_unless_equals_int (gst_buffer_get_size (b),
      CHUNK_FRAMES * 2 * sizeof (gfloat));
  gst_buffer_map (b, &map, GST_MAP_READ);
  for (guint i = 0; i < CHUNK_FRAMES * 2; i++)
    peak = MAX (peak, fabs (((gfloat *) map.data)[i]));
  if (first)
    memcpy (first, map.data, CHUNK_FRAMES * 2 * sizeof (gfloat));
  gst_buffer_unmap (b, &map);
  gst_buffer_unref (b);
  return peak;
}

/* the last clockbridge message on the bus, or NULL */
static GstStructure *
last_stats (GstBus * bus)
{
  GstStructure *last = NULL;
  GstMessage *m;

  while ((m = gst_bus_pop_filtered (bus, GST_MESSAGE_ELEMENT))) {
    const GstStructure *s = gst_message_get_structure (m);
    if (gst_structure_has_name (s, "clockbridge")) {
      if (last)
        gst_structure_free (last);
      last = gst_structure_copy (s);
    }
    gst_message_unref (m);
  }
  return last;
}

static void
teardown (GstHarness * h, GstBus * bus)
{
  gst_element_set_bus (h->element, NULL);
  gst_object_unref (bus);
  gst_harness_teardown (h);
}

GST_START_TEST (test_cadence_silence_fade_underrun)
{
  GstBus *bus;
  GstHarness *h = make_harness (&bus);
  GstStructure *s;
  gfloat first[CHUNK_FRAMES * 2];
  guint64 k = 0, underruns = 7, overruns = 7;
  gboolean active = TRUE;
  gint started = -1;
  GstEvent *ev;

  /* own events: stream-start, caps (channels 2), TIME segment from 0 */
  gst_harness_play (h);
  /* no input: silence, on time */
  for (; k < 50; k++)
    fail_unless (step (h, k, NULL) == 0.0);
  ev = gst_harness_pull_event (h);
  fail_unless_equals_int (GST_EVENT_TYPE (ev), GST_EVENT_STREAM_START);
  gst_event_unref (ev);
  ev = gst_harness_pull_event (h);
  fail_unless_equals_int (GST_EVENT_TYPE (ev), GST_EVENT_CAPS);
  gst_event_unref (ev);
  ev = gst_harness_pull_event (h);
  fail_unless_equals_int (GST_EVENT_TYPE (ev), GST_EVENT_SEGMENT);
  gst_event_unref (ev);

  s = last_stats (bus);
  fail_unless (s != NULL);
  fail_unless (gst_structure_get_uint64 (s, "underruns", &underruns));
  fail_unless_equals_uint64 (underruns, 0);     /* never had input */
  fail_unless (gst_structure_get_boolean (s, "input-active", &active));
  fail_unless (!active);
  gst_structure_free (s);

  /* input at the output's rate, a 4 ms buffer before each chunk: output
   * starts once 20 ms are in, fading in over the first 240 frames */
  for (; k < 600; k++) {
    gdouble peak;
    fail_unless_equals_int (gst_harness_push (h, tone (CHUNK_FRAMES)),
        GST_FLOW_OK);
    peak = step (h, k, first);
    if (started < 0 && peak > 0.0) {
      started = (gint) k - 50;
      /* the fade: |y[i]| <= AMP (i + 1) / 240 */
      for (guint i = 0; i < CHUNK_FRAMES; i++)
        fail_unless (fabs (first[2 * i]) <= AMP * (i + 1) / 240.0 + 1e-4,
            "frame %u: %f above the fade", i, first[2 * i]);
    }
    if (started >= 0 && k > (guint64) started + 50 + 2)
      fail_unless (peak > 0.9 * AMP && peak < 1.01 * AMP, "chunk %d (start %d): peak %f",
          (gint) k, started, peak);
  }
  fail_unless (started >= 5 && started <= 8, "audio started at chunk %d",
      started);
  s = last_stats (bus);
  fail_unless (s != NULL);
  {
    gdouble drift, fill, target, latency, ratio;
    fail_unless (gst_structure_get_double (s, "drift-ppm", &drift));
    fail_unless (gst_structure_get_double (s, "fill", &fill));
    fail_unless (gst_structure_get_double (s, "target", &target));
    fail_unless (gst_structure_get_double (s, "latency", &latency));
    fail_unless (gst_structure_get_double (s, "ratio", &ratio));
    fail_unless (gst_structure_get_uint64 (s, "underruns", &underruns));
    fail_unless (gst_structure_get_uint64 (s, "overruns", &overruns));
    fail_unless (gst_structure_get_boolean (s, "input-active", &active));
    fail_unless (active);
    fail_unless_equals_uint64 (underruns, 0);
    fail_unless_equals_uint64 (overruns, 0);
    fail_unless (fabs (target - 0.02) < 1e-9);
    fail_unless (fabs (fill - 0.02) < 0.003, "fill %f", fill);
    /* no LATENCY event in the harness: nothing after the FIFO */
    fail_unless (fabs (latency - fill) < 1e-9);
    /* 2.2 s of input: the loop's integrator (the line needs 10 s), still
     * taking out the half packet the first start fill adds */
    fail_unless (fabs (drift) < 300.0, "drift %f ppm", drift);
    fail_unless (fabs (ratio - 1.0) < 0.005);
  }
  gst_structure_free (s);

  /* input stops: the FIFO runs out within ~25 ms, then silence; one
   * underrun for the whole gap */
  for (guint i = 0; i < 100; i++, k++) {
    gdouble peak = step (h, k, NULL);
    if (i >= 8)
      fail_unless (peak == 0.0, "chunk %u of the gap: %f", i, peak);
  }
  s = last_stats (bus);
  fail_unless (gst_structure_get_uint64 (s, "underruns", &underruns));
  fail_unless_equals_uint64 (underruns, 1);
  fail_unless (gst_structure_get_boolean (s, "input-active", &active));
  fail_unless (!active);
  gst_structure_free (s);

  /* input comes back: refill, fade in again */
  started = -1;
  for (guint i = 0; i < 100; i++, k++) {
    gdouble peak;
    gst_harness_push (h, tone (CHUNK_FRAMES));
    peak = step (h, k, first);
    if (started < 0 && peak > 0.0) {
      started = (gint) i;
      for (guint j = 0; j < CHUNK_FRAMES; j++)
        fail_unless (fabs (first[2 * j]) <= AMP * (j + 1) / 240.0 + 1e-4);
    }
  }
  fail_unless (started >= 5 && started <= 8, "resumed at chunk %d", started);
  s = last_stats (bus);
  fail_unless (gst_structure_get_uint64 (s, "underruns", &underruns));
  fail_unless_equals_uint64 (underruns, 1);
  gst_structure_free (s);

  teardown (h, bus);
}

GST_END_TEST;

GST_START_TEST (test_latency_query)
{
  GstBus *bus;
  GstHarness *h = make_harness (&bus);
  GstQuery *q = gst_query_new_latency ();
  GstPad *src = gst_element_get_static_pad (h->element, "src");
  gboolean live;
  GstClockTime min, max;

  gst_harness_play (h);
  fail_unless (gst_pad_query (src, q));
  gst_query_parse_latency (q, &live, &min, &max);
  fail_unless (live);
  fail_unless_equals_uint64 (min, 5 * GST_MSECOND);     /* chunk + 1 ms */
  fail_unless_equals_uint64 (max, GST_CLOCK_TIME_NONE);
  gst_query_unref (q);
  gst_object_unref (src);
  teardown (h, bus);
}

GST_END_TEST;

GST_START_TEST (test_latency_event_moves_the_read)
{
  GstBus *bus;
  GstHarness *h = make_harness (&bus);
  GstTestClock *tc;
  GstClockID id;
  GstStructure *s;
  gdouble fill, latency;
  guint64 k;

  gst_harness_play (h);
  tc = gst_harness_get_testclock (h);
  /* no LATENCY event yet: chunk 0 is read at its end, 4 ms */
  gst_test_clock_wait_for_next_pending_id (tc, &id);
  fail_unless_equals_uint64 (gst_clock_id_get_time (id), 4 * GST_MSECOND);
  gst_clock_id_unref (id);
  step (h, 0, NULL);
  /* the sinks' latency: the bridge's chunk + 1 ms and a step's 10 ms */
  fail_unless (gst_harness_push_upstream_event (h,
          gst_event_new_latency (15 * GST_MSECOND)));
  step (h, 1, NULL);            /* its wait was made before the event */
  for (k = 2; k < 60; k++) {
    gst_test_clock_wait_for_next_pending_id (tc, &id);
    fail_unless_equals_uint64 (gst_clock_id_get_time (id),
        k * 4 * GST_MSECOND + 15 * GST_MSECOND);
    gst_clock_id_unref (id);
    fail_unless_equals_int (gst_harness_push (h, tone (CHUNK_FRAMES)),
        GST_FLOW_OK);
    step (h, k, NULL);
  }
  s = last_stats (bus);
  fail_unless (s != NULL);
  fail_unless (gst_structure_get_double (s, "fill", &fill));
  fail_unless (gst_structure_get_double (s, "latency", &latency));
  fail_unless (fabs (latency - (fill + 0.010)) < 1e-9, "latency %f, fill %f",
      latency, fill);
  gst_structure_free (s);
  gst_object_unref (tc);
  teardown (h, bus);
}

GST_END_TEST;

GST_START_TEST (test_eos_drains_then_ends)
{
  GstBus *bus;
  GstHarness *h = make_harness (&bus);
  GstEvent *ev;
  guint64 k = 0;
  guint after = 0;

  gst_harness_play (h);
  for (; k < 100; k++) {
    gst_harness_push (h, tone (CHUNK_FRAMES));
    step (h, k, NULL);
  }
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  /* about 20 ms in the FIFO: 5 to 7 more chunks, then EOS (and no more
   * clock waits: the task has stopped) */
  while (TRUE) {
    while ((ev = gst_harness_try_pull_event (h))) {
      GstEventType t = GST_EVENT_TYPE (ev);
      gst_event_unref (ev);
      if (t == GST_EVENT_EOS)
        goto done;
    }
    fail_unless (after < 10, "no EOS after %u chunks", after);
    if (!gst_harness_wait_for_clock_id_waits (h, 1, 1))
      continue;                 /* the task is pushing EOS */
    fail_unless (gst_harness_crank_single_clock_wait (h));
    gst_buffer_unref (gst_harness_pull (h));
    after++;
  }
done:
  fail_unless (after >= 5 && after <= 7, "EOS after %u chunks", after);
  teardown (h, bus);
}

GST_END_TEST;

#define PACED_SECONDS 6

/* pushes PACED_SECONDS of tone at once (as a pipe with a backlog would),
 * then EOS; the chain blocks while the bridge is full */
static gpointer
push_backlog (gpointer data)
{
  GstHarness *h = data;

  for (guint i = 0; i < PACED_SECONDS * 48000 / 960; i++)
    fail_unless_equals_int (gst_harness_push (h, tone (960)), GST_FLOW_OK);
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  return NULL;
}

GST_START_TEST (test_paced_input_loses_nothing)
{
  GstBus *bus;
  GstHarness *h = make_harness_paced (&bus, TRUE);
  GstStructure *s;
  GThread *pusher;
  GstEvent *ev;
  guint64 audio = 0, input_frames = 0, overruns = 7;
  guint chunks = 0;
  gboolean eos = FALSE;

  gst_harness_play (h);
  pusher = g_thread_new ("pusher", push_backlog, h);
  /* the output takes what the FIFO may hold (at most 4 s), the pusher
   * waits for room; everything comes out, then EOS */
  while (!eos) {
    GstBuffer *b;
    GstMapInfo map;

    fail_unless (chunks < 3 * PACED_SECONDS * 250, "no EOS after %u chunks",
        chunks);
    while ((ev = gst_harness_try_pull_event (h))) {
      eos = eos || GST_EVENT_TYPE (ev) == GST_EVENT_EOS;
      gst_event_unref (ev);
    }
    if (eos || !gst_harness_wait_for_clock_id_waits (h, 1, 1))
      continue;
    fail_unless (gst_harness_crank_single_clock_wait (h));
    b = gst_harness_pull (h);
    gst_buffer_map (b, &map, GST_MAP_READ);
    for (guint i = 0; i < CHUNK_FRAMES; i++)
      if (fabs (((gfloat *) map.data)[2 * i]) > 1e-6)
        audio++;
    gst_buffer_unmap (b, &map);
    gst_buffer_unref (b);
    chunks++;
  }
  g_thread_join (pusher);
  /* the output read the audio: a tone at 0.5 has few samples near 0 */
  fail_unless (audio > (guint64) (0.995 * PACED_SECONDS * 48000)
      && audio < (guint64) (1.005 * PACED_SECONDS * 48000),
      "%" G_GUINT64_FORMAT " audio frames out of %d", audio,
      PACED_SECONDS * 48000);
  s = last_stats (bus);
  fail_unless (s != NULL);
  fail_unless (gst_structure_get_uint64 (s, "input-frames", &input_frames));
  fail_unless_equals_uint64 (input_frames, PACED_SECONDS * 48000);
  fail_unless (gst_structure_get_uint64 (s, "overruns", &overruns));
  fail_unless_equals_uint64 (overruns, 0);
  gst_structure_free (s);
  teardown (h, bus);
}

GST_END_TEST;

GST_START_TEST (test_refused_settings)
{
  GstElement *e = gst_element_factory_make ("clockbridge", NULL);
  gchar *src;
  guint64 chunk;

  /* the GObject range check refuses values outside the spec first */
  g_test_expect_message (NULL, G_LOG_LEVEL_WARNING, "*clock-source*");
  g_object_set (e, "clock-source", "ntp", NULL);
  g_object_get (e, "clock-source", &src, NULL);
  fail_unless_equals_string (src, "tai");
  g_free (src);
  g_test_expect_message (NULL, G_LOG_LEVEL_WARNING, "*whole milliseconds*");
  g_object_set (e, "chunk", (guint64) 2500000, NULL);
  g_object_get (e, "chunk", &chunk, NULL);
  fail_unless_equals_uint64 (chunk, 4 * GST_MSECOND);
  fail_unless_equals_int (gst_element_set_state (e, GST_STATE_READY),
      GST_STATE_CHANGE_FAILURE);
  gst_element_set_state (e, GST_STATE_NULL);
  gst_object_unref (e);

  e = gst_element_factory_make ("clockbridge", NULL);
  g_object_set (e, "clock-source", "/dev/ptp0", NULL);
  if (!g_file_test ("/dev/ptp0", G_FILE_TEST_EXISTS))
    fail_unless_equals_int (gst_element_set_state (e, GST_STATE_READY),
        GST_STATE_CHANGE_FAILURE);
  gst_element_set_state (e, GST_STATE_NULL);
  gst_object_unref (e);
}

GST_END_TEST;

GST_START_TEST (test_provides_its_clock)
{
  GstElement *e = gst_element_factory_make ("clockbridge", NULL);
  GstClock *c;
  gint type;

  fail_unless (GST_OBJECT_FLAG_IS_SET (e, GST_ELEMENT_FLAG_PROVIDE_CLOCK));
  fail_unless_equals_int (gst_element_set_state (e, GST_STATE_READY),
      GST_STATE_CHANGE_SUCCESS);
  c = gst_element_provide_clock (e);
  fail_unless (GST_IS_SYSTEM_CLOCK (c));
  g_object_get (c, "clock-type", &type, NULL);
  fail_unless_equals_int (type, GST_CLOCK_TYPE_TAI);
  gst_object_unref (c);
  gst_element_set_state (e, GST_STATE_NULL);
  g_object_set (e, "clock-source", "realtime", NULL);
  gst_element_set_state (e, GST_STATE_READY);
  c = gst_element_provide_clock (e);
  g_object_get (c, "clock-type", &type, NULL);
  fail_unless_equals_int (type, GST_CLOCK_TYPE_REALTIME);
  gst_object_unref (c);
  gst_element_set_state (e, GST_STATE_NULL);
  gst_object_unref (e);
}

GST_END_TEST;

static Suite *
clockbridge_suite (void)
{
  Suite *s = suite_create ("clockbridge");
  TCase *tc = tcase_create ("element");

  tcase_set_timeout (tc, 60);
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_cadence_silence_fade_underrun);
  tcase_add_test (tc, test_latency_query);
  tcase_add_test (tc, test_latency_event_moves_the_read);
  tcase_add_test (tc, test_eos_drains_then_ends);
  tcase_add_test (tc, test_paced_input_loses_nothing);
  tcase_add_test (tc, test_refused_settings);
  tcase_add_test (tc, test_provides_its_clock);
  return s;
}

GST_CHECK_MAIN (clockbridge);
