/* The packet pattern estimator alone (packets.c), on synthetic writes at
 * 48 kHz.  Checked:
 *   - writes of 1024 frames every 21.3 ms: P = 1024, G = 1024;
 *   - 4 writes of 1024 together (0.2 ms apart) every 85.3 ms: P = 4096;
 *     small writes at their own pace (96 frames every 2 ms) are packets of
 *     their own (half a write apart);
 *   - a backlog (16 writes together) followed by the usual 21.3 ms gap is
 *     not P; paced, it is (the input's pages);
 *   - the first packet of a stream, and the first after a pause, are not
 *     counted;
 *   - a gap of CLOCK_BRIDGE_PAUSE_S or more is a new stream, a shorter one
 *     not;
 *   - P is the largest over the last 10-20 s: larger packets are forgotten
 *     two windows later;
 *   - a gap that ran the FIFO dry: reported when it ends; the packet after
 *     it, complete, reported and learnt into G when it carried at least
 *     half the gap's audio (late input), not when it was small (a stall);
 *   - a burst the bridge trimmed is not P; clock_packets_idle. */
#include "packets.h"

#include <math.h>
#include <stdio.h>

#define RATE 48000
#define FRAME_S (1024.0 / RATE)

static int failures;

#define CHECK(cond, ...) do { if (!(cond)) { failures++; \
  printf ("FAIL: "); printf (__VA_ARGS__); printf ("\n"); } } while (0)

/* the input as the bridge sees it: filling until two packets are counted,
 * then playing; an underrun fills again */
typedef struct
{
  ClockPackets p;
  int playing;
  ClockPacketsNote note;
  unsigned new_streams;
} Input;

static void
input_init (Input * in, int paced)
{
  clock_packets_init (&in->p, RATE, paced);
  in->playing = 0;
  in->new_streams = 0;
}

static void
put (Input * in, size_t frames, double t)
{
  clock_packets_note (&in->p, frames, t, in->playing, &in->note);
  in->new_streams += in->note.new_stream;
  if (!in->playing && clock_packets_count (&in->p) >= 2)
    in->playing = 1;
}

/* the FIFO ran dry: the bridge fills again */
static void
underrun (Input * in)
{
  clock_packets_emptied (&in->p, 1);
  in->playing = 0;
}

/* `n` packets of `writes` x `frames`, the writes `apart` s apart, a packet
 * every `every` s from t; returns the time after the last */
static double
packets (Input * in, double t, unsigned n, unsigned writes, size_t frames,
    double apart, double every)
{
  for (unsigned k = 0; k < n; k++, t += every)
    for (unsigned w = 0; w < writes; w++)
      put (in, frames, t + w * apart);
  return t;
}

static void
steady_frames (void)
{
  Input in;

  input_init (&in, 0);
  packets (&in, 0.0, 470, 1, 1024, 0, FRAME_S);
  printf ("1024 frames every %.1f ms: P %zu, G %.1f frames\n", FRAME_S * 1e3,
      clock_packets_closed (&in.p), clock_packets_gap (&in.p));
  CHECK (clock_packets_closed (&in.p) == 1024, "1024 every 21.3 ms: P %zu",
      clock_packets_closed (&in.p));
  CHECK (fabs (clock_packets_gap (&in.p) - 1024) < 0.01,
      "1024 every 21.3 ms: G %.3f", clock_packets_gap (&in.p));
  CHECK (in.new_streams == 0, "1024 every 21.3 ms: a new stream");
}

static void
grouped (void)
{
  Input in;

  input_init (&in, 0);
  packets (&in, 0.0, 120, 4, 1024, 0.0002, 4 * FRAME_S);
  printf ("4 x 1024 together every %.1f ms: P %zu, G %.1f frames\n",
      4 * FRAME_S * 1e3, clock_packets_closed (&in.p),
      clock_packets_gap (&in.p));
  CHECK (clock_packets_closed (&in.p) == 4096, "4 together: P %zu",
      clock_packets_closed (&in.p));
  CHECK (fabs (clock_packets_gap (&in.p) - 4096) < 0.01, "4 together: G %.3f",
      clock_packets_gap (&in.p));
  /* a larger packet arriving: P including it */
  for (unsigned w = 0; w < 6; w++)
    put (&in, 1024, 120 * 4 * FRAME_S + w * 0.0002);
  CHECK (clock_packets_size (&in.p) == 6144
      && clock_packets_closed (&in.p) == 4096,
      "6 together arriving: size %zu, closed %zu", clock_packets_size (&in.p),
      clock_packets_closed (&in.p));

  /* 2 ms writes 2 ms apart: within CLOCK_BRIDGE_CLUSTER_S but not half a
   * write: each is its own packet */
  input_init (&in, 0);
  packets (&in, 0.0, 2000, 1, 96, 0, 0.002);
  printf ("96 frames every 2 ms: P %zu\n", clock_packets_closed (&in.p));
  CHECK (clock_packets_closed (&in.p) == 96, "96 every 2 ms: P %zu",
      clock_packets_closed (&in.p));
}

static void
backlog (void)
{
  for (int paced = 0; paced <= 1; paced++) {
    Input in;
    double t;

    input_init (&in, paced);
    t = packets (&in, 0.0, 100, 1, 1024, 0, FRAME_S);
    /* 16 frames at once (a late packet's backlog), then the usual gap */
    t = packets (&in, t, 1, 16, 1024, 0.0001, FRAME_S);
    packets (&in, t, 3, 1, 1024, 0, FRAME_S);
    printf ("%s: 16 x 1024 at once, then 21.3 ms: P %zu\n",
        paced ? "paced" : "unpaced", clock_packets_closed (&in.p));
    CHECK (clock_packets_closed (&in.p) == (paced ? 16384u : 1024u),
        "%s backlog: P %zu", paced ? "paced" : "unpaced",
        clock_packets_closed (&in.p));
  }
}

static void
first_not_counted (void)
{
  Input in;
  double t;

  /* a stream that starts with 2800 frames at once, then 2048 every
   * 42.7 ms (2800 < CLOCK_BRIDGE_BACKLOG_RATIO x the 39.7 ms to the next:
   * not a backlog by its size) */
  input_init (&in, 0);
  t = packets (&in, 0.0, 1, 4, 700, 0.001, 2 * FRAME_S);
  t = packets (&in, t, 50, 1, 2048, 0, 2 * FRAME_S);
  printf ("first packet 2800, then 2048: P %zu\n",
      clock_packets_closed (&in.p));
  CHECK (clock_packets_closed (&in.p) == 2048, "first packet counted: P %zu",
      clock_packets_closed (&in.p));

  /* a sender with 1024 packets, a pause (the FIFO ran dry), then 2800 at
   * once and 2048 every 42.7 ms */
  input_init (&in, 0);
  t = packets (&in, 0.0, 100, 1, 1024, 0, FRAME_S);
  underrun (&in);
  t += 2.0;
  put (&in, 700, t);
  CHECK (in.note.new_stream && in.note.dry_gap_s == 0.0,
      "after a pause: new stream %d, dry gap %.3f s", in.note.new_stream,
      in.note.dry_gap_s);
  CHECK (clock_packets_closed (&in.p) == 0 && clock_packets_size (&in.p) ==
      700, "after a pause: P %zu (closed %zu), the old packets kept",
      clock_packets_size (&in.p), clock_packets_closed (&in.p));
  for (unsigned w = 1; w < 4; w++)
    put (&in, 700, t + w * 0.001);
  t = packets (&in, t + 2 * FRAME_S, 50, 1, 2048, 0, 2 * FRAME_S);
  printf ("after a 2 s pause, first packet 2800, then 2048: P %zu\n",
      clock_packets_closed (&in.p));
  CHECK (clock_packets_closed (&in.p) == 2048,
      "first packet after a pause counted: P %zu",
      clock_packets_closed (&in.p));
}

static void
pause (void)
{
  Input in;

  /* times exact in binary: the gaps are what they say */
  input_init (&in, 0);
  packets (&in, 8.0, 10, 1, 1024, 0, 0.125);
  put (&in, 1024, 10.0);
  put (&in, 1024, 10.999);
  CHECK (!in.note.new_stream, "a 0.999 s gap is a new stream");
  put (&in, 1024, 12.0);
  CHECK (in.note.new_stream, "a 1.001 s gap is not a new stream");
  put (&in, 1024, 12.0 + CLOCK_BRIDGE_PAUSE_S);
  CHECK (in.note.new_stream, "a %.1f s gap is not a new stream",
      CLOCK_BRIDGE_PAUSE_S);
  put (&in, 1024, 13.0 + 0.125);
  CHECK (!in.note.new_stream, "the next write is a new stream too");
  printf ("gap of 0.999 s: same stream; %.1f s, 1.001 s: new stream\n",
      CLOCK_BRIDGE_PAUSE_S);
}

static void
windows (void)
{
  Input in;
  double t;
  size_t at_19, at_21;

  /* 4096 packets for 5 s, then 1024 packets: P is the largest in this and
   * the previous window of CLOCK_BRIDGE_PACKET_WINDOW_S */
  input_init (&in, 0);
  t = packets (&in, 0.0, 59, 4, 1024, 0.0002, 4 * FRAME_S);
  while (t < 19.0)
    t = packets (&in, t, 1, 1, 1024, 0, FRAME_S);
  at_19 = clock_packets_closed (&in.p);
  while (t < 21.0)
    t = packets (&in, t, 1, 1, 1024, 0, FRAME_S);
  at_21 = clock_packets_closed (&in.p);
  printf ("4096 packets until 5 s, then 1024: P %zu at 19 s, %zu at 21 s\n",
      at_19, at_21);
  CHECK (at_19 == 4096, "windows: P %zu at 19 s", at_19);
  CHECK (at_21 == 1024, "windows: P %zu at 21 s", at_21);
}

static void
dry_gaps (void)
{
  Input in;
  double t;

  /* 150 ms late: the packet after it carries the held-up audio */
  input_init (&in, 0);
  t = packets (&in, 0.0, 100, 1, 1024, 0, FRAME_S) - FRAME_S;
  underrun (&in);
  t += 0.150;
  put (&in, 1024, t);
  printf ("a 150 ms gap that ran it dry: reported %.3f s\n",
      in.note.dry_gap_s);
  CHECK (fabs (in.note.dry_gap_s - 0.150) < 1e-9, "dry gap: reported %.6f s",
      in.note.dry_gap_s);
  {
    double gap = in.note.dry_gap_s;
    for (unsigned w = 1; w < 8; w++)
      put (&in, 1024, t + w * 0.0002);
    CHECK (in.note.late_gap_s == 0.0, "dry gap judged before its packet "
        "is complete");
    put (&in, 1024, t + FRAME_S);
    printf ("its packet of 8192 frames complete: late gap %.3f s, packet "
        "%zu; G %.0f frames, P %zu\n", in.note.late_gap_s,
        in.note.late_packet, clock_packets_gap (&in.p),
        clock_packets_closed (&in.p));
    CHECK (in.note.late_gap_s == gap && in.note.late_packet == 8192,
        "late packet: gap %.6f s, packet %zu", in.note.late_gap_s,
        in.note.late_packet);
    CHECK (fabs (clock_packets_gap (&in.p) - gap * RATE) < 1e-6,
        "late packet: G %.3f, want %.3f", clock_packets_gap (&in.p),
        gap * RATE);
    /* 8192 after a 21 ms gap: a backlog, not P */
    CHECK (clock_packets_closed (&in.p) == 1024, "late packet: P %zu",
        clock_packets_closed (&in.p));
  }

  /* a stall: the packet after the gap is small (the gap's audio is gone) */
  input_init (&in, 0);
  t = packets (&in, 0.0, 100, 1, 1024, 0, FRAME_S) - FRAME_S;
  underrun (&in);
  t += 0.150;
  put (&in, 1024, t);
  CHECK (fabs (in.note.dry_gap_s - 0.150) < 1e-9, "stall: dry gap %.6f s",
      in.note.dry_gap_s);
  put (&in, 1024, t + FRAME_S);
  printf ("a 150 ms stall, then 1024 frames: late gap %.3f s, G %.0f\n",
      in.note.late_gap_s, clock_packets_gap (&in.p));
  CHECK (in.note.late_gap_s == 0.0, "stall: learnt as late (%.3f s)",
      in.note.late_gap_s);
  CHECK (fabs (clock_packets_gap (&in.p) - 1024) < 0.01, "stall: G %.3f",
      clock_packets_gap (&in.p));
}

static void
burst_and_idle (void)
{
  Input in;
  double t;

  input_init (&in, 0);
  CHECK (!clock_packets_idle (&in.p, 5.0, 0.001), "idle before any write");
  t = packets (&in, 0.0, 100, 1, 1024, 0, FRAME_S);
  t = packets (&in, t, 1, 1, 1024, 0, 0.0);
  CHECK (!clock_packets_idle (&in.p, t + 0.004, CLOCK_BRIDGE_CLUSTER_S)
      && clock_packets_idle (&in.p, t + 0.006, CLOCK_BRIDGE_CLUSTER_S),
      "idle: wrong around %.0f ms", CLOCK_BRIDGE_CLUSTER_S * 1e3);
  /* 1524 frames (which would count), trimmed as a burst: not P */
  put (&in, 500, t + 0.001);
  clock_packets_burst (&in.p);
  packets (&in, t + 0.04, 3, 1, 1024, 0, 0.04);
  printf ("a trimmed burst: P %zu\n", clock_packets_closed (&in.p));
  CHECK (clock_packets_closed (&in.p) == 1024, "trimmed burst: P %zu",
      clock_packets_closed (&in.p));
}

int
main (void)
{
  steady_frames ();
  grouped ();
  backlog ();
  first_not_counted ();
  pause ();
  windows ();
  dry_gaps ();
  burst_and_idle ();
  printf ("%s\n", failures ? "FAILED" : "ok");
  return failures ? 1 : 0;
}
