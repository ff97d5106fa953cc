/**
 * What a child's exit means, from its exit code, signal and the last lines of its stderr.
 * gst-launch-1.0 exits 1 both for "erroneous pipeline" and for runtime errors, so the text decides.
 */
export type ExitClass =
  /** The pipeline description cannot be built: retrying cannot help. */
  | { kind: 'permanent'; reason: string }
  /** The stream ended (the SRT caller left): restart at once. */
  | { kind: 'clean' }
  /** A runtime error, a bind failure or a crash: retry with back-off. */
  | { kind: 'retry'; reason: string };

export interface ExitFacts {
  exitCode: number | undefined;
  signal: string | undefined;
  /** Recent stderr lines, oldest first. */
  stderr: readonly string[];
}

/** gst-launch's words for a description it cannot build (parse, unknown element, bad property). */
const PERMANENT = [/erroneous pipeline: (.*)/, /pipeline could not be constructed: (.*)/];

/** ERROR lines that only repeat that an earlier error happened. */
const CONSEQUENTIAL = /doesn't want to preroll|state change failed and some element failed|Failed to set pipeline/;

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

export function classifyExit(facts: ExitFacts): ExitClass {
  const text = facts.stderr.join('\n');
  for (const pattern of PERMANENT) {
    const match = pattern.exec(text);
    if (match !== null) return { kind: 'permanent', reason: (lastErrorLine(facts.stderr) ?? match[0]).trim() };
  }
  if (facts.signal !== undefined) return { kind: 'retry', reason: `killed by ${facts.signal}` };
  if (facts.exitCode === 0) return { kind: 'clean' };
  const reason = lastErrorLine(facts.stderr) ?? `exited with code ${String(facts.exitCode)}`;
  return { kind: 'retry', reason };
}
