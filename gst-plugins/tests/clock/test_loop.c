/* The clock bridge's control loop on a simulated input clock (bridge.c with
 * its estimators, loop.c, fifo.c, sinc.c; no GStreamer).
 *
 * The input sends packets of PACKET frames at (1 + d) x 48000 frames per
 * second of the output clock; the output reads a 4 ms chunk every 4 ms.
 * Checked, with the target fill at 20 ms:
 *   - d = 0, +-100, +-1000 ppm: after SETTLE_S the drift estimate is within
 *     DRIFT_TOL_PPM of d and the (filtered) average fill within 1 ms of
 *     the setpoint (target + the packets' saw-tooth depth, bridge.h); no
 *     underrun or overrun after the start;
 *   - a step of the rate -1000 -> +1000 ppm on a running stream, and a new
 *     caller (1 s without input, then +1000 ppm after -1000): the same
 *     bounds SETTLE_S after the step, one underrun for the gap only;
 *   - bursty input (Icecast: 93 ms holes every 340 ms) with a 120 ms
 *     target: no underrun; with a 20 ms target two at the start, none
 *     after (the setpoint learns the holes);
 *   - ffmpeg MPEG-TS PES bursts (8 AAC frames together every 170 ms) at
 *     a 20 ms target: no underrun;
 *   - a burst (500 ms of audio at once): one overrun, the FIFO trimmed
 *     back, the same bounds SETTLE_S later, no underrun;
 *   - in every case above (trims spliced, underruns faded): no sample
 *     step after 1 s larger than the tone's own plus a 5 ms crossfade's
 *     (SPLICE_STEP);
 *   - the input stops with a last packet of 1..CHUNK-1 frames (run_dry):
 *     whatever is left when the FIFO runs dry fades out over at least
 *     CHUNK - 1 frames (the last frames played back and forth): no step
 *     beyond SPLICE_STEP, unless it ran dry exactly at a chunk's edge
 *     (counted; failover.c covers that one);
 *   - paced input (run_paced): 1 s Ogg pages at +-1000 ppm, after a 3 s
 *     burst, and a 10 s file at once: nothing dropped, no overrun or
 *     underrun, the fill within the paced limit.
 * Prints, per case, when the drift estimate entered DRIFT_TOL_PPM for good. */
#include "bridge.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define RATE 48000
#define CHUNK 192
#define PACKET 1024
#define SETTLE_S 60.0
#define DRIFT_TOL_PPM 20.0
#define FILL_TOL_S 0.001
#define TONE_HZ 997.0
#define TONE_AMP 0.1
/* the tone's largest step, and a crossfade over CLOCK_BRIDGE_FADE_S
 * between two of its phases (each weight moves by 1/n per frame) */
#define SPLICE_STEP (TONE_AMP * 2 * M_PI * TONE_HZ / RATE + \
    2 * TONE_AMP / (CLOCK_BRIDGE_FADE_S * RATE) + 1e-4)

static int failures;

#define CHECK(cond, ...) do { if (!(cond)) { failures++; \
  printf ("FAIL: "); printf (__VA_ARGS__); printf ("\n"); } } while (0)

typedef struct
{
  const char *name;
  double target_s;
  double ppm_before, ppm_after;
  double change_at_s;           /* < 0: no change */
  double gap_s;                 /* input silent for this long at change_at_s */
  int bursty;                   /* 1: Icecast holes; 8: 8-frame PES bursts */
  double duration_s;
  unsigned packet;
  double extra_s;               /* this much more audio at once at change_at_s */
  unsigned start_underruns;     /* allowed before the packet pattern is known */
} Case;

/* n frames of the stereo tone, continuing at *phase */
static void
tone (float *in, unsigned n, double *phase)
{
  for (unsigned i = 0; i < n; i++) {
    float v = (float) (TONE_AMP * sin (*phase));
    in[2 * i] = in[2 * i + 1] = v;
    *phase += 2 * M_PI * TONE_HZ / RATE;
  }
}

static void
run_case (const Case * c)
{
  ClockBridge *b = clock_bridge_new (2, RATE, c->target_s, 0);
  float *in = calloc ((size_t) c->packet * 2, sizeof (float));
  float out[CHUNK * 2];
  double t_out = 0.0, t_in = 0.0, phase = 0.0, settled_at = -1.0;
  double max_fill_err = 0.0, max_drift_err = 0.0, max_step = 0.0;
  float prev = 0.0f;
  uint64_t runs_at_settle = 0, overs_at_settle = 0;
  int measuring = 0, changed = 0;
  double settle_from = (c->change_at_s >= 0 ? c->change_at_s : 0.0) +
      SETTLE_S;
  ClockBridgeStats st;

  while (t_out < c->duration_s) {
    double ppm = c->change_at_s >= 0 && t_in >= c->change_at_s ?
        c->ppm_after : c->ppm_before;
    double in_rate = RATE * (1.0 + ppm * 1e-6);
    double next_in = t_in + (double) c->packet / in_rate;
    double arrive = next_in;

    if (c->change_at_s >= 0 && !changed && t_in >= c->change_at_s) {
      changed = 1;
      if (c->extra_s > 0) {
        /* a burst: the sender pushes extra_s of audio at once */
        for (double sent = 0; sent < c->extra_s;
            sent += (double) c->packet / RATE) {
          tone (in, c->packet, &phase);
          clock_bridge_write (b, in, c->packet, t_in);
        }
      }
      if (c->gap_s > 0) {
        /* the caller leaves; the next one starts gap_s later */
        t_in += c->gap_s;
        continue;
      }
    }
    if (c->bursty == 8) {
      /* ffmpeg's MPEG-TS muxer: 8 AAC frames per PES, delivered together
       * when the PES is complete */
      double pes = 8.0 * c->packet / in_rate;
      arrive = ceil (next_in / pes - 1e-9) * pes;
    } else if (c->bursty) {
      /* holes of 93 ms at the start of every 340 ms: what would have
       * arrived in the hole arrives at its end */
      double cycle = fmod (next_in, 0.34);
      if (cycle < 0.093)
        arrive = next_in - cycle + 0.093;
    }
    /* the output reads every chunk due before this packet arrives */
    while (t_out + (double) CHUNK / RATE <= arrive && t_out < c->duration_s) {
      clock_bridge_read (b, out, CHUNK, t_out + (double) CHUNK / RATE);
      /* the output's sample steps, after the start's fade-in */
      for (unsigned i = 0; i < CHUNK; i++) {
        if (t_out > 1.0 && fabs (out[2 * i] - prev) > max_step)
          max_step = fabs (out[2 * i] - prev);
        prev = out[2 * i];
      }
      t_out += (double) CHUNK / RATE;
      clock_bridge_stats (b, &st);
      if (!measuring && t_out >= settle_from) {
        measuring = 1;
        runs_at_settle = st.underruns;
        overs_at_settle = st.overruns;
      }
      if (measuring) {
        /* the loop keeps the average at the setpoint (bridge.h) */
        double fe = fabs (st.fill_s - st.setpoint_s);
        double de = fabs (st.drift_ppm - ppm);
        if (fe > max_fill_err)
          max_fill_err = fe;
        if (de > max_drift_err)
          max_drift_err = de;
      }
      if (fabs (st.drift_ppm - ppm) > DRIFT_TOL_PPM)
        settled_at = -1.0;
      else if (settled_at < 0)
        settled_at = t_out - (c->change_at_s >= 0 ? c->change_at_s : 0.0);
    }
    tone (in, c->packet, &phase);
    clock_bridge_write (b, in, c->packet, arrive);
    t_in = next_in;
  }
  clock_bridge_stats (b, &st);
  printf ("%-28s drift %+9.2f ppm (true %+6.0f), within %.0f ppm for good "
      "%.1f s after the %s; after %.0f s: |fill - setpoint| <= %.3f ms "
      "(setpoint %.1f ms, P %.1f ms), "
      "|drift error| <= %.2f ppm; underruns %llu (%llu after), overruns %llu "
      "(%llu after)\n", c->name, st.drift_ppm,
      c->change_at_s >= 0 ? c->ppm_after : c->ppm_before, DRIFT_TOL_PPM,
      settled_at, c->change_at_s >= 0 ? "change" : "start", SETTLE_S,
      max_fill_err * 1e3, st.setpoint_s * 1e3, st.packet_s * 1e3,
      max_drift_err,
      (unsigned long long) st.underruns,
      (unsigned long long) (st.underruns - runs_at_settle),
      (unsigned long long) st.overruns,
      (unsigned long long) (st.overruns - overs_at_settle));
  if (c->bursty != 1) {
    CHECK (max_fill_err <= FILL_TOL_S, "%s: fill off target by %.3f ms",
        c->name, max_fill_err * 1e3);
    CHECK (max_drift_err <= DRIFT_TOL_PPM, "%s: drift off by %.2f ppm",
        c->name, max_drift_err);
  }
  CHECK (st.underruns - runs_at_settle == 0, "%s: %llu underruns after %.0f s",
      c->name, (unsigned long long) (st.underruns - runs_at_settle), SETTLE_S);
  CHECK (st.underruns <= (c->gap_s > 0 ? 1u : 0u) + c->start_underruns,
      "%s: %llu underruns", c->name, (unsigned long long) st.underruns);
  CHECK (st.overruns == (c->extra_s > 0 ? 1u : 0u), "%s: %llu overruns",
      c->name, (unsigned long long) st.overruns);
  CHECK (max_step <= SPLICE_STEP, "%s: a sample step of %.4f after 1 s "
      "(bound %.4f)", c->name, max_step, SPLICE_STEP);
  printf ("%-28s largest sample step after 1 s %.4f (bound %.4f)\n", c->name,
      max_step, SPLICE_STEP);
  free (in);
  clock_bridge_free (b);
}

/* The input stops after 1.5 s of 1024-frame packets and a last one of
 * `last` frames; the output reads on until 2.5 s.  Returns 1 when it ran
 * dry at a chunk's edge (nothing left to fade). */
static int
run_dry (unsigned last)
{
  ClockBridge *b = clock_bridge_new (2, RATE, 0.02, 0);
  float in[PACKET * 2], out[CHUNK * 2], prev = 0.0f;
  double t_out = 0.0, t_in = 0.0, phase = 0.0, max_step = 0.0;
  int edge = 0, ended = 0;

  while (t_out < 2.5) {
    unsigned n = t_in < 1.5 ? PACKET : last;
    double arrive = t_in + (double) n / RATE;
    while (t_out + (double) CHUNK / RATE <= arrive || (ended && t_out < 2.5)) {
      size_t k = clock_bridge_read (b, out, CHUNK, t_out + (double) CHUNK / RATE);
      ClockBridgeStats st;
      clock_bridge_stats (b, &st);
      if (k == 0 && st.underruns == 1 && prev != 0.0f)
        edge = 1;
      for (unsigned i = 0; i < CHUNK; i++) {
        if (t_out > 1.0 && fabs (out[2 * i] - prev) > max_step)
          max_step = fabs (out[2 * i] - prev);
        prev = out[2 * i];
      }
      t_out += (double) CHUNK / RATE;
    }
    if (ended)
      break;
    tone (in, n, &phase);
    clock_bridge_write (b, in, n, arrive);
    t_in = arrive;
    ended = n == last;
  }
  if (!edge)
    CHECK (max_step <= SPLICE_STEP, "dry after a last packet of %u frames: "
        "a step of %.4f (bound %.4f)", last, max_step, SPLICE_STEP);
  clock_bridge_free (b);
  return edge;
}

/* Paced input (a station's Icecast source behind a pipe): Ogg pages of
 * 1 s every second of the sender's clock (+`ppm`), the first `burst` pages
 * at once (a source catching up), written in PACKET writes whenever the
 * bridge is not full (clock_bridge_full: the writer waits, as the pipe
 * does).  DC input, so the output's audio frames can be counted.  Checked:
 * nothing dropped (audio frames out = frames in within the resampling
 * ratio, after the drain), no overrun, no underrun while pages come, and
 * the fill never above CLOCK_BRIDGE_PACED_MAX_FILL_S. */
static void
run_paced (const char *name, double ppm, unsigned burst, double pages)
{
  ClockBridge *b = clock_bridge_new (2, RATE, 0.02, 1);
  float in[PACKET * 2], out[CHUNK * 2];
  double t = 0.0, page_s = 1.0 / (1.0 + ppm * 1e-6), max_fill = 0.0;
  double sent = 0.0, available = 0.0, audio_out = 0.0;
  unsigned waits = 0;
  ClockBridgeStats st;

  for (unsigned i = 0; i < 2 * PACKET; i++)
    in[i] = 0.25f;
  while (!clock_bridge_drained (b) && t < pages + 30.0) {
    /* pages that have arrived by now, in frames */
    double arrived = t < 0.0 ? 0.0 : fmin (pages, burst + floor (t / page_s));
    available = arrived * RATE - sent;
    while (available >= PACKET) {
      if (clock_bridge_full (b, PACKET)) {
        waits++;
        break;
      }
      clock_bridge_write (b, in, PACKET, t);
      sent += PACKET;
      available -= PACKET;
    }
    if (arrived >= pages && available < PACKET)
      clock_bridge_drain (b);
    clock_bridge_stats (b, &st);
    if (st.fill_s > max_fill)
      max_fill = st.fill_s;
    t += (double) CHUNK / RATE;
    clock_bridge_read (b, out, CHUNK, t);
    for (unsigned i = 0; i < CHUNK; i++)
      if (out[2 * i] > 0.01f)
        audio_out += 1.0;
  }
  clock_bridge_stats (b, &st);
  printf ("%-28s paced: %.0f pages of 1 s (%u at once): %.3f s in, %.3f s "
      "of audio out, writer waited %u times, fill at most %.3f s, "
      "underruns %llu, overruns %llu\n", name, pages, burst, sent / RATE,
      audio_out / RATE, waits, max_fill, (unsigned long long) st.underruns,
      (unsigned long long) st.overruns);
  CHECK (clock_bridge_drained (b), "%s: the drain did not end", name);
  CHECK (fabs (audio_out - sent) <= 0.01 * sent,
      "%s: %.3f s in, %.3f s of audio out (nothing may be dropped)", name,
      sent / RATE, audio_out / RATE);
  CHECK (st.overruns == 0, "%s: %llu overruns", name,
      (unsigned long long) st.overruns);
  CHECK (st.underruns == 0, "%s: %llu underruns", name,
      (unsigned long long) st.underruns);
  CHECK (max_fill <= CLOCK_BRIDGE_PACED_MAX_FILL_S + (double) PACKET / RATE,
      "%s: fill %.3f s above the paced limit", name, max_fill);
  CHECK (burst < 2 || waits > 0, "%s: a burst never made the writer wait",
      name);
  clock_bridge_free (b);
}

int
main (void)
{
  const Case cases[] = {
    {"0 ppm", 0.02, 0, 0, -1, 0, 0, 120, PACKET, 0, 0},
    {"+100 ppm", 0.02, 100, 100, -1, 0, 0, 120, PACKET, 0, 0},
    {"-100 ppm", 0.02, -100, -100, -1, 0, 0, 120, PACKET, 0, 0},
    {"+1000 ppm", 0.02, 1000, 1000, -1, 0, 0, 120, PACKET, 0, 0},
    {"-1000 ppm", 0.02, -1000, -1000, -1, 0, 0, 120, PACKET, 0, 0},
    {"step -1000 -> +1000 ppm", 0.02, -1000, 1000, 90, 0, 0, 180, PACKET, 0, 0},
    {"new caller -1000 -> +1000", 0.02, -1000, 1000, 90, 1.0, 0, 180, PACKET, 0, 0},
    {"bursty, 120 ms, +50 ppm", 0.12, 50, 50, -1, 0, 1, 120, 960, 0, 0},
    /* the first starts know the packets, not yet the holes: two underruns */
    {"bursty, 20 ms, +50 ppm", 0.02, 50, 50, -1, 0, 1, 120, 960, 0, 2},
    {"8-frame PES bursts, +1000 ppm", 0.02, 1000, 1000, -1, 0, 8, 120, PACKET,
        0, 0},
    {"burst of 500 ms at +100 ppm", 0.02, 100, 100, 60, 0, 0, 150, PACKET,
        0.5, 0},
  };

  for (size_t i = 0; i < sizeof (cases) / sizeof (cases[0]); i++)
    run_case (&cases[i]);
  {
    int edges = 0;
    for (unsigned last = 1; last < CHUNK; last++)
      edges += run_dry (last);
    printf ("dry after a last packet of 1..%u frames: no step beyond %.4f; "
        "%d ran dry at a chunk's edge\n", CHUNK - 1, SPLICE_STEP, edges);
  }
  run_paced ("Ogg pages, +1000 ppm", 1000, 1, 60);
  run_paced ("Ogg pages, -1000 ppm", -1000, 1, 60);
  run_paced ("Ogg pages after a 3 s burst", 0, 3, 60);
  run_paced ("a 10 s file at once", 0, 10, 10);
  printf ("%s\n", failures ? "FAILED" : "ok");
  return failures ? 1 : 0;
}
