/**
 * What a child's exit means, from its exit code, signal, the last lines of its stderr, whether it
 * ever passed audio, and whether the supervisor itself killed it (and why).
 * gst-launch-1.0 exits 1 both for "erroneous pipeline" and for runtime errors, so the text decides.
 * Every branch is tested with output captured from the pinned gst-launch-1.0
 * (test/fixtures/gst-launch-1.22/).
 */
export type ExitClass =
  /** The pipeline description cannot be built: retrying cannot help. */
  | { kind: 'permanent'; reason: string }
  /** The stream ended after audio went through (the SRT caller left): restart at once. */
  | { kind: 'clean' }
  /**
   * The source connected and ended before any audio went through (an SRT caller that connected and
   * left, an Icecast source that sent nothing). Not a failure: restart promptly, no back-off growth.
   */
  | { kind: 'no-data'; reason: string }
  /** A runtime error, a bind failure, a crash, a child that never played: retry with back-off. */
  | { kind: 'retry'; reason: string };

/** Why the supervisor killed a child itself. */
export type SupervisorKill =
  /** The child did not reach PLAYING within the start bound. */
  | { cause: 'not-playing'; afterMs: number }
  /** gst-launch reported that the pipeline would not preroll and did not exit (1.22 hangs there). */
  | { cause: 'preroll-hang' }
  /** A running child sent no statistics for too long. */
  | { cause: 'stalled'; silentMs: number }
  /** The child did not answer a control command (it could apply it later, unstored). */
  | { cause: 'control-timeout' };

export interface ExitFacts {
  exitCode: number | undefined;
  signal: string | undefined;
  /** Recent stderr lines, oldest first. */
  stderr: readonly string[];
  /** Whether this child ever passed decoded audio (its clock bridge received some). */
  audioSeen: boolean;
  /** Set when the supervisor killed the child. */
  killedBy?: SupervisorKill;
}

/** gst-launch's words for a description it cannot build (parse, unknown element, bad property). */
const PERMANENT = [/erroneous pipeline: (.*)/, /pipeline could not be constructed: (.*)/];

/** ERROR lines that only repeat that an earlier error happened. */
const CONSEQUENTIAL = /doesn't want to preroll|state change failed and some element failed|Failed to set pipeline/;

/**
 * typefind's error when its input ended before it could recognise anything: the source connected
 * and went away without sending a stream (srtsrc's typefind, or decodebin's for a stdin graph).
 */
const NO_DATA = /GstTypeFindElement:typefind: Stream doesn't contain enough data/;

/** gst-launch's line after an error while prerolling; 1.22 may then hang instead of exiting. */
export const PREROLL_FAILED = /^ERROR: pipeline doesn't want to preroll/;

/**
 * The error that explains a run: the first ERROR (GStreamer posts the cause first, then its
 * consequences) with the cause from its "Additional debug info", or a parse warning.
 */
export function lastErrorLine(stderr: readonly string[]): string | undefined {
  for (let i = 0; i < stderr.length; i++) {
    const line = stderr[i]?.trim() ?? '';
    if (line.startsWith('WARNING: erroneous pipeline')) return line;
    if (!line.startsWith('ERROR') || CONSEQUENTIAL.test(line)) continue;
    // "Additional debug info:", a source location, then the cause in the element's words.
    const detail = stderr
      .slice(i + 1, i + 4)
      .map((l) => l.trim())
      .find((l) => l !== '' && !l.startsWith('Additional debug info') && !/^\.\.\/|^[a-z0-9_/.-]+\.c\(\d+\)/.test(l) && !l.startsWith('ERROR'));
    return detail !== undefined ? `${line} ${detail}` : line;
  }
  return undefined;
}

function describeKill(kill: SupervisorKill): string {
  switch (kill.cause) {
    case 'not-playing':
      return `did not reach PLAYING within ${(kill.afterMs / 1000).toFixed(0)} s: killed and restarted`;
    case 'preroll-hang':
      return 'the pipeline would not preroll and the child did not exit: killed and restarted';
    case 'stalled':
      return `stalled: no statistics from the child for ${(kill.silentMs / 1000).toFixed(1)} s`;
    case 'control-timeout':
      return 'did not answer a control command: killed and restarted with the stored values';
    default: {
      const unknown: never = kill;
      throw new Error(`unknown kill ${JSON.stringify(unknown)}`);
    }
  }
}

export function classifyExit(facts: ExitFacts): ExitClass {
  const text = facts.stderr.join('\n');
  for (const pattern of PERMANENT) {
    const match = pattern.exec(text);
    if (match !== null) return { kind: 'permanent', reason: (lastErrorLine(facts.stderr) ?? match[0]).trim() };
  }
  // A source that ended before any audio: whether the child exited by itself (SRT) or hung in
  // preroll and was killed (stdin), it is the source's doing, not a failure of the pipeline.
  if (!facts.audioSeen && NO_DATA.test(text) && facts.killedBy?.cause !== 'stalled') {
    return { kind: 'no-data', reason: 'the source ended before sending any audio (typefind: stream doesn\'t contain enough data)' };
  }
  if (facts.killedBy !== undefined) return { kind: 'retry', reason: describeKill(facts.killedBy) };
  if (facts.signal !== undefined) return { kind: 'retry', reason: `killed by ${facts.signal}` };
  if (facts.exitCode === 0) {
    return facts.audioSeen ? { kind: 'clean' } : { kind: 'no-data', reason: 'the stream ended before any audio went through' };
  }
  const reason = lastErrorLine(facts.stderr) ?? `exited with code ${String(facts.exitCode)}`;
  return { kind: 'retry', reason };
}
