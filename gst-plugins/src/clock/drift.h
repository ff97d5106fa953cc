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
 * last CLOCK_DRIFT_BINS of those minima with one slope and an intercept per
 * segment (the bins between two offset steps), refitted without the minima
 * that lie more than CLOCK_DRIFT_REJECT_S above it (whole bins that were
 * late: a stall of the input thread longer than a bin), twice.  It is ready
 * when it spans CLOCK_DRIFT_MIN_S and reads within +-CLOCK_DRIFT_MAX_RATE.
 * Its error is the minima's scatter over the span: none on a quiet host;
 * 0.5 ms (16 pipelines, each with its own ffmpeg on 2 cores) gives at most
 * 24 ppm at 30 s and 20 at 60 s.  `se` is the slope's standard error from
 * that scatter.
 *
 * A coarse line: where the 1 s minima scatter about their line by more
 * than CLOCK_DRIFT_COARSE_S (over the first CLOCK_DRIFT_COARSE_MIN_BINS
 * or later; until a restart), a bin's earliest write is not the envelope:
 * a shared sender's 16 callers get groups of 4 writes whose PES ends
 * anywhere in the 1316-byte packets, and a bin's earliest write is early
 * only when a PES ended near the start of a packet (the minima scatter by
 * 3 ms, ffmpeg's own senders' by 0.5-1.3 ms).  Each point of a coarse line
 * is then the earliest offset of its segment's last
 * CLOCK_DRIFT_ENVELOPE_BINS bins, each moved along the line's slope to the
 * point's time (the slope of the plain minima first, then twice the slope
 * the envelope gives); the step test waits for CLOCK_DRIFT_COARSE_STEP_BINS
 * bins, judges them against at least CLOCK_DRIFT_COARSE_BASE_BINS, and
 * takes every step for an offset step (sliding minima have no trend of
 * their own to tell a rate step by, and a line started again from 12 s of
 * a scatter of ms reads hundreds of ppm off).  On
 * the shared sender's recordings (test-clock-replay, shared-16-*: the
 * arrivals' floor steps by -4 ms at about 57 s in all 16 pipelines) the
 * plain minima read 48-89 ppm off from 60 s on, the coarse line 7.6-16.4.
 * The line spans at most CLOCK_DRIFT_BINS: with 120, the step's older
 * segment leaving it tilted the coarse line by 24 ppm at 130 s.
 *
 * A step moves the offsets off the line one way.  The newest
 * CLOCK_DRIFT_STEP_BINS minima (CLOCK_DRIFT_COARSE_STEP_BINS points of a
 * coarse line) wait outside the line; when all of them lie
 * on one side of the line of the bins before them by more than
 * max (CLOCK_DRIFT_STEP_S, CLOCK_DRIFT_STEP_SIGMAS s), s the scatter of
 * those bins about their line (the median |residual| x 1.4826), it is a
 * step: a few minima in a row ms above the line are scatter where the
 * minima scatter by ms (a fixed 2 ms read them as steps every few seconds
 * and the line went -313..+1324 ppm).  It is an offset step (a sender that
 * fell behind for good, a demuxer that now holds a frame less) unless the
 * new minima's own trend moves them by more than max
 * (CLOCK_DRIFT_STEP_FLAT_S, CLOCK_DRIFT_RATE_SIGMAS standard errors of that
 * trend from the larger of s and their own scatter): the new minima then
 * start a segment of their own, so that no guess of the step's size tilts
 * the line and the older bins keep their slope.  Otherwise (not on a
 * coarse line) the rate stepped, and the line starts again from the new
 * minima. */
/* The reported drift takes a longer view than the control's line.  The
 * delivered arrivals of a busy host wander by milliseconds over minutes
 * (16 pipelines fed by one shared sender on the 2-core VM: the earliest
 * arrival of each 10 s moved within 5.5-10.7 ms, 4.3-6.4 ms of it in step
 * in all 16), and a line over CLOCK_DRIFT_BINS s reads that wander as
 * drift (tens of ppm, 108 at worst), more so where the step test cuts it
 * into segments: at 24 on one shared sender the line cut the envelope at
 * every dip and read hundreds of ppm off for
 * minutes (7300 in one).  So the long view keeps
 * the earliest offset of each CLOCK_DRIFT_LONG_BLOCK_S of arrivals from
 * CLOCK_DRIFT_LONG_START_S after the stream's first (the start-up backlog
 * drains before: at 24 the floor fell by 50 ms at 20-30 s), whether the
 * line is ready or not, up to CLOCK_DRIFT_LONG_POINTS of them, and fits
 * one slope through all of them, refitted twice without the blocks more
 * than CLOCK_DRIFT_LONG_REJECT_S above it (late).  A block further off the
 * line than CLOCK_DRIFT_LONG_STEP_SIGMAS times the blocks' scatter (the
 * median |residual| x 1.4826), and at least CLOCK_DRIFT_LONG_STEP_S, is
 * pending, out of the fit; CLOCK_DRIFT_LONG_STEP_BLOCKS pending in a row on
 * one side are an offset step (a demuxer's frame, a sender that fell
 * behind) and get an intercept of their own; a pending block followed by
 * one on the line was the wander, and joins the fit.  (A step after one
 * block 10 ms off, as before, cut the 24-pipeline envelope, whose 10 s
 * minima scatter by +-7 ms, into 3-4 segments: +395 and -143 ppm.)  Its
 * error falls as the span grows (the wander is bounded); once it spans
 * CLOCK_DRIFT_LONG_MIN_S it is the reported drift
 * (clock_drift_report_rate); the control loop keeps the line above, which
 * must follow a sender whose rate changes.  A rate step the line sees
 * starts the long view again with it; one it takes for an offset step
 * (a coarse line's every step) shows in the long view itself: when the
 * newest CLOCK_DRIFT_LONG_AGREE_BLOCKS blocks' own slope (Theil-Sen) is
 * more than CLOCK_DRIFT_LONG_AGREE off the long one for as many blocks in
 * a row, the long view starts again.  (Judged against the line, as before,
 * a line 700-3300 ppm off at 24 made the long view start again for
 * minutes.) */
#ifndef CLOCK_DRIFT_H
#define CLOCK_DRIFT_H

#define CLOCK_DRIFT_BIN_S 1.0
#define CLOCK_DRIFT_BINS 180
#define CLOCK_DRIFT_MIN_S 10.0
#define CLOCK_DRIFT_MAX_RATE 0.005
#define CLOCK_DRIFT_MAX_SE 0.0001
#define CLOCK_DRIFT_REJECT_S 0.002
#define CLOCK_DRIFT_STEP_BINS 5
#define CLOCK_DRIFT_STEP_BASE_BINS 5
#define CLOCK_DRIFT_STEP_S 0.002
#define CLOCK_DRIFT_STEP_FLAT_S 0.0015
#define CLOCK_DRIFT_STEP_SIGMAS 3.0
#define CLOCK_DRIFT_RATE_SIGMAS 4.0
#define CLOCK_DRIFT_COARSE_S 0.002
#define CLOCK_DRIFT_COARSE_MIN_BINS 10
#define CLOCK_DRIFT_ENVELOPE_BINS 10
#define CLOCK_DRIFT_COARSE_STEP_BINS 12
#define CLOCK_DRIFT_COARSE_BASE_BINS 20
#define CLOCK_DRIFT_LONG_BLOCK_S 10.0
#define CLOCK_DRIFT_LONG_POINTS 720
#define CLOCK_DRIFT_LONG_START_S 30.0
#define CLOCK_DRIFT_LONG_STEP_S 0.010
#define CLOCK_DRIFT_LONG_STEP_SIGMAS 3.0
#define CLOCK_DRIFT_LONG_STEP_BLOCKS 3
#define CLOCK_DRIFT_LONG_REJECT_S 0.005
#define CLOCK_DRIFT_LONG_MIN_S 180.0
#define CLOCK_DRIFT_LONG_AGREE 0.0005
#define CLOCK_DRIFT_LONG_AGREE_BLOCKS 6
#define CLOCK_DRIFT_REPORT_MAX_SE 0.00001
#define CLOCK_DRIFT_REPORT_TOL 0.00002
#define CLOCK_DRIFT_WANDER_BINS 10
#define CLOCK_DRIFT_WANDER_TILT 3.0
#define CLOCK_DRIFT_ESTIMATE_MIN_S 3.0
#define CLOCK_DRIFT_ESTIMATE_BINS 9

typedef struct
{
  double t, o;                  /* the bin's earliest point */
  unsigned seg;                 /* its segment: offset steps since the start */
} ClockDriftPoint;

/* a span of arrivals being filled: its start and earliest point */
typedef struct
{
  double t0;
  ClockDriftPoint min;
  int open;
} ClockDriftBlock;

typedef struct
{
  /* the bins, a ring of the last CLOCK_DRIFT_BINS, and the one being
   * filled */
  ClockDriftPoint bins[CLOCK_DRIFT_BINS];
  unsigned n, next;
  ClockDriftBlock bin;
  /* input seconds received, and the first arrival (offsets are taken
   * relative to it, so they stay small however long the stream runs) */
  double y, t0;
  int have_t0;
  /* the fitted line o = a + b (t - tm) of the newest segment, over the
   * bins (every segment has the slope b and an intercept of its own) */
  double a, b, tm, span;
  double se;                    /* the slope's standard error */
  double tilt;                  /* how far a wander could tilt it (drift.c) */
  double band;                  /* ... one as wide as all its points' scatter */
  int fitted;
  /* steps seen, and of them rate steps (the line started again) */
  unsigned steps, restarts;
  unsigned seg;                 /* the segment new bins belong to */
  int coarse;                   /* the 1 s minima scatter: 10 s envelope */
  /* the long view: each block's earliest point, a ring in time order, the
   * block being filled, and its line (slope lb over lspan s); ltm, lom the
   * time and offset means of each run of one segment (lruns of them), from
   * the last fit */
  ClockDriftPoint lpts[CLOCK_DRIFT_LONG_POINTS];
  unsigned ln, lnext, lseg, lrestarts, ldisagree;
  unsigned lforgets;            /* the long view started again on its own */
  unsigned lpend, lruns;        /* the newest blocks pending; runs fitted */
  int lpside;                   /* the side of the newest block (-1, 0, 1) */
  double lsigma;                /* the kept blocks' scatter about the line */
  double lsxx;                  /* the kept blocks' sum of (t - run mean)^2 */
  double lwander;               /* their residuals' range (max - min) */
  unsigned lused;               /* how many were kept */
  ClockDriftBlock lblock;
  int lfitted;
  double lb, lspan;
  double ltm[CLOCK_DRIFT_LONG_POINTS], lom[CLOCK_DRIFT_LONG_POINTS];
} ClockDrift;

void clock_drift_init (ClockDrift * d);
/* a new stream (maybe another sender): forgets everything */
void clock_drift_restart (ClockDrift * d);
/* a write of `frames` at rate `rate` arriving at t (s, output clock) */
void clock_drift_note (ClockDrift * d, double t, unsigned long frames,
    unsigned rate);
/* the line spans CLOCK_DRIFT_MIN_S, its slope is a clock's: within
 * +-CLOCK_DRIFT_MAX_RATE (the loop's own bound; a steeper line is an input
 * that arrives starved, 30 % of real time on a 2-core host at load 21
 * read -694720 ppm), and the minima lie on it: the slope's standard error
 * is at most CLOCK_DRIFT_MAX_SE.  A line that does not fit its points is
 * no estimate: 24 pipelines fed by one shared sender on 2 cores, where the
 * arrivals' floor fell by 200 ms when the start-up backlog ended, had one
 * whose line read +10800 ppm (se 1-15 ppm: beyond MAX_RATE, not used) and
 * then, from 120 s on, +2700..+3830 ppm with se 370-470 ppm; the loop took
 * it as its integral part.  On every other recording (tests/clock/arrivals,
 * and the other 23 of those 24) a ready line's se stayed at most 74 ppm
 * from 30 s on. */
int clock_drift_ready (const ClockDrift * d);
/* the input's rate against the output clock - 1 (positive: fast) */
double clock_drift_rate (const ClockDrift * d);
/* the drift to report: the long view's once it spans
 * CLOCK_DRIFT_LONG_MIN_S, else clock_drift_rate; NAN (not known yet)
 * before that on a coarse line, and on a ready line whose se is above
 * CLOCK_DRIFT_REPORT_MAX_SE (half the +-20 ppm a report must hold).  A
 * coarse line is no report: on the recordings of tests/clock/arrivals it
 * read up to 108 ppm off from 60 s on with 16 pipelines of one shared
 * sender and 230-1100 ppm off with 24 (its se 9-24 ppm meanwhile), where
 * the long view, once ready, read within 19.4 (13.4 at 24); a long view of
 * 90 or 120 s was still up to 47 ppm off.  A line that is not coarse (each
 * sender its own ffmpeg, 16 and 24 pipelines) read within 20 ppm from 60 s
 * on, its se at most 6.4 ppm, and stays the report until the long view is
 * ready; one of 24 on a shared sender not coarse yet at 60 s read 30 ppm
 * off with an se of 19 (shared-24-300s-5).  Nor is a line whose se is
 * small but whose 10 s minima wander (CLOCK_DRIFT_WANDER_BINS) by so much
 * that they could tilt it by more than CLOCK_DRIFT_REPORT_TOL (the tilt):
 * 16 pipelines of one shared sender on a quiet host had lines not coarse,
 * se 6-11 ppm, 34-64 ppm off from 70 to 140 s, their 10 s minima wandering
 * by 3-5 ms (shared-16-wander-*).  The se assumes the minima scatter
 * independently; a wander that moves them together for a minute is what
 * it cannot see.  The tilt is a screen, not a bound: a wander that lines
 * up over the line's span looks like drift (test-clock-drift).  Its
 * factor is 3 W / T (drift.c, wander_tilt): at 1.5 the lines of 16 ffmpeg
 * senders whose arrivals' floor stepped by 1.4-2 ms at 45-60 s read 21-24
 * ppm off at 60-140 s (ffmpeg-16-step-*).  With 3 the ffmpeg recordings'
 * line is the report from 150-155 s on in 6 of 8 (2 not known in their
 * 158 s), within 11.3 ppm; at 1.5 from 42-152 s on, within 17.6.  The
 * price is an early figure: one SRT caller at -1000 ppm on a quiet host,
 * known at 50 s at 1.5 (2.5 ppm off), is not known then at 3. */
double clock_drift_report_rate (const ClockDrift * d);
/* clock_drift_report_rate is a figure, not NAN: the long view is ready,
 * or the line is not coarse and either not ready (the bridge reports its
 * loop's integrator then) or its se at most CLOCK_DRIFT_REPORT_MAX_SE and
 * its tilt at most CLOCK_DRIFT_REPORT_TOL */
int clock_drift_report_known (const ClockDrift * d);
/* the long view spans CLOCK_DRIFT_LONG_MIN_S: the report is its slope */
int clock_drift_long_ready (const ClockDrift * d);
/* The drift with its uncertainty, once the line has CLOCK_DRIFT_ESTIMATE_BINS
 * bins (9-10 s of arrivals) and a fitted span of CLOCK_DRIFT_ESTIMATE_MIN_S
 * (the newest bins wait for the step test), whatever clock_drift_report_known says: 1 and
 * *rate, *half (a half-width meant to hold the truth in 95 % of readings,
 * rate units) when known, else 0.  Each view (the line; the long view once
 * it keeps more blocks than runs + 1) gives its slope and a half-width of
 * 2 standard errors plus the tilt a wander as wide as its points could give
 * it: 3 W / T with W the range of all its points' residuals (band, not the
 * range of 10 s minima of the tilt above; wander_tilt in drift.c).  The
 * standard error alone assumes independent scatter, and the arrivals of a
 * busy host wander together for minutes: 2 se covered 89 % of the readings
 * of tests/clock/arrivals, 2 se + the tilt 90 %, 2 se + band 98.4 %
 * (test-clock-drift-coverage).  The estimate is the view whose half-width
 * is the smaller.  A slope beyond CLOCK_DRIFT_MAX_RATE is no estimate (an
 * input that arrives starved: 24 pipelines of one shared sender read
 * +420000 ppm at 11 s).  The control loop does not use it
 * (clock_drift_ready, clock_drift_rate). */
int clock_drift_estimate (const ClockDrift * d, double *rate, double *half);

#endif
