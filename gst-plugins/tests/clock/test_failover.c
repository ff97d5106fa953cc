/* The failover policy and mixer alone (failover.c), on synthetic chunks of
 * 4 ms (192 frames, stereo, 48 kHz), and on two real cores (bridge.c).
 * Checked, each rule with its figures:
 *   - loss: main stops, backup playing: on backup (reason loss) after
 *     failover-loss (to the chunk), lost = loss; every output chunk meanwhile
 *     carries audio (the cover);
 *   - return: main back and healthy for failover-return: on main (return);
 *   - a flapping main (2 s on, 2 s off for 20 s): no switch back; steady
 *     again: return after failover-return;
 *   - failover-return 0: a lost main stays off air (no swing back each
 *     chunk), and is on air with its first healthy chunk;
 *   - silence: main digital silence (still delivering): backup after
 *     failover-silence (+ the level window); both silent: stay;
 *   - fallback: both lost: the file (loss), its samples exactly, looped;
 *     a sender back: on it at once (return); fallback-on-silence: both
 *     silent past failover-silence: the file (silence), not without it;
 *   - manual: select backup/fallback/main switches at once (manual) and
 *     holds against the policy; auto hands back (return);
 *   - the crossfade: linear over 10 ms, weights sum 1; the worst sample
 *     step between two full-scale sines (1 kHz and 440 Hz, every phase
 *     offset in 16 steps) is within the bound max natural step + 2/480;
 *   - without backup and fallback the output is main's bytes;
 *   - real cores (DC 0.5 on both): main's writes stop and come back: the
 *     output stays at 0.5 within the resampler's error through the core's
 *     own fade-out, the cover, the switch, the core's fade-in and the
 *     return (the envelope model matches bridge.c's fades: no hole, no
 *     dip); full-scale 1 kHz on main, 440 Hz on the backup: the worst step
 *     through the stall is within max natural step + 2/241 (the core's
 *     5 ms fade is the cover's crossfade), no 4 ms chunk without audio. */
#include "bridge.h"
#include "failover.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define RATE 48000
#define CH 2
#define CHUNK 192
#define CHUNK_S ((double) CHUNK / RATE)

static int failures;

#define CHECK(cond, ...) do { if (!(cond)) { failures++; \
  printf ("FAIL %s:%d: ", __FILE__, __LINE__); printf (__VA_ARGS__); \
  printf ("\n"); } } while (0)

/* an input: a tone of amp at freq (continuous phase), or off (no audio),
 * or on but digital silence */
typedef struct
{
  double freq, amp, phase;
  int on;                       /* 0: no audio; 1: audio */
} Src;

static size_t
gen (Src * s, float *x)
{
  for (size_t j = 0; j < CHUNK; j++) {
    float v = s->on ? (float) (s->amp * sin (s->phase)) : 0.0f;
    if (s->on)
      s->phase += 2 * M_PI * s->freq / RATE;
    for (int c = 0; c < CH; c++)
      x[j * CH + c] = v;
  }
  return s->on ? CHUNK : 0;
}

typedef struct
{
  Failover *f;
  Src main, backup;
  float xm[CHUNK * CH], xb[CHUNK * CH], out[CHUNK * CH];
  double t;
  int nsw;
  FailoverSwitch last;
  double last_t;
  double min_rms;               /* the lowest chunk RMS of the output */
} Rig;

static void
rig_init (Rig * r, int backup, const float *fb, size_t fb_frames)
{
  memset (r, 0, sizeof (*r));
  r->f = failover_new (CH, RATE, CHUNK, 240);
  failover_set_backup (r->f, backup);
  failover_set_fallback (r->f, fb, fb_frames);
  r->main = (Src) {
  1000.0, 0.2, 0.0, 1};
  r->backup = (Src) {
  440.0, 0.1, 0.0, 1};
  r->min_rms = 1e9;
}

/* runs until t (s); records switches */
static void
run (Rig * r, double until)
{
  while (r->t < until - 1e-9) {
    size_t am = gen (&r->main, r->xm), ab = gen (&r->backup, r->xb);
    FailoverSwitch sw;
    double ss = 0.0;
    if (failover_chunk (r->f, r->xm, am, r->xb, ab, r->out, &sw)) {
      r->nsw++;
      r->last = sw;
      r->last_t = r->t;
    }
    for (size_t i = 0; i < CHUNK * CH; i++)
      ss += (double) r->out[i] * r->out[i];
    ss = sqrt (ss / (CHUNK * CH));
    if (ss < r->min_rms)
      r->min_rms = ss;
    r->t += CHUNK_S;
  }
}

static FailoverInput
on_air (Rig * r)
{
  FailoverStatus st;
  failover_status (r->f, &st);
  return st.on_air;
}

static void
test_loss_return (void)
{
  Rig r;
  FailoverStatus st;

  rig_init (&r, 1, NULL, 0);
  run (&r, 5.0);
  CHECK (r.nsw == 0 && on_air (&r) == FAILOVER_MAIN, "start: %d switches",
      r.nsw);
  failover_status (r.f, &st);
  CHECK (st.active == FAILOVER_MAIN && st.input[0].connected
      && st.input[1].connected, "status at 5 s");
  /* a 0.2 s sine at 1 kHz: -16.99 dBFS (mean square of both channels) */
  CHECK (fabs (st.input[0].level - 20 * log10 (0.2 / sqrt (2))) < 0.05,
      "main level %.2f", st.input[0].level);
  CHECK (st.output_silent_s == 0.0, "output silent %.3f",
      st.output_silent_s);
  r.min_rms = 1e9;
  r.main.on = 0;
  run (&r, 8.0);
  printf ("loss: switch %.3f s after main stopped (loss 0.3), lost %.3f, "
      "lowest output chunk RMS %.4f\n", r.last_t - 5.0, r.last.lost_s,
      r.min_rms);
  CHECK (r.nsw == 1 && r.last.from == FAILOVER_MAIN
      && r.last.to == FAILOVER_BACKUP
      && r.last.reason == FAILOVER_REASON_LOSS, "loss switch");
  CHECK (fabs (r.last_t - 5.0 - 0.3) < CHUNK_S + 1e-9, "loss at %.3f",
      r.last_t);
  CHECK (fabs (r.last.lost_s - 0.3) < CHUNK_S + 1e-9, "lost %.3f",
      r.last.lost_s);
  CHECK (r.last.main_level == FAILOVER_NO_LEVEL || r.last.main_level < -20,
      "main level at the switch %.1f", r.last.main_level);
  /* the cover: no silent chunk; the backup's RMS 0.0707 */
  CHECK (r.min_rms > 0.06, "a hole: chunk RMS %.4f", r.min_rms);
  failover_status (r.f, &st);
  CHECK (!st.input[0].connected && st.input[0].level == FAILOVER_NO_LEVEL,
      "main not connected");
  CHECK (fabs (st.input[0].silent_s - 3.0) < 0.01, "main silent %.3f",
      st.input[0].silent_s);
  /* main back: return after 10 s */
  r.main.on = 1;
  run (&r, 20.0);
  CHECK (r.nsw == 2 && r.last.to == FAILOVER_MAIN
      && r.last.reason == FAILOVER_REASON_RETURN, "return");
  printf ("return: %.3f s after main came back (return 10)\n",
      r.last_t - 8.0);
  CHECK (fabs (r.last_t - 8.0 - 10.0) < 2 * CHUNK_S, "return at %.3f",
      r.last_t);
  failover_free (r.f);
}

static void
test_flapping_main (void)
{
  Rig r;

  rig_init (&r, 1, NULL, 0);
  run (&r, 2.0);
  r.main.on = 0;
  run (&r, 4.0);
  CHECK (r.nsw == 1 && on_air (&r) == FAILOVER_BACKUP, "on backup");
  /* 2 s on, 2 s off, for 20 s */
  for (int i = 0; i < 5; i++) {
    r.main.on = 1;
    run (&r, r.t + 2.0);
    r.main.on = 0;
    run (&r, r.t + 2.0);
  }
  CHECK (r.nsw == 1 && on_air (&r) == FAILOVER_BACKUP,
      "flapping main switched back: %d switches", r.nsw);
  printf ("flapping main (2 s on / 2 s off, 20 s): %d switch back\n",
      r.nsw - 1);
  r.main.on = 1;
  {
    double steady = r.t;
    run (&r, r.t + 12.0);
    CHECK (r.nsw == 2 && r.last.reason == FAILOVER_REASON_RETURN
        && fabs (r.last_t - steady - 10.0) < 2 * CHUNK_S,
        "steady main: return at +%.3f", r.last_t - steady);
  }
  failover_free (r.f);
}

/* failover-return 0: main back on air with its first healthy chunk, and a
 * lost main stays off air (it once swung back each chunk: "healthy for 0 s"
 * held without audio, the loss rule switched forward again, and the output
 * carried holes between the two) */
static void
test_return_zero (void)
{
  Rig r;
  FailoverSettings s;

  rig_init (&r, 1, NULL, 0);
  failover_defaults (&s);
  s.return_s = 0.0;
  failover_set_settings (r.f, &s);
  run (&r, 2.0);
  r.main.on = 0;
  r.min_rms = 1e9;
  run (&r, 6.0);
  CHECK (r.nsw == 1 && on_air (&r) == FAILOVER_BACKUP,
      "return 0, main lost for 4 s: %d switches (1: to the backup)", r.nsw);
  CHECK (r.min_rms > 0.06, "return 0, main lost: a hole, chunk RMS %.4f",
      r.min_rms);
  r.main.on = 1;
  run (&r, 7.0);
  CHECK (r.nsw == 2 && r.last.to == FAILOVER_MAIN
      && r.last.reason == FAILOVER_REASON_RETURN
      && r.last_t - 6.0 < 2 * CHUNK_S + 1e-9,
      "return 0: main back at +%.3f s (%d switches)", r.last_t - 6.0, r.nsw);
  printf ("return 0: main lost 4 s, %d switch; back on main %.3f s after "
      "its audio\n", 1, r.last_t - 6.0);
  failover_free (r.f);
}

static void
test_silence (void)
{
  Rig r;
  FailoverSettings s;

  rig_init (&r, 1, NULL, 0);
  run (&r, 2.0);
  r.main.amp = 0.0;             /* delivering, digital silence */
  run (&r, 15.0);
  CHECK (r.nsw == 1 && r.last.reason == FAILOVER_REASON_SILENCE
      && r.last.to == FAILOVER_BACKUP, "silence switch");
  printf ("silence: switch %.3f s after main went silent (silence 10, "
      "window 0.4), main-silent %.3f\n", r.last_t - 2.0,
      r.last.main_silent_s);
  CHECK (r.last_t - 2.0 >= 10.0 && r.last_t - 2.0 <= 10.4 + CHUNK_S,
      "silence at %.3f", r.last_t);
  /* both silent on backup: stay */
  r.backup.amp = 0.0;
  run (&r, 40.0);
  CHECK (r.nsw == 1, "both silent: %d switches", r.nsw);
  /* main audible again, backup silent: to main (silence) */
  r.main.amp = 0.2;
  run (&r, 41.0);
  CHECK (r.nsw == 2 && r.last.to == FAILOVER_MAIN
      && r.last.reason == FAILOVER_REASON_SILENCE, "silent backup -> main");
  failover_free (r.f);

  /* a lower silence level: -60 dBFS; main at -55 is not silent */
  rig_init (&r, 1, NULL, 0);
  failover_defaults (&s);
  s.silence_level_db = -60.0;
  s.silence_s = 1.0;
  failover_set_settings (r.f, &s);
  r.main.amp = pow (10, -55.0 / 20) * sqrt (2);
  run (&r, 5.0);
  CHECK (r.nsw == 0, "-55 dBFS is not silence below -60");
  r.main.amp = pow (10, -65.0 / 20) * sqrt (2);
  run (&r, 7.0);
  CHECK (r.nsw == 1 && r.last.reason == FAILOVER_REASON_SILENCE,
      "-65 dBFS silent");
  failover_free (r.f);
}

static void
test_fallback (void)
{
  static float file[4800 * CH];
  Rig r;
  FailoverSettings s;
  FailoverStatus st;
  int exact = 1;

  for (size_t i = 0; i < 4800; i++)
    file[i * CH] = file[i * CH + 1] = (float) (0.3 * sin (2 * M_PI * 500.0 *
            i / RATE));
  rig_init (&r, 1, file, 4800);
  run (&r, 2.0);
  r.main.on = 0;
  r.backup.on = 0;
  run (&r, 2.0 + 0.3 + CHUNK_S * 0.5);
  CHECK (r.nsw == 1 && r.last.to == FAILOVER_FALLBACK
      && r.last.reason == FAILOVER_REASON_LOSS, "fallback on loss");
  /* covered from the file's start at the first chunk with no audio, for
   * 0.3 s; then the file plays on, looped: compare a later second */
  {
    size_t pos = (size_t) llround ((r.t - 2.0) * RATE) % 4800;
    for (int k = 0; k < 250; k++) {
      run (&r, r.t + CHUNK_S);
      for (size_t j = 0; j < CHUNK; j++)
        if (r.out[j * CH] != file[((pos + j) % 4800) * CH])
          exact = 0;
      pos = (pos + CHUNK) % 4800;
    }
  }
  CHECK (exact, "the file's samples, looped");
  failover_status (r.f, &st);
  CHECK (st.active == FAILOVER_FALLBACK && st.output_silent_s == 0.0,
      "fallback on air");
  r.backup.on = 1;
  run (&r, r.t + 0.1);
  CHECK (r.nsw == 2 && r.last.to == FAILOVER_BACKUP
      && r.last.reason == FAILOVER_REASON_RETURN
      && r.t - r.last_t > 0.1 - 3 * CHUNK_S, "backup back: at once");
  failover_free (r.f);

  /* fallback-on-silence: both silent past failover-silence */
  for (int flag = 0; flag < 2; flag++) {
    rig_init (&r, 1, file, 4800);
    failover_defaults (&s);
    s.fallback_on_silence = flag;
    failover_set_settings (r.f, &s);
    run (&r, 1.0);
    r.main.amp = 0.0;
    r.backup.amp = 0.0;
    run (&r, 13.0);
    if (flag)
      CHECK (r.nsw == 1 && r.last.to == FAILOVER_FALLBACK
          && r.last.reason == FAILOVER_REASON_SILENCE,
          "fallback on silence");
    else
      CHECK (r.nsw == 0, "no fallback on silence unless asked");
    failover_status (r.f, &st);
    if (!flag)
      CHECK (st.output_silent_s > 11.0, "output silent %.2f",
          st.output_silent_s);
    failover_free (r.f);
  }

  /* no backup pad: main lost -> the file */
  rig_init (&r, 0, file, 4800);
  run (&r, 1.0);
  r.main.on = 0;
  run (&r, 2.0);
  CHECK (r.nsw == 1 && r.last.to == FAILOVER_FALLBACK, "main -> file");
  r.main.on = 1;
  run (&r, 2.1);
  CHECK (r.nsw == 2 && r.last.to == FAILOVER_MAIN, "file -> main");
  failover_free (r.f);
}

static void
test_manual (void)
{
  static float file[4800 * CH];
  Rig r;
  FailoverSettings s;
  FailoverStatus st;

  rig_init (&r, 1, file, 4800);
  failover_defaults (&s);
  run (&r, 1.0);
  s.select = FAILOVER_SELECT_BACKUP;
  failover_set_settings (r.f, &s);
  run (&r, r.t + CHUNK_S);
  CHECK (r.nsw == 1 && r.last.to == FAILOVER_BACKUP
      && r.last.reason == FAILOVER_REASON_MANUAL, "manual backup");
  run (&r, 20.0);               /* main healthy all along: no return */
  CHECK (r.nsw == 1, "forced backup held");
  /* forced: no cover; backup lost: no switch, nothing on air */
  r.backup.on = 0;
  run (&r, 21.0);
  failover_status (r.f, &st);
  CHECK (r.nsw == 1 && st.active == FAILOVER_NONE
      && st.selection == FAILOVER_SELECT_BACKUP, "forced, lost: none");
  r.backup.on = 1;
  s.select = FAILOVER_SELECT_FALLBACK;
  failover_set_settings (r.f, &s);
  run (&r, r.t + CHUNK_S);
  CHECK (r.nsw == 2 && r.last.to == FAILOVER_FALLBACK
      && r.last.reason == FAILOVER_REASON_MANUAL, "manual fallback");
  s.select = FAILOVER_SELECT_AUTO;
  failover_set_settings (r.f, &s);
  run (&r, r.t + CHUNK_S);
  CHECK (r.nsw == 3 && r.last.to == FAILOVER_MAIN
      && r.last.reason == FAILOVER_REASON_RETURN, "auto: back to main");
  failover_free (r.f);

  /* selecting an input that does not exist: ignored */
  rig_init (&r, 0, NULL, 0);
  s.select = FAILOVER_SELECT_BACKUP;
  failover_set_settings (r.f, &s);
  run (&r, 1.0);
  CHECK (r.nsw == 0 && on_air (&r) == FAILOVER_MAIN, "absent backup");
  failover_free (r.f);
}

/* two full-scale sines, switched by hand at chunk 10: the worst step */
static double
crossfade_step (double phase_b, double *natural, int *len_ok)
{
  Failover *f = failover_new (CH, RATE, CHUNK, 240);
  Src a = { 1000.0, 1.0, 0.0, 1 }, b = { 440.0, 1.0, phase_b, 1 };
  float xa[CHUNK * CH], xb[CHUNK * CH], out[CHUNK * CH];
  float prev = 0.0f;
  double worst = 0.0, nat = 0.0;
  FailoverSettings s;
  FailoverSwitch sw;

  failover_set_backup (f, 1);
  failover_defaults (&s);
  *len_ok = 1;
  for (int k = 0; k < 20; k++) {
    size_t na = gen (&a, xa), nb = gen (&b, xb);
    if (k == 10) {
      s.select = FAILOVER_SELECT_BACKUP;
      failover_set_settings (f, &s);
    }
    failover_chunk (f, xa, na, xb, nb, out, &sw);
    for (size_t j = 0; j < CHUNK; j++) {
      size_t n = k * CHUNK + j;
      if (n > 0) {
        double d = fabs ((double) out[j * CH] - prev);
        if (k >= 10 && d > worst)
          worst = d;
        nat = fmax (nat, fabs ((double) xa[j * CH] - (j ? xa[(j - 1) * CH] :
                    xa[j * CH])));
      }
      prev = out[j * CH];
      /* before the switch: a (after the first 5 ms, where the mixer
       * expects a core's fade-in that these synthetic inputs lack); 480
       * frames after it: b exactly */
      if (k >= 2 && k < 10 && out[j * CH] != xa[j * CH])
        *len_ok = 0;
      if (k * CHUNK + j >= 10 * CHUNK + 480 && out[j * CH] != xb[j * CH])
        *len_ok = 0;
    }
  }
  failover_free (f);
  *natural = nat;
  return worst;
}

static void
test_crossfade (void)
{
  double worst = 0.0, natural = 0.0, bound;
  int ok = 1;

  for (int p = 0; p < 16; p++) {
    double nat;
    int len_ok;
    double w = crossfade_step (2 * M_PI * p / 16, &nat, &len_ok);
    worst = fmax (worst, w);
    natural = fmax (natural, nat);
    ok &= len_ok;
  }
  /* |y[n+1] - y[n]| <= max(|a'|, |b'|) + |dw| |a - b| <= 2 sin(pi f / fs)
   * of the 1 kHz sine + 2 / 480 */
  bound = 2 * sin (M_PI * 1000.0 / RATE) + 2.0 / 480;
  printf ("crossfade: 1 kHz and 440 Hz full scale, 16 phases: worst step "
      "%.4f (the 1 kHz sine's own %.4f; bound %.4f)\n", worst, natural,
      bound);
  CHECK (worst <= bound + 1e-6, "step %.5f above %.5f", worst, bound);
  CHECK (ok, "not a 480-frame crossfade from a to b");
}

static void
test_main_only_unchanged (void)
{
  Failover *f = failover_new (CH, RATE, CHUNK, 240);
  Src a = { 997.0, 0.7, 0.0, 1 };
  float x[CHUNK * CH], keep[CHUNK * CH], out[CHUNK * CH];
  FailoverSwitch sw;
  FailoverSettings s;
  int same = 1, switched = 0;

  failover_defaults (&s);
  s.select = FAILOVER_SELECT_BACKUP;    /* no backup: nothing to select */
  failover_set_settings (f, &s);
  for (int k = 0; k < 2000; k++) {
    size_t n = gen (&a, x);
    a.on = (k / 300) % 2 == 0;
    memcpy (keep, x, sizeof (x));
    switched += failover_chunk (f, x, n, NULL, 0, out, &sw);
    same &= memcmp (out, keep, sizeof (x)) == 0;
    switched += failover_chunk (f, x, n, NULL, 0, x, &sw);     /* in place */
    same &= memcmp (x, keep, sizeof (x)) == 0;
  }
  CHECK (same && switched == 0, "main only: output changed");
  failover_free (f);
}

/* real cores, main's writes stop at 3 s for 1 s, the backup's run on; 4 ms
 * writes and reads in step.  tone 0: DC 0.5 on both (the output's gain);
 * tone 1: full-scale 1 kHz on main, 440 Hz on the backup (the worst step
 * through the core's own fade-out and the cover, and back) */
static void
test_real_cores (int tone)
{
  ClockBridge *m = clock_bridge_new (CH, RATE, 0.02, 0);
  ClockBridge *b = clock_bridge_new (CH, RATE, 0.02, 0);
  Failover *f = failover_new (CH, RATE, CHUNK, (size_t) llround
      (CLOCK_BRIDGE_FADE_S * RATE));
  Src sm = { 1000.0, 1.0, 0.0, 1 }, sb = { 440.0, 1.0, 1.0, 1 };
  float im[CHUNK * CH], ib[CHUNK * CH], xm[CHUNK * CH], xb[CHUNK * CH],
      out[CHUNK * CH];
  FailoverSettings s;
  FailoverSwitch sw;
  double lo = 1.0, hi = 0.0, maxstep = 0.0, min_rms = 1.0, bound;
  float prev = 0.0f;
  int switches = 0, started = 0;

  for (size_t i = 0; i < CHUNK * CH; i++)
    im[i] = ib[i] = 0.5f;
  failover_set_backup (f, 1);
  failover_defaults (&s);
  s.return_s = 1.0;
  failover_set_settings (f, &s);
  for (int k = 0; k < 2000; k++) {
    double t = k * CHUNK_S, ss = 0.0;
    size_t am, ab;
    if (tone) {
      gen (&sm, im);
      gen (&sb, ib);
    }
    if (t < 3.0 || t >= 4.0)
      clock_bridge_write (m, im, CHUNK, t);
    clock_bridge_write (b, ib, CHUNK, t);
    am = clock_bridge_read (m, xm, CHUNK, t + 0.001);
    ab = clock_bridge_read (b, xb, CHUNK, t + 0.001);
    switches += failover_chunk (f, xm, am, xb, ab, out, &sw);
    for (size_t j = 0; j < CHUNK; j++) {
      double v = out[j * CH];
      if (started && t > 1.0) {
        lo = fmin (lo, v);
        hi = fmax (hi, v);
        maxstep = fmax (maxstep, fabs (v - prev));
      }
      if (fabs (v) > 0.49)
        started = 1;
      prev = out[j * CH];
      ss += v * v;
    }
    if (t > 1.0)
      min_rms = fmin (min_rms, sqrt (ss / CHUNK));
  }
  CHECK (switches == 2, "loss and return: %d switches", switches);
  if (!tone) {
    printf ("real cores, DC 0.5, main stalls 1 s: output %.5f..%.5f, "
        "largest step %.6f, %d switches\n", lo, hi, maxstep, switches);
    CHECK (lo > 0.495 && hi < 0.505, "a hole or a bump: %.4f..%.4f", lo, hi);
  } else {
    /* the cover's crossfade is the core's own 5 ms fade: 2 / 241 */
    bound = 2 * sin (M_PI * 1000.0 / RATE) + 2.0 / 241;
    printf ("real cores, full-scale 1 kHz main, 440 Hz backup, main stalls "
        "1 s: worst step %.4f (bound %.4f), lowest 4 ms RMS %.3f\n",
        maxstep, bound, min_rms);
    CHECK (maxstep <= bound, "step %.4f", maxstep);
    CHECK (min_rms > 0.5, "a hole: RMS %.3f", min_rms);
  }
  clock_bridge_free (m);
  clock_bridge_free (b);
  failover_free (f);
}

int
main (void)
{
  test_loss_return ();
  test_flapping_main ();
  test_return_zero ();
  test_silence ();
  test_fallback ();
  test_manual ();
  test_crossfade ();
  test_main_only_unchanged ();
  test_real_cores (0);
  test_real_cores (1);
  if (failures)
    printf ("%d failure(s)\n", failures);
  else
    printf ("all passed\n");
  return failures ? 1 : 0;
}
