/*
 * The floor reference of the cost bench (bench/cost.ts): the least a process can do to send one
 * pipeline's RTP the way the engine does, and nothing else. Every 4 ms boundary of CLOCK_TAI
 * (clock_nanosleep, TIMER_ABSTIME) it sends 4 RTP L24 packets of 1 ms (48 stereo frames, 288
 * bytes of payload) with one sendmmsg, each stamped with the AES67 media-clock timestamp of its
 * first sample (floor(t * 48000 / 1e9) mod 2^32, t the boundary + 1 ms per packet before it).
 * The payload is a fixed non-zero pattern (no audio work). It runs SCHED_FIFO 10 where the
 * process may (the engine's output thread's priority), as the engine's output thread does.
 *
 *   floor-sender HOST PORT [SECONDS [realtime]]   (SECONDS 0 or absent: until SIGTERM / SIGINT;
 *                                                  realtime: CLOCK_REALTIME instead of CLOCK_TAI)
 *
 * Prints one JSON line on start ({"realtime": true|false}) and one at the end: packets sent, the
 * sends that woke more than 1 ms after their boundary and the latest (ns). It exits when its
 * parent dies (PR_SET_PDEATHSIG), so it never outlives the bench.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define PACKETS 4
#define FRAMES 48
#define CHANNELS 2
#define PAYLOAD (FRAMES * CHANNELS * 3)
#define PERIOD_NS 4000000LL
#define PACKET_NS 1000000LL

static volatile sig_atomic_t stop;

static void on_signal(int sig) {
  (void)sig;
  stop = 1;
}

static int64_t ns_of(const struct timespec *t) { return (int64_t)t->tv_sec * 1000000000LL + t->tv_nsec; }

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: floor-sender HOST PORT [SECONDS [realtime]]\n");
    return 2;
  }
  double seconds = argc > 3 ? atof(argv[3]) : 0;
  const clockid_t clock = argc > 4 && strcmp(argv[4], "realtime") == 0 ? CLOCK_REALTIME : CLOCK_TAI;
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  signal(SIGTERM, on_signal);
  signal(SIGINT, on_signal);

  struct sched_param sp = {.sched_priority = 10};
  int realtime = sched_setscheduler(0, SCHED_FIFO, &sp) == 0;
  printf("{\"realtime\":%s}\n", realtime ? "true" : "false");
  fflush(stdout);

  int fd = socket(AF_INET, SOCK_DGRAM, 0);
  if (fd < 0) {
    perror("socket");
    return 1;
  }
  struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[2]))};
  if (inet_pton(AF_INET, argv[1], &to.sin_addr) != 1) {
    fprintf(stderr, "floor-sender: %s is not an IPv4 address\n", argv[1]);
    return 2;
  }

  static uint8_t packets[PACKETS][12 + PAYLOAD];
  struct iovec iov[PACKETS];
  struct mmsghdr msgs[PACKETS];
  memset(msgs, 0, sizeof msgs);
  for (int i = 0; i < PACKETS; i++) {
    for (int b = 0; b < PAYLOAD; b++) packets[i][12 + b] = (uint8_t)(b * 7 + 1); /* never silent */
    packets[i][0] = 0x80; /* V=2 */
    packets[i][1] = 96;   /* PT */
    iov[i].iov_base = packets[i];
    iov[i].iov_len = sizeof packets[i];
    msgs[i].msg_hdr.msg_name = &to;
    msgs[i].msg_hdr.msg_namelen = sizeof to;
    msgs[i].msg_hdr.msg_iov = &iov[i];
    msgs[i].msg_hdr.msg_iovlen = 1;
  }
  const uint32_t ssrc = 0x464c4f52; /* "FLOR" */
  uint16_t seq = 0;

  struct timespec now;
  clock_gettime(clock, &now);
  int64_t next = (ns_of(&now) / PERIOD_NS + 1) * PERIOD_NS;
  const int64_t end = seconds > 0 ? ns_of(&now) + (int64_t)(seconds * 1e9) : INT64_MAX;
  uint64_t sent = 0, late = 0;
  int64_t worst = 0;

  while (!stop && next < end) {
    struct timespec due = {.tv_sec = next / 1000000000LL, .tv_nsec = next % 1000000000LL};
    int rc = clock_nanosleep(clock, TIMER_ABSTIME, &due, NULL);
    if (rc == EINTR) continue;
    clock_gettime(clock, &now);
    int64_t lateness = ns_of(&now) - next;
    if (lateness > PACKET_NS) late++;
    if (lateness > worst) worst = lateness;
    for (int i = 0; i < PACKETS; i++) {
      uint8_t *p = packets[i];
      int64_t t = next + i * PACKET_NS;
      /* media clock: floor(t * 48000 / 1e9) = floor(t * 6 / 125000) mod 2^32 */
      uint32_t ts = (uint32_t)((uint64_t)(t / 125000) * 6 + (uint64_t)(t % 125000) * 6 / 125000);
      p[2] = (uint8_t)(seq >> 8);
      p[3] = (uint8_t)seq;
      p[4] = (uint8_t)(ts >> 24);
      p[5] = (uint8_t)(ts >> 16);
      p[6] = (uint8_t)(ts >> 8);
      p[7] = (uint8_t)ts;
      p[8] = (uint8_t)(ssrc >> 24);
      p[9] = (uint8_t)(ssrc >> 16);
      p[10] = (uint8_t)(ssrc >> 8);
      p[11] = (uint8_t)ssrc;
      seq++;
    }
    int n = sendmmsg(fd, msgs, PACKETS, 0);
    if (n > 0) sent += (uint64_t)n;
    /* late or not, the next period follows: every packet is sent, none skipped (as the engine) */
    next += PERIOD_NS;
  }
  printf("{\"packets\":%llu,\"late_wakeups\":%llu,\"worst_wakeup_late_ns\":%lld}\n", (unsigned long long)sent,
         (unsigned long long)late, (long long)worst);
  close(fd);
  return 0;
}
