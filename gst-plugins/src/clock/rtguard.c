/* rtguard: a real-time thread that runs too long without blocking is moved
 * to SCHED_OTHER, not ended with its process (rtguard.h). */
#define _GNU_SOURCE
#include "rtguard.h"

#include <errno.h>
#include <pthread.h>
#include <time.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

/* threads demoted and not yet polled: their tids (0: free) */
#define SLOTS 16

static pid_t slots[SLOTS];
/* threads inside rt_guard_realtime(): promoted, not yet woken as real-time */
static pid_t promoting[SLOTS];
static unsigned long pending;   /* tids in slots */
static unsigned long demotions;
static unsigned long soft_us;   /* the soft limit the handler restores */
static int installed;

static pid_t
own_tid (void)
{
  return (pid_t) syscall (SYS_gettid);
}

/* async-signal-safe: the first of table's SLOTS entries that held `from`
 * now holds `to`; its index, or -1 when none held `from` */
static int
slot_swap (pid_t * table, pid_t from, pid_t to)
{
  for (int i = 0; i < SLOTS; i++) {
    pid_t expected = from;
    if (__atomic_compare_exchange_n (&table[i], &expected, to, 0,
            __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
      return i;
  }
  return -1;
}

/* async-signal-safe: writes s (up to its NUL) */
static void
put (int fd, const char *s)
{
  size_t n = strlen (s);
  while (n > 0) {
    ssize_t w = write (fd, s, n);
    if (w <= 0)
      return;
    s += w;
    n -= (size_t) w;
  }
}

/* async-signal-safe: v in decimal into buf (at least 21 bytes) */
static const char *
decimal (unsigned long v, char *buf)
{
  char *p = buf + 20;
  *p = '\0';
  do {
    *--p = (char) ('0' + v % 10);
    v /= 10;
  } while (v > 0 && p > buf);
  return p;
}

/* "clockbridge: thread b:src (tid 123) used 200 ms of real-time CPU without
 * blocking: it runs SCHED_OTHER now\n" on stderr (the supervisor logs the
 * child's stderr) */
static void
say (pid_t tid)
{
  char comm[32] = "?", num[21];
  int fd = open ("/proc/thread-self/comm", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    ssize_t n = read (fd, comm, sizeof comm - 1);
    close (fd);
    if (n > 0) {
      comm[n] = '\0';
      if (comm[n - 1] == '\n')
        comm[n - 1] = '\0';
    }
  }
  put (2, "clockbridge: thread ");
  put (2, comm);
  put (2, " (tid ");
  put (2, decimal ((unsigned long) tid, num));
  put (2, ") used ");
  put (2, decimal (soft_us / 1000, num));
  put (2, " ms of real-time CPU without blocking: it runs SCHED_OTHER now\n");
}

/* async-signal-safe: the kernel raised the process's soft limit by a
 * second when it sent SIGXCPU: back to ours */
static void
restore_soft_limit (void)
{
  struct rlimit rt;
  if (getrlimit (RLIMIT_RTTIME, &rt) == 0 && rt.rlim_cur != soft_us) {
    rt.rlim_cur = soft_us;
    setrlimit (RLIMIT_RTTIME, &rt);
  }
}

static void
on_sigxcpu (int sig, siginfo_t * info, void *context)
{
  int saved = errno;
  struct rlimit cpu;
  struct sched_param other = {.sched_priority = 0 };
  pid_t tid = own_tid ();

  (void) info;
  (void) context;
  /* RLIMIT_CPU sends SIGXCPU too: with a finite one, not ours to judge */
  if (getrlimit (RLIMIT_CPU, &cpu) != 0 || cpu.rlim_cur != RLIM_INFINITY) {
    signal (sig, SIG_DFL);
    raise (sig);
    errno = saved;
    return;
  }
  /* A thread being promoted has not run real-time yet: the count is its last
   * real-time stretch's (a timer tick between the promotion and its first
   * wake-up).  Its sleep in rt_guard_realtime() clears the count. */
  for (int i = 0; i < SLOTS; i++)
    if (__atomic_load_n (&promoting[i], __ATOMIC_SEQ_CST) == tid) {
      restore_soft_limit ();
      errno = saved;
      return;
    }
  /* RLIMIT_RTTIME's soft limit: the kernel sends it to the thread that ran
   * over it (current), a SCHED_FIFO/RR one.  pid 0 is the calling thread. */
  sched_setscheduler (0, SCHED_OTHER, &other);
  restore_soft_limit ();
  if (slot_swap (slots, 0, tid) >= 0)
    __atomic_add_fetch (&pending, 1, __ATOMIC_SEQ_CST);
  __atomic_add_fetch (&demotions, 1, __ATOMIC_SEQ_CST);
  say (tid);
  errno = saved;
}

unsigned long
rt_guard_install (unsigned long limit_us)
{
  struct rlimit rt;
  struct sigaction old, sa;
  unsigned long want = limit_us;

  if (getrlimit (RLIMIT_RTTIME, &rt) != 0)
    return 0;
  if (rt.rlim_max != RLIM_INFINITY && rt.rlim_max / 2 < want)
    want = (unsigned long) (rt.rlim_max / 2);
  if (rt.rlim_cur == RLIM_INFINITY || rt.rlim_cur > want) {
    rt.rlim_cur = want;
    if (setrlimit (RLIMIT_RTTIME, &rt) != 0)
      return 0;
  }
  if (__atomic_exchange_n (&installed, 1, __ATOMIC_SEQ_CST))
    return __atomic_load_n (&soft_us, __ATOMIC_SEQ_CST);
  __atomic_store_n (&soft_us, (unsigned long) rt.rlim_cur, __ATOMIC_SEQ_CST);
  if (sigaction (SIGXCPU, NULL, &old) != 0 || old.sa_handler != SIG_DFL
      || (old.sa_flags & SA_SIGINFO))
    return 0;
  memset (&sa, 0, sizeof sa);
  sa.sa_sigaction = on_sigxcpu;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset (&sa.sa_mask);
  if (sigaction (SIGXCPU, &sa, NULL) != 0)
    return 0;
  return (unsigned long) rt.rlim_cur;
}

#ifdef RT_GUARD_TEST_FAULTS
/* tests only (tests/clock/meson.build, clock-rtguard-faults): a timer tick
 * between the promotion and the sleep, made certain by holding the CPU 10 ms
 * (ticks are at most 10 ms apart), and a first sleep that does not block */
static void
fault_hold_after_promotion (void)
{
  struct timespec a, b;
  clock_gettime (CLOCK_MONOTONIC, &a);
  do
    clock_gettime (CLOCK_MONOTONIC, &b);
  while ((b.tv_sec - a.tv_sec) * 1000000000LL + b.tv_nsec - a.tv_nsec <
      10000000LL);
}
#endif

static long
voluntary_switches (void)
{
  struct rusage ru;
  return getrusage (RUSAGE_THREAD, &ru) == 0 ? ru.ru_nvcsw : -1;
}

int
rt_guard_realtime (int priority)
{
  struct sched_param fifo = {.sched_priority = priority };
  struct timespec wake = {.tv_sec = 0,.tv_nsec = 50000 };
  int slot = slot_swap (promoting, 0, own_tid ()), err;

  err = pthread_setschedparam (pthread_self (), SCHED_FIFO, &fifo);
#ifdef RT_GUARD_TEST_FAULTS
  if (err == 0)
    fault_hold_after_promotion ();
#endif
  /* a sleep whose timer ran out before the thread got to block is no
   * wake-up: the count is cleared only by one that switched out */
  for (int tries = 0; err == 0 && tries < 8; tries++) {
    long before = voluntary_switches ();
    struct timespec left = wake;
#ifdef RT_GUARD_TEST_FAULTS
    if (tries == 0)
      left.tv_nsec = 0;
#endif
    while (nanosleep (&left, &left) != 0 && errno == EINTR);
    if (voluntary_switches () != before)
      break;
  }
  if (slot >= 0)
    __atomic_store_n (&promoting[slot], 0, __ATOMIC_SEQ_CST);
  return err;
}

RtGuardEvent
rt_guard_poll (RtGuardThread * t)
{
  if (t->demoted) {
    if (voluntary_switches () == t->nvcsw)
      return RT_GUARD_FINE;
    t->demoted = 0;
    return RT_GUARD_BLOCKED_SINCE;
  }
  if (__atomic_load_n (&pending, __ATOMIC_SEQ_CST) == 0)
    return RT_GUARD_FINE;
  if (t->tid == 0)
    t->tid = own_tid ();
  if (slot_swap (slots, t->tid, 0) >= 0) {
    __atomic_sub_fetch (&pending, 1, __ATOMIC_SEQ_CST);
    t->demoted = 1;
    t->nvcsw = voluntary_switches ();
    return RT_GUARD_DEMOTED;
  }
  return RT_GUARD_FINE;
}

unsigned long
rt_guard_demotions (void)
{
  return __atomic_load_n (&demotions, __ATOMIC_SEQ_CST);
}
