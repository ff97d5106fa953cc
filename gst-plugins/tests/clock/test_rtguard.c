/* rtguard (src/clock/rtguard.c) on the real kernel: a SCHED_FIFO thread
 * that spins past RLIMIT_RTTIME's soft limit is moved to SCHED_OTHER and the
 * process lives on (without the guard SIGXCPU ends it); the soft limit the
 * kernel raised is put back, so a second overrun is caught at the same
 * limit; the thread may return to real time once it has blocked, not before.
 *
 * Needs SCHED_FIFO (root or RLIMIT_RTPRIO): skipped (77) without it.  The
 * spins are bounded by the thread's own CPU time (at most SPIN_MAX_NS each),
 * so the outcome does not depend on the machine's speed or load; the limit
 * is 50 ms, so a spin holds one core for about that long. */
#define _GNU_SOURCE
#include "rtguard.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#define LIMIT_US 50000UL
#define SPIN_MAX_NS 1500000000LL       /* past the kernel's +1 s soft limit */

static int failures;

#define CHECK(cond, ...) do { \
    if (cond) { printf ("ok: "); printf (__VA_ARGS__); printf ("\n"); } \
    else { failures++; printf ("FAIL: "); printf (__VA_ARGS__); printf ("\n"); } \
  } while (0)

static long long
thread_cpu_ns (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* the kernel's policy for this thread (glibc's pthread_getschedparam
 * answers from what pthread_setschedparam last set) */
static int
policy_now (void)
{
  return sched_getscheduler (0);
}

/* spins (no system call that blocks) until the guard says this thread was
 * demoted or SPIN_MAX_NS of its CPU have gone; returns the CPU spent, ns,
 * and the event in *ev */
static long long
spin (RtGuardThread * g, RtGuardEvent * ev)
{
  long long start = thread_cpu_ns (), now = start;
  volatile double x = 1.0;

  *ev = RT_GUARD_FINE;
  while (now - start < SPIN_MAX_NS) {
    for (int i = 0; i < 20000; i++)
      x = x * 1.0000001 + 1e-9;
    *ev = rt_guard_poll (g);
    if (*ev != RT_GUARD_FINE)
      break;
    now = thread_cpu_ns ();
  }
  return thread_cpu_ns () - start;
}

static void *
spinner (void *arg)
{
  struct sched_param fifo = {.sched_priority = 1 };
  RtGuardThread g = { 0 };
  RtGuardEvent ev;
  struct rlimit rt;
  long long used;
  int *skip = arg;

  if (pthread_setschedparam (pthread_self (), SCHED_FIFO, &fifo) != 0) {
    *skip = 1;
    return NULL;
  }

  /* 1. the first overrun */
  used = spin (&g, &ev);
  CHECK (ev == RT_GUARD_DEMOTED, "a FIFO thread spinning past the soft limit "
      "is demoted (after %.0f ms of its CPU)", used / 1e6);
  CHECK (used >= (long long) LIMIT_US * 1000 / 2 && used < 1000000000LL,
      "at the soft limit (%.0f ms of CPU, limit %lu ms), not the kernel's "
      "second later", used / 1e6, LIMIT_US / 1000);
  CHECK (policy_now () == SCHED_OTHER, "it runs SCHED_OTHER now");
  CHECK (rt_guard_demotions () == 1, "one demotion counted (%lu)",
      rt_guard_demotions ());
  CHECK (getrlimit (RLIMIT_RTTIME, &rt) == 0 && rt.rlim_cur == LIMIT_US,
      "the soft limit the kernel raised is back at %lu µs (%lu)", LIMIT_US,
      (unsigned long) rt.rlim_cur);

  /* 2. not back to real time before it has blocked */
  {
    long long start = thread_cpu_ns ();
    RtGuardEvent e = RT_GUARD_FINE;
    volatile double x = 1.0;
    while (thread_cpu_ns () - start < 20000000LL && e == RT_GUARD_FINE) {
      for (int i = 0; i < 20000; i++)
        x = x * 1.0000001 + 1e-9;
      e = rt_guard_poll (&g);
    }
    CHECK (e == RT_GUARD_FINE, "while it has not blocked, the poll says "
        "nothing (%d)", (int) e);
  }
  {
    struct timespec ms2 = {.tv_sec = 0,.tv_nsec = 2000000 };
    nanosleep (&ms2, NULL);
  }
  CHECK (rt_guard_poll (&g) == RT_GUARD_BLOCKED_SINCE,
      "after a sleep the poll says it may ask for real time again");
  CHECK (rt_guard_poll (&g) == RT_GUARD_FINE, "once");

  /* 3. real time again: the second overrun is caught at the same limit */
  {
    int err = rt_guard_realtime (1);
    CHECK (err == 0 && policy_now () == SCHED_FIFO, "SCHED_FIFO again (%d)",
        err);
  }
  used = spin (&g, &ev);
  CHECK (ev == RT_GUARD_DEMOTED && used >= (long long) LIMIT_US * 1000 / 2
      && used < 1000000000LL,
      "the second overrun is demoted at the restored limit too (%.0f ms)",
      used / 1e6);
  CHECK (rt_guard_demotions () == 2, "two demotions counted (%lu)",
      rt_guard_demotions ());
  CHECK (policy_now () == SCHED_OTHER, "SCHED_OTHER again");
  return NULL;
}

int
main (void)
{
  pthread_t t;
  int skip = 0;
  unsigned long soft = rt_guard_install (LIMIT_US);
  struct rlimit rt;

  setvbuf (stdout, NULL, _IOLBF, 0);
  CHECK (soft == LIMIT_US, "installed, soft limit %lu µs", soft);
  CHECK (rt_guard_install (LIMIT_US) == LIMIT_US, "a second install keeps it");
  CHECK (getrlimit (RLIMIT_RTTIME, &rt) == 0 && rt.rlim_cur == LIMIT_US,
      "RLIMIT_RTTIME soft is %lu µs", LIMIT_US);
  if (pthread_create (&t, NULL, spinner, &skip) != 0)
    return 1;
  pthread_join (t, NULL);
  if (skip) {
    printf ("skip: SCHED_FIFO refused (no CAP_SYS_NICE or RLIMIT_RTPRIO)\n");
    return 77;
  }
  printf ("%s: %d failure(s)\n", failures ? "FAIL" : "PASS", failures);
  return failures ? 1 : 0;
}
