/**
 * A test NMOS registry (test/helpers/nmos-registry.ts) as its own process, for a test that runs
 * it inside a network namespace: `node --import tsx nmos-registry-cli.ts ADDRESS SECONDS`.
 * Prints `{"url": ...}` once listening, then its state as one JSON line whenever it changed
 * (checked every 100 ms): resources held by type, sender ids, heartbeats, invalid bodies, the
 * number of requests and when the first came. Ends after SECONDS, or on SIGTERM.
 */
import { startTestRegistry } from './nmos-registry.js';

export interface RegistryState {
  counts: Record<string, number>;
  senders: string[];
  heartbeats: number;
  invalid: string[];
  requests: number;
  /** Date.now() of the first request, null before any. */
  firstRequestAt: number | null;
}

const [address = '127.0.0.1', seconds = '120'] = process.argv.slice(2);
const registry = await startTestRegistry(address);
process.stdout.write(`${JSON.stringify({ url: registry.url })}\n`);

let last = '';
const report = (): void => {
  const state: RegistryState = {
    counts: Object.fromEntries([...registry.resources].map(([type, byId]) => [type, byId.size])),
    senders: [...(registry.resources.get('sender')?.keys() ?? [])],
    heartbeats: registry.heartbeats.length,
    invalid: registry.invalid,
    requests: registry.events.length,
    firstRequestAt: registry.events[0]?.at ?? null,
  };
  const line = JSON.stringify(state);
  if (line !== last) process.stdout.write(`${line}\n`);
  last = line;
};
const timer = setInterval(report, 100);
const stop = (): void => {
  clearInterval(timer);
  void registry.close().then(() => process.exit(0));
};
setTimeout(stop, Number(seconds) * 1000).unref();
process.once('SIGTERM', stop);
