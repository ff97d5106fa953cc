/**
 * Real-time scheduling of the children's threads. The clock bridge asks SCHED_FIFO for its output
 * thread (priority 10: the graph from the bridge down to udpsink) and its input thread (5), and
 * says in its message whether it got it (docs/elements-clockbridge.md). Refused, the threads run
 * SCHED_OTHER and a busy host delays packets. /health warns while no running pipeline's output
 * thread runs real time, with the reason read from the engine's own process: the children
 * inherit its limits, its capabilities and its system call filter.
 *
 * The reason is a pure function of the texts of /proc/self/limits and /proc/self/status, so it is
 * tested on fixture text; readOwnProcess() reads them.
 */
import { readFileSync } from 'node:fs';

/** The priority the clock bridge asks for its output thread (gst-plugins/src/clock/gstclockbridge.c). */
export const OUTPUT_RT_PRIORITY = 10;

/** CAP_SYS_NICE (linux/capability.h): SCHED_FIFO at any priority, whatever RLIMIT_RTPRIO says. */
const CAP_SYS_NICE = 23n;

/** /health's word on it (`realtime_refused`), present only while it holds. */
export interface RealtimeRefused {
  /** Running pipelines and stations whose clock bridge reported its output thread's scheduling. */
  pipelines: number;
  /** Why SCHED_FIFO was refused, as far as the engine's own process tells (realtimeRefusal). */
  reason: string;
}

/** The texts the reason is read from; undefined where they could not be read. */
export interface OwnProcess {
  /** /proc/self/limits */
  limits: string | undefined;
  /** /proc/self/status */
  status: string | undefined;
}

/** A limit of /proc/PID/limits: Infinity for `unlimited`. */
export interface Limit {
  soft: number;
  hard: number;
}

/** One line of /proc/PID/limits by its name (`Max realtime priority`); undefined when absent or unreadable. */
export function limitOf(limits: string, name: string): Limit | undefined {
  for (const line of limits.split('\n')) {
    if (!line.startsWith(name)) continue;
    const [soft, hard] = line.slice(name.length).trim().split(/\s+/);
    const value = (s: string | undefined): number => (s === 'unlimited' ? Number.POSITIVE_INFINITY : s !== undefined && /^\d+$/.test(s) ? Number(s) : Number.NaN);
    const limit = { soft: value(soft), hard: value(hard) };
    return Number.isNaN(limit.soft) || Number.isNaN(limit.hard) ? undefined : limit;
  }
  return undefined;
}

/** A field of /proc/PID/status (`Seccomp`, `CapEff`); undefined when absent. */
function statusField(status: string | undefined, name: string): string | undefined {
  return status === undefined ? undefined : new RegExp(`^${name}:\\s*(\\S+)`, 'm').exec(status)?.[1];
}

const show = (n: number): string => (n === Number.POSITIVE_INFINITY ? 'unlimited' : String(n));

/**
 * Why SCHED_FIFO priority OUTPUT_RT_PRIORITY is refused to the engine's children, from its own
 * process: RLIMIT_RTPRIO below the priority (without CAP_SYS_NICE) is the reason where it is so;
 * otherwise the system call filter where there is one (a systemd unit's RestrictRealtime=yes, or
 * sched_setscheduler not allowed), else the kernel's real-time budget of the cgroup.
 */
export function realtimeRefusal({ limits, status }: OwnProcess): string {
  const rtprio = limits === undefined ? undefined : limitOf(limits, 'Max realtime priority');
  const capEff = statusField(status, 'CapEff');
  const sysNice = capEff !== undefined && /^[0-9a-f]+$/i.test(capEff) && ((BigInt(`0x${capEff}`) >> CAP_SYS_NICE) & 1n) === 1n;
  const seccomp = statusField(status, 'Seccomp');
  if (!sysNice) {
    if (rtprio === undefined) return "the engine's RLIMIT_RTPRIO is unknown (/proc/self/limits unreadable)";
    if (rtprio.soft < OUTPUT_RT_PRIORITY) {
      const grant = rtprio.hard < OUTPUT_RT_PRIORITY
        ? `no limit of ${OUTPUT_RT_PRIORITY} was granted (the unit's LimitRTPRIO: a service manager without CAP_SYS_RESOURCE, as in a container, cannot raise the hard limit) and the engine has no CAP_SYS_NICE`
        : `the soft limit is below the hard one: set LimitRTPRIO=${OUTPUT_RT_PRIORITY} (or ulimit -r ${OUTPUT_RT_PRIORITY})`;
      return `the engine's RLIMIT_RTPRIO is ${show(rtprio.soft)} (hard ${show(rtprio.hard)}), below the output thread's priority ${OUTPUT_RT_PRIORITY}: ${grant}`;
    }
  }
  const allowed = sysNice ? 'the engine has CAP_SYS_NICE' : `the engine's RLIMIT_RTPRIO is ${show(rtprio?.soft ?? Number.NaN)}`;
  if (seccomp !== undefined && seccomp !== '0') {
    return `${allowed}, so its system call filter refused it (a systemd unit's RestrictRealtime=yes, or sched_setscheduler not allowed)`;
  }
  return `${allowed} and it has no system call filter: the kernel refused it (the cgroup's real-time budget, cpu.rt_runtime_us)`;
}

/**
 * The warning's facts when there are running pipelines whose output thread's scheduling is known
 * and none runs real time; undefined otherwise (nothing runs, nothing said yet, or one is real
 * time). `outputs`: each running pipeline's (and station's) `output_realtime`, null when unknown.
 */
export function realtimeRefused(outputs: Iterable<boolean | null | undefined>, own: () => OwnProcess): RealtimeRefused | undefined {
  let known = 0;
  for (const output of outputs) {
    if (output === true) return undefined;
    if (output === false) known += 1;
  }
  return known === 0 ? undefined : { pipelines: known, reason: realtimeRefusal(own()) };
}

/** The /health and GetHealth warning. */
export function realtimeWarning(refused: RealtimeRefused): string {
  return `no pipeline's output thread runs real-time (${refused.pipelines} running; SCHED_FIFO ${OUTPUT_RT_PRIORITY} refused: ${refused.reason})`;
}

/** The engine's own /proc/self/limits and /proc/self/status (procfs: no disk, cheap). */
export function readOwnProcess(): OwnProcess {
  const read = (file: string): string | undefined => {
    try {
      return readFileSync(file, 'utf8');
    } catch {
      return undefined;
    }
  };
  return { limits: read('/proc/self/limits'), status: read('/proc/self/status') };
}
