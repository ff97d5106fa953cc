/**
 * Peer-to-peer mode (IS-04 v1.3 "Discovery: Peer to Peer Operation"): the node's own
 * `_nmos-node._tcp` mDNS advertisement while no registry takes it, withdrawn (mDNS goodbye) once
 * one does. Its TXT records: api_proto, api_ver, api_auth and the ver_ counters, one unsigned
 * 8-bit integer per Node API collection (ver_slf self, ver_dvc devices, ver_src sources, ver_flw
 * flows, ver_snd senders, ver_rcv receivers), 0 when first advertised and incremented (wrapping
 * after 255) whenever that collection changed: a resource added, removed or given a new version.
 * bonjour-service cannot change a published TXT record in place, so a change withdraws the
 * advertisement and publishes it again with the new TXT.
 */
import type { Bonjour, Service } from 'bonjour-service';
import { NODE_API_VERSION, type NmosResource, type NmosSnapshot } from './resources.js';

export const VER_KEYS = ['ver_slf', 'ver_src', 'ver_flw', 'ver_dvc', 'ver_snd', 'ver_rcv'] as const;
export type VerKey = (typeof VER_KEYS)[number];

const stamp = (resources: readonly NmosResource[]): string => resources.map((r) => `${r.id}@${r.version}`).join(',');

/** What each ver_ counter stands for, as a string that changes exactly when the collection does. */
export function collectionStamps(snapshot: Pick<NmosSnapshot, 'node' | 'device' | 'sources' | 'flows' | 'senders'>): Record<VerKey, string> {
  return {
    ver_slf: stamp([snapshot.node]),
    ver_src: stamp(snapshot.sources),
    ver_flw: stamp(snapshot.flows),
    ver_dvc: stamp([snapshot.device]),
    ver_snd: stamp(snapshot.senders),
    // No receivers: SRT inputs are not NMOS receivers (docs/nmos.md).
    ver_rcv: '',
  };
}

/** The ver_ counters: each bumped (mod 256) when its collection's stamp changes. */
export class CollectionCounters {
  private stamps: Record<VerKey, string> | undefined;
  private readonly counters: Record<VerKey, number> = { ver_slf: 0, ver_src: 0, ver_flw: 0, ver_dvc: 0, ver_snd: 0, ver_rcv: 0 };

  /** Takes the collections as they are now; true when a counter moved. The first call sets them at 0. */
  update(stamps: Record<VerKey, string>): boolean {
    let changed = false;
    if (this.stamps !== undefined) {
      for (const key of VER_KEYS) {
        if (stamps[key] === this.stamps[key]) continue;
        this.counters[key] = (this.counters[key] + 1) % 256;
        changed = true;
      }
    }
    this.stamps = stamps;
    return changed;
  }

  txt(): Record<VerKey, string> {
    return Object.fromEntries(VER_KEYS.map((key) => [key, String(this.counters[key])])) as Record<VerKey, string>;
  }
}

export class NodeAdvertisement {
  private service: Service | undefined;
  private readonly counters = new CollectionCounters();

  constructor(
    private readonly bonjour: Pick<Bonjour, 'publish'>,
    private readonly name: string,
    private readonly port: () => number,
    private readonly snapshot: () => Pick<NmosSnapshot, 'node' | 'device' | 'sources' | 'flows' | 'senders'>,
  ) {}

  get advertised(): boolean {
    return this.service !== undefined;
  }

  /** The TXT records advertised now (undefined while withdrawn). */
  get txt(): Record<string, string> | undefined {
    return this.service === undefined ? undefined : { ...(this.service.txt as Record<string, string>) };
  }

  /**
   * On while `on` is true (called again while on: the ver_ counters follow the resources, a
   * change publishes the new TXT), withdrawn (mDNS goodbye) when false.
   */
  set(on: boolean): void {
    if (!on) {
      this.withdraw();
      return;
    }
    const changed = this.counters.update(collectionStamps(this.snapshot()));
    if (this.service !== undefined && !changed) return;
    const first = this.service === undefined;
    this.withdraw();
    this.service = this.bonjour.publish({
      name: this.name,
      type: 'nmos-node',
      protocol: 'tcp',
      port: this.port(),
      txt: { api_proto: 'http', api_ver: NODE_API_VERSION, api_auth: 'false', ...this.counters.txt() },
      disableIPv6: true,
      // A name conflict is looked for once; a republished TXT follows our own goodbye.
      probe: first,
    });
  }

  private withdraw(): void {
    if (this.service === undefined) return;
    const service = this.service;
    this.service = undefined;
    (service.stop as (cb?: () => void) => void)();
  }
}
