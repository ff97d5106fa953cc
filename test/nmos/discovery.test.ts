/**
 * The pure parts of NMOS discovery: unicast DNS-SD answers (PTR, SRV, TXT as node:dns gives
 * them) turned into registries by priority, the search domains of a resolv.conf, and the ver_
 * counters of the peer-to-peer advertisement. The network end is test/e2e/nmos-dnssd.test.ts.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { CollectionCounters, collectionStamps } from '../../src/nmos/advertise.js';
import { byPriority, registryOf, searchDomains, txtMap, unicastRegistries, type DnsResolver } from '../../src/nmos/discovery.js';
import type { NmosResource } from '../../src/nmos/resources.js';

/** A resolver answering from a table, as node:dns would (TXT: one array of strings per record). */
function tableResolver(table: { ptr: Record<string, string[]>; srv: Record<string, { name: string; port: number }>; txt: Record<string, string[][]> }): DnsResolver & { asked: string[] } {
  const asked: string[] = [];
  const find = <T>(map: Record<string, T>, name: string): Promise<T> => {
    asked.push(name);
    const value = map[name];
    return value === undefined ? Promise.reject(new Error(`queryTxt ENOTFOUND ${name}`)) : Promise.resolve(value);
  };
  return {
    asked,
    resolvePtr: (name) => find(table.ptr, name),
    resolveSrv: async (name) => {
      const srv = await find(table.srv, name);
      return [{ ...srv, priority: 0, weight: 0 }];
    },
    resolveTxt: (name) => find(table.txt, name),
  };
}

void t.test('unicast DNS-SD: each TXT string a key=value pair; v1.3 over http only; lowest pri first', async (t) => {
  const resolver = tableResolver({
    ptr: { '_nmos-register._tcp.plant.example': ['a._nmos-register._tcp.plant.example', 'b._nmos-register._tcp.plant.example', 'old._nmos-register._tcp.plant.example', 'tls._nmos-register._tcp.plant.example'] },
    srv: {
      'a._nmos-register._tcp.plant.example': { name: 'reg-a.plant.example', port: 8235 },
      'b._nmos-register._tcp.plant.example': { name: 'reg-b.plant.example.', port: 80 },
      'old._nmos-register._tcp.plant.example': { name: 'reg-old.plant.example', port: 80 },
      'tls._nmos-register._tcp.plant.example': { name: 'reg-tls.plant.example', port: 443 },
    },
    txt: {
      // What node:dns answers for one TXT record of four strings.
      'a._nmos-register._tcp.plant.example': [['api_proto=http', 'api_ver=v1.2,v1.3', 'api_auth=false', 'pri=20']],
      'b._nmos-register._tcp.plant.example': [['api_proto=http', 'api_ver=v1.3', 'api_auth=false', 'pri=10']],
      'old._nmos-register._tcp.plant.example': [['api_proto=http', 'api_ver=v1.0,v1.1,v1.2', 'pri=0']],
      'tls._nmos-register._tcp.plant.example': [['api_proto=https', 'api_ver=v1.3', 'pri=0']],
    },
  });
  t.same(await unicastRegistries(resolver, ['nowhere.example', 'plant.example']), ['http://reg-b.plant.example:80', 'http://reg-a.plant.example:8235'],
    'pri 10 before pri 20; the v1.2-only and the https registries left out; a domain without answers skipped');
  t.ok(resolver.asked.includes('_nmos-register._tcp.nowhere.example'), 'every search domain is asked');
});

void t.test('registryOf: defaults, IPv6 literals, a pri that is no number', async (t) => {
  t.same(registryOf('10.0.0.5', 8235, txtMap([])), { url: 'http://10.0.0.5:8235', pri: 100 }, 'no TXT: http, v1.3, pri 100');
  t.same(registryOf('fd00::5', 80, txtMap(['pri=5'])), { url: 'http://[fd00::5]:80', pri: 5 });
  t.same(registryOf('reg.example.', 80, txtMap(['PRI=x'])), { url: 'http://reg.example:80', pri: 100 }, 'keys case-insensitive, a bad pri counts as 100');
  t.equal(registryOf('reg', 80, txtMap(['api_ver=v1.2'])), undefined);
});

void t.test('byPriority: equal priorities in random order, each URL once', async (t) => {
  const found = [{ url: 'http://x', pri: 10 }, { url: 'http://y', pri: 10 }, { url: 'http://z', pri: 0 }, { url: 'http://x', pri: 10 }];
  const orders = new Set<string>();
  for (const r of [0, 0.3, 0.6, 0.99]) orders.add(byPriority(found, () => r).join(' '));
  for (const order of orders) {
    t.equal(order.split(' ')[0], 'http://z', `pri 0 first (${order})`);
    t.equal(order.split(' ').length, 3, 'each URL once');
  }
  t.same([...orders].sort(), ['http://z http://x http://y', 'http://z http://y http://x'], 'both orders of the two pri 10 registries occur');
});

void t.test('searchDomains: search and domain lines, not local', async (t) => {
  const file = path.join(t.testdir(), 'resolv.conf');
  writeFileSync(file, '# a comment\nnameserver 10.0.0.1\nsearch plant.example studio.example local\ndomain other.example\noptions ndots:1\n');
  t.same(await searchDomains(file), ['plant.example', 'studio.example', 'other.example']);
  t.same(await searchDomains(path.join(t.testdir(), 'missing')), [], 'no file: none');
});

void t.test('ver_ counters: 0 at first, +1 when their collection changes, wrap after 255', async (t) => {
  const resource = (id: string, version: string): NmosResource => ({ id, version } as NmosResource);
  const base = { node: resource('n', '1:0'), device: resource('d', '1:0'), sources: [], flows: [], senders: [] };
  const counters = new CollectionCounters();
  t.equal(counters.update(collectionStamps(base)), false, 'the first look sets the counters');
  t.same(counters.txt(), { ver_slf: '0', ver_src: '0', ver_flw: '0', ver_dvc: '0', ver_snd: '0', ver_rcv: '0' });
  t.equal(counters.update(collectionStamps(base)), false, 'nothing changed');
  const withSender = { ...base, device: resource('d', '2:0'), senders: [resource('s', '2:0')] };
  t.equal(counters.update(collectionStamps(withSender)), true);
  t.same(counters.txt(), { ver_slf: '0', ver_src: '0', ver_flw: '0', ver_dvc: '1', ver_snd: '1', ver_rcv: '0' }, 'devices and senders moved');
  for (let i = 0; i < 255; i++) counters.update(collectionStamps({ ...withSender, node: resource('n', `${i + 10}:0`) }));
  t.equal(counters.txt().ver_slf, '255');
  counters.update(collectionStamps({ ...withSender, node: resource('n', '999:0') }));
  t.equal(counters.txt().ver_slf, '0', 'after 255 comes 0');
});
