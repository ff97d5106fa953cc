/**
 * One watcher of the interfaces' links for the whole engine: every interface some running
 * output leg sends from is read once per period (one timer for all, running only while something
 * is watched), and each watcher of an interface hears when its link goes down or comes back.
 * The reader is injected (readSysfsLink in the engine; readings made up by the tests).
 */
import { isInterfaceName } from './interface-name.js';
import { linkDownCause, type LinkReading } from './link-state.js';

/** What a watcher of an interface hears: null while the link can carry packets, else why not ("no carrier on eth1"). */
export type LinkListener = (downCause: string | null) => void;

/** What the supervisors use: watch an interface while a child sends from it. */
export interface LinkWatch {
  /**
   * Calls `listener` at once with the interface's current state, then whenever it changes; the
   * returned function ends the watch. Throws for a name that is not an interface name.
   */
  watch(ifname: string, listener: LinkListener): () => void;
}

interface Watched {
  cause: string | null;
  listeners: Set<LinkListener>;
}

export interface LinkWatcherOptions {
  /** How often every watched interface is read, ms (the engine: 1000). */
  periodMs: number;
}

export class LinkWatcher implements LinkWatch {
  private readonly watched = new Map<string, Watched>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly read: (ifname: string) => LinkReading,
    private readonly options: LinkWatcherOptions,
  ) {}

  watch(ifname: string, listener: LinkListener): () => void {
    if (!isInterfaceName(ifname)) throw new Error(`not an interface name: ${JSON.stringify(ifname)}`);
    let entry = this.watched.get(ifname);
    if (entry === undefined) {
      entry = { cause: this.causeOf(ifname), listeners: new Set() };
      this.watched.set(ifname, entry);
    }
    // each call is its own watch, even with the same function
    const own: LinkListener = (cause) => listener(cause);
    entry.listeners.add(own);
    this.startTimer();
    own(entry.cause);
    return () => {
      const current = this.watched.get(ifname);
      if (current === undefined || !current.listeners.delete(own)) return;
      if (current.listeners.size === 0) this.watched.delete(ifname);
      if (this.watched.size === 0) this.stopTimer();
    };
  }

  /** Interfaces watched now. */
  interfaces(): string[] {
    return [...this.watched.keys()];
  }

  /** Reads every watched interface once; tells the watchers of those whose state changed. */
  poll(): void {
    for (const [ifname, entry] of [...this.watched]) {
      const cause = this.causeOf(ifname);
      if (cause === entry.cause) continue;
      entry.cause = cause;
      for (const listener of [...entry.listeners]) listener(cause);
    }
  }

  /** Ends the timer (the engine's close); watches still held do nothing more. */
  close(): void {
    this.stopTimer();
    this.watched.clear();
  }

  private causeOf(ifname: string): string | null {
    try {
      return linkDownCause(ifname, this.read(ifname));
    } catch (error) {
      return `cannot read the link of ${ifname}: ${error instanceof Error ? error.message : String(error)}`;
    }
  }

  private startTimer(): void {
    if (this.timer !== undefined) return;
    this.timer = setInterval(() => this.poll(), this.options.periodMs);
    this.timer.unref();
  }

  private stopTimer(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
  }
}
