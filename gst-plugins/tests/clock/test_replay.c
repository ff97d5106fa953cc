/* The clock bridge (bridge.c and its estimators, no GStreamer) on input
 * arrivals recorded under load.
 *
 *   test-clock-replay [--jitter S] [--ppm P] [--drift-from S] [--drift-tol PPM]
 *                     [--pitch-tol PPM] [--drift-known-from S] [--drift-only]
 *                     [--trace] [--warmup S] [--stall AT:LEN]...
 *                     [--settle-by S --settle-to MS] [--ceiling S] FILE...
 *
 *   --jitter S      the bridge's target (default 0.05 s: the engine's
 *                   default engine.jitter_ms)
 *   --ppm P         the sender runs at (1 + P 1e-6) x the recording's clock:
 *                   every arrival time is divided by that (the truth is P)
 *   --drift-from S  the drift is checked from S s on (default 60)
 *   --drift-tol T   ... within T ppm of the truth (default 20) where it is
 *                   known: the bridge reports NAN while it cannot know it
 *                   (a coarse line before the long view, drift.h)
 *   --drift-known-from S  the drift is known (not NAN) from S s on
 *                   (default: not checked)
 *   --pitch-tol T   the ratio's mean distance from 1 + the truth, from
 *                   --drift-from on, at most T ppm (default 578: a cent)
 *   --drift-only    only the drift is checked (the fill and pitch figures
 *                   are printed)
 *   --warmup S      the checks of the fill start S s after the first write
 *                   (default 10)
 *   --stall AT:LEN  start-up chaos: the writes due in [AT, AT + LEN) s
 *                   arrive together at AT + LEN (a busy host's input held
 *                   up, then its backlog at once); up to MAX_STALLS
 *   --settle-by S --settle-to MS  from S s on the setpoint is at most MS
 *                   ms: a depth learnt from the chaos is not kept once the
 *                   input is steady
 *   --ceiling S     the setpoint's ceiling (clock_bridge_set_ceiling, the
 *                   element's jitter-max): the setpoint never above it
 *                   (checked), its hits and the underruns at it printed
 *                   and at least one hit asked for
 *   --trace         every TRACE_S of the output clock: the reported drift
 *                   against the arrivals' own lower envelope (the earliest
 *                   offset t - input seconds of the last TRACE_S, ms, from
 *                   the first window's; and the slope from the first
 *                   window's earliest point to this one's, ppm: what an
 *                   envelope over the whole span reads)
 *
 * Each FILE (tests/clock/arrivals/) is what one clockbridge of a real
 * pipeline received: one write a line, `<us after the previous write>
 * <frames>`, taken from GST_DEBUG=clockbridge:6 of gst-launch-1.0 children
 * on a busy 2-core host (the header says how).  The replay writes DC (so
 * that any output sample of 0 is inserted silence) at those times and
 * reads a 4 ms chunk every 4 ms of the output clock, as the element's
 * output thread does.  Checked per file, after warmup_s from the first
 * write (the senders never paused in these recordings, so an output frame
 * of 0 is inserted silence), the clock's bars:
 *   - no underrun and no inserted silence (the reserve, --jitter, must
 *     hold the host's worst lateness: a packet later than the reserve
 *     cannot be foreseen from the ones before it);
 *   - no overrun (a late packet's backlog is not a burst to trim);
 *   - the reported drift within --drift-tol of the truth (the senders ran
 *     on the receiver's clock: 0 ppm, or --ppm) from --drift-from on, and
 *     known from --drift-known-from on;
 *   - the pitch: the resampling ratio less the setpoint's own fall rate
 *     (relax_rate: at most CLOCK_BRIDGE_SWING_FALL, 500 ppm, while a
 *     depth learnt from late input relaxes), from --drift-from on, on
 *     average within --pitch-tol of 1 + the truth (the loop does not play
 *     the host's late and bunched packets as a wobble of the pitch).
 * Prints the figures per file, and the setpoint the bridge settled at. */
#include "arrivals.h"
#include "bridge.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RATE 48000
#define CHUNK 192
#define MAX_STALLS 8
#define LEVEL 0.25f
#define TRACE_S 10.0

static int failures;

#define CHECK(cond, ...) do { if (!(cond)) { failures++; \
  printf ("FAIL: "); printf (__VA_ARGS__); printf ("\n"); } } while (0)

static double target_s = 0.05;
static double sender_ppm = 0.0, drift_from_s = 60.0, drift_tol_ppm = 20.0;
static double pitch_tol_ppm = 578.0, known_from_s = -1.0;
static int drift_only, trace;
static double warmup_s = 10.0, settle_by_s = -1.0, settle_to_s = 0.0;
static double stall_at[MAX_STALLS], stall_len[MAX_STALLS];
static unsigned n_stalls;
static double ceiling_s;

/* --stall: a write due in a stall arrives at its end */
static double
stalled (double t)
{
  for (unsigned k = 0; k < n_stalls; k++)
    if (t >= stall_at[k] && t < stall_at[k] + stall_len[k])
      return stall_at[k] + stall_len[k];
  return t;
}

static void
replay (const char *path)
{
  size_t n = 0, i = 0;
  Write *w = arrivals_load (path, 1.0 + sender_ppm * 1e-6, stalled, &n);
  ClockBridge *b;
  float *in, out[CHUNK * 2];
  double t_out = -0.5, end, max_drift = 0.0, max_latency = 0.0;
  double silent_after = 0.0, settle_max = 0.0;
  /* the last reading (after warmup_s) that was NAN: the drift not known */
  double last_unknown = -1.0;
  char known[64];
  /* the pitch: |ratio - (1 + truth)| from --drift-from on, its sum and
   * count, mean (inf when the recording ends before) and largest */
  double pitch_sum = 0.0, pitch_mean, pitch_max = 0.0;
  unsigned long pitch_n = 0;
  uint64_t underruns_at_warmup = 0, overruns_at_warmup = 0;
  int warm = 0, audio_started = 0;
  unsigned largest = 0;
  ClockBridgeStats st = { 0 };
  int verbose = getenv ("REPLAY_VERBOSE") != NULL;
  /* --trace: input seconds written, the earliest offset of the window and
   * of the first window (t, o) */
  double y_in = 0.0, win_t = 0.0, win_o = INFINITY, first_t = 0.0;
  double first_o = INFINITY, next_trace = TRACE_S;
  const char *name = strrchr (path, '/') ? strrchr (path, '/') + 1 : path;

  CHECK (w != NULL && n > 100, "%s: no recording", path);
  if (w == NULL || n <= 100) {
    free (w);
    return;
  }
  for (size_t k = 0; k < n; k++)
    if (w[k].frames > largest)
      largest = w[k].frames;
  in = malloc ((size_t) largest * 2 * sizeof (float));
  for (size_t k = 0; k < (size_t) largest * 2; k++)
    in[k] = LEVEL;
  b = clock_bridge_new (2, RATE, target_s, 0);
  clock_bridge_set_ceiling (b, ceiling_s);
  end = w[n - 1].t;
  while (t_out < end) {
    double due = t_out + (double) CHUNK / RATE;
    /* the writes that arrived before this chunk is read */
    while (i < n && w[i].t <= due) {
      clock_bridge_write (b, in, w[i].frames, w[i].t);
      y_in += (double) w[i].frames / RATE;
      if (w[i].t - y_in < win_o) {
        win_o = w[i].t - y_in;
        win_t = w[i].t;
      }
      i++;
    }
    clock_bridge_read (b, out, CHUNK, due);
    t_out = due;
    {
      uint64_t u = st.underruns, o = st.overruns;
      clock_bridge_stats (b, &st);
      if (verbose && t_out > 0 && fmod (t_out + 1e-9, 1.0) < (double) CHUNK / RATE)
        printf ("  %8.3f s: fill %.1f ms, setpoint %.1f ms, drift %+.1f ppm, "
            "ratio %+.1f ppm\n", t_out, st.fill_s * 1e3, st.setpoint_s * 1e3,
            st.drift_ppm, (st.ratio - 1) * 1e6);
      if (verbose && (st.underruns != u || st.overruns != o))
        printf ("  %8.3f s: underruns %llu overruns %llu, setpoint %.1f ms, "
            "fill %.1f ms, drift %+.1f ppm, P %.1f ms\n", t_out,
            (unsigned long long) st.underruns,
            (unsigned long long) st.overruns, st.setpoint_s * 1e3,
            st.fill_s * 1e3, st.drift_ppm, st.packet_s * 1e3);
    }
    if (trace && t_out >= next_trace) {
      clock_bridge_stats (b, &st);
      if (isinf (first_o)) {
        first_o = win_o;
        first_t = win_t;
      }
      printf ("  %-18s %5.0f s: drift %+7.1f ppm; envelope %+6.1f ms, "
          "%+7.1f ppm over the span\n", name, t_out, st.drift_ppm - sender_ppm,
          (win_o - first_o) * 1e3, win_t > first_t ?
          -(win_o - first_o) / (win_t - first_t) * 1e6 : 0.0);
      win_o = INFINITY;
      next_trace += TRACE_S;
    }
    if (!warm && t_out >= warmup_s) {
      warm = 1;
      underruns_at_warmup = st.underruns;
      overruns_at_warmup = st.overruns;
    }
    for (unsigned k = 0; k < CHUNK; k++) {
      if (out[2 * k] != 0.0f)
        audio_started = 1;
      else if (warm && audio_started)
        silent_after += 1.0;
    }
    if (warm && isnan (st.drift_ppm))
      last_unknown = t_out;
    if (t_out >= drift_from_s) {
      double p = fabs (st.ratio - st.relax_rate - 1.0 - sender_ppm * 1e-6) *
          1e6;
      if (!isnan (st.drift_ppm) && fabs (st.drift_ppm - sender_ppm) > max_drift)
        max_drift = fabs (st.drift_ppm - sender_ppm);
      pitch_sum += p;
      pitch_n++;
      if (p > pitch_max)
        pitch_max = p;
    }
    if (ceiling_s > 0 && st.setpoint_s > ceiling_s + 1e-9 && failures < 100)
      CHECK (0, "%s: setpoint %.1f ms above the ceiling at %.1f s", name,
          st.setpoint_s * 1e3, t_out);
    if (settle_by_s >= 0 && t_out >= settle_by_s
        && st.setpoint_s > settle_max)
      settle_max = st.setpoint_s;
    if (warm && st.fill_s > max_latency)
      max_latency = st.fill_s;
  }
  clock_bridge_stats (b, &st);
  pitch_mean = pitch_n ? pitch_sum / pitch_n : INFINITY;
  /* from when the drift was known: after the last unknown reading */
  if (isnan (st.drift_ppm))
    snprintf (known, sizeof (known), "not known at the end");
  else
    snprintf (known, sizeof (known), "known from %.0f s",
        last_unknown < 0 ? warmup_s : last_unknown);
  printf ("%-22s %zu writes over %.1f s: underruns %llu (%llu after %.0f s), "
      "overruns %llu (%llu after), inserted silence after %.0f s %.1f ms "
      "(%.1f ms in all), |drift - %+.0f| from %.0f s at most %.2f ppm (now %+.2f), "
      "drift %s, "
      "setpoint %.1f ms, average fill at most %.1f ms, "
      "|ratio - truth| from %.0f s mean %.0f max %.0f ppm\n", name, n, end,
      (unsigned long long) st.underruns,
      (unsigned long long) (st.underruns - underruns_at_warmup), warmup_s,
      (unsigned long long) st.overruns,
      (unsigned long long) (st.overruns - overruns_at_warmup), warmup_s,
      silent_after * 1e3 / RATE, st.inserted_s * 1e3, sender_ppm, drift_from_s,
      max_drift,
      st.drift_ppm, known, st.setpoint_s * 1e3, max_latency * 1e3, drift_from_s,
      pitch_mean, pitch_max);
  if (!drift_only) {
    CHECK (st.underruns == underruns_at_warmup,
        "%s: %llu underruns after %.0f s", name,
        (unsigned long long) (st.underruns - underruns_at_warmup), warmup_s);
    CHECK (silent_after == 0.0,
        "%s: %.1f ms of inserted silence after %.0f s", name,
        silent_after * 1e3 / RATE, warmup_s);
    CHECK (st.overruns == overruns_at_warmup,
        "%s: %llu overruns after %.0f s", name,
        (unsigned long long) (st.overruns - overruns_at_warmup), warmup_s);
    CHECK (pitch_mean <= pitch_tol_ppm, "%s: the ratio %.0f ppm from 1 + "
        "the truth on average from %.0f s on (bound %.0f)", name, pitch_mean,
        drift_from_s, pitch_tol_ppm);
  }
  CHECK (max_drift <= drift_tol_ppm, "%s: drift off by %.2f ppm from %.0f s "
      "on (truth %+.0f)", name, max_drift, drift_from_s, sender_ppm);
  if (ceiling_s > 0) {
    printf ("%-22s ceiling %.1f ms: %llu hits, %llu underruns at it\n", name,
        st.ceiling_s * 1e3, (unsigned long long) st.ceiling_hits,
        (unsigned long long) st.ceiling_underruns);
    CHECK (st.ceiling_hits > 0, "%s: the ceiling was never hit", name);
  }
  if (settle_by_s >= 0) {
    printf ("%-22s setpoint from %.0f s on at most %.1f ms (bound %.1f)\n",
        name, settle_by_s, settle_max * 1e3, settle_to_s * 1e3);
    CHECK (settle_max <= settle_to_s, "%s: setpoint %.1f ms after %.0f s "
        "(bound %.1f ms)", name, settle_max * 1e3, settle_by_s,
        settle_to_s * 1e3);
  }
  if (known_from_s >= 0)
    CHECK (last_unknown < known_from_s, "%s: drift not known at %.1f s "
        "(known from %.0f s on expected)", name, last_unknown, known_from_s);
  free (in);
  free (w);
  clock_bridge_free (b);
}

/* the options that take a number: where it goes, and its unit's scale */
static const struct
{
  const char *name;
  double *value;
  double scale;
} NUMBER_OPTIONS[] = {
  {"--jitter", &target_s, 1.0}, {"--ppm", &sender_ppm, 1.0},
  {"--drift-from", &drift_from_s, 1.0}, {"--drift-tol", &drift_tol_ppm, 1.0},
  {"--pitch-tol", &pitch_tol_ppm, 1.0},
  {"--drift-known-from", &known_from_s, 1.0}, {"--warmup", &warmup_s, 1.0},
  {"--settle-by", &settle_by_s, 1.0}, {"--settle-to", &settle_to_s, 1e-3},
  {"--ceiling", &ceiling_s, 1.0},
};

static double *
number_option (const char *arg, double *scale)
{
  for (size_t i = 0; i < sizeof (NUMBER_OPTIONS) / sizeof (NUMBER_OPTIONS[0]);
      i++)
    if (strcmp (arg, NUMBER_OPTIONS[i].name) == 0) {
      *scale = NUMBER_OPTIONS[i].scale;
      return NUMBER_OPTIONS[i].value;
    }
  return NULL;
}

int
main (int argc, char **argv)
{
  int k = 1;
  double *value, scale;

  for (; k < argc && strncmp (argv[k], "--", 2) == 0; k++) {
    if (strcmp (argv[k], "--drift-only") == 0)
      drift_only = 1;
    else if (strcmp (argv[k], "--trace") == 0)
      trace = 1;
    else if (k + 1 < argc && strcmp (argv[k], "--stall") == 0
        && n_stalls < MAX_STALLS
        && sscanf (argv[++k], "%lf:%lf", &stall_at[n_stalls],
            &stall_len[n_stalls]) == 2)
      n_stalls++;
    else if (k + 1 < argc && (value = number_option (argv[k], &scale)))
      *value = atof (argv[++k]) * scale;
    else
      break;
  }
  if (k >= argc || target_s < 0.005 || target_s > 0.5
      || fabs (sender_ppm) > 2000 || drift_from_s < warmup_s
      || !(drift_tol_ppm > 0) || !(pitch_tol_ppm > 0)) {
    fprintf (stderr, "usage: test-clock-replay [--jitter S] [--ppm P] "
        "[--drift-from S] [--drift-tol PPM] [--pitch-tol PPM] "
        "[--drift-known-from S] [--drift-only] [--trace] [--warmup S] "
        "[--stall AT:LEN]... [--settle-by S --settle-to MS] [--ceiling S] "
        "FILE...\n");
    return 2;
  }
  for (; k < argc; k++)
    replay (argv[k]);
  printf ("%s\n", failures ? "FAILED" : "ok");
  return failures ? 1 : 0;
}
