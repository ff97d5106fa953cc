/*
 * rtp-counter: the RTP receivers of the engine scale benchmark (bench/engine.ts), one process for
 * all N pipelines. Counts RTP packets and sequence gaps per UDP socket, as the old per-pipeline
 * Node counter did (and test/helpers/rtp-receiver.ts does), without decoding the payload.
 *
 *   rtp-counter N [PACE_US]
 *
 * Judges the audio too: the payload is L24 (RFC 3190) of CHANNELS channels (default 2); a run of at
 * least SILENT_RUN_FRAMES (8) frames in which every sample is exactly 0 is inserted digital silence
 * (a never-silent programme, pink noise or tones through the engine's steps, has no such run: a
 * 24-bit sample of a -23 LUFS programme is 0 about once in millions). Runs are counted across packet
 * boundaries of a socket; a sequence gap ends a run.
 *
 *   rtp-counter N [PACE_US [CHANNELS]]
 *
 * Binds N UDP sockets on 127.0.0.1 (ephemeral ports, SO_RCVBUF 4 MiB) and prints one JSON line:
 *   {"ports":[P1,...,PN],"rcvbuf":BYTES,"nice":NICE}
 * then reads commands on stdin, one a line, and answers each with one line on stdout:
 *   reset     -> ok            counters to zero; the next packet of each socket is not a gap
 *   snapshot  -> {"window_s":S,"sockets":[{"port":P,"packets":X,"gaps":G,"drops":D,
 *                  "silent_frames":F,"silences":K,"longest_silence":L,"audio_frames":A},...]}
 *                S = seconds since the last reset (CLOCK_MONOTONIC, or since start); F = frames in
 *                silent runs, K = silent runs that ended (or are going on), L = the longest run's
 *                frames, A = frames with a sample that is not 0 (the programme has arrived: an
 *                engine's bridge sends silence until it does), all since the last reset (a run
 *                going on at the reset counts from it); D = datagrams
 *                the kernel dropped on that socket's full receive buffer since then (SO_RXQ_OVFL):
 *                a gap that is the counter's own fault, not the sender's
 *   (other)   -> error unknown command
 * A packet counts when it is at least 12 bytes long and its version field is 2; it is a gap
 * when its sequence number is not the previous one + 1 (mod 65536).
 *
 * Waits with epoll, reads with recvmmsg (64 datagrams a call, only their first 16 bytes: MSG_TRUNC
 * gives the real length), then sleeps PACE_US microseconds (default 1000, 0 = none) so that the
 * cost is a few wake-ups per millisecond whatever N is; the kernel buffers hold the packets
 * meanwhile. Exits when stdin closes, on SIGTERM/SIGINT/SIGHUP and when its parent dies.
 *
 * It asks for nice -10 (allowed as root; NICE in the first line says what it got): when the
 * pipelines saturate the cores, a counter at nice 0 gets one share among a hundred busy threads,
 * falls behind the packets, answers seconds late and counts its own lateness as the pipelines'
 * rate. A receiver on another host would not be starved; nice -10 makes it run when it wakes. It
 * needs the same CPU either way (a few % of a core), and it sleeps 1 ms every round.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include <time.h>
#include <unistd.h>

#define BATCH 64
#define DATAGRAM 1500
#define SILENT_RUN_FRAMES 8
#define MAX_SOCKETS 4096
#define RCVBUF (4 * 1024 * 1024)

struct counter {
	int fd;
	int port;
	uint64_t packets;
	uint64_t gaps;
	int last_seq; /* -1: none yet in this window */
	uint32_t drops_total; /* kernel's count for the socket (SO_RXQ_OVFL), as last seen */
	uint32_t drops_at_reset;
	uint64_t zero_run;        /* frames of the all-zero run going on */
	uint64_t silent_frames;   /* frames in silent runs (>= SILENT_RUN_FRAMES) since the reset */
	uint64_t silences;        /* silent runs since the reset */
	uint64_t longest_silence; /* frames */
	uint64_t audio_frames;    /* frames with a non-zero sample since the reset */
};

static int channels = 2;

static struct counter *counters;
static int n_counters;
static double window_start;

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what)
{
	fprintf(stderr, "rtp-counter: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* Writes all of buf to stdout; exits when stdout is gone. */
static void write_all(const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t w = write(STDOUT_FILENO, buf, len);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			exit(0);
		}
		buf += w;
		len -= (size_t)w;
	}
}

static void reset_all(void)
{
	for (int i = 0; i < n_counters; i++) {
		counters[i].packets = 0;
		counters[i].gaps = 0;
		counters[i].last_seq = -1;
		counters[i].drops_at_reset = counters[i].drops_total;
		counters[i].zero_run = 0;
		counters[i].silent_frames = 0;
		counters[i].silences = 0;
		counters[i].longest_silence = 0;
		counters[i].audio_frames = 0;
	}
	window_start = now_s();
}

static void snapshot(void)
{
	size_t cap = 64 + (size_t)n_counters * 224;
	char *buf = malloc(cap);
	if (buf == NULL)
		die("malloc");
	size_t len = (size_t)snprintf(buf, cap, "{\"window_s\":%.6f,\"sockets\":[", now_s() - window_start);
	for (int i = 0; i < n_counters; i++) {
		const struct counter *c = &counters[i];
		/* a run going on counts as far as it got */
		uint64_t run = c->zero_run >= SILENT_RUN_FRAMES ? c->zero_run : 0;
		len += (size_t)snprintf(buf + len, cap - len,
					"%s{\"port\":%d,\"packets\":%llu,\"gaps\":%llu,\"drops\":%u,"
					"\"silent_frames\":%llu,\"silences\":%llu,\"longest_silence\":%llu,"
					"\"audio_frames\":%llu}",
					i == 0 ? "" : ",", c->port, (unsigned long long)c->packets,
					(unsigned long long)c->gaps, c->drops_total - c->drops_at_reset,
					(unsigned long long)(c->silent_frames + run),
					(unsigned long long)(c->silences + (run > 0)),
					(unsigned long long)(run > c->longest_silence ? run : c->longest_silence),
					(unsigned long long)c->audio_frames);
	}
	len += (size_t)snprintf(buf + len, cap - len, "]}\n");
	write_all(buf, len);
	free(buf);
}

static void command(const char *line)
{
	if (strcmp(line, "reset") == 0) {
		reset_all();
		write_all("ok\n", 3);
	} else if (strcmp(line, "snapshot") == 0) {
		snapshot();
	} else if (line[0] != '\0') {
		const char *msg = "error unknown command\n";
		write_all(msg, strlen(msg));
	}
}

/* Reads what stdin has; runs each whole line. Returns 0 when stdin is closed. */
static int read_stdin(void)
{
	static char line[256];
	static size_t used;
	char buf[1024];
	ssize_t r = read(STDIN_FILENO, buf, sizeof buf);
	if (r < 0)
		return errno == EINTR || errno == EAGAIN;
	if (r == 0)
		return 0;
	for (ssize_t i = 0; i < r; i++) {
		char ch = buf[i];
		if (ch == '\n') {
			line[used] = '\0';
			if (used > 0 && line[used - 1] == '\r')
				line[used - 1] = '\0';
			command(line);
			used = 0;
		} else if (used < sizeof line - 1) {
			line[used++] = ch;
		}
	}
	return 1;
}

static union {
	char buf[CMSG_SPACE(sizeof(uint32_t))];
	struct cmsghdr align;
} controls[BATCH];
static unsigned char heads[BATCH][DATAGRAM];
static struct iovec iovs[BATCH];
static struct mmsghdr msgs[BATCH];

/* A silent run ended (a non-zero frame, a sequence gap): counted when long enough. */
static void end_run(struct counter *c)
{
	if (c->zero_run >= SILENT_RUN_FRAMES) {
		c->silent_frames += c->zero_run;
		c->silences++;
		if (c->zero_run > c->longest_silence)
			c->longest_silence = c->zero_run;
	}
	c->zero_run = 0;
}

/* The L24 payload of one packet (after the header, CSRCs and extension): silent runs. */
static void judge_payload(struct counter *c, const unsigned char *p, size_t len)
{
	size_t head = 12 + 4 * (size_t)(p[0] & 0x0f);
	if ((p[0] & 0x10) != 0 && len >= head + 4)
		head += 4 + 4 * (size_t)((p[head + 2] << 8) | p[head + 3]);
	if (len <= head)
		return;
	size_t frame = 3 * (size_t)channels;
	const unsigned char *a = p + head;
	size_t frames = (len - head) / frame;
	for (size_t f = 0; f < frames; f++, a += frame) {
		int zero = 1;
		for (size_t b = 0; b < frame; b++) {
			if (a[b] != 0) {
				zero = 0;
				break;
			}
		}
		if (zero) {
			c->zero_run++;
		} else {
			end_run(c);
			c->audio_frames++;
		}
	}
}

/* Reads every datagram queued on the socket (bounded: at most 64 batches a call). */
static void drain(struct counter *c)
{
	for (int round = 0; round < 64; round++) {
		for (int i = 0; i < BATCH; i++) {
			msgs[i].msg_hdr.msg_control = controls[i].buf;
			msgs[i].msg_hdr.msg_controllen = sizeof controls[i].buf;
			msgs[i].msg_hdr.msg_flags = 0;
		}
		int got = recvmmsg(c->fd, msgs, BATCH, MSG_DONTWAIT, NULL);
		if (got <= 0)
			return;
		for (int i = 0; i < got; i++) {
			const unsigned char *p = heads[i];
			for (struct cmsghdr *cm = CMSG_FIRSTHDR(&msgs[i].msg_hdr); cm != NULL;
			     cm = CMSG_NXTHDR(&msgs[i].msg_hdr, cm)) {
				if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SO_RXQ_OVFL)
					memcpy(&c->drops_total, CMSG_DATA(cm), sizeof(uint32_t));
			}
			if (msgs[i].msg_len < 12 || (p[0] >> 6) != 2)
				continue;
			int seq = (p[2] << 8) | p[3];
			if (c->last_seq >= 0 && seq != ((c->last_seq + 1) & 0xffff)) {
				c->gaps++;
				end_run(c);
			}
			judge_payload(c, p, msgs[i].msg_len);
			c->last_seq = seq;
			c->packets++;
		}
		if (got < BATCH)
			return;
	}
}

int main(int argc, char **argv)
{
	if (argc < 2 || argc > 4) {
		fprintf(stderr, "usage: rtp-counter N [PACE_US [CHANNELS]]\n");
		return 2;
	}
	n_counters = atoi(argv[1]);
	long pace_us = argc >= 3 ? atol(argv[2]) : 1000;
	channels = argc == 4 ? atoi(argv[3]) : 2;
	if (n_counters < 1 || n_counters > MAX_SOCKETS || pace_us < 0 || pace_us > 100000 || channels < 1 || channels > 8) {
		fprintf(stderr, "rtp-counter: N is 1-%d, PACE_US 0-100000, CHANNELS 1-8\n", MAX_SOCKETS);
		return 2;
	}

	prctl(PR_SET_PDEATHSIG, SIGTERM);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_DFL);
	setpriority(PRIO_PROCESS, 0, -10); /* fails without CAP_SYS_NICE: nice 0 then */
	errno = 0;
	int nice_now = getpriority(PRIO_PROCESS, 0);
	if (errno != 0)
		nice_now = 0;

	for (int i = 0; i < BATCH; i++) {
		iovs[i].iov_base = heads[i];
		iovs[i].iov_len = DATAGRAM;
		memset(&msgs[i], 0, sizeof msgs[i]);
		msgs[i].msg_hdr.msg_iov = &iovs[i];
		msgs[i].msg_hdr.msg_iovlen = 1;
	}

	int ep = epoll_create1(EPOLL_CLOEXEC);
	if (ep < 0)
		die("epoll_create1");
	struct epoll_event ev = { .events = EPOLLIN, .data.u32 = UINT32_MAX };
	if (epoll_ctl(ep, EPOLL_CTL_ADD, STDIN_FILENO, &ev) < 0)
		die("epoll_ctl stdin");

	counters = calloc((size_t)n_counters, sizeof *counters);
	if (counters == NULL)
		die("calloc");
	int rcvbuf = 0;
	for (int i = 0; i < n_counters; i++) {
		struct counter *c = &counters[i];
		c->fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (c->fd < 0)
			die("socket");
		int size = RCVBUF;
		/* SO_RCVBUFFORCE passes net.core.rmem_max when allowed (CAP_NET_ADMIN) */
		if (setsockopt(c->fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof size) < 0)
			setsockopt(c->fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
		int one = 1;
		setsockopt(c->fd, SOL_SOCKET, SO_RXQ_OVFL, &one, sizeof one);
		struct sockaddr_in addr = { .sin_family = AF_INET, .sin_port = 0 };
		addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		if (bind(c->fd, (struct sockaddr *)&addr, sizeof addr) < 0)
			die("bind 127.0.0.1");
		socklen_t alen = sizeof addr;
		if (getsockname(c->fd, (struct sockaddr *)&addr, &alen) < 0)
			die("getsockname");
		c->port = ntohs(addr.sin_port);
		socklen_t slen = sizeof rcvbuf;
		getsockopt(c->fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, &slen);
		struct epoll_event sev = { .events = EPOLLIN, .data.u32 = (uint32_t)i };
		if (epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &sev) < 0)
			die("epoll_ctl socket");
	}
	reset_all();

	{
		size_t cap = 64 + (size_t)n_counters * 8;
		char *buf = malloc(cap);
		if (buf == NULL)
			die("malloc");
		size_t len = (size_t)snprintf(buf, cap, "{\"ports\":[");
		for (int i = 0; i < n_counters; i++)
			len += (size_t)snprintf(buf + len, cap - len, "%s%d", i == 0 ? "" : ",", counters[i].port);
		len += (size_t)snprintf(buf + len, cap - len, "],\"rcvbuf\":%d,\"nice\":%d}\n", rcvbuf, nice_now);
		write_all(buf, len);
		free(buf);
	}

	int max_events = n_counters + 1;
	struct epoll_event *events = calloc((size_t)max_events, sizeof *events);
	if (events == NULL)
		die("calloc");
	const struct timespec pace = { .tv_sec = 0, .tv_nsec = pace_us * 1000 };
	while (!stop_requested) {
		int n = epoll_wait(ep, events, max_events, -1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			die("epoll_wait");
		}
		int stdin_ready = 0;
		for (int i = 0; i < n; i++) {
			if (events[i].data.u32 == UINT32_MAX)
				stdin_ready = 1;
			else
				drain(&counters[events[i].data.u32]);
		}
		/* commands after the packets of this round, so a snapshot includes them */
		if (stdin_ready && !read_stdin())
			break;
		if (pace_us > 0)
			nanosleep(&pace, NULL);
	}
	return 0;
}
