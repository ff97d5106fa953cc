/** A child's stdout as lines, for tests that talk to a helper process line by line. */
import type { ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';

/** Lines of a child's stdout, collected; resolves `ready` on the first line equal to "ready". */
export function collectLines(child: ChildProcess): { lines: string[]; ready: Promise<void> } {
  const lines: string[] = [];
  const ready = new Promise<void>((resolve) => {
    if (child.stdout === null) return;
    createInterface({ input: child.stdout }).on('line', (line) => {
      lines.push(line);
      if (line === 'ready') resolve();
    });
  });
  return { lines, ready };
}
