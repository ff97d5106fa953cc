/* rtpbatch through GstHarness: what leaves the element, push by push (a probe
 * on its src pad records each push as a single buffer or a list and its
 * length), and what the harness receives, in order. */
#include <gst/gst.h>
#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>

#define MS GST_MSECOND
#define CAPS "application/x-rtp,media=audio,clock-rate=48000,encoding-name=L24"

/* One entry per push: 0 = a single buffer, n > 0 = a list of n buffers. */
static GArray *pushes;

static GstPadProbeReturn
record_push (GstPad * pad, GstPadProbeInfo * info, gpointer user_data)
{
  guint n = 0;

  if (info->type & GST_PAD_PROBE_TYPE_BUFFER_LIST)
    n = gst_buffer_list_length (GST_PAD_PROBE_INFO_BUFFER_LIST (info));
  g_array_append_val (pushes, n);
  return GST_PAD_PROBE_OK;
}

static GstHarness *
make_harness (guint packets)
{
  GstHarness *h = gst_harness_new ("rtpbatch");
  GstPad *src;

  g_object_set (h->element, "packets", packets, NULL);
  gst_harness_set_src_caps_str (h, CAPS);
  src = gst_element_get_static_pad (h->element, "src");
  gst_pad_add_probe (src,
      GST_PAD_PROBE_TYPE_BUFFER | GST_PAD_PROBE_TYPE_BUFFER_LIST, record_push,
      NULL, NULL);
  gst_object_unref (src);
  pushes = g_array_new (FALSE, FALSE, sizeof (guint));
  return h;
}

static void
free_harness (GstHarness * h)
{
  gst_harness_teardown (h);
  g_array_free (pushes, TRUE);
  pushes = NULL;
}

/* A 1 ms packet at @ms whose first payload byte is @tag. */
static GstBuffer *
packet (guint64 ms, guint8 tag)
{
  GstBuffer *b = gst_buffer_new_and_alloc (12 + 288);

  gst_buffer_memset (b, 0, tag, 12 + 288);
  GST_BUFFER_PTS (b) = ms * MS;
  GST_BUFFER_DURATION (b) = 1 * MS;
  return b;
}

static void
assert_pushes (const guint * expected, guint n)
{
  guint i;

  fail_unless_equals_int (pushes->len, n);
  for (i = 0; i < n; i++)
    fail_unless_equals_int (g_array_index (pushes, guint, i), expected[i]);
}

/* The harness received @n buffers, tags 0..n-1 in order. */
static void
assert_received_in_order (GstHarness * h, guint n)
{
  guint i;

  fail_unless_equals_int (gst_harness_buffers_in_queue (h), n);
  for (i = 0; i < n; i++) {
    GstBuffer *b = gst_harness_pull (h);
    guint8 tag = 0xff;

    gst_buffer_extract (b, 0, &tag, 1);
    fail_unless_equals_int (tag, i);
    gst_buffer_unref (b);
  }
}

GST_START_TEST (test_lists_of_n_then_rest_before_eos)
{
  GstHarness *h = make_harness (4);
  const guint expected[] = { 4, 4, 2 };
  guint i;

  for (i = 0; i < 10; i++)
    fail_unless_equals_int (gst_harness_push (h, packet (100 + i, i)),
        GST_FLOW_OK);
  /* two full lists left, two packets held */
  fail_unless_equals_int (pushes->len, 2);
  /* the held two leave before the EOS does */
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  assert_pushes (expected, 3);
  assert_received_in_order (h, 10);
  free_harness (h);
}

GST_END_TEST;

GST_START_TEST (test_one_is_pass_through)
{
  GstHarness *h = make_harness (1);
  const guint expected[] = { 0, 0, 0, 0, 0 };
  guint i;

  for (i = 0; i < 5; i++)
    fail_unless_equals_int (gst_harness_push (h, packet (i, i)), GST_FLOW_OK);
  assert_pushes (expected, 5);
  assert_received_in_order (h, 5);
  free_harness (h);
}

GST_END_TEST;

GST_START_TEST (test_discont_starts_a_new_list)
{
  GstHarness *h = make_harness (4);
  const guint expected[] = { 2, 4 };
  guint i;

  for (i = 0; i < 6; i++) {
    GstBuffer *b = packet (i, i);
    if (i == 2)
      GST_BUFFER_FLAG_SET (b, GST_BUFFER_FLAG_DISCONT);
    fail_unless_equals_int (gst_harness_push (h, b), GST_FLOW_OK);
  }
  assert_pushes (expected, 2);
  assert_received_in_order (h, 6);
  free_harness (h);
}

GST_END_TEST;

GST_START_TEST (test_time_gap_starts_a_new_list)
{
  GstHarness *h = make_harness (4);
  const guint expected[] = { 3, 4, 1 };
  /* 0, 1, 2 ms; then 50 ms (a gap: a lost stretch upstream); then 52.2 ms, a
   * 0.2 ms jitter that is still contiguous (within half a packet) */
  const guint64 at_us[] = { 0, 1000, 2000, 50000, 51000, 52200, 53000, 54000 };
  guint i;

  for (i = 0; i < G_N_ELEMENTS (at_us); i++) {
    GstBuffer *b = packet (0, i);
    GST_BUFFER_PTS (b) = at_us[i] * GST_USECOND;
    fail_unless_equals_int (gst_harness_push (h, b), GST_FLOW_OK);
  }
  /* 0-2 left when 50 came; 50, 51, 52.2, 53 made a full list; 54 is held */
  fail_unless_equals_int (pushes->len, 2);
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  assert_pushes (expected, 3);
  assert_received_in_order (h, 8);
  free_harness (h);
}

GST_END_TEST;

GST_START_TEST (test_missing_timestamps_are_not_batched_across)
{
  GstHarness *h = make_harness (4);
  const guint expected[] = { 1, 1, 1 };
  guint i;

  for (i = 0; i < 3; i++) {
    GstBuffer *b = packet (i, i);
    GST_BUFFER_PTS (b) = GST_CLOCK_TIME_NONE;
    fail_unless_equals_int (gst_harness_push (h, b), GST_FLOW_OK);
  }
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  assert_pushes (expected, 3);
  assert_received_in_order (h, 3);
  free_harness (h);
}

GST_END_TEST;

GST_START_TEST (test_flush_drops_held_packets)
{
  GstHarness *h = make_harness (4);
  const guint expected[] = { 4 };
  GstBuffer *held = packet (0, 0);
  GstSegment segment;
  guint i;

  gst_buffer_ref (held);
  fail_unless_equals_int (gst_harness_push (h, held), GST_FLOW_OK);
  fail_unless_equals_int (gst_harness_push (h, packet (1, 1)), GST_FLOW_OK);
  fail_unless (gst_harness_push_event (h, gst_event_new_flush_start ()));
  fail_unless (gst_harness_push_event (h, gst_event_new_flush_stop (TRUE)));
  /* the held packets are gone, not sent */
  fail_unless_equals_int (pushes->len, 0);
  fail_unless_equals_int (GST_MINI_OBJECT_REFCOUNT_VALUE (held), 1);
  gst_buffer_unref (held);

  gst_segment_init (&segment, GST_FORMAT_TIME);
  fail_unless (gst_harness_push_event (h, gst_event_new_segment (&segment)));
  for (i = 0; i < 4; i++)
    fail_unless_equals_int (gst_harness_push (h, packet (10 + i, i)),
        GST_FLOW_OK);
  assert_pushes (expected, 1);
  assert_received_in_order (h, 4);
  free_harness (h);
}

GST_END_TEST;

GST_START_TEST (test_stop_releases_held_packets)
{
  GstHarness *h = make_harness (8);
  GstBuffer *held = packet (0, 0);

  gst_buffer_ref (held);
  fail_unless_equals_int (gst_harness_push (h, held), GST_FLOW_OK);
  fail_unless (GST_MINI_OBJECT_REFCOUNT_VALUE (held) > 1);
  fail_unless_equals_int (gst_element_set_state (h->element, GST_STATE_READY),
      GST_STATE_CHANGE_SUCCESS);
  fail_unless_equals_int (GST_MINI_OBJECT_REFCOUNT_VALUE (held), 1);
  gst_buffer_unref (held);
  fail_unless_equals_int (pushes->len, 0);
  free_harness (h);
}

GST_END_TEST;

GST_START_TEST (test_packets_changed_while_playing)
{
  GstHarness *h = make_harness (2);
  const guint expected[] = { 2, 3, 3 };
  guint i;

  for (i = 0; i < 2; i++)
    fail_unless_equals_int (gst_harness_push (h, packet (i, i)), GST_FLOW_OK);
  g_object_set (h->element, "packets", 3, NULL);
  for (i = 2; i < 8; i++)
    fail_unless_equals_int (gst_harness_push (h, packet (i, i)), GST_FLOW_OK);
  assert_pushes (expected, 3);
  assert_received_in_order (h, 8);
  free_harness (h);
}

GST_END_TEST;

GST_START_TEST (test_property_range)
{
  GstElement *e = gst_element_factory_make ("rtpbatch", NULL);
  GParamSpecUInt *spec;
  guint packets = 0;

  fail_unless (e != NULL);
  g_object_get (e, "packets", &packets, NULL);
  fail_unless_equals_int (packets, 1);
  spec = G_PARAM_SPEC_UINT (g_object_class_find_property (G_OBJECT_GET_CLASS
          (e), "packets"));
  fail_unless_equals_int (spec->minimum, 1);
  fail_unless_equals_int (spec->maximum, 64);
  gst_object_unref (e);
}

GST_END_TEST;

/* the RTP timestamp of @b */
static guint32
rtp_ts (GstBuffer * b)
{
  guint8 h[8];

  fail_unless_equals_int (gst_buffer_extract (b, 0, h, 8), 8);
  return ((guint32) h[4] << 24) | ((guint32) h[5] << 16) |
      ((guint32) h[6] << 8) | h[7];
}

/* media-clock: floor ((base + running time + latency) x 48000 / 1e9) mod
 * 2^32, steps of exactly 48 per 1 ms packet, across the 2^32 wrap; the
 * latency from the LATENCY event, else from the upstream query. */
static void
check_media_clock (guint packets, gboolean latency_event)
{
  GstHarness *h = make_harness (packets);
  GstClockTime latency = 27 * MS;
  /* the first packet leaves 100 samples (plus a third of one) before the
   * 32-bit wrap */
  GstClockTime base = gst_util_uint64_scale (G_GUINT64_CONSTANT (1) << 32,
      GST_SECOND, 48000) - latency - 100 * GST_SECOND / 48000 + 7000;
  guint32 prev = 0;

  g_object_set (h->element, "media-clock", TRUE, NULL);
  gst_element_set_base_time (h->element, base);
  if (latency_event)
    fail_unless (gst_harness_push_upstream_event (h,
            gst_event_new_latency (latency)));
  else
    gst_harness_set_upstream_latency (h, latency);
  for (guint i = 0; i < 40; i++)
    fail_unless_equals_int (gst_harness_push (h, packet (i, i)), GST_FLOW_OK);
  gst_harness_push_event (h, gst_event_new_eos ());
  for (guint i = 0; i < 40; i++) {
    GstBuffer *b = gst_harness_pull (h);
    guint32 ts = rtp_ts (b);
    guint32 want = (guint32) gst_util_uint64_scale (base + i * MS + latency,
        48000, GST_SECOND);
    guint8 tag;

    gst_buffer_extract (b, 12, &tag, 1);
    fail_unless_equals_int (tag, i);
    fail_unless_equals_uint64 (ts, want);
    if (i > 0)
      fail_unless_equals_uint64 ((guint32) (ts - prev), 48);
    prev = ts;
    gst_buffer_unref (b);
  }
  /* the stamps wrapped inside the run */
  fail_unless (prev < 48 * 40);
  free_harness (h);
}

GST_START_TEST (test_media_clock_pass_through)
{
  check_media_clock (1, TRUE);
}

GST_END_TEST;

GST_START_TEST (test_media_clock_lists_of_four)
{
  check_media_clock (4, TRUE);
}

GST_END_TEST;

GST_START_TEST (test_media_clock_latency_from_query)
{
  check_media_clock (4, FALSE);
}

GST_END_TEST;

GST_START_TEST (test_media_clock_off_keeps_timestamps)
{
  GstHarness *h = make_harness (1);
  GstBuffer *in = packet (0, 1), *out;
  guint8 hdr[12] = { 0x80, 96, 0, 1, 0x12, 0x34, 0x56, 0x78 };

  gst_buffer_fill (in, 0, hdr, 12);
  gst_harness_push (h, in);
  out = gst_harness_pull (h);
  fail_unless_equals_uint64 (rtp_ts (out), 0x12345678);
  gst_buffer_unref (out);
  free_harness (h);
}

GST_END_TEST;

static Suite *
rtpbatch_suite (void)
{
  Suite *s = suite_create ("rtpbatch");
  TCase *tc = tcase_create ("element");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_lists_of_n_then_rest_before_eos);
  tcase_add_test (tc, test_one_is_pass_through);
  tcase_add_test (tc, test_discont_starts_a_new_list);
  tcase_add_test (tc, test_time_gap_starts_a_new_list);
  tcase_add_test (tc, test_missing_timestamps_are_not_batched_across);
  tcase_add_test (tc, test_flush_drops_held_packets);
  tcase_add_test (tc, test_stop_releases_held_packets);
  tcase_add_test (tc, test_packets_changed_while_playing);
  tcase_add_test (tc, test_property_range);
  tcase_add_test (tc, test_media_clock_pass_through);
  tcase_add_test (tc, test_media_clock_lists_of_four);
  tcase_add_test (tc, test_media_clock_latency_from_query);
  tcase_add_test (tc, test_media_clock_off_keeps_timestamps);
  return s;
}

GST_CHECK_MAIN (rtpbatch);
