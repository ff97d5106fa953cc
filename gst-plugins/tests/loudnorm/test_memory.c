/* Memory is constant: one hour of programme through the element (GstHarness,
 * as fast as it runs); the heap in use after 5 minutes and after 60 minutes
 * must be the same (histograms, not growing arrays).  Also checks that a
 * DISCONT keeps the gain and that FLUSH_STOP resets the meters. */
#include "harness.h"
#include "programme.h"

#include <malloc.h>

#define RATE 48000

static size_t
heap_in_use (void)
{
  struct mallinfo2 mi = mallinfo2 ();
  return mi.uordblks + mi.hblkhd;
}

static void
one_hour (void)
{
  printf ("one hour of stereo programme\n");
  Run *r = run_new ("loudnorm interval=1000000000", RATE, 2, 0, NULL, NULL);
  Prog p;
  prog_init (&p, RATE, 2, -25.0, 17);
  float *x = g_new (float, RATE * 2);
  size_t at5 = 0, at60;
  gint64 t0 = g_get_monotonic_time ();
  for (int s = 0; s < 3600; s++) {
    prog_fill (&p, x, RATE);
    run_push (r, x, RATE);
    if (s == 300)
      at5 = heap_in_use ();
  }
  at60 = heap_in_use ();
  run_eos (r);
  printf ("    %.1f s wall for 1 h; %u messages; heap %zu bytes at 5 min, "
      "%zu at 60 min\n", (g_get_monotonic_time () - t0) / 1e6, r->n_messages,
      at5, at60);
  check_range ("heap growth 5 -> 60 min (bytes)", (double) at60 - (double) at5,
      -1e6, 16384);
  check_near ("messages posted (one per second + EOS)", r->n_messages, 3601, 0);
  check_range ("input-integrated is finite (LUFS)", field (r, "input-integrated"),
      -40, -10);
  g_free (x);
  run_free (r);
}

static void
discont_and_flush (void)
{
  printf ("DISCONT keeps the gain, FLUSH_STOP resets\n");
  Run *r = run_new ("loudnorm interval=100000000", RATE, 2, 0, NULL, NULL);
  Seg seg = { 20, {-10, -10} };
  run_sines (r, 1000.0, &seg, 1);
  double before = field (r, "gain");
  /* a lost packet: a jump in time, flagged DISCONT */
  size_t n = RATE / 10;
  float *x = g_new (float, n * 2);
  for (int b = 0; b < 10; b++) {
    for (size_t i = 0; i < n; i++)
      x[2 * i] = x[2 * i + 1] =
          (float) (pow (10, -0.5) * sin (2 * M_PI * 1000.0 * i / RATE));
    GstBuffer *buf = gst_buffer_new_memdup (x, n * 2 * sizeof (float));
    r->frames_in += n * (b == 0 ? 3 : 1);
    GST_BUFFER_PTS (buf) = gst_util_uint64_scale_int (r->frames_in, GST_SECOND, RATE);
    if (b == 0)
      GST_BUFFER_FLAG_SET (buf, GST_BUFFER_FLAG_DISCONT);
    gst_harness_push (r->h, buf);
    run_collect (r);
  }
  check_near ("gain 1 s after DISCONT - gain before (dB)",
      field (r, "gain") - before, 0.0, 0.2);
  gst_harness_push_event (r->h, gst_event_new_flush_start ());
  gst_harness_push_event (r->h, gst_event_new_flush_stop (TRUE));
  GstSegment segment;
  gst_segment_init (&segment, GST_FORMAT_TIME);
  gst_harness_push_event (r->h, gst_event_new_segment (&segment));
  r->frames_in = 0;
  Seg seg2 = { 5, {-30, -30} };
  run_sines (r, 1000.0, &seg2, 1);
  check_near ("input-integrated after flush: only new audio (LUFS)",
      field (r, "input-integrated"), -30.0, 0.1);
  g_free (x);
  run_free (r);
}

int
main (int argc, char **argv)
{
  gst_init (&argc, &argv);
  discont_and_flush ();
  one_hour ();
  printf ("%s (%d failures)\n", failures ? "FAILED" : "PASSED", failures);
  return failures ? 1 : 0;
}
