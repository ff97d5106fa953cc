/* Shared helpers of the loudnorm element tests: run synthesised audio
 * through the real element in a GstHarness and collect its output and its
 * element messages. */
#ifndef LN_TEST_HARNESS_H
#define LN_TEST_HARNESS_H

#include <gst/gst.h>
#include <gst/audio/audio.h>
#include <gst/check/gstharness.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

static void G_GNUC_UNUSED
check_range (const char *what, double got, double lo, double hi)
{
  int ok = got >= lo && got <= hi;
  printf ("  %-44s %9.3f  in [%8.3f, %8.3f] %s\n", what, got, lo, hi,
      ok ? "ok" : "FAIL");
  if (!ok)
    failures++;
}

static void G_GNUC_UNUSED
check_near (const char *what, double got, double want, double tol)
{
  check_range (what, got, want - tol, want + tol);
}

typedef void (*OutFunc) (const float *x, size_t frames, void *user);

typedef struct
{
  GstHarness *h;
  GstBus *bus;
  unsigned rate, ch;
  guint64 frames_in;
  OutFunc out;
  void *user;
  guint64 frames_out;
  GstStructure *last;           /* last 'loudnorm' message */
  unsigned n_messages;
} Run;

static void
run_collect (Run * r)
{
  GstBuffer *b;
  GstMessage *m;
  while ((b = gst_harness_try_pull (r->h))) {
    GstMapInfo map;
    gst_buffer_map (b, &map, GST_MAP_READ);
    size_t n = map.size / (sizeof (float) * r->ch);
    if (r->out)
      r->out ((const float *) map.data, n, r->user);
    r->frames_out += n;
    gst_buffer_unmap (b, &map);
    gst_buffer_unref (b);
  }
  while ((m = gst_bus_pop_filtered (r->bus, GST_MESSAGE_ELEMENT))) {
    const GstStructure *s = gst_message_get_structure (m);
    if (s && gst_structure_has_name (s, "loudnorm")) {
      if (r->last)
        gst_structure_free (r->last);
      r->last = gst_structure_copy (s);
      r->n_messages++;
    }
    gst_message_unref (m);
  }
}

/* desc: "loudnorm ..." with properties; mask 0: default layout */
static Run * G_GNUC_UNUSED
run_new (const char *desc, unsigned rate, unsigned ch, guint64 mask,
    OutFunc out, void *user)
{
  Run *r = g_new0 (Run, 1);
  gchar *caps;
  r->h = gst_harness_new_parse (desc);
  r->bus = gst_bus_new ();
  gst_element_set_bus (r->h->element, r->bus);
  r->rate = rate;
  r->ch = ch;
  r->out = out;
  r->user = user;
  if (mask)
    caps = g_strdup_printf ("audio/x-raw, format=F32LE, rate=%u, channels=%u, "
        "layout=interleaved, channel-mask=(bitmask)0x%" G_GINT64_MODIFIER "x",
        rate, ch, mask);
  else if (ch <= 2)
    caps = g_strdup_printf ("audio/x-raw, format=F32LE, rate=%u, channels=%u, "
        "layout=interleaved", rate, ch);
  else
    caps = g_strdup_printf ("audio/x-raw, format=F32LE, rate=%u, channels=%u, "
        "layout=interleaved, channel-mask=(bitmask)0x%" G_GINT64_MODIFIER "x",
        rate, ch, (guint64) gst_audio_channel_get_fallback_mask (ch));
  gst_harness_set_src_caps_str (r->h, caps);
  g_free (caps);
  return r;
}

static void G_GNUC_UNUSED
run_push (Run * r, const float *x, size_t frames)
{
  GstBuffer *b = gst_buffer_new_memdup (x, frames * r->ch * sizeof (float));
  GST_BUFFER_PTS (b) = gst_util_uint64_scale_int (r->frames_in, GST_SECOND, r->rate);
  GST_BUFFER_DURATION (b) = gst_util_uint64_scale_int (frames, GST_SECOND, r->rate);
  GST_BUFFER_OFFSET (b) = r->frames_in;
  r->frames_in += frames;
  if (gst_harness_push (r->h, b) != GST_FLOW_OK) {
    fprintf (stderr, "push failed\n");
    exit (1);
  }
  run_collect (r);
}

static void G_GNUC_UNUSED
run_eos (Run * r)
{
  gst_harness_push_event (r->h, gst_event_new_eos ());
  run_collect (r);
}

static void G_GNUC_UNUSED
run_free (Run * r)
{
  if (r->last)
    gst_structure_free (r->last);
  gst_element_set_bus (r->h->element, NULL);
  gst_object_unref (r->bus);
  gst_harness_teardown (r->h);
  g_free (r);
}

static double G_GNUC_UNUSED
field (Run * r, const char *name)
{
  double v = NAN;
  if (!r->last || !gst_structure_get_double (r->last, name, &v)) {
    printf ("  missing field %s\n", name);
    failures++;
  }
  return v;
}

/* Signal generator: a sequence of 1 kHz-style sine segments per channel. */
typedef struct
{
  double seconds;
  double dbfs[8];               /* peak level per channel; <= -200: silence */
} Seg;

/* pushes the segments in 100 ms buffers; sines are phase-continuous */
static void G_GNUC_UNUSED
run_sines (Run * r, double freq, const Seg * segs, int nsegs)
{
  size_t chunk = r->rate / 10;
  float *x = g_new (float, chunk * r->ch);
  guint64 n = r->frames_in;
  for (int s = 0; s < nsegs; s++) {
    size_t total = (size_t) llround (segs[s].seconds * r->rate);
    double amp[8];
    for (unsigned c = 0; c < r->ch; c++)
      amp[c] = segs[s].dbfs[c] <= -200 ? 0.0 : pow (10.0, segs[s].dbfs[c] / 20.0);
    for (size_t off = 0; off < total; off += chunk) {
      size_t k = MIN (chunk, total - off);
      for (size_t i = 0; i < k; i++) {
        double v = sin (2 * M_PI * freq * (double) (n + i) / r->rate);
        for (unsigned c = 0; c < r->ch; c++)
          x[i * r->ch + c] = (float) (amp[c] * v);
      }
      n += k;
      run_push (r, x, k);
    }
  }
  g_free (x);
}

#endif
