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

/** The most telling error line of a child's stderr, or undefined. */
export function lastErrorLine(stderr: readonly string[]): string | undefined {
  for (let i = stderr.length - 1; i >= 0; i--) {
    const line = stderr[i]?.trim() ?? '';
    if (/^(ERROR|WARNING: erroneous pipeline)/.test(line) && !/doesn't want to preroll|Failed to set pipeline/.test(line)) {
      // Prefer the line with the cause: the "Additional debug info" that follows an ERROR line.
      const detail = stderr
        .slice(i + 1, i + 4)
        .map((l) => l.trim())
        .find((l) => l !== '' && !l.startsWith('../') && !l.startsWith('Additional debug info') && !l.startsWith('ERROR'));
      return detail !== undefined ? `${line} ${detail}` : line;
    }
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
