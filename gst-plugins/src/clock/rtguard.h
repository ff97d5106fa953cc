/* rtguard: a real-time thread that runs too long without blocking is moved
 * to SCHED_OTHER, not ended with its process.
 *
 * RLIMIT_RTTIME bounds the CPU a SCHED_FIFO/RR thread may use without a
 * blocking call: at the soft limit the kernel sends SIGXCPU to that thread
 * (and raises the process's soft limit by a second), at the hard limit
 * SIGKILL.  SIGXCPU's default action ends the process: for a pipeline child
 * that is seconds of silence, its SRT callers dropped and a restart, for a
 * thread that may only have been catching up on a starved host.  With the
 * guard installed, SIGXCPU moves the thread that got it to SCHED_OTHER (it
 * can no longer starve the host), restores the soft limit, counts the event
 * and writes one line to stderr naming the thread.  The thread itself finds
 * out with rt_guard_poll() and may ask for real time again once it has
 * blocked (a spinning thread never blocks, so it stays SCHED_OTHER).
 *
 * Pure POSIX/Linux, no GStreamer types; the handler only makes
 * async-signal-safe calls. */
#ifndef CLOCK_RTGUARD_H
#define CLOCK_RTGUARD_H

#include <sys/types.h>

/* what rt_guard_poll() found for the calling thread */
typedef enum
{
  RT_GUARD_FINE = 0,            /* nothing happened (or still demoted, not blocked since) */
  RT_GUARD_DEMOTED,             /* the guard moved this thread to SCHED_OTHER since the last poll */
  RT_GUARD_BLOCKED_SINCE        /* demoted earlier and has blocked since: real time may be asked again */
} RtGuardEvent;

/* one per thread that asks for real time, owned by that thread */
typedef struct
{
  pid_t tid;                    /* 0 until the first poll */
  int demoted;
  long nvcsw;                   /* voluntary context switches when the demotion was seen */
} RtGuardThread;

/* Installs the SIGXCPU handler (once per process; not when SIGXCPU already
 * has a handler or is ignored) and lowers RLIMIT_RTTIME's soft limit to
 * limit_us, or to half the hard limit when that is lower (at the hard limit
 * the kernel sends SIGKILL, which no handler sees).  Returns the soft limit
 * now in force, µs, or 0 when the guard is not installed (the limit is
 * lowered anyway). */
unsigned long rt_guard_install (unsigned long limit_us);

/* Asks SCHED_FIFO `priority` for the calling thread; returns 0 or the error
 * (EPERM: no CAP_SYS_NICE or RLIMIT_RTPRIO).  Granted, the thread sleeps
 * 50 µs: the kernel counts RLIMIT_RTTIME from a real-time thread's last
 * wake-up, and a thread that was demoted and is promoted again would
 * otherwise carry its old count over the limit at once.  A SIGXCPU for that
 * old count (a timer tick before the sleep) is not a demotion. */
int rt_guard_realtime (int priority);

/* For the calling thread; cheap (one atomic load) while nothing happened. */
RtGuardEvent rt_guard_poll (RtGuardThread * t);

/* threads moved to SCHED_OTHER since the process started */
unsigned long rt_guard_demotions (void);

#endif
