/**
 * Finding Registration APIs (IS-04 v1.3 "Discovery"): unicast DNS-SD in the host's search
 * domains first, then mDNS (`_nmos-register._tcp.local`, bonjour-service). Only registries that
 * speak http and v1.3 are kept; the lowest `pri` TXT value (the highest priority) comes first,
 * equal priorities in random order.
 */
import { readFile } from 'node:fs/promises';
import { isIPv6 } from 'node:net';
import type { SrvRecord } from 'node:dns';
import { Bonjour, type Browser, type Service } from 'bonjour-service';

export const REGISTER_SERVICE = '_nmos-register._tcp';

export interface FoundRegistry {
  url: string;
  pri: number;
}

/** The node:dns calls unicast DNS-SD needs (tests give a fake). */
export interface DnsResolver {
  resolvePtr(name: string): Promise<string[]>;
  resolveSrv(name: string): Promise<SrvRecord[]>;
  resolveTxt(name: string): Promise<string[][]>;
}

/** TXT strings `key=value` as a map. */
export function txtMap(strings: readonly string[]): Map<string, string> {
  const map = new Map<string, string>();
  for (const entry of strings) {
    const at = entry.indexOf('=');
    if (at > 0) map.set(entry.slice(0, at).toLowerCase(), entry.slice(at + 1));
  }
  return map;
}

/** A registry's entry if its TXT says http and v1.3 (absent keys: the defaults http, v1.0-v1.3 unknown = accepted). */
export function registryOf(host: string, port: number, txt: ReadonlyMap<string, string>): FoundRegistry | undefined {
  const proto = txt.get('api_proto') ?? 'http';
  const versions = (txt.get('api_ver') ?? 'v1.3').split(',');
  if (proto !== 'http' || !versions.includes('v1.3')) return undefined;
  const pri = Number.parseInt(txt.get('pri') ?? '100', 10);
  const name = host.replace(/\.$/, '');
  return { url: `http://${isIPv6(name) ? `[${name}]` : name}:${port}`, pri: Number.isFinite(pri) ? pri : 100 };
}

/**
 * URLs by priority, the lowest `pri` first; registries of the same priority in random order (IS-04:
 * "a random selection if multiple Registration APIs with the same priority", RFC 2782), so that
 * nodes spread over them. Duplicates (one registry found twice) once.
 */
export function byPriority(found: readonly FoundRegistry[], random: () => number = Math.random): string[] {
  const shuffled = [...found];
  for (let i = shuffled.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [shuffled[i], shuffled[j]] = [shuffled[j]!, shuffled[i]!];
  }
  // Array.prototype.sort is stable: the shuffled order stays within each priority.
  return shuffled.sort((a, b) => a.pri - b.pri).map((f) => f.url).filter((url, i, all) => all.indexOf(url) === i);
}

/** The `search` (or `domain`) domains of resolv.conf. */
export async function searchDomains(file = '/etc/resolv.conf'): Promise<string[]> {
  const text = await readFile(file, 'utf8').catch(() => '');
  const domains: string[] = [];
  for (const line of text.split('\n')) {
    const [key, ...rest] = line.trim().split(/\s+/);
    if (key === 'search' || key === 'domain') domains.push(...rest);
  }
  return domains.filter((d) => /^[A-Za-z0-9.-]{1,253}$/.test(d) && d !== 'local' && d !== '.');
}

/** Unicast DNS-SD: PTR `_nmos-register._tcp.<domain>`, then each instance's SRV and TXT. */
export async function unicastRegistries(resolver: DnsResolver, domains: readonly string[]): Promise<string[]> {
  const found: FoundRegistry[] = [];
  for (const domain of domains) {
    const instances = await resolver.resolvePtr(`${REGISTER_SERVICE}.${domain}`).catch(() => []);
    for (const instance of instances) {
      const [srvs, txts] = await Promise.all([resolver.resolveSrv(instance).catch(() => []), resolver.resolveTxt(instance).catch(() => [])]);
      // Each string of a TXT record is one key=value pair (RFC 6763 6.3), not a piece of one text.
      const txt = txtMap(txts.flat());
      for (const srv of srvs) {
        const registry = registryOf(srv.name, srv.port, txt);
        if (registry !== undefined) found.push(registry);
      }
    }
  }
  return byPriority(found);
}

function serviceTxt(service: Service): Map<string, string> {
  const raw = (service.txt ?? {}) as Record<string, unknown>;
  return txtMap(Object.entries(raw).map(([k, v]) => `${k}=${Buffer.isBuffer(v) ? v.toString('utf8') : String(v)}`));
}

/** The registries among browsed services, by priority. */
function registriesOf(services: readonly Service[]): string[] {
  const found: FoundRegistry[] = [];
  for (const service of services) {
    const address = (service.addresses ?? []).find((a) => !isIPv6(a)) ?? service.addresses?.[0] ?? service.referer?.address ?? service.host;
    const registry = registryOf(address, service.port, serviceTxt(service));
    if (registry !== undefined) found.push(registry);
  }
  return byPriority(found);
}

/**
 * mDNS: one browse for `_nmos-register._tcp.local`, kept open, so registries advertised later
 * (and the goodbyes of withdrawn ones) are known when the node needs one, without waiting: a
 * fail-over to the next registry takes no browse time. The first answer waits `browseMs` for
 * replies; later ones send a new query (answers come in the background) and drop the records
 * whose TTL ran out.
 */
export class MdnsRegistryBrowser {
  private browser: Browser | undefined;
  private startedAt = 0;

  constructor(private readonly bonjour: Pick<Bonjour, 'find'>, private readonly browseMs: number, private readonly now: () => number = Date.now) {}

  async registries(): Promise<string[]> {
    if (this.browser === undefined) {
      this.browser = this.bonjour.find({ type: 'nmos-register', protocol: 'tcp' });
      this.startedAt = this.now();
    } else {
      this.browser.expire();
      this.browser.update();
    }
    const wait = this.startedAt + this.browseMs - this.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    return registriesOf(this.browser.services);
  }

  stop(): void {
    this.browser?.stop();
    this.browser = undefined;
  }
}

export { Bonjour };
