/**
 * The engine's own threads above its children's, so that an operator can always reach it.
 *
 * Each child runs its output thread (the bridge and every step after it) at SCHED_FIFO 10, libsrt's
 * threads at 6 and its input thread at 5 (docs/clock.md). When the children together ask for more
 * CPU than the host has, those real-time threads take all of it but the kernel's reserve for
 * SCHED_OTHER (`sched_rt_runtime_us`, 5 %), which every other task shares: the engine, at
 * SCHED_OTHER, then answered /health in 5-19 s. At `engine.control_priority` (SCHED_FIFO, above
 * every child thread) the engine runs before any child's thread whenever it has work, and it has
 * little (a few % of a core), so the children lose almost nothing.
 *
 * Set once the servers listen, on every thread the process has then (V8's workers and libuv's
 * pool among them), with SCHED_RESET_ON_FORK: threads and processes started later, every child
 * included, begin at SCHED_OTHER. util-linux's `chrt` does the system call (Node has no binding).
 * A real-time thread that runs RLIMIT_RTTIME's soft limit without blocking gets SIGXCPU (the
 * unit's LimitRTTIME): the engine then puts itself back to SCHED_OTHER and says so, rather than
 * being ended by the signal's default action or, at the hard limit, by SIGKILL.
 */
import { execa } from 'execa';


export type ControlPriorityResult = { ok: true; priority: number } | { ok: false; reason: string };

/** `chrt` arguments that give every thread of `pid` SCHED_FIFO `priority`, reset on fork. */
function raiseArgs(pid: number, priority: number): string[] {
  return ['--all-tasks', '--reset-on-fork', '--fifo', '--pid', String(priority), String(pid)];
}

/** `chrt` arguments that put every thread of `pid` back to SCHED_OTHER. */
function lowerArgs(pid: number): string[] {
  return ['--all-tasks', '--other', '--pid', '0', String(pid)];
}

/** Runs chrt; undefined when it did it, else why not in its words. */
async function chrt(args: string[]): Promise<string | undefined> {
  const r = await execa('chrt', args, { reject: false, timeout: 5000, stdin: 'ignore' });
  if (r.exitCode === 0) return undefined;
  const said = r.stderr.trim().split('\n').at(-1) ?? '';
  return said !== '' ? said : r.shortMessage;
}

/**
 * Gives every thread of `pid` (default: this process) SCHED_FIFO `priority` with
 * SCHED_RESET_ON_FORK (the configuration keeps it above the children's, config/load.ts). Refused (no CAP_SYS_NICE and RLIMIT_RTPRIO below `priority`, a system call
 * filter, no chrt), the reason in chrt's words.
 */
export async function raiseControlPriority(priority: number, pid = process.pid): Promise<ControlPriorityResult> {
  if (!Number.isInteger(priority) || priority < 1 || priority > 99) return { ok: false, reason: `priority ${String(priority)} is not a SCHED_FIFO priority (1-99)` };
  const refused = await chrt(raiseArgs(pid, priority));
  return refused === undefined ? { ok: true, priority } : { ok: false, reason: refused };
}

/** Puts every thread of `pid` (default: this process) back to SCHED_OTHER. */
export async function lowerControlPriority(pid = process.pid): Promise<ControlPriorityResult> {
  const refused = await chrt(lowerArgs(pid));
  return refused === undefined ? { ok: true, priority: 0 } : { ok: false, reason: refused };
}

/** What the engine says about its own scheduling (the log's `control-priority` event). */
export interface PriorityLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

/**
 * Raises this process to `priority` (0: leaves it SCHED_OTHER and says nothing) and, once raised,
 * puts it back to SCHED_OTHER at the first SIGXCPU. Returns what undoes the handler.
 */
export async function holdControlPriority(priority: number, log: PriorityLog): Promise<() => void> {
  if (priority === 0) return () => undefined;
  const raised = await raiseControlPriority(priority);
  if (!raised.ok) {
    log.warn(
      { event: 'control-priority', priority, raised: false, reason: raised.reason },
      `engine.control_priority ${priority} refused (${raised.reason}): on a host whose pipelines ask for more CPU than it has, the API may answer late`,
    );
    return () => undefined;
  }
  log.info({ event: 'control-priority', priority, raised: true }, `the engine's threads run SCHED_FIFO ${priority}, above its children's`);
  // kept after the first: a second SIGXCPU's default action would end the engine
  let lowering = false;
  const onXcpu = (): void => {
    if (lowering) return;
    lowering = true;
    void lowerControlPriority().then((lowered) => {
      log.warn(
        { event: 'control-priority', priority: 0, raised: false, reason: 'SIGXCPU' },
        `a thread of the engine ran RLIMIT_RTTIME without blocking: the engine runs SCHED_OTHER from now on${lowered.ok ? '' : ` (lowering failed: ${lowered.reason})`}`,
      );
    });
  };
  process.on('SIGXCPU', onXcpu);
  return () => process.off('SIGXCPU', onXcpu);
}
