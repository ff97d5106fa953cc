/* aacframer through GstHarness:
 *   - one ADTS frame in one buffer: one raw frame out at once (nothing held
 *     for the next), header stripped, the buffer's PTS, 1024 samples long;
 *     DISCONT on the first frame only (a decoder resets at each);
 *     caps raw + framed with the AudioSpecificConfig of the header;
 *   - sticky events after caps (segment) wait for the caps and keep order;
 *   - two frames in one buffer: two out, the second 1024 samples later;
 *   - a frame split over two buffers: out when its last byte came;
 *   - a header with CRC (9 bytes) stripped as well;
 *   - a frame of two raw data blocks: the element passes ADTS through
 *     unchanged with the input caps from then on;
 *   - other caps (MPEG-1 audio): buffers and caps pass through untouched. */
#include <gst/gst.h>
#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>

#define ADTS_CAPS "audio/mpeg,mpegversion=4,stream-format=adts"
#define MS GST_MSECOND

/* the next frame out is the first: DISCONT expected (and set on the input) */
static gboolean first_frame;

/* An ADTS frame: AAC LC, 48 kHz (index 3), 2 channels, @payload bytes of
 * @tag; @crc: a 9-byte header (protection_absent 0); @blocks raw data
 * blocks - 1 in the header. */
static guint8 *
adts_frame (guint payload, guint8 tag, gboolean crc, guint blocks, guint * len)
{
  guint header = crc ? 9 : 7;
  guint n = header + payload;
  guint8 *f = g_malloc0 (n);

  f[0] = 0xff;
  f[1] = crc ? 0xf0 : 0xf1;
  f[2] = (1 << 6) | (3 << 2) | 0;       /* profile LC (1), 48 kHz, ch bit 2 */
  f[3] = (2 << 6) | ((n >> 11) & 3);    /* channels 2 */
  f[4] = (n >> 3) & 0xff;
  f[5] = ((n & 7) << 5) | 0x1f;
  f[6] = 0xfc | (blocks & 3);
  memset (f + header, tag, payload);
  *len = n;
  return f;
}

/* marked DISCONT like a demuxer's buffers can be: not passed on */
static GstBuffer *
buffer_of (const guint8 * data, guint len, GstClockTime pts)
{
  GstBuffer *b = gst_buffer_new_memdup (data, len);

  GST_BUFFER_PTS (b) = pts;
  if (first_frame)
    GST_BUFFER_FLAG_SET (b, GST_BUFFER_FLAG_DISCONT);
  return b;
}

/* pulls one buffer: @payload bytes of @tag at @pts */
static void
expect_frame (GstHarness * h, guint payload, guint8 tag, GstClockTime pts)
{
  GstBuffer *b = gst_harness_pull (h);
  GstMapInfo map;

  fail_unless (b != NULL);
  fail_unless_equals_int (GST_BUFFER_IS_DISCONT (b), first_frame);
  first_frame = FALSE;
  fail_unless_equals_uint64 (GST_BUFFER_PTS (b), pts);
  fail_unless_equals_uint64 (GST_BUFFER_DURATION (b),
      gst_util_uint64_scale_int (1024, GST_SECOND, 48000));
  gst_buffer_map (b, &map, GST_MAP_READ);
  fail_unless_equals_int (map.size, payload);
  for (gsize i = 0; i < map.size; i++)
    fail_unless_equals_int (map.data[i], tag);
  gst_buffer_unmap (b, &map);
  gst_buffer_unref (b);
}

static GstHarness *
make_harness (const gchar * caps)
{
  GstHarness *h = gst_harness_new ("aacframer");

  gst_harness_set_src_caps_str (h, caps);
  first_frame = TRUE;
  return h;
}

GST_START_TEST (test_one_frame_leaves_at_once)
{
  GstHarness *h = make_harness (ADTS_CAPS);
  guint len;
  guint8 *f = adts_frame (600, 0x11, FALSE, 0, &len);
  GstCaps *caps;
  const GstStructure *s;
  const GValue *v;
  GstMapInfo map;
  GstEvent *ev;
  gboolean framed = FALSE;
  gint rate = 0, channels = 0;

  fail_unless_equals_int (gst_harness_push (h, buffer_of (f, len, 40 * MS)),
      GST_FLOW_OK);
  /* out without waiting for a second frame */
  fail_unless_equals_int (gst_harness_buffers_in_queue (h), 1);
  expect_frame (h, 600, 0x11, 40 * MS);

  caps = gst_pad_get_current_caps (h->sinkpad);
  fail_unless (caps != NULL);
  s = gst_caps_get_structure (caps, 0);
  fail_unless_equals_string (gst_structure_get_string (s, "stream-format"),
      "raw");
  fail_unless (gst_structure_get_boolean (s, "framed", &framed) && framed);
  fail_unless (gst_structure_get_int (s, "rate", &rate) && rate == 48000);
  fail_unless (gst_structure_get_int (s, "channels", &channels)
      && channels == 2);
  v = gst_structure_get_value (s, "codec_data");
  fail_unless (v != NULL);
  gst_buffer_map (gst_value_get_buffer (v), &map, GST_MAP_READ);
  /* object type 2 (LC), frequency index 3, channel configuration 2 */
  fail_unless_equals_int (map.size, 2);
  fail_unless_equals_int (map.data[0], 0x11);
  fail_unless_equals_int (map.data[1], 0x90);
  gst_buffer_unmap (gst_value_get_buffer (v), &map);
  gst_caps_unref (caps);

  /* stream-start, caps, then segment: in order */
  ev = gst_harness_pull_event (h);
  fail_unless_equals_int (GST_EVENT_TYPE (ev), GST_EVENT_STREAM_START);
  gst_event_unref (ev);
  ev = gst_harness_pull_event (h);
  fail_unless_equals_int (GST_EVENT_TYPE (ev), GST_EVENT_CAPS);
  gst_event_unref (ev);
  ev = gst_harness_pull_event (h);
  fail_unless_equals_int (GST_EVENT_TYPE (ev), GST_EVENT_SEGMENT);
  gst_event_unref (ev);

  g_free (f);
  gst_harness_teardown (h);
}

GST_END_TEST;

GST_START_TEST (test_frames_in_one_buffer_and_split)
{
  GstHarness *h = make_harness (ADTS_CAPS);
  guint l1, l2, l3;
  guint8 *f1 = adts_frame (500, 0x21, FALSE, 0, &l1);
  guint8 *f2 = adts_frame (700, 0x22, TRUE, 0, &l2);
  guint8 *f3 = adts_frame (650, 0x23, FALSE, 0, &l3);
  guint8 *two = g_malloc (l1 + l2);
  GstClockTime frame = gst_util_uint64_scale_int (1024, GST_SECOND, 48000);

  memcpy (two, f1, l1);
  memcpy (two + l1, f2, l2);
  gst_harness_push (h, buffer_of (two, l1 + l2, 100 * MS));
  fail_unless_equals_int (gst_harness_buffers_in_queue (h), 2);
  expect_frame (h, 500, 0x21, 100 * MS);
  expect_frame (h, 700, 0x22, 100 * MS + frame);        /* CRC header too */

  /* the third frame in two pieces: nothing until its last byte */
  gst_harness_push (h, buffer_of (f3, 300, 200 * MS));
  fail_unless_equals_int (gst_harness_buffers_in_queue (h), 0);
  gst_harness_push (h, buffer_of (f3 + 300, l3 - 300, GST_CLOCK_TIME_NONE));
  fail_unless_equals_int (gst_harness_buffers_in_queue (h), 1);
  expect_frame (h, 650, 0x23, 200 * MS);

  g_free (two);
  g_free (f1);
  g_free (f2);
  g_free (f3);
  gst_harness_teardown (h);
}

GST_END_TEST;

GST_START_TEST (test_several_raw_blocks_pass_through)
{
  GstHarness *h = make_harness (ADTS_CAPS);
  guint len;
  guint8 *f = adts_frame (400, 0x31, FALSE, 1, &len);
  GstBuffer *b;
  GstCaps *caps;

  gst_harness_push (h, buffer_of (f, len, 0));
  b = gst_harness_pull (h);
  fail_unless (b != NULL);
  fail_unless_equals_int (gst_buffer_get_size (b), len);        /* unchanged */
  gst_buffer_unref (b);
  caps = gst_pad_get_current_caps (h->sinkpad);
  fail_unless_equals_string (gst_structure_get_string
      (gst_caps_get_structure (caps, 0), "stream-format"), "adts");
  gst_caps_unref (caps);
  /* and stays so */
  gst_harness_push (h, buffer_of (f, len, 21 * MS));
  b = gst_harness_pull (h);
  fail_unless_equals_int (gst_buffer_get_size (b), len);
  gst_buffer_unref (b);
  g_free (f);
  gst_harness_teardown (h);
}

GST_END_TEST;

GST_START_TEST (test_other_audio_passes)
{
  GstHarness *h = make_harness ("audio/mpeg,mpegversion=1,layer=2");
  guint8 data[300];
  GstBuffer *b;
  GstCaps *caps;

  memset (data, 0x55, sizeof (data));
  gst_harness_push (h, buffer_of (data, sizeof (data), 7 * MS));
  b = gst_harness_pull (h);
  fail_unless (b != NULL);
  fail_unless_equals_int (gst_buffer_get_size (b), sizeof (data));
  fail_unless_equals_uint64 (GST_BUFFER_PTS (b), 7 * MS);
  gst_buffer_unref (b);
  caps = gst_pad_get_current_caps (h->sinkpad);
  fail_unless (caps != NULL);
  fail_unless (gst_structure_has_field (gst_caps_get_structure (caps, 0),
          "layer"));
  gst_caps_unref (caps);
  gst_harness_teardown (h);
}

GST_END_TEST;

static Suite *
aacframer_suite (void)
{
  Suite *s = suite_create ("aacframer");
  TCase *tc = tcase_create ("element");

  tcase_add_test (tc, test_one_frame_leaves_at_once);
  tcase_add_test (tc, test_frames_in_one_buffer_and_split);
  tcase_add_test (tc, test_several_raw_blocks_pass_through);
  tcase_add_test (tc, test_other_audio_passes);
  suite_add_tcase (s, tc);
  return s;
}

GST_CHECK_MAIN (aacframer);
