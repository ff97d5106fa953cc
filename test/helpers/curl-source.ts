/**
 * curl as an HTTP PUT source: `-T file` (HTTP/1.1, Content-Length, `Expect: 100-continue`) or
 * `-T -` (the body from curl's stdin, sent chunked). Prints the final status code.
 */
import { createReadStream } from 'node:fs';
import type { Test } from 'tap';
import { runClient, type ClientProcess } from './client-process.js';

export interface CurlSourceOptions {
  port: number;
  password: string;
  mount: string;
  file: string;
  contentType: string;
  /** `length`: -T file; `chunked`: -T - with the file on stdin. */
  framing: 'length' | 'chunked';
  timeoutMs: number;
}

export function runCurlSource(t: Test, o: CurlSourceOptions): ClientProcess {
  const args = [
    '-sS', '-T', o.framing === 'length' ? o.file : '-', '-H', `Content-Type: ${o.contentType}`,
    '--max-time', String(Math.ceil(o.timeoutMs / 1000)), '-w', 'final-status=%{http_code}\n',
    `http://source:${o.password}@127.0.0.1:${o.port}${o.mount}`,
  ];
  return runClient(t, 'curl', args, { timeoutMs: o.timeoutMs + 2000, ...(o.framing === 'chunked' ? { stdin: createReadStream(o.file) } : {}) });
}
