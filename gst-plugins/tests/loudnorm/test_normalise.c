/* Normalisation by the loudnorm element, measured on its OUTPUT with an
 * independent meter (libebur128 in this program): steady tones, a
 * programme whose level moves +-15 dB, true peak under the ceiling (also
 * clicks on a quiet bed), pauses not pulled up, latency. */
#include "harness.h"
#include "programme.h"

#include <ebur128.h>

#define EB(call) do { int rc_ = (call); if (rc_ != EBUR128_SUCCESS) { \
      fprintf (stderr, "%s:%d: %s failed: %d\n", __FILE__, __LINE__, #call, rc_); \
      exit (1); } } while (0)

#define RATE 48000
#define MAX_ST 100000

typedef struct
{
  ebur128_state *st;
  guint64 frames;
  double st_hist[MAX_ST];       /* output short-term every 100 ms of output */
  unsigned n_st;
  guint64 next_st;
} Out;

static void
out_cb (const float *x, size_t frames, void *user)
{
  Out *o = user;
  /* feed in pieces so that the short-term is read every 100 ms */
  while (frames > 0) {
    size_t k = MIN (frames, o->next_st - o->frames);
    EB (ebur128_add_frames_float (o->st, x, k));
    x += k * 2;
    frames -= k;
    o->frames += k;
    if (o->frames == o->next_st) {
      double s;
      EB (ebur128_loudness_shortterm (o->st, &s));
      if (o->n_st < MAX_ST)
        o->st_hist[o->n_st++] = s;
      o->next_st += RATE / 10;
    }
  }
}

static Out *
out_new (void)
{
  Out *o = g_new0 (Out, 1);
  o->st = ebur128_init (2, RATE, EBUR128_MODE_I | EBUR128_MODE_S |
      EBUR128_MODE_TRUE_PEAK);
  if (!o->st)
    exit (1);
  o->next_st = RATE / 10;
  return o;
}

static double
out_i (Out * o)
{
  double v;
  EB (ebur128_loudness_global (o->st, &v));
  return v;
}

static double
out_tp (Out * o)
{
  double a, b;
  EB (ebur128_true_peak (o->st, 0, &a));
  EB (ebur128_true_peak (o->st, 1, &b));
  return 20 * log10 (MAX (a, b));
}

static void
out_free (Out * o)
{
  ebur128_destroy (&o->st);
  g_free (o);
}

static void
steady_tone (double dbfs)
{
  printf ("steady 1 kHz tone at %.0f LUFS, 60 s\n", dbfs);
  Out *o = out_new ();
  Run *r = run_new ("loudnorm target=-23", RATE, 2, 0, out_cb, o);
  Seg seg = { 60, {dbfs, dbfs} };
  run_sines (r, 1000.0, &seg, 1);
  run_eos (r);
  check_near ("output integrated, libebur128 (LUFS)", out_i (o), -23.0, 0.3);
  check_near ("output short-term at end (LUFS)", o->st_hist[o->n_st - 1], -23.0, 0.3);
  check_range ("output true peak, libebur128 (dBTP)", out_tp (o), -100, -0.8);
  check_near ("element output-integrated (LUFS)", field (r, "output-integrated"),
      out_i (o), 0.1);
  run_free (r);
  out_free (o);
}

static void
programme (double centre, double seconds)
{
  printf ("programme, level moving +-15 dB around %.0f dBFS, %.0f s\n", centre,
      seconds);
  Out *o = out_new ();
  Run *r = run_new ("loudnorm target=-23 true-peak=-1", RATE, 2, 0, out_cb, o);
  Prog p;
  prog_init (&p, RATE, 2, centre, 7);
  float *x = g_new (float, RATE / 10 * 2);
  for (int b = 0; b < seconds * 10; b++) {
    prog_fill (&p, x, RATE / 10);
    run_push (r, x, RATE / 10);
  }
  run_eos (r);
  printf ("    input integrated %.2f LUFS, LRA %.1f LU, gain at end %.2f dB\n",
      field (r, "input-integrated"), field (r, "input-loudness-range"),
      field (r, "gain"));
  check_near ("output integrated, libebur128 (LUFS)", out_i (o), -23.0, 1.0);
  check_range ("output true peak, libebur128 (dBTP)", out_tp (o), -100, -0.8);
  check_range ("element output-true-peak (dBTP)", field (r, "output-true-peak"),
      -100, -1.0);
  g_free (x);
  run_free (r);
  out_free (o);
}

/* clicks of a few samples at 0 dBFS on a noise bed at about -45 LUFS: the
 * gain goes up, the clicks must not pass the ceiling */
static void
clicks (void)
{
  printf ("clicks on a quiet bed, 30 s\n");
  Out *o = out_new ();
  Run *r = run_new ("loudnorm target=-23 true-peak=-1", RATE, 2, 0, out_cb, o);
  float *x = g_new (float, RATE / 10 * 2);
  uint32_t seed = 3;
  guint64 n = 0;
  for (int b = 0; b < 300; b++) {
    for (int i = 0; i < RATE / 10; i++, n++) {
      seed = seed * 1664525u + 1013904223u;
      double v = 0.008 * (((seed >> 8) / 16777216.0) * 2.0 - 1.0);
      guint64 k = n % (RATE / 2);
      if (k < 4)
        v = (k % 2 ? -1.0 : 1.0) * (n % RATE < 4 ? 1.0 : 0.7);
      x[2 * i] = x[2 * i + 1] = (float) v;
    }
    run_push (r, x, RATE / 10);
  }
  run_eos (r);
  printf ("    gain at end %.2f dB\n", field (r, "gain"));
  check_range ("output true peak, libebur128 (dBTP)", out_tp (o), -100, -0.8);
  check_range ("element output-true-peak (dBTP)", field (r, "output-true-peak"),
      -100, -1.0);
  g_free (x);
  run_free (r);
  out_free (o);
}

/* programme, a pause of low noise, programme again */
static void
pause_and_return (void)
{
  printf ("pause of low noise (-60 dBFS) between programme at -20 dBFS\n");
  Out *o = out_new ();
  Run *r = run_new ("loudnorm target=-23", RATE, 2, 0, out_cb, o);
  Prog p;
  prog_init (&p, RATE, 2, -20.0, 11);
  p.centre_db = -20;
  float *x = g_new (float, RATE / 10 * 2);
  uint32_t seed = 5;
  double gain_before = 0;
  for (int b = 0; b < 700; b++) {
    if (b >= 300 && b < 450) {  /* 30 s..45 s: noise at -60 dBFS */
      for (int i = 0; i < RATE / 10 * 2; i++) {
        seed = seed * 1664525u + 1013904223u;
        x[i] = (float) (0.001 * (((seed >> 8) / 16777216.0) * 2.0 - 1.0));
      }
    } else {
      prog_fill (&p, x, RATE / 10);
    }
    run_push (r, x, RATE / 10);
    if (b == 299)
      gain_before = field (r, "gain");
  }
  run_eos (r);
  double in_pause_max = -200, after_max = -200;
  for (unsigned k = 330; k < 450 && k < o->n_st; k++)
    in_pause_max = MAX (in_pause_max, o->st_hist[k]);
  for (unsigned k = 450; k < 500 && k < o->n_st; k++)
    after_max = MAX (after_max, o->st_hist[k]);
  printf ("    gain before the pause %.2f dB\n", gain_before);
  /* noise at -60 dBFS reads about -63 LUFS; gain kept means < -50 */
  check_range ("output short-term in the pause (LUFS)", in_pause_max, -200, -50);
  check_range ("output short-term 5 s after return (LUFS)", after_max, -200, -20);
  g_free (x);
  run_free (r);
  out_free (o);
}

/* latency: the query's answer and the delay of an impulse */
static void
latency (unsigned rate)
{
  printf ("latency at %u Hz\n", rate);
  Run *r = run_new ("loudnorm", rate, 1, 0, NULL, NULL);
  size_t n = rate / 10;
  float *x = g_new0 (float, n);
  x[1000] = 0.25f;
  GstBuffer *b = gst_buffer_new_memdup (x, n * sizeof (float));
  GST_BUFFER_PTS (b) = 0;
  gst_harness_push (r->h, b);
  GstClockTime lat = gst_harness_query_latency (r->h);
  GstBuffer *o = gst_harness_pull (r->h);
  GstMapInfo map;
  gst_buffer_map (o, &map, GST_MAP_READ);
  const float *y = (const float *) map.data;
  size_t arg = 0;
  for (size_t i = 0; i < map.size / sizeof (float); i++)
    if (fabsf (y[i]) > fabsf (y[arg]))
      arg = i;
  double delay_ms = (double) (arg - 1000) * 1000.0 / rate;
  printf ("    query: %.3f ms; impulse delayed by %zu frames = %.3f ms, "
      "amplitude %.4f\n", lat / 1e6, arg - 1000, delay_ms, y[arg]);
  check_range ("latency query answer (ms)", lat / 1e6, 0.1, 10.0);
  check_near ("measured impulse delay - query (ms)", delay_ms - lat / 1e6, 0.0,
      0.5 * 1000.0 / rate);
  check_near ("impulse amplitude unchanged", y[arg], 0.25, 1e-6);
  gst_buffer_unmap (o, &map);
  gst_buffer_unref (o);
  g_free (x);
  run_free (r);
}

int
main (int argc, char **argv)
{
  gst_init (&argc, &argv);
  latency (48000);
  latency (44100);
  latency (96000);
  steady_tone (-10.0);
  steady_tone (-35.0);
  clicks ();
  pause_and_return ();
  programme (-25.0, 240);
  printf ("%s (%d failures)\n", failures ? "FAILED" : "PASSED", failures);
  return failures ? 1 : 0;
}
