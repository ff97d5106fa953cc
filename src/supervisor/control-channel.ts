/**
 * The engine's end of a child's control channel (docs/elements-enginecontrol.md): numbered
 * `v1 <id> set <element>.<property>=<value> ...` lines written to the child's control
 * descriptor, each answered by an `enginecontrol` acknowledgement on the child's stdout. A
 * command that gets no answer within `timeoutMs` is written again once (same id: the element
 * applies a command as a whole, so a repeat sets the same values); then it fails.
 *
 * Only assignments that passed `checkAssignment` reach the line: element names are the
 * compiler's `stepN`, properties a fixed set, values numbers or EQ band lists. No free text.
 */
import type { Writable } from 'node:stream';
import type { Assignment } from '../compiler/update.js';
import { ChangeRefusedError, UnavailableError } from '../errors.js';
import type { ControlAckEvent } from '../stats/parse-line.js';

export type { Assignment };

const ELEMENT = /^[a-z][a-z0-9_]{0,31}$/;
const PROPERTY = /^[a-z][a-z0-9-]{0,63}$/;
const VALUE = /^[-+.,:0-9a-z]{1,1024}$/;
const MAX_ASSIGNMENTS = 32;

/** Why a control command did not apply. `timeout`: the child never answered (twice). */
export class ControlFailure extends Error {
  constructor(
    readonly reason: 'timeout' | 'refused' | 'gone',
    message: string,
  ) {
    super(message);
    this.name = 'ControlFailure';
  }
}

/**
 * Throws a failed control command as the engine's error for its caller: refused by the child (a
 * bug between engine and element) as CHANGE_REFUSED, not answered or the child gone as
 * ENGINE_UNAVAILABLE; `what` prefixes the failure's words. Anything else is thrown as it is.
 */
export function throwAsEngineError(error: unknown, what: string, suffix = ''): never {
  if (!(error instanceof ControlFailure)) throw error;
  const message = `${what}: ${error.message}${suffix}`;
  throw error.reason === 'refused' ? new ChangeRefusedError(message) : new UnavailableError(message);
}

/** Throws unless the assignment fits the element's grammar (a bug if it does not: never user text). */
export function checkAssignment(a: Assignment): void {
  if (!ELEMENT.test(a.element) || !PROPERTY.test(a.property) || !VALUE.test(a.value)) {
    throw new Error(`control assignment out of grammar: ${JSON.stringify(a)}`);
  }
}

export function formatCommand(id: number, assignments: readonly Assignment[]): string {
  if (!Number.isSafeInteger(id) || id < 1 || id > Number.MAX_SAFE_INTEGER) throw new Error(`bad control id ${id}`);
  if (assignments.length < 1 || assignments.length > MAX_ASSIGNMENTS) throw new Error(`${assignments.length} control assignments`);
  for (const a of assignments) checkAssignment(a);
  return `v1 ${id} set ${assignments.map((a) => `${a.element}.${a.property}=${a.value}`).join(' ')}\n`;
}

interface Pending {
  line: string;
  attempts: number;
  timer: NodeJS.Timeout | undefined;
  resolve: () => void;
  reject: (error: ControlFailure) => void;
}

export class ControlChannel {
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();

  constructor(
    private readonly output: Writable,
    private readonly timeoutMs: number,
  ) {}

  /** Resolves once the child acknowledged every assignment as applied. */
  send(assignments: readonly Assignment[]): Promise<void> {
    const id = this.nextId++;
    const line = formatCommand(id, assignments);
    return new Promise<void>((resolve, reject) => {
      const entry: Pending = { line, attempts: 0, timer: undefined, resolve, reject };
      this.pending.set(id, entry);
      this.attempt(id, entry);
    });
  }

  /** An acknowledgement from the child's stdout. Unknown ids (a late answer to a failed command) are ignored. */
  onAck(ack: ControlAckEvent): void {
    const entry = this.pending.get(ack.id);
    if (entry === undefined) return;
    this.settle(ack.id, entry);
    if (ack.ok) entry.resolve();
    else entry.reject(new ControlFailure('refused', `the child refused the change: ${ack.error ?? 'no reason given'}`));
  }

  /** The child is gone: every waiting command fails. */
  close(): void {
    for (const [id, entry] of this.pending) {
      this.settle(id, entry);
      entry.reject(new ControlFailure('gone', 'the child ended before it answered'));
    }
  }

  private attempt(id: number, entry: Pending): void {
    entry.attempts += 1;
    clearTimeout(entry.timer);
    if (!this.output.writable) {
      this.settle(id, entry);
      entry.reject(new ControlFailure('gone', 'the child has no open control channel'));
      return;
    }
    this.output.write(entry.line);
    entry.timer = setTimeout(() => {
      if (entry.attempts < 2) {
        this.attempt(id, entry);
        return;
      }
      this.settle(id, entry);
      entry.reject(new ControlFailure('timeout', `the child did not answer within ${this.timeoutMs} ms, twice`));
    }, this.timeoutMs);
  }

  private settle(id: number, entry: Pending): void {
    clearTimeout(entry.timer);
    this.pending.delete(id);
  }
}
