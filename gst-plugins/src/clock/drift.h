/* drift: the input clock's rate against the output clock, from arrival
 * times (pure C, no GStreamer types).
 *
 * Each write is a point (t, y): its arrival time on the output clock and
 * the input seconds received up to its end.  Its offset o = t - y is the
 * input's lateness plus a line: o = c - d t for a sender whose clock runs
 * at (1 + d) x the output clock.  Lateness is one-sided: a busy host, a
 * sender's scheduling, a demuxer holding a packet or a network make a
 * packet later than its audio, never earlier.  So the drift is the slope
 * of the lower envelope of the offsets, not of all of them (a least-squares
 * line through every point follows the lateness: on a 2-core host with 24
 * pipelines it read -650..+650 ppm for senders on the same clock).
 *
 * The envelope is sampled once per CLOCK_DRIFT_BIN_S of arrival time: the
 * earliest offset of the bin.  The line is a least-squares fit through the
 * last CLOCK_DRIFT_BINS of those minima, refitted without the minima that
 * lie more than CLOCK_DRIFT_REJECT_S above it (whole bins that were late:
 * a stall of the input thread longer than a bin), twice.  It is ready
 * when it spans CLOCK_DRIFT_MIN_S.  Its error is the minima's scatter over
 * the span: none on a quiet host; where they scatter by a millisecond (16
 * pipelines and their senders on 2 cores) 20-40 ppm at 30 s, within 20 ppm
 * from about a minute on (test-clock-replay).  `se` is the slope's standard
 * error from that scatter.
 *
 * A step moves the offsets off the line one way: when the last
 * CLOCK_DRIFT_STEP_BINS minima all lie more than CLOCK_DRIFT_STEP_S on one
 * side of the line of the bins before them, either they lie flat (the
 * offset stepped: a sender that fell behind for good, a demuxer that now
 * holds a frame less), and the older bins move by the step, so that their
 * slope still counts; or they move away (the rate stepped), and the line
 * starts again from them. */
#ifndef CLOCK_DRIFT_H
#define CLOCK_DRIFT_H

#define CLOCK_DRIFT_BIN_S 1.0
#define CLOCK_DRIFT_BINS 120
#define CLOCK_DRIFT_MIN_S 10.0
#define CLOCK_DRIFT_REJECT_S 0.002
#define CLOCK_DRIFT_STEP_BINS 5
#define CLOCK_DRIFT_STEP_S 0.002
#define CLOCK_DRIFT_STEP_FLAT_S 0.0015

typedef struct
{
  double t, o;                  /* the bin's earliest point */
} ClockDriftPoint;

typedef struct
{
  /* the bins, a ring of the last CLOCK_DRIFT_BINS */
  ClockDriftPoint bins[CLOCK_DRIFT_BINS];
  unsigned n, next;
  /* the bin being filled: its start and earliest point */
  double bin_t0;
  ClockDriftPoint cur;
  int have_cur;
  /* input seconds received, and the first arrival (offsets are taken
   * relative to it, so they stay small however long the stream runs) */
  double y, t0;
  int have_t0;
  /* the fitted line o = a + b (t - tm), over the bins */
  double a, b, tm, span;
  double se;                    /* the slope's standard error */
  int fitted;
} ClockDrift;

void clock_drift_init (ClockDrift * d);
/* a new stream (maybe another sender): forgets everything */
void clock_drift_restart (ClockDrift * d);
/* a write of `frames` at rate `rate` arriving at t (s, output clock) */
void clock_drift_note (ClockDrift * d, double t, unsigned long frames,
    unsigned rate);
/* the line spans CLOCK_DRIFT_MIN_S */
int clock_drift_ready (const ClockDrift * d);
/* the input's rate against the output clock - 1 (positive: fast) */
double clock_drift_rate (const ClockDrift * d);

#endif
