/* reset-measurement of the loudnorm element: 20 s of programme at about
 * -10 LUFS, then 20 s at about -30 LUFS, through the real element in a
 * GstHarness, once without and once with a reset requested at the level
 * change.  With it, the input-* fields at the end describe the quiet part
 * alone (libebur128 fed the quiet part alone is the reference), the output
 * ones the output made from it (libebur128 fed that output), `measured`
 * restarts; the output samples are bit for bit those of the run without. */
#include "harness.h"
#include "programme.h"

#include <ebur128.h>

#define EB(call) do { int rc_ = (call); if (rc_ != EBUR128_SUCCESS) { \
      fprintf (stderr, "%s:%d: %s failed: %d\n", __FILE__, __LINE__, #call, rc_); \
      exit (1); } } while (0)

#define RATE 48000
#define PART (20 * RATE)
#define CHUNK (RATE / 20)          /* 50 ms buffers */
#define STEP (RATE / 10)
#define DELAY 245               /* the limiter's delay at 48 kHz */

typedef struct
{
  float *x;                     /* every output frame */
  size_t n;
} Out;

static void
out_cb (const float *x, size_t frames, void *user)
{
  Out *o = user;
  if (o->n + frames <= 2 * PART + DELAY)
    memcpy (o->x + o->n * 2, x, frames * 2 * sizeof (float));
  o->n += frames;
}

typedef struct
{
  double i, lra, tp_db;
} Ref;

static Ref
reference (const float *x, size_t frames)
{
  ebur128_state *st = ebur128_init (2, RATE, EBUR128_MODE_I |
      EBUR128_MODE_LRA | EBUR128_MODE_TRUE_PEAK);
  Ref r;
  double a, b;
  if (!st)
    exit (1);
  EB (ebur128_add_frames_float (st, x, frames));
  EB (ebur128_loudness_global (st, &r.i));
  EB (ebur128_loudness_range (st, &r.lra));
  EB (ebur128_true_peak (st, 0, &a));
  EB (ebur128_true_peak (st, 1, &b));
  r.tp_db = 20 * log10 (MAX (a, b));
  ebur128_destroy (&st);
  return r;
}

/* the whole programme; a reset requested before the buffer starting at
 * frame reset_at (0: none) */
static Run *
run (const float *in, size_t reset_at, Out * o)
{
  Run *r = run_new ("loudnorm", RATE, 2, 0, out_cb, o);
  GstElement *ln = gst_harness_find_element (r->h, "loudnorm");
  gboolean pending = -1;
  /* the reset is carried out at the first 100 ms step at or after it */
  size_t done_at = (reset_at + STEP - 1) / STEP * STEP;
  for (size_t k = 0; k < 2 * PART; k += CHUNK) {
    if (reset_at && k == reset_at) {
      g_object_set (ln, "reset-measurement", TRUE, NULL);
      g_object_get (ln, "reset-measurement", &pending, NULL);
      check_range ("reset-measurement reads true once written", pending, 1, 1);
      printf ("  measured before the reset: %.3f s\n", field (r, "measured"));
    }
    if (reset_at && k == done_at) {
      g_object_get (ln, "reset-measurement", &pending, NULL);
      check_range ("reset-measurement still true up to the step", pending, 1,
          1);
    }
    run_push (r, in + k * 2, CHUNK);
    if (reset_at && k == done_at) {
      g_object_get (ln, "reset-measurement", &pending, NULL);
      check_range ("reset-measurement false after the step", pending, 0, 0);
    }
  }
  run_eos (r);
  gst_object_unref (ln);
  return r;
}

int
main (int argc, char **argv)
{
  float *in = g_new (float, 2 * PART * 2);
  Prog loud, quiet;
  Out plain = { g_new0 (float, (2 * PART + DELAY) * 2), 0 };
  Out reset = { g_new0 (float, (2 * PART + DELAY) * 2), 0 };
  Out late = { g_new0 (float, (2 * PART + DELAY) * 2), 0 };

  gst_init (&argc, &argv);
  prog_init (&loud, RATE, 2, -8.0, 11);
  prog_init (&quiet, RATE, 2, -28.0, 29);
  prog_fill (&loud, in, PART);
  prog_fill (&quiet, in + PART * 2, PART);
  Ref rl = reference (in, PART), rq = reference (in + PART * 2, PART);
  printf ("input, libebur128: loud part I %.2f LUFS, LRA %.2f LU, TP %.2f dBTP;"
      " quiet part I %.2f LUFS, LRA %.2f LU, TP %.2f dBTP\n", rl.i, rl.lra,
      rl.tp_db, rq.i, rq.lra, rq.tp_db);

  printf ("without a reset\n");
  Run *a = run (in, 0, &plain);
  double ia = field (a, "input-integrated");
  check_range ("input-integrated far above the quiet part (LUFS)", ia,
      rq.i + 5.0, 0.0);
  check_near ("measured at the end (s)", field (a, "measured"), 40.0, 1e-9);
  double lra_a = field (a, "input-loudness-range");
  double tp_a = field (a, "input-true-peak");
  printf ("  input LRA %.2f LU, true peak %.2f dBTP\n", lra_a, tp_a);

  printf ("reset requested at the level change (20 s)\n");
  Run *b = run (in, PART, &reset);
  check_near ("input-integrated = quiet part (LUFS)",
      field (b, "input-integrated"), rq.i, 0.5);
  check_near ("input-loudness-range = quiet part (LU)",
      field (b, "input-loudness-range"), rq.lra, 1.0);
  check_range ("input-true-peak = quiet part (dBTP)",
      field (b, "input-true-peak"), rq.tp_db - 0.4, rq.tp_db + 0.2);
  check_range ("input-true-peak under the run without (dB)",
      field (b, "input-true-peak"), -200, tp_a - 10.0);
  check_near ("measured at the end (s)", field (b, "measured"), 20.0, 1e-9);

  /* the output measurement restarts when the audio of the reset leaves the
   * delay line; reference: libebur128 on the output from that frame */
  Ref ro = reference (reset.x + (PART + DELAY) * 2, reset.n - PART - DELAY);
  Ref ro_all = reference (reset.x, reset.n);
  printf ("  output after the reset, libebur128: I %.2f LUFS, TP %.2f dBTP"
      " (whole output: I %.2f)\n", ro.i, ro.tp_db, ro_all.i);
  check_near ("output-integrated = output after the reset (LUFS)",
      field (b, "output-integrated"), ro.i, 0.5);
  check_range ("output-true-peak = output after the reset (dBTP)",
      field (b, "output-true-peak"), ro.tp_db - 0.4, ro.tp_db + 0.2);

  int same = plain.n == reset.n
      && memcmp (plain.x, reset.x, MIN (plain.n, 2 * PART + DELAY) * 2 *
      sizeof (float)) == 0;
  printf ("  output samples bit-identical to the run without (%zu frames):"
      " %s\n", reset.n, same ? "ok" : "FAIL");
  failures += !same;
  check_near ("gain at the end equal (dB)", field (b, "gain"),
      field (a, "gain"), 0.0);

  printf ("reset requested 50 ms after the level change (mid-step)\n");
  Run *c = run (in, PART + CHUNK, &late);
  check_near ("measured at the end: from the next step, 20.1 s (s)",
      field (c, "measured"), 19.9, 1e-9);
  check_near ("input-integrated = quiet part (LUFS)",
      field (c, "input-integrated"), rq.i, 0.5);
  same = plain.n == late.n
      && memcmp (plain.x, late.x, MIN (plain.n, 2 * PART + DELAY) * 2 *
      sizeof (float)) == 0;
  printf ("  output samples bit-identical to the run without: %s\n",
      same ? "ok" : "FAIL");
  failures += !same;
  run_free (c);
  g_free (late.x);

  run_free (a);
  run_free (b);
  g_free (plain.x);
  g_free (reset.x);
  g_free (in);
  printf ("%s (%d failures)\n", failures ? "FAILED" : "PASSED", failures);
  return failures ? 1 : 0;
}
