/**
 * IS-04 v1.3 registration: the node's resources POSTed to a Registration API, kept in step with
 * the engine's outputs, and a heartbeat every 5 s.
 *
 * Every `syncMs` (and after each heartbeat) the registered set is compared with the model:
 * new or changed resources are POSTed (node, device, then each source, flow, sender), gone ones
 * DELETEd (senders, flows, sources). A heartbeat answered 404 (the registry forgot the node)
 * registers everything again; an unreachable registry or a 5xx moves to the next one of
 * `registries()` (highest priority first), which is asked again when the list is used up.
 * stop() DELETEs the node (the registry drops its sub-resources with it).
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
  /** Called with true while registered, false while no registry takes the node (peer-to-peer). */
  onRegistered?: (registered: boolean) => void;
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

export class Registration {
  private candidates: string[] = [];
  private current: string | undefined;
  /** id -> type and the version the registry holds. */
  private readonly registered = new Map<string, { type: ResourceType; version: string }>();
  private work: Promise<void> = Promise.resolve();
  private syncTimer: unknown;
  private heartbeatTimer: unknown;
  private stopped = false;
  private lastWarning: string | undefined;

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

  /** The next registry to try; undefined when none is known. */
  private async nextRegistry(): Promise<string | undefined> {
    if (this.candidates.length === 0) this.candidates = await this.deps.registries();
    const next = this.candidates.shift();
    return next?.replace(/\/+$/, '');
  }

  private failOver(base: string, reason: string): void {
    this.warn(`NMOS registry ${base} failed (${reason}); trying the next one`);
    this.current = undefined;
    this.registered.clear();
    this.deps.timers.clearTimeout(this.heartbeatTimer);
    this.deps.onRegistered?.(false);
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

  private async reconcile(): Promise<void> {
    if (this.stopped) return;
    if (this.current === undefined) {
      const next = await this.nextRegistry();
      if (next === undefined) {
        this.deps.onRegistered?.(false);
        return;
      }
      this.current = next;
    }
    const base = this.current;
    try {
      await this.push(base);
    } catch (error) {
      if (!(error instanceof RegistryFailed)) throw error;
      this.failOver(base, error.message);
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
      const status = await this.call('POST', base, '/resource', { type, data: resource });
      if (status !== 200 && status !== 201) {
        this.warn(`NMOS registry ${base} answered ${status} to the ${type} ${resource.id}`);
        if (type === 'node') throw new RegistryFailed(`node refused: HTTP ${status}`);
      }
      this.registered.set(resource.id, { type, version: resource.version });
    }
    if (firstRegistration) {
      this.lastWarning = undefined;
      this.deps.log.info({ event: 'nmos-registered', registry: base, node_id: snapshot.node.id, senders: snapshot.senders.length }, `NMOS node registered with ${base}`);
      this.deps.onRegistered?.(true);
      this.scheduleHeartbeat();
    }
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
