/* packets: see packets.h. */
#include "packets.h"

#include <string.h>

void
clock_packets_init (ClockPackets * p, unsigned rate, int paced)
{
  memset (p, 0, sizeof (*p));
  p->rate = rate;
  p->paced = paced != 0;
}

void
clock_packets_reset (ClockPackets * p)
{
  clock_packets_init (p, p->rate, p->paced);
}

int
clock_packets_idle (const ClockPackets * p, double t, double s)
{
  return p->have_write && t - p->last_write_t > s;
}

/* the packet that ended a dry gap is complete: when it carries at least
 * half the gap's audio it was late, not lost, and the gap is part of G */
static void
judge_dry_gap (ClockPackets * p, ClockPacketsNote * note)
{
  double gap = p->dry_gap;

  p->dry_gap = 0.0;
  if ((double) p->cluster >= 0.5 * gap * p->rate) {
    if (gap * p->rate > p->gap_cur)
      p->gap_cur = gap * p->rate;
    note->late_gap_s = gap;
    note->late_packet = p->cluster;
  }
}

void
clock_packets_note (ClockPackets * p, size_t frames, double t, int playing,
    ClockPacketsNote * note)
{
  double gap = t - p->last_write_t;

  note->new_stream = 0;
  note->dry_gap_s = 0.0;
  note->late_gap_s = 0.0;
  note->late_packet = 0;
  /* input back after a pause: maybe another sender, whose packets need not
   * look like the last one's */
  if (p->have_write && gap >= CLOCK_BRIDGE_PAUSE_S) {
    p->have_write = 0;
    p->cluster = 0;
    p->dry_gap = 0.0;
    p->ran_dry = 0;
    note->new_stream = 1;
  }
  if (!p->have_write || t - p->window_t0 >= CLOCK_BRIDGE_PACKET_WINDOW_S) {
    p->pkt_prev = p->have_write ? p->pkt_cur : 0;
    p->pkt_cur = 0;
    p->gap_prev = p->have_write ? p->gap_cur : 0.0;
    p->gap_cur = 0.0;
    p->window_t0 = t;
  }
  /* together: less than half the previous write's duration apart */
  if (p->have_write && gap <= CLOCK_BRIDGE_CLUSTER_S
      && gap < 0.5 * (double) p->last_write / p->rate) {
    p->cluster += frames;
  } else {
    /* the packet before this write is complete: P unless it was the first
     * after (re)connecting or (unpaced) a backlog */
    if (p->cluster > p->pkt_cur && (playing || p->episode_clusters > 0)
        && (p->paced
            || (double) p->cluster <= CLOCK_BRIDGE_BACKLOG_RATIO * gap * p->rate))
      p->pkt_cur = p->cluster;
    if (p->have_write && !playing)
      p->episode_clusters++;
    if (p->dry_gap > 0.0)
      judge_dry_gap (p, note);
    p->cluster = frames;
    if (p->have_write && p->ran_dry && gap < CLOCK_BRIDGE_PAUSE_S) {
      p->dry_gap = gap;         /* judged when its packet is complete */
      note->dry_gap_s = gap;
    } else if (p->have_write && (playing || (p->episode_clusters > 1
                && gap < CLOCK_BRIDGE_PAUSE_S)) && gap * p->rate > p->gap_cur) {
      /* while playing, and between the packets seen while filling (not
       * the one after the first: that may end a backlog) */
      p->gap_cur = gap * p->rate;
    }
    p->ran_dry = 0;
  }
  p->last_write_t = t;
  p->last_write = frames;
  p->have_write = 1;
}

void
clock_packets_burst (ClockPackets * p)
{
  p->cluster = 0;
}

void
clock_packets_emptied (ClockPackets * p, int ran_dry)
{
  p->episode_clusters = 0;
  if (ran_dry)
    p->ran_dry = 1;
}

unsigned
clock_packets_count (const ClockPackets * p)
{
  return p->episode_clusters;
}

size_t
clock_packets_closed (const ClockPackets * p)
{
  return p->pkt_cur > p->pkt_prev ? p->pkt_cur : p->pkt_prev;
}

size_t
clock_packets_size (const ClockPackets * p)
{
  size_t closed = clock_packets_closed (p);

  return closed > p->cluster ? closed : p->cluster;
}

double
clock_packets_gap (const ClockPackets * p)
{
  double g = p->gap_cur > p->gap_prev ? p->gap_cur : p->gap_prev;
  double closed = (double) clock_packets_closed (p);

  return g > closed ? g : closed;
}
