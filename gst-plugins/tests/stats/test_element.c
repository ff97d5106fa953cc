/* pipelinestats as an object: properties, state cycling while the timer
 * runs at 10 ms, properties changed while PLAYING, dispose while PLAYING,
 * and no GstObject / GstMiniObject left alive (leaks tracer: live objects
 * after the test compared with those before it). */
#include <gst/gst.h>
#include <gst/check/gstcheck.h>

#define DESC "audiotestsrc is-live=true samplesperbuffer=480 ! " \
  "rtpL24pay name=pay ! fakesink name=out  pipelinestats name=stats interval=10000000"

static GstTracer *
leaks_tracer (void)
{
  GList *tracers = gst_tracing_get_active_tracers (), *l;
  GstTracer *found = NULL;

  for (l = tracers; l; l = l->next)
    if (!found && g_str_equal (G_OBJECT_TYPE_NAME (l->data), "GstLeaksTracer"))
      found = gst_object_ref (l->data);
  g_list_free_full (tracers, gst_object_unref);
  return found;
}

/* "type-name@address" of every live GstObject / GstMiniObject */
static GPtrArray *
live_objects (GstTracer * tracer)
{
  GstStructure *info = NULL;
  const GValue *list;
  GPtrArray *out = g_ptr_array_new_with_free_func (g_free);
  guint i;

  g_signal_emit_by_name (tracer, "get-live-objects", &info);
  fail_unless (info != NULL);
  list = gst_structure_get_value (info, "live-objects-list");
  for (i = 0; list && i < gst_value_list_get_size (list); i++) {
    const GstStructure *o =
        gst_value_get_structure (gst_value_list_get_value (list, i));
    const GValue *obj = gst_structure_get_value (o, "object");

    fail_unless (obj != NULL);
    g_ptr_array_add (out, g_strdup_printf ("%s@%p", G_VALUE_TYPE_NAME (obj),
            g_value_peek_pointer (obj)));
  }
  gst_structure_free (info);
  return out;
}

/* pipelinestats messages popped from @bus within @ms */
static guint
count_stats (GstBus * bus, guint ms, guint64 * last_packets)
{
  gint64 end = g_get_monotonic_time () + ms * 1000;
  guint n = 0;

  for (;;) {
    gint64 left = end - g_get_monotonic_time ();
    GstMessage *m;

    if (left <= 0)
      break;
    m = gst_bus_timed_pop_filtered (bus, left * 1000, GST_MESSAGE_ELEMENT |
        GST_MESSAGE_ERROR);
    if (!m)
      break;
    fail_if (GST_MESSAGE_TYPE (m) == GST_MESSAGE_ERROR);
    if (gst_message_has_name (m, "pipelinestats")) {
      const GstStructure *s = gst_message_get_structure (m);
      n++;
      if (last_packets)
        fail_unless (gst_structure_get_uint64 (s, "output-packets",
                last_packets));
    }
    gst_message_unref (m);
  }
  return n;
}

GST_START_TEST (test_properties)
{
  GstElement *e = gst_element_factory_make ("pipelinestats", NULL);
  guint64 interval;
  gchar *source, *payloader, *sink;

  fail_unless (e != NULL);
  fail_unless (gst_element_get_static_pad (e, "src") == NULL);
  /* it reads no queue: the clock bridge reports its own FIFO */
  fail_unless (g_object_class_find_property (G_OBJECT_GET_CLASS (e),
          "buffer") == NULL);
  g_object_get (e, "interval", &interval, "source", &source,
      "payloader", &payloader, "sink", &sink, NULL);
  fail_unless_equals_uint64 (interval, GST_SECOND);
  fail_unless_equals_string (source, "src");
  fail_unless_equals_string (payloader, "pay");
  fail_unless_equals_string (sink, "out");
  g_free (source);
  g_free (payloader);
  g_free (sink);
  g_object_set (e, "interval", (guint64) (20 * GST_MSECOND), "source", "x", NULL);
  g_object_get (e, "interval", &interval, "source", &source, NULL);
  fail_unless_equals_uint64 (interval, 20 * GST_MSECOND);
  fail_unless_equals_string (source, "x");
  g_free (source);
  gst_object_unref (e);
}
GST_END_TEST;

GST_START_TEST (test_cycle_and_leaks)
{
  GstTracer *tracer = leaks_tracer ();
  GPtrArray *live_before, *live_after;
  guint k, alive = 0;
  GstElement *pipe, *stats;
  GstBus *bus;
  guint64 packets = 0, prev = 0;
  guint i, n;

  fail_unless (tracer != NULL, "leaks tracer not active");
  live_before = live_objects (tracer);

  pipe = gst_parse_launch (DESC, NULL);
  fail_unless (pipe != NULL);
  bus = gst_element_get_bus (pipe);
  stats = gst_bin_get_by_name (GST_BIN (pipe), "stats");

  for (i = 0; i < 5; i++) {
    fail_if (gst_element_set_state (pipe, GST_STATE_PLAYING) ==
        GST_STATE_CHANGE_FAILURE);
    n = count_stats (bus, 200, &packets);
    /* 20 expected; start-up on a loaded machine eats some */
    fail_unless (n >= 5 && n <= 22, "%u messages in 200 ms at 10 ms", n);
    fail_unless (packets > prev, "output-packets did not grow");
    prev = packets;
    /* properties while PLAYING */
    g_object_set (stats, "interval", (guint64) (50 * GST_MSECOND),
        "source", "nothing", NULL);
    n = count_stats (bus, 200, NULL);
    /* 4 expected (+ those posted at 10 ms before the change) */
    fail_unless (n >= 2 && n <= 8, "%u messages in 200 ms at 50 ms", n);
    g_object_set (stats, "interval", (guint64) (10 * GST_MSECOND), NULL);
    fail_if (gst_element_set_state (pipe, GST_STATE_PAUSED) ==
        GST_STATE_CHANGE_FAILURE);
    fail_unless (gst_element_get_state (pipe, NULL, NULL, GST_SECOND) !=
        GST_STATE_CHANGE_FAILURE);
    /* the timer is stopped in PAUSED */
    gst_bus_set_flushing (bus, TRUE);
    gst_bus_set_flushing (bus, FALSE);
    n = count_stats (bus, 100, NULL);
    fail_unless_equals_int (n, 0);
  }
  /* counters restart on READY->PAUSED */
  gst_element_set_state (pipe, GST_STATE_READY);
  gst_element_set_state (pipe, GST_STATE_PLAYING);
  count_stats (bus, 60, &packets);
  fail_unless (packets < prev, "output-packets not reset (%" G_GUINT64_FORMAT
      " >= %" G_GUINT64_FORMAT ")", packets, prev);

  /* dispose while PLAYING (NULL first, as a bin owner must) */
  gst_object_unref (stats);
  gst_element_set_state (pipe, GST_STATE_NULL);
  gst_bus_set_flushing (bus, TRUE);
  gst_object_unref (bus);
  gst_object_unref (pipe);

  /* other elements' GstTasks are released by the task pool threads after
   * the join: wait for those (never poll the tracer while objects die) */
  gst_task_cleanup_all ();
  live_after = live_objects (tracer);
  for (k = 0; k < live_after->len; k++)
    if (!g_ptr_array_find_with_equal_func (live_before,
            g_ptr_array_index (live_after, k), g_str_equal, NULL))
      alive++;
  for (k = 0; k < live_after->len; k++) {
    const gchar *o = g_ptr_array_index (live_after, k);
    if (!g_ptr_array_find_with_equal_func (live_before, o, g_str_equal, NULL))
      g_printerr ("alive after the test: %s\n", o);
  }
  fail_unless_equals_int (alive, 0);
  g_ptr_array_unref (live_before);
  g_ptr_array_unref (live_after);
  gst_object_unref (tracer);
}
GST_END_TEST;

static Suite *
pipelinestats_suite (void)
{
  Suite *s = suite_create ("pipelinestats");
  TCase *tc = tcase_create ("general");

  tcase_set_timeout (tc, 60);
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_properties);
  tcase_add_test (tc, test_cycle_and_leaks);
  return s;
}

int
main (int argc, char **argv)
{
  Suite *s;

  g_setenv ("GST_TRACERS", "leaks", TRUE);
  gst_check_init (&argc, &argv);
  s = pipelinestats_suite ();
  return gst_check_run_suite (s, "pipelinestats", __FILE__);
}
