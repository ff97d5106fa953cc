/**
 * A child's stdout read in batches. A supervised child prints a line per bus message, tens a
 * second (meters at 10 Hz, statistics, acknowledgements), and a pipe read as a Node stream wakes
 * the engine for every one of them: at 16 pipelines, most of what the engine spends on its
 * children (docs/performance.md, "The engine's share"). Here a child's stdout is a FIFO whose
 * read end, non-blocking, is read by one timer for all children every POLL_MS: one wake-up a
 * tick for the whole engine, one `read` a child (a short read means its FIFO is empty now).
 * The child's end blocks as a pipe does: a child that writes faster than the engine reads waits.
 *
 * The FIFO is made in a private directory (mkdtemp, 0700; the FIFO 0600), opened at both ends
 * and unlinked with its directory before the child starts: nothing is left on disk, and no other
 * process can open it. Lines come at most POLL_MS after they were written; the end of the stream
 * (every writer gone: the child exited) at most POLL_MS after it.
 */
import { spawnSync } from 'node:child_process';
import { closeSync, constants, mkdtempSync, openSync, readSync, rmdirSync, unlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { StringDecoder } from 'node:string_decoder';

export const POLL_MS = 100;
const READ_BYTES = 64 * 1024;

/** The two ends of a fresh FIFO: the child gets `writeFd` as its stdout; `readFd` goes to pollLines. */
export interface PolledPipe {
  readFd: number;
  writeFd: number;
}

/** A FIFO for one child's stdout, or undefined where none can be made (no mkfifo): the caller reads a pipe as a stream then. */
export function openPolledPipe(): PolledPipe | undefined {
  let dir: string | undefined;
  try {
    dir = mkdtempSync(join(tmpdir(), 'audio-engine-'));
    const path = join(dir, 'stdout');
    const made = spawnSync('mkfifo', ['-m', '600', '--', path], { stdio: 'ignore' });
    if (made.status !== 0) return undefined;
    try {
      const readFd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
      try {
        // Blocking (the child's writes wait when it is full); opening does not wait: a reader exists.
        return { readFd, writeFd: openSync(path, constants.O_WRONLY) };
      } catch (error) {
        closeSync(readFd);
        throw error;
      }
    } finally {
      unlinkSync(path);
    }
  } catch {
    return undefined;
  } finally {
    if (dir !== undefined) {
      try {
        rmdirSync(dir);
      } catch {
        // not made, or not empty because mkfifo failed oddly: nothing of ours to remove
      }
    }
  }
}

interface Reader {
  fd: number;
  decoder: StringDecoder;
  rest: string;
  onLine: (line: string) => void;
  ended: () => void;
}

const readers = new Set<Reader>();
const buffer = Buffer.alloc(READ_BYTES);
let timer: NodeJS.Timeout | undefined;

function emit(reader: Reader, text: string): void {
  const parts = (reader.rest + text).split('\n');
  reader.rest = parts.pop() ?? '';
  for (const part of parts) deliver(reader, part);
}

function deliver(reader: Reader, line: string): void {
  try {
    reader.onLine(line.endsWith('\r') ? line.slice(0, -1) : line);
  } catch {
    // A consumer's fault never stops the reading.
  }
}

function finish(reader: Reader): void {
  readers.delete(reader);
  const tail = reader.rest + reader.decoder.end();
  reader.rest = '';
  if (tail !== '') deliver(reader, tail);
  closeSync(reader.fd);
  reader.ended();
}

/** Reads what `reader`'s FIFO holds now; ends the reader at the end of the stream. */
function readNow(reader: Reader): void {
  for (;;) {
    let n: number;
    try {
      n = readSync(reader.fd, buffer, 0, READ_BYTES, null);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EAGAIN') return; // empty, writers still there
      finish(reader); // any other error ends the stream as its end would
      return;
    }
    if (n === 0) {
      finish(reader);
      return;
    }
    emit(reader, reader.decoder.write(buffer.subarray(0, n)));
    if (n < READ_BYTES) return; // a short read: it was empty after these bytes
  }
}

function tick(): void {
  for (const reader of readers) readNow(reader);
  if (readers.size === 0) {
    clearInterval(timer);
    timer = undefined;
  }
}

/**
 * Hands every line of `readFd` (a PolledPipe's read end) to `onLine`, without its line break,
 * the last one also without; resolves once the stream ended (every writer closed it), the
 * descriptor closed.
 */
export function pollLines(readFd: number, onLine: (line: string) => void): Promise<void> {
  return new Promise((resolve) => {
    readers.add({ fd: readFd, decoder: new StringDecoder('utf8'), rest: '', onLine, ended: resolve });
    timer ??= setInterval(tick, POLL_MS);
  });
}
