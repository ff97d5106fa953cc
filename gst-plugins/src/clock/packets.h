/* packets: the clock bridge's input packet pattern (pure C, no GStreamer
 * types).
 *
 * Input arrives in packets: P frames arriving together (writes less than
 * half a write's duration and CLOCK_BRIDGE_CLUSTER_S apart).  An ffmpeg
 * MPEG-TS sender packs 8 AAC frames (170 ms) per PES, decoded back to
 * back; a steady sender one frame (21 ms); an Icecast source leaves 93 ms
 * holes and then catches up.  P is the largest packet in this and the
 * previous window of CLOCK_BRIDGE_PACKET_WINDOW_S of input time (the last
 * 10-20 s); G, the longest time between packets (frames), the same way,
 * counted while the output plays and between the packets seen while
 * filling (not the one after the first: that may end a backlog).
 *
 * Not a packet: the first after (re)connecting (the FIFO was emptied and
 * no packet completed since: a demuxer's or a sender's backlog), a burst
 * the bridge trimmed (clock_packets_burst), and, unless the input is
 * paced, one that carried more than CLOCK_BRIDGE_BACKLOG_RATIO x the time
 * to the next one (a late packet's backlog on a busy host, a stream's
 * start released at once: the sender's packets are as long as the time
 * between them; a paced input's bursts are its pages: they count).
 *
 * A write after CLOCK_BRIDGE_PAUSE_S or more without input begins a new
 * stream (maybe another sender, an SRT caller after the last left): the
 * pattern is learnt again.  A write after a shorter gap that ran the FIFO
 * dry (clock_packets_emptied with ran_dry) ends a dry gap; when the packet
 * it begins is complete and carried at least half the gap's audio, the
 * gap was lateness, not a loss (the sender held the audio, a busy host):
 * it becomes part of G.  A small packet after the gap is a stall (the
 * audio of the gap is gone): nothing is learnt.  clock_packets_note says
 * which of these a write was, for the bridge to act on. */
#ifndef CLOCK_PACKETS_H
#define CLOCK_PACKETS_H

#include <stddef.h>

#define CLOCK_BRIDGE_CLUSTER_S 0.005
#define CLOCK_BRIDGE_BACKLOG_RATIO 1.5
#define CLOCK_BRIDGE_PACKET_WINDOW_S 10.0
#define CLOCK_BRIDGE_PAUSE_S 1.0

typedef struct
{
  unsigned rate;
  int paced;                    /* the input waits: its bursts are packets */
  size_t cluster;               /* frames of the packet arriving now */
  /* the largest packet (frames) in this and the previous window, the
   * window's start */
  size_t pkt_cur, pkt_prev;
  double window_t0;
  double gap_cur, gap_prev;     /* the longest gap between packets, frames */
  size_t last_write;            /* the last write: frames, arrival time */
  double last_write_t;
  int have_write;               /* a write since the start (or a pause) */
  unsigned episode_clusters;    /* packets completed since the FIFO emptied */
  int ran_dry;                  /* the FIFO ran dry, no packet since */
  double dry_gap;               /* s: the gap that ran it dry, its packet
                                 * still arriving */
} ClockPackets;

/* what a write was, for the bridge to act on */
typedef struct
{
  /* the write came after CLOCK_BRIDGE_PAUSE_S or more without input: a new
   * stream (the pattern is learnt again) */
  int new_stream;
  /* > 0: the write ended a gap that ran the FIFO dry (s); its packet is
   * judged when complete */
  double dry_gap_s;
  /* > 0: the packet after a dry gap is complete and carried at least half
   * the gap's audio: the gap (s) was late input, now part of G; that
   * packet's frames */
  double late_gap_s;
  size_t late_packet;
} ClockPacketsNote;

/* rate: frames per second; paced: see above */
void clock_packets_init (ClockPackets * p, unsigned rate, int paced);
/* forgets everything (a flush) */
void clock_packets_reset (ClockPackets * p);
/* a write came before, and more than s before t */
int clock_packets_idle (const ClockPackets * p, double t, double s);
/* a write of `frames` arriving at t (s); playing: the bridge's output is
 * playing (not filling).  Fills *note. */
void clock_packets_note (ClockPackets * p, size_t frames, double t,
    int playing, ClockPacketsNote * note);
/* the packet arriving now overran the FIFO: a burst, not a packet */
void clock_packets_burst (ClockPackets * p);
/* the FIFO was emptied (ran_dry: an underrun; else a drain): the packets
 * of the next filling are counted from none */
void clock_packets_emptied (ClockPackets * p, int ran_dry);
/* packets completed since the FIFO was emptied */
unsigned clock_packets_count (const ClockPackets * p);
/* P from the packets that are complete (frames) */
size_t clock_packets_closed (const ClockPackets * p);
/* P including the packet arriving now (frames) */
size_t clock_packets_size (const ClockPackets * p);
/* G, at least P from the complete packets (frames) */
double clock_packets_gap (const ClockPackets * p);

#endif
