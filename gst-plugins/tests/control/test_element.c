/* enginecontrol in a playing pipeline (audiotestsrc is-live ! parametriceq !
 * loudnorm ! fakesink): commands written to one end of a socket pair, as the
 * engine writes them, set properties of the named elements while audio
 * flows; every command gets exactly one acknowledgement on the bus (its id,
 * ok or the reason); a refused command changes nothing, not even its valid
 * assignments; malformed lines, unknown elements and properties, values that
 * do not parse or are out of the property's range, properties that are not
 * mutable while playing and an unknown protocol version are refused; an
 * enum is set by its nick (clockbridge's select), nothing else. */
#include <gst/gst.h>
#include <gst/check/gstcheck.h>

#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

typedef struct
{
  GstElement *pipeline;
  GstBus *bus;
  gint fds[2];                  /* [0] the child's end, [1] the engine's */
} Fixture;

#define STEPS "audiotestsrc is-live=true samplesperbuffer=480 " \
  "! audio/x-raw,format=F32LE,rate=48000,channels=2 " \
  "! parametriceq name=step0 bands=1000:0:1 ! loudnorm name=step1 " \
  "target=-23 ! fakesink name=out"
/* a clock bridge with a backup: an enum (select), guint64 and boolean
 * properties mutable while playing */
#define BRIDGE "audiotestsrc is-live=true " \
  "! audio/x-raw,format=F32LE,rate=48000,channels=2 " \
  "! clockbridge name=bridge ! fakesink  audiotestsrc is-live=true " \
  "freq=440 ! audio/x-raw,format=F32LE,rate=48000,channels=2 ! bridge.backup"

static void
fixture_start_with (Fixture * f, const gchar * graph)
{
  gchar *desc;

  fail_unless (socketpair (AF_UNIX, SOCK_STREAM, 0, f->fds) == 0);
  desc = g_strdup_printf ("%s  enginecontrol name=control fd=%d", graph,
      f->fds[0]);
  f->pipeline = gst_parse_launch (desc, NULL);
  g_free (desc);
  fail_unless (f->pipeline != NULL);
  f->bus = gst_element_get_bus (f->pipeline);
  fail_unless (gst_element_set_state (f->pipeline, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);
  fail_unless (gst_element_get_state (f->pipeline, NULL, NULL,
          5 * GST_SECOND) == GST_STATE_CHANGE_SUCCESS);
}

static void
fixture_start (Fixture * f)
{
  fixture_start_with (f, STEPS);
}

static void
fixture_stop (Fixture * f)
{
  fail_unless (gst_element_set_state (f->pipeline, GST_STATE_NULL) ==
      GST_STATE_CHANGE_SUCCESS);
  gst_object_unref (f->bus);
  gst_object_unref (f->pipeline);
  close (f->fds[0]);
  close (f->fds[1]);
}

static void
send_line (Fixture * f, const gchar * line)
{
  gsize len = strlen (line);
  fail_unless (write (f->fds[1], line, len) == (gssize) len);
}

/* The next enginecontrol message within 2 s (NULL: none). */
static GstStructure *
next_ack (Fixture * f)
{
  gint64 deadline = g_get_monotonic_time () + 2 * G_USEC_PER_SEC;

  while (g_get_monotonic_time () < deadline) {
    GstMessage *m = gst_bus_timed_pop_filtered (f->bus, 100 * GST_MSECOND,
        GST_MESSAGE_ELEMENT | GST_MESSAGE_ERROR);
    const GstStructure *s;

    if (m == NULL)
      continue;
    fail_if (GST_MESSAGE_TYPE (m) == GST_MESSAGE_ERROR, "error on the bus");
    s = gst_message_get_structure (m);
    if (gst_structure_has_name (s, "enginecontrol")) {
      GstStructure *copy = gst_structure_copy (s);
      gst_message_unref (m);
      return copy;
    }
    gst_message_unref (m);
  }
  return NULL;
}

/* Sends a line; checks its acknowledgement (id, ok, error contains want). */
static void
expect (Fixture * f, const gchar * line, guint64 id, const gchar * want_error)
{
  GstStructure *ack;
  guint64 got_id = G_MAXUINT64;
  gboolean ok = FALSE;
  gint version = 0;
  const gchar *error;

  send_line (f, line);
  ack = next_ack (f);
  fail_unless (ack != NULL, "no acknowledgement for %s", line);
  fail_unless (gst_structure_get_int (ack, "version", &version));
  fail_unless_equals_int (version, 1);
  fail_unless (gst_structure_get_uint64 (ack, "id", &got_id));
  fail_unless (gst_structure_get_boolean (ack, "ok", &ok));
  error = gst_structure_get_string (ack, "error");
  fail_unless (got_id == id, "id %" G_GUINT64_FORMAT " for %s", got_id, line);
  if (want_error == NULL) {
    fail_unless (ok, "refused: %s (%s)", line, error ? error : "");
    fail_unless (error == NULL);
  } else {
    fail_if (ok, "accepted: %s", line);
    fail_unless (error != NULL && strstr (error, want_error) != NULL,
        "error \"%s\" for %s, wanted \"%s\"", error ? error : "", line,
        want_error);
  }
  gst_structure_free (ack);
}

static gdouble
get_double (Fixture * f, const gchar * element, const gchar * property)
{
  GstElement *e = gst_bin_get_by_name (GST_BIN (f->pipeline), element);
  gdouble v = 0;

  g_object_get (e, property, &v, NULL);
  gst_object_unref (e);
  return v;
}

static gchar *
get_bands (Fixture * f)
{
  GstElement *e = gst_bin_get_by_name (GST_BIN (f->pipeline), "step0");
  gchar *v = NULL;

  g_object_get (e, "bands", &v, NULL);
  gst_object_unref (e);
  return v;
}

GST_START_TEST (test_sets_while_playing)
{
  Fixture f;
  gchar *bands;

  fixture_start (&f);
  expect (&f, "v1 1 set step1.target=-16\n", 1, NULL);
  fail_unless_equals_float (get_double (&f, "step1", "target"), -16.0);
  expect (&f, "v1 2 set step1.target=-20.5 step1.true-peak=-2 "
      "step0.bands=200:6:1.5,3000:-3:0.7\n", 2, NULL);
  fail_unless_equals_float (get_double (&f, "step1", "target"), -20.5);
  fail_unless_equals_float (get_double (&f, "step1", "true-peak"), -2.0);
  bands = get_bands (&f);
  fail_unless (bands != NULL && strstr (bands, "200") != NULL
      && strstr (bands, "3000") != NULL, "bands %s", bands);
  g_free (bands);
  /* two commands in one write, then one split over two writes */
  send_line (&f, "v1 3 set step1.target=-18\nv1 4 set step1.target=-17");
  send_line (&f, "\n");
  expect (&f, "", 3, NULL);
  expect (&f, "", 4, NULL);
  fail_unless_equals_float (get_double (&f, "step1", "target"), -17.0);
  fixture_stop (&f);
}

GST_END_TEST;

GST_START_TEST (test_refusals_change_nothing)
{
  Fixture f;

  fixture_start (&f);
  expect (&f, "v1 10 set step1.target=-16\n", 10, NULL);
  /* the valid first assignment is not applied when the second is refused */
  expect (&f, "v1 11 set step1.target=-30 step1.target=-4\n", 11,
      "step1.target: -4 is out of range");
  expect (&f, "v1 12 set step1.target=-30 nosuch.target=-20\n", 12,
      "no element nosuch");
  expect (&f, "v1 13 set step1.target=-30 step1.volume=1\n", 13,
      "step1 has no property volume");
  expect (&f, "v1 14 set step1.target=abc\n", 14, "is not a gdouble");
  expect (&f, "v1 15 set step1.target=nan\n", 15, "is not a gdouble");
  expect (&f, "v1 16 set step1.target=1e3\n", 16, "is not a gdouble");
  expect (&f, "v1 17 set step1.interval=20000000\n", 17,
      "cannot be changed while playing");
  expect (&f, "v1 18 set step1.name=x\n", 18,
      "step1.name cannot be changed while playing");
  expect (&f, "v1 19 set control.fd=5\n", 19, "no element control");
  expect (&f, "v2 20 set step1.target=-30\n", 20,
      "unknown protocol version");
  expect (&f, "v1 21 get step1.target\n", 21, "expected set");
  expect (&f, "v1 22 set step1.target=-30;rm\n", 22, "malformed assignment");
  expect (&f, "v1 23 set step1.target=\"-30\"\n", 23, "malformed assignment");
  expect (&f, "v1 24 set Step1.target=-30\n", 24, "malformed assignment");
  expect (&f, "v1 25 set step1.target=-30 \n", 25, "malformed assignment");
  expect (&f, "v1 0 set step1.target=-30\n", 0, "no request id");
  expect (&f, "v1 01 set step1.target=-30\n", 0, "no request id");
  expect (&f, "hello\n", 0, "no request id");
  expect (&f, "\n", 0, "no request id");
  {
    GString *lng = g_string_new ("v1 26 set step0.bands=");
    while (lng->len < 5000)
      g_string_append (lng, "100:1:1,");
    g_string_append_c (lng, '\n');
    expect (&f, lng->str, 0, "line too long");
    g_string_free (lng, TRUE);
  }
  fail_unless_equals_float (get_double (&f, "step1", "target"), -16.0);
  /* still answering after all that */
  expect (&f, "v1 27 set step1.target=-15\n", 27, NULL);
  fail_unless_equals_float (get_double (&f, "step1", "target"), -15.0);
  fixture_stop (&f);
}

GST_END_TEST;

GST_START_TEST (test_restart_and_closed_descriptor)
{
  Fixture f;

  fixture_start (&f);
  /* NULL and back: the reader thread is joined and started again */
  fail_unless (gst_element_set_state (f.pipeline, GST_STATE_NULL) ==
      GST_STATE_CHANGE_SUCCESS);
  fail_unless (gst_element_set_state (f.pipeline, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);
  fail_unless (gst_element_get_state (f.pipeline, NULL, NULL,
          5 * GST_SECOND) == GST_STATE_CHANGE_SUCCESS);
  expect (&f, "v1 30 set step1.target=-19\n", 30, NULL);
  /* the engine's end closed: the thread ends, the pipeline plays on */
  close (f.fds[1]);
  f.fds[1] = socket (AF_UNIX, SOCK_STREAM, 0);
  g_usleep (100 * 1000);
  fail_unless_equals_int (GST_STATE (f.pipeline), GST_STATE_PLAYING);
  fixture_stop (&f);
}

GST_END_TEST;

GST_START_TEST (test_enum_by_nick)
{
  Fixture f;
  GstElement *bridge;
  gint select = -1;
  guint64 loss = 0;
  gboolean on_silence = FALSE;
  gdouble level = 0;

  fixture_start_with (&f, BRIDGE);
  bridge = gst_bin_get_by_name (GST_BIN (f.pipeline), "bridge");
  expect (&f, "v1 40 set bridge.select=backup\n", 40, NULL);
  g_object_get (bridge, "select", &select, NULL);
  fail_unless_equals_int (select, 2);
  expect (&f, "v1 41 set bridge.select=auto bridge.failover-loss=500000000 "
      "bridge.fallback-on-silence=true bridge.failover-silence-level=-60.5\n",
      41, NULL);
  g_object_get (bridge, "select", &select, "failover-loss", &loss,
      "fallback-on-silence", &on_silence, "failover-silence-level", &level,
      NULL);
  fail_unless_equals_int (select, 0);
  fail_unless_equals_uint64 (loss, 500000000);
  fail_unless (on_silence);
  fail_unless_equals_float (level, -60.5);
  /* a nick only: not a name, a number or another word */
  expect (&f, "v1 42 set bridge.select=sideways\n", 42,
      "bridge.select: sideways is not a GstClockBridgeSelect");
  expect (&f, "v1 43 set bridge.select=2\n", 43, "is not a");
  expect (&f, "v1 44 set bridge.select=main bridge.failover-loss=1\n", 44,
      "out of range");
  g_object_get (bridge, "select", &select, NULL);
  fail_unless_equals_int (select, 0);
  expect (&f, "v1 45 set bridge.fallback-file=x\n", 45,
      "cannot be changed while playing");
  gst_object_unref (bridge);
  fixture_stop (&f);
}

GST_END_TEST;

/* udpsink's host and port change while playing (the engine's live
 * destination change); its other unflagged properties stay refused */
#define SINK "audiotestsrc is-live=true samplesperbuffer=48 " \
  "! audio/x-raw,format=S16BE,rate=48000,channels=2 ! rtpL16pay " \
  "! udpsink name=out host=127.0.0.1 port=5004 sync=true async=false"

GST_START_TEST (test_udpsink_destination)
{
  Fixture f;
  GstElement *sink;
  gchar *host = NULL;
  gint port = 0;

  fixture_start_with (&f, SINK);
  sink = gst_bin_get_by_name (GST_BIN (f.pipeline), "out");
  expect (&f, "v1 50 set out.host=127.0.0.2 out.port=5006\n", 50, NULL);
  g_object_get (sink, "host", &host, "port", &port, NULL);
  fail_unless_equals_string (host, "127.0.0.2");
  fail_unless_equals_int (port, 5006);
  g_free (host);
  expect (&f, "v1 51 set out.ttl=3\n", 51, "cannot be changed while playing");
  expect (&f, "v1 52 set out.port=70000\n", 52, "out of range");
  gst_object_unref (sink);
  fixture_stop (&f);
}

GST_END_TEST;

static Suite *
control_suite (void)
{
  Suite *s = suite_create ("enginecontrol");
  TCase *tc = tcase_create ("element");

  tcase_set_timeout (tc, 30);
  tcase_add_test (tc, test_sets_while_playing);
  tcase_add_test (tc, test_refusals_change_nothing);
  tcase_add_test (tc, test_restart_and_closed_descriptor);
  tcase_add_test (tc, test_enum_by_nick);
  tcase_add_test (tc, test_udpsink_destination);
  suite_add_tcase (s, tc);
  return s;
}

GST_CHECK_MAIN (control);
