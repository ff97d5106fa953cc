/**
 * The node's IS-04 v1.3 resources, built from the engine's outputs at each call: the node, one
 * device, and per output (pipeline or running station) a source, a flow and a sender; the clock
 * from PTP. A resource's TAI `version` changes only when its content does.
 */
import { isMulticast } from '../spec/host.js';
import type { PtpStatus } from '../aes67/pmc.js';
import type { SenderInterface } from '../aes67/host-interface.js';
import type { StreamSource } from '../aes67/sessions.js';
import type { RtpOutput } from '../spec/schema.js';
import { nameUuid, taiVersion } from './ids.js';

export const NODE_API_VERSION = 'v1.3';
export const CONNECTION_API_VERSION = 'v1.1';

/** Every IS-04 resource has these; the rest is per type. */
export interface ResourceContent {
  id: string;
  label: string;
  description: string;
  tags: Record<string, string[]>;
  [field: string]: unknown;
}

export interface NmosResource extends ResourceContent {
  version: string;
}

export type ResourceType = 'node' | 'device' | 'source' | 'flow' | 'sender';

export interface NmosSnapshot {
  node: NmosResource;
  device: NmosResource;
  sources: NmosResource[];
  flows: NmosResource[];
  senders: NmosResource[];
  /** Sender id -> the output it describes. */
  outputs: Map<string, StreamSource>;
}

export interface NmosModelDeps {
  /** Seed of every id (the host and the state folder): the same engine keeps its ids. */
  seed: string;
  label: string;
  hostname: string;
  /** Node API port (the one it listens on). */
  port: () => number;
  streams: () => Iterable<StreamSource>;
  ptp: () => PtpStatus;
  /** The host clock is traceable to TAI by other means ([aes67] ptp_traceable). */
  traceable: boolean;
  /** The interface named by [aes67] interface, or an output's own. */
  findInterface: (name: string) => SenderInterface | undefined;
  defaultInterface: string;
  /** The address the Node API listens on; a wildcard (0.0.0.0, ::) means the interface's address. */
  bind: string;
  now: () => number;
  /** The receiver an IS-05 activation named for a sender (subscription.receiver_id). */
  receiverOf?: (senderId: string, output: RtpOutput) => string | null;
  /** True while an IS-05 activation's restart of the sender's child is under way. */
  settling?: (senderId: string) => boolean;
}

/** `ab-cd-ef-...` as IS-04 writes a MAC address. */
function dashedMac(mac: string): string {
  return mac.toLowerCase().replace(/:/g, '-');
}

/** Channel symbols (VSF TR-03): L/R for stereo, M1 for mono, U01... otherwise. */
export function channelSymbols(count: number): string[] {
  if (count === 2) return ['L', 'R'];
  if (count === 1) return ['M1'];
  return Array.from({ length: count }, (_, i) => `U${String(i + 1).padStart(2, '0')}`);
}

/** Content-keyed versions: the version stays while the content is the same, a new one when it changes. */
class Versions {
  private readonly byId = new Map<string, { content: string; version: string }>();
  private sequence = 0;

  constructor(private readonly now: () => number) {}

  of(id: string, content: object): string {
    const key = JSON.stringify(content);
    const known = this.byId.get(id);
    if (known !== undefined && known.content === key) return known.version;
    this.sequence += 1;
    const version = taiVersion(this.now(), this.sequence);
    this.byId.set(id, { content: key, version });
    return version;
  }

  keep(ids: ReadonlySet<string>): void {
    for (const id of this.byId.keys()) if (!ids.has(id)) this.byId.delete(id);
  }
}

export class NmosModel {
  readonly nodeId: string;
  readonly deviceId: string;
  private readonly versions: Versions;

  constructor(private readonly deps: NmosModelDeps) {
    this.nodeId = nameUuid(`${deps.seed}/node`);
    this.deviceId = nameUuid(`${deps.seed}/device`);
    this.versions = new Versions(deps.now);
  }

  idsOf(streamId: string): { source: string; flow: string; sender: string } {
    return {
      source: nameUuid(`${this.deps.seed}/source/${streamId}`),
      flow: nameUuid(`${this.deps.seed}/flow/${streamId}`),
      sender: nameUuid(`${this.deps.seed}/sender/${streamId}`),
    };
  }

  /** The host other machines reach the Node API on: the announcing interface's address. */
  host(): string {
    if (this.deps.bind !== '0.0.0.0' && this.deps.bind !== '::') return this.deps.bind;
    return this.deps.findInterface(this.deps.defaultInterface)?.address ?? '127.0.0.1';
  }

  /** The node's clock: PTP with its grandmaster while ptp4l names one, else the internal clock. */
  clock(): Record<string, unknown> {
    const ptp = this.deps.ptp();
    if (ptp.grandmaster_id !== null && ptp.state !== 'unavailable') {
      return { name: 'clk0', ref_type: 'ptp', traceable: this.deps.traceable || ptp.state === 'locked', version: 'IEEE1588-2008', gmid: ptp.grandmaster_id.toLowerCase(), locked: ptp.state === 'locked' };
    }
    return { name: 'clk0', ref_type: 'internal' };
  }

  private stamp(id: string, content: ResourceContent): NmosResource {
    return { ...content, id, version: this.versions.of(id, content) };
  }

  snapshot(): NmosSnapshot {
    const host = this.host();
    const port = this.deps.port();
    const base = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
    const streams = [...this.deps.streams()];
    const sources: NmosResource[] = [];
    const flows: NmosResource[] = [];
    const senders: NmosResource[] = [];
    const outputs = new Map<string, StreamSource>();
    const interfaceNames = new Set<string>();
    for (const stream of streams) {
      const ids = this.idsOf(stream.id);
      const { output } = stream;
      // One binding per leg (IS-05 transport_params), in the legs' order: the interface each sends from.
      const legInterfaces = [output.interface, ...(output.redundant === undefined ? [] : [output.redundant.interface])];
      const bindings = legInterfaces.map((name) => this.deps.findInterface(name ?? this.deps.defaultInterface)?.name ?? name);
      for (const name of bindings) if (name !== undefined) interfaceNames.add(name);
      const tags = { 'urn:x-audio-engine:id': [stream.id] };
      sources.push(this.stamp(ids.source, {
        id: ids.source, label: stream.name, description: `audio of ${stream.id}`, tags, caps: {}, device_id: this.deviceId, parents: [], clock_name: 'clk0',
        format: 'urn:x-nmos:format:audio',
        channels: channelSymbols(output.channels).map((symbol, i) => ({ label: `channel ${i + 1}`, symbol })),
      }));
      flows.push(this.stamp(ids.flow, {
        id: ids.flow, label: stream.name, description: `${output.encoding} audio of ${stream.id}`, tags, source_id: ids.source, device_id: this.deviceId, parents: [],
        format: 'urn:x-nmos:format:audio', sample_rate: { numerator: 48000 },
        media_type: `audio/${output.encoding}`, bit_depth: output.encoding === 'L24' ? 24 : 16,
      }));
      senders.push(this.stamp(ids.sender, {
        id: ids.sender, label: stream.name, description: `RTP output of ${stream.id} to ${output.host}:${output.port}`, tags, caps: {},
        flow_id: ids.flow, device_id: this.deviceId,
        transport: isMulticast(output.host) ? 'urn:x-nmos:transport:rtp.mcast' : 'urn:x-nmos:transport:rtp.ucast',
        manifest_href: `${base}/x-nmos/connection/${CONNECTION_API_VERSION}/single/senders/${ids.sender}/transportfile`,
        interface_bindings: bindings.filter((name) => name !== undefined),
        // An output that is on stays active through the restart an IS-05 activation makes.
        subscription: { receiver_id: this.deps.receiverOf?.(ids.sender, output) ?? null, active: stream.live || (output.enabled !== false && (this.deps.settling?.(ids.sender) ?? false)) },
      }));
      outputs.set(ids.sender, stream);
    }
    const interfaces = [...interfaceNames].flatMap((name) => {
      const iface = this.deps.findInterface(name);
      return iface === undefined ? [] : [{ chassis_id: null, port_id: dashedMac(iface.mac), name: iface.name }];
    });
    const node = this.stamp(this.nodeId, {
      id: this.nodeId, label: this.deps.label, description: `audio-engine on ${this.deps.hostname}`, tags: {},
      href: `${base}/`, hostname: this.deps.hostname,
      api: { versions: [NODE_API_VERSION], endpoints: [{ host, port, protocol: 'http', authorization: false }] },
      caps: {}, services: [], clocks: [this.clock()], interfaces,
    });
    const device = this.stamp(this.deviceId, {
      id: this.deviceId, label: this.deps.label, description: 'audio-engine RTP senders', tags: {},
      type: 'urn:x-nmos:device:audio', node_id: this.nodeId,
      senders: senders.map((s) => s.id), receivers: [],
      controls: [{ type: `urn:x-nmos:control:sr-ctrl/${CONNECTION_API_VERSION}`, href: `${base}/x-nmos/connection/${CONNECTION_API_VERSION}/`, authorization: false }],
    });
    this.versions.keep(new Set([node.id, device.id, ...sources.map((r) => r.id), ...flows.map((r) => r.id), ...senders.map((r) => r.id)]));
    return { node, device, sources, flows, senders, outputs };
  }
}
