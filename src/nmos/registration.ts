/**
 * IS-04 v1.3 registration ("Behaviour: Registration"): the node's resources POSTed to a
 * Registration API, kept in step with the engine's outputs, and a heartbeat every 5 s.
 *
 * - Every `syncMs` the registered set is compared with the model: new or changed resources are
 *   POSTed (node, device, then each source, flow, sender), gone ones DELETEd (senders, flows,
 *   sources).
 * - Registries come from `registries()` (highest priority first: the lowest DNS-SD `pri`), read
 *   again when the list is used up; the one that just failed is tried last.
 * - The first registration of the node answered 200 (not 201): the registry still held a stale
 *   node; it is DELETEd and registered again.
 * - A heartbeat answered 404 (the registry forgot the node) registers everything again.
 * - A 5xx, a refused connection or no answer within the HTTP time-out (registration or
 *   heartbeat): fail-over at once to the next registry, whose first request is a heartbeat: 200,
 *   the cluster still holds the node (nothing re-registered); 404, everything registered again.
 * - Every registry of a list failed: the next round waits 1 s, doubling up to 8 s.
 * - `onRegistry(true)` as soon as a registry is chosen (before it is contacted), false while
 *   none is: the node's own mDNS advertisement follows it (advertise.ts).
 * - stop() DELETEs the node (the registry drops its sub-resources with it).
 */
import type { Logger } from 'pino';
import type { NmosModel, NmosResource, ResourceType } from './resources.js';

export const HEARTBEAT_MS = 5000;
export const REGISTRATION_PATH = '/x-nmos/registration/v1.3';

export interface HttpAnswer {
  status: number;
}

/** One HTTP request with a JSON body; rejects when the registry cannot be reached. */
export type HttpCall = (method: 'POST' | 'DELETE', url: string, body?: unknown) => Promise<HttpAnswer>;

export interface Timers {
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export const REAL_TIMERS: Timers = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => {
    const handle = setTimeout(fn, ms);
    handle.unref();
    return handle;
  },
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

export interface RegistrationDeps {
  model: Pick<NmosModel, 'snapshot' | 'nodeId'>;
  /** Registration API base URLs, highest priority first (config, else DNS-SD). */
  registries: () => Promise<string[]>;
  http: HttpCall;
  timers: Timers;
  log: Logger;
  heartbeatMs: number;
  syncMs: number;
  /** True once a registry is chosen (before it is contacted), false while none is (peer-to-peer). */
  onRegistry?: (found: boolean) => void;
}

/** fetch with a timeout; a network failure rejects. */
export const fetchCall = (timeoutMs: number): HttpCall => async (method, url, body) => {
  const response = await fetch(url, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(timeoutMs),
  });
  await response.arrayBuffer();
  return { status: response.status };
};

class RegistryFailed extends Error {}

/** The wait after every registry of a list failed: doubles from the first to the last. */
const BACKOFF_MS = { first: 1000, max: 8000 } as const;

export class Registration {
  private candidates: string[] = [];
  private current: string | undefined;
  /** The registry that failed last: tried after the others when the list is read again. */
  private failed: string | undefined;
  /** id -> type and the version the registry holds (kept over a fail-over: the cluster may hold them). */
  private readonly registered = new Map<string, { type: ResourceType; version: string }>();
  private work: Promise<void> = Promise.resolve();
  private syncTimer: unknown;
  private heartbeatTimer: unknown;
  private stopped = false;
  private lastWarning: string | undefined;
  private backoffMs = 0;
  private retryAt = 0;

  constructor(private readonly deps: RegistrationDeps) {}

  /** The registry the node is registered with now, if any. */
  get registry(): string | undefined {
    return this.current;
  }

  start(): void {
    this.scheduleSync(0);
  }

  /** One comparison now, after any in flight (tests; and after a pipeline change). */
  sync(): Promise<void> {
    this.work = this.work.then(() => this.reconcile()).catch((error: unknown) => this.warn((error as Error).message));
    return this.work;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.deps.timers.clearTimeout(this.syncTimer);
    this.deps.timers.clearTimeout(this.heartbeatTimer);
    await this.work;
    const base = this.current;
    if (base === undefined || !this.registered.has(this.deps.model.nodeId)) return;
    try {
      await this.deps.http('DELETE', `${base}${REGISTRATION_PATH}/resource/nodes/${this.deps.model.nodeId}`);
      this.deps.log.info({ event: 'nmos-unregistered', registry: base }, `NMOS node removed from ${base}`);
    } catch (error) {
      this.warn(`NMOS node not removed from ${base}: ${(error as Error).message}`);
    }
    this.registered.clear();
  }

  private warn(message: string): void {
    if (message === this.lastWarning) return;
    this.lastWarning = message;
    this.deps.log.warn({ event: 'nmos-registration-failed' }, message);
  }

  private scheduleSync(ms: number): void {
    if (this.stopped) return;
    this.syncTimer = this.deps.timers.setTimeout(() => {
      void this.sync().then(() => this.scheduleSync(this.deps.syncMs));
    }, ms);
  }

  private scheduleHeartbeat(): void {
    this.deps.timers.clearTimeout(this.heartbeatTimer);
    if (this.stopped) return;
    this.heartbeatTimer = this.deps.timers.setTimeout(() => {
      this.work = this.work.then(() => this.heartbeat()).catch((error: unknown) => this.warn((error as Error).message));
      void this.work.then(() => this.scheduleHeartbeat());
    }, this.deps.heartbeatMs);
  }

  /** The next registry to try; undefined when the list is used up (read again at the next call). */
  private async nextRegistry(): Promise<string | undefined> {
    if (this.candidates.length === 0) {
      const found = (await this.deps.registries()).map((url) => url.replace(/\/+$/, ''));
      // The one that just failed goes last: another registry of the cluster is asked first.
      this.candidates = [...found.filter((url) => url !== this.failed), ...found.filter((url) => url === this.failed)];
      return this.candidates.shift();
    }
    return this.candidates.shift();
  }

  private failOver(base: string, reason: string): void {
    this.warn(`NMOS registry ${base} failed (${reason}); trying the next one`);
    this.current = undefined;
    this.failed = base;
    this.deps.timers.clearTimeout(this.heartbeatTimer);
  }

  private async call(method: 'POST' | 'DELETE', base: string, path: string, body?: unknown): Promise<number> {
    let answer: HttpAnswer;
    try {
      answer = await this.deps.http(method, `${base}${REGISTRATION_PATH}${path}`, body);
    } catch (error) {
      throw new RegistryFailed(`${method} ${path}: ${(error as Error).message}`);
    }
    if (answer.status >= 500) throw new RegistryFailed(`${method} ${path}: HTTP ${answer.status}`);
    return answer.status;
  }

  private registeredWith(base: string, how: string): void {
    this.current = base;
    this.lastWarning = undefined;
    this.backoffMs = 0;
    const snapshot = this.deps.model.snapshot();
    this.deps.log.info({ event: 'nmos-registered', registry: base, node_id: snapshot.node.id, senders: snapshot.senders.length, how }, `NMOS node registered with ${base} (${how})`);
    this.scheduleHeartbeat();
  }

  /**
   * Chooses a registry (the next of the list). The node held by an earlier registry: the first
   * request is a heartbeat (200: registered there; 404: registered anew by push). False when
   * none is left (every one failed: the next round waits, doubling).
   */
  private async connect(): Promise<boolean> {
    if (this.deps.timers.now() < this.retryAt) return false;
    // At most one list: every registry asked once, then the next round.
    for (let attempt = 0; ; attempt++) {
      const next = await this.nextRegistry();
      if (next === undefined) {
        if (attempt > 0) {
          this.backoffMs = Math.min(BACKOFF_MS.max, this.backoffMs === 0 ? BACKOFF_MS.first : this.backoffMs * 2);
          this.retryAt = this.deps.timers.now() + this.backoffMs;
        }
        this.deps.onRegistry?.(false);
        return false;
      }
      this.deps.onRegistry?.(true);
      if (!this.registered.has(this.deps.model.nodeId)) {
        this.current = next;
        return true;
      }
      let status: number;
      try {
        status = await this.call('POST', next, `/health/nodes/${this.deps.model.nodeId}`);
      } catch (error) {
        if (!(error instanceof RegistryFailed)) throw error;
        this.warn(`NMOS registry ${next} failed (${error.message}); trying the next one`);
        this.failed = next;
        continue;
      }
      if (status === 200) {
        this.registeredWith(next, 'heartbeat after fail-over');
      } else {
        // 404: this registry's cluster does not hold the node; push registers everything.
        this.registered.clear();
        this.current = next;
      }
      return true;
    }
  }

  private async reconcile(): Promise<void> {
    if (this.stopped) return;
    // Bounded: one fail-over within a round, the next round goes on.
    for (let round = 0; round < 2; round++) {
      if (this.current === undefined && !(await this.connect())) return;
      const base = this.current!;
      try {
        await this.push(base);
        return;
      } catch (error) {
        if (!(error instanceof RegistryFailed)) throw error;
        this.failOver(base, error.message);
      }
    }
  }

  private async push(base: string): Promise<void> {
    const snapshot = this.deps.model.snapshot();
    const wanted: [ResourceType, NmosResource][] = [
      ['node', snapshot.node],
      ['device', snapshot.device],
      ...snapshot.sources.map((r): [ResourceType, NmosResource] => ['source', r]),
      ...snapshot.flows.map((r): [ResourceType, NmosResource] => ['flow', r]),
      ...snapshot.senders.map((r): [ResourceType, NmosResource] => ['sender', r]),
    ];
    const firstRegistration = !this.registered.has(snapshot.node.id);
    const wantedIds = new Set(wanted.map(([, r]) => r.id));
    // Gone first (a sender before its flow before its source), then new or changed in order.
    const order: ResourceType[] = ['sender', 'flow', 'source', 'device'];
    for (const type of order) {
      for (const [id, held] of [...this.registered]) {
        if (held.type !== type || wantedIds.has(id)) continue;
        const status = await this.call('DELETE', base, `/resource/${type}s/${id}`);
        if (status !== 204 && status !== 404) this.warn(`NMOS registry ${base} answered ${status} to DELETE ${type} ${id}`);
        this.registered.delete(id);
      }
    }
    for (const [type, resource] of wanted) {
      if (this.registered.get(resource.id)?.version === resource.version) continue;
      let status = await this.call('POST', base, '/resource', { type, data: resource });
      if (type === 'node' && firstRegistration && status === 200) {
        // IS-04: a 200 on the first registration means the registry still holds an earlier
        // record of the node (and maybe stale sub-resources): DELETE it, then register anew.
        this.deps.log.warn({ event: 'nmos-stale-node', registry: base, node_id: resource.id }, `NMOS registry ${base} already held the node: deleting it and registering again`);
        await this.call('DELETE', base, `/resource/nodes/${resource.id}`);
        status = await this.call('POST', base, '/resource', { type, data: resource });
      }
      if (status !== 200 && status !== 201) {
        this.warn(`NMOS registry ${base} answered ${status} to the ${type} ${resource.id}`);
        if (type === 'node') throw new RegistryFailed(`node refused: HTTP ${status}`);
      }
      this.registered.set(resource.id, { type, version: resource.version });
    }
    if (firstRegistration) this.registeredWith(base, 'registration');
  }

  private async heartbeat(): Promise<void> {
    const base = this.current;
    if (base === undefined || this.stopped) return;
    let status: number;
    try {
      status = await this.call('POST', base, `/health/nodes/${this.deps.model.nodeId}`);
    } catch (error) {
      if (!(error instanceof RegistryFailed)) throw error;
      this.failOver(base, error.message);
      await this.reconcile();
      return;
    }
    if (status === 404) {
      this.deps.log.warn({ event: 'nmos-reregister', registry: base }, `NMOS registry ${base} no longer knows the node: registering again`);
      this.registered.clear();
      await this.reconcile();
    }
  }
}
