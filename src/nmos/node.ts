/**
 * The NMOS node's life: its resources (from the engine's outputs), the HTTP edge, registration
 * with a registry (configured, else found by DNS-SD) and, while none takes it, its own mDNS
 * advertisement (peer-to-peer). Pipelines appear, change and go in the Node API at once (the
 * resources are built at each request) and in the registry within `syncMs`.
 */
import { promises as dns } from 'node:dns';
import { hostname } from 'node:os';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { SenderInterface } from '../aes67/host-interface.js';
import type { PtpStatus } from '../aes67/pmc.js';
import type { StreamSource } from '../aes67/sessions.js';
import type { NmosConfig } from '../config/schema.js';
import { NodeAdvertisement } from './advertise.js';
import { Bonjour, MdnsRegistryBrowser, searchDomains, unicastRegistries, type DnsResolver } from './discovery.js';
import { SenderConnections, type OutputPatch } from './connection.js';
import { buildNodeApi } from './node-api.js';
import { fetchCall, HEARTBEAT_MS, REAL_TIMERS, Registration, type Timers } from './registration.js';
import { NmosModel } from './resources.js';

export interface NmosNodeDeps {
  config: NmosConfig;
  /** Seed of the node's ids (host name and state folder). */
  seed: string;
  streams: () => Iterable<StreamSource>;
  ptp: () => PtpStatus;
  traceable: boolean;
  findInterface: (name: string) => SenderInterface | undefined;
  defaultInterface: string;
  sdp: (stream: StreamSource) => string;
  /** Why the output an IS-05 activation would make is refused (the pipeline's validator), or undefined. */
  checkOutput: (stream: StreamSource, patch: OutputPatch) => string | undefined;
  /** Changes an output as a REST PATCH of `output` does (durable; live or a restart); `onStored` once written. */
  changeOutput: (stream: StreamSource, patch: OutputPatch, onStored: () => void) => Promise<void>;
  log: Logger;
  resolver?: DnsResolver;
  timers?: Timers;
  /** How often the registered set is compared with the engine's outputs, ms. */
  syncMs?: number;
  /** How long mDNS is browsed for a registry, ms. */
  browseMs?: number;
}

export class NmosNode {
  readonly model: NmosModel;
  readonly connections: SenderConnections;
  readonly api: FastifyInstance;
  readonly registration: Registration;
  private port = 0;
  private bind = '0.0.0.0';
  private bonjour: Bonjour | undefined;
  private browser: MdnsRegistryBrowser | undefined;
  private advertisement: NodeAdvertisement | undefined;

  constructor(private readonly deps: NmosNodeDeps) {
    const log = deps.log.child({ component: 'nmos' });
    // eslint-disable-next-line @typescript-eslint/no-this-alias -- the model reads the address start() learns
    const self = this;
    const host = hostname();
    const label = deps.config.label === '' ? host : deps.config.label;
    this.model = new NmosModel({
      seed: deps.seed,
      label,
      hostname: host,
      port: () => this.port,
      streams: deps.streams,
      ptp: deps.ptp,
      traceable: deps.traceable,
      findInterface: deps.findInterface,
      defaultInterface: deps.defaultInterface,
      get bind() {
        return self.bind;
      },
      now: Date.now,
      receiverOf: (senderId, output) => self.connections.receiverOf(senderId, output),
      settling: (senderId) => self.connections.settling(senderId),
    });
    this.connections = new SenderConnections({
      output: (senderId) => this.model.snapshot().outputs.get(senderId),
      sourceIp: (output, leg) => {
        const name = (leg === 0 ? output.interface : output.redundant?.interface) ?? deps.defaultInterface;
        return deps.findInterface(name)?.address ?? this.model.host();
      },
      checkOutput: deps.checkOutput,
      changeOutput: deps.changeOutput,
      now: Date.now,
      log,
    });
    this.api = buildNodeApi({ log, model: this.model, sdp: deps.sdp, connections: this.connections });
    const configured = deps.config.registries;
    this.registration = new Registration({
      model: this.model,
      registries: async () => (configured.length > 0 ? [...configured] : this.discover()),
      http: fetchCall(2000),
      timers: deps.timers ?? REAL_TIMERS,
      log,
      heartbeatMs: HEARTBEAT_MS,
      syncMs: deps.syncMs ?? 500,
      // Peer-to-peer only when registries are found by DNS-SD and none takes the node; withdrawn
      // as soon as one is found, before it is contacted (no advertisement while registered).
      onRegistry: configured.length > 0 ? undefined : (found) => this.advertisement?.set(!found),
    });
  }

  /** Unicast DNS-SD in the search domains, then mDNS. */
  private async discover(): Promise<string[]> {
    const unicast = await unicastRegistries(this.deps.resolver ?? dns, await searchDomains());
    if (unicast.length > 0) return unicast;
    this.bonjour ??= new Bonjour({}, (error: Error) => this.deps.log.warn({ event: 'mdns-failed', err: error }, `mDNS: ${error.message}`));
    this.advertisement ??= new NodeAdvertisement(this.bonjour, `audio-engine ${this.model.nodeId.slice(0, 8)}`, () => this.port, () => this.model.snapshot());
    this.browser ??= new MdnsRegistryBrowser(this.bonjour, this.deps.browseMs ?? 2000);
    return this.browser.registries();
  }

  async start(host: string, port: number): Promise<number> {
    this.bind = host;
    await this.api.listen({ host, port });
    const address = this.api.server.address();
    this.port = typeof address === 'object' && address !== null ? address.port : port;
    this.registration.start();
    return this.port;
  }

  async close(): Promise<void> {
    this.connections.close();
    await this.registration.stop();
    this.advertisement?.set(false);
    this.browser?.stop();
    if (this.bonjour !== undefined) await new Promise<void>((resolve) => this.bonjour?.destroy(() => resolve()));
    await this.api.close();
  }
}
