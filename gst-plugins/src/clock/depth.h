/* depth: the depth of the clock bridge's fill saw-tooth (pure C, no
 * GStreamer types).
 *
 * Input comes in packets (packets.h), so the FIFO's fill is a saw-tooth:
 * it jumps at each packet and falls while the output plays.  The bridge
 * keeps its average at target + D, D the saw-tooth's depth below its
 * average, so that the lowest fill, just before a packet, is the target.
 *
 * The fill just before each packet (its dip) is recorded against the
 * loop's average fill, in a ring of the last CLOCK_BRIDGE_DIPS.  Per
 * window of CLOCK_BRIDGE_SWING_WINDOW_S of output, the window's depth is
 * the CLOCK_BRIDGE_DIP_QUANTILE quantile of those dips (the average less
 * the window's lowest fill until CLOCK_BRIDGE_DIPS_MIN dips are known):
 * the usual packet pattern keeps the target as its reserve, and the
 * target is the margin for the packet that comes later than usual (a
 * sender's scheduling, the network), which then moves neither the depth
 * nor the latency each time it comes.  A late packet of a busy host is
 * not a shallow saw-tooth: the depth also keeps CLOCK_BRIDGE_DIP_GUARD_S
 * below CLOCK_BRIDGE_DIP_SPREAD x the deepest recorded dip's distance
 * from the quantile (a host whose packets come 15 ms later than usual now
 * and then will bring one 30 ms late).
 *
 * D is the peak-hold of the windows' depths: up at once; once no window
 * and no late gap has raised it for CLOCK_BRIDGE_SWING_HOLD_S, down toward
 * the windows' depth with a CLOCK_BRIDGE_SWING_DECAY_S time constant, by
 * at most CLOCK_BRIDGE_SWING_FALL s per s (the bridge plays that much
 * faster while it falls: clock_depth_fall_rate), so a depth learnt from a
 * start-up's chaos does not stay once the input is steady; at most max_s,
 * the ceiling (a depth asked above it is counted: clock_depth_limited).  Only windows in
 * which the bridge's loop held its setpoint (steady) and nothing was
 * trimmed are measured.  A gap that ran the FIFO dry and was late input
 * asks for at least a depth (clock_depth_at_least). */
#ifndef CLOCK_DEPTH_H
#define CLOCK_DEPTH_H

#define CLOCK_BRIDGE_SWING_WINDOW_S 1.0
#define CLOCK_BRIDGE_SWING_HOLD_S 30.0
#define CLOCK_BRIDGE_SWING_DECAY_S 20.0
#define CLOCK_BRIDGE_SWING_FALL 0.002
#define CLOCK_BRIDGE_DIPS 256
#define CLOCK_BRIDGE_DIPS_MIN 8
#define CLOCK_BRIDGE_DIP_QUANTILE 0.95
#define CLOCK_BRIDGE_DIP_GUARD_S 0.005
#define CLOCK_BRIDGE_DIP_SPREAD 2.0

typedef struct
{
  double target_s;              /* the reserve below the saw-tooth */
  double max_s;                 /* the largest depth */
  /* the dips below the average fill (s), a ring */
  double dips[CLOCK_BRIDGE_DIPS];
  unsigned n_dips, next_dip;
  /* the window being measured: its output time and lowest fill (s), and
   * whether a trim or a transient was in it */
  double win_time, win_min;
  int win_trimmed;
  double swing;                 /* D (s) */
  int have_swing;               /* D is known */
  double since_rise;            /* output s since D last rose */
  double fall_rate;             /* s per s D fell by in the last window */
  int at_max;                   /* the last depth asked for was above max_s */
  unsigned long limited;        /* episodes of a depth asked above max_s */
} ClockDepth;

/* target_s: the bridge's reserve; max_s: the largest depth */
void clock_depth_init (ClockDepth * d, double target_s, double max_s);
/* a new stream: the dips and D are learnt again (the window goes on) */
void clock_depth_reset (ClockDepth * d);
/* the fill just before a packet was dip_s below the average */
void clock_depth_dip (ClockDepth * d, double dip_s);
/* the fill (s) at some moment of the window */
void clock_depth_low (ClockDepth * d, double fill_s);
/* a new window begins (the output starts or resumes) */
void clock_depth_new_window (ClockDepth * d);
/* a trim or a transient in this window: it is not measured */
void clock_depth_skip_window (ClockDepth * d);
/* span_s more output time; when the window is complete it is measured
 * (avg_s: the loop's average fill; steady: the loop held its setpoint
 * through it) and the next one begins */
void clock_depth_window (ClockDepth * d, double span_s, double avg_s,
    int steady);
/* the ceiling: D at most max_s from now on */
void clock_depth_set_max (ClockDepth * d, double max_s);
/* D at least need_s (at most max_s) */
void clock_depth_at_least (ClockDepth * d, double need_s);
/* the depth the recorded dips ask for (at least one dip) */
double clock_depth_of_dips (const ClockDepth * d);
/* D has been measured (or asked for) */
int clock_depth_known (const ClockDepth * d);
/* D, s (when known) */
double clock_depth_s (const ClockDepth * d);
/* how fast D falls now, s per s (0 when it does not): the bridge plays
 * that much faster, so the fill follows the setpoint down */
double clock_depth_fall_rate (const ClockDepth * d);
/* episodes in which the input asked for a depth above max_s (a window's
 * or a late gap's; one episode until a window asks for less) */
unsigned long clock_depth_limited (const ClockDepth * d);
/* D is held at max_s */
int clock_depth_at_max (const ClockDepth * d);

#endif
