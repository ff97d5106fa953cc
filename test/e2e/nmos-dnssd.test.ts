/**
 * NMOS discovery end to end (IS-04 v1.3 "Discovery: Registered Operation" and "Peer to Peer
 * Operation"), inside two network namespaces this test creates (veth pair): the engine (the
 * shipped bundle, `[nmos] registries = []`) in namespace a; in namespace b the test registries
 * (test/helpers/nmos-registry-cli.ts: every body validated against the official schemas), an
 * mDNS peer made with python3-zeroconf (test/helpers/mdns-peer.py) and, for unicast DNS-SD,
 * dnsmasq. Each namespace gets its own resolv.conf (`ip netns exec` mounts
 * /etc/netns/<ns>/resolv.conf), so no DNS query and no mDNS packet leaves the namespaces.
 * - mDNS: three registries advertised as `_nmos-register._tcp` (pri 10, pri 20, and one that
 *   speaks only v1.2): the engine registers node, device, source, flow and sender with pri 10,
 *   never asks the v1.2 one, and moves to pri 20 when pri 10 stops.
 * - peer-to-peer: no registry: the engine's `_nmos-node._tcp` is seen by the browser with the
 *   TXT records of IS-04 (api_proto, api_ver, api_auth, ver_*), points at the Node API, and the
 *   ver_ counters move when a pipeline is created; once a registry is advertised the node
 *   registers with it and withdraws the advertisement.
 * - unicast DNS-SD: PTR/SRV/TXT of `_nmos-register._tcp.nmos.test` served by dnsmasq, the search
 *   domain in resolv.conf: the engine registers there, before an mDNS registry of higher priority.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import t, { type Test } from 'tap';
import { eventually, startEngine, writeConfig, type EngineProcess } from '../helpers/engine-process.js';
import { canUseNetns, createNetnsPair, nsApi, spawnIn, type NetnsPair } from '../helpers/netns.js';
import type { RegistryState } from '../helpers/nmos-registry-cli.js';
import { nmosSchemas } from '../helpers/nmos-schemas.js';
import { freeTcpPort } from '../helpers/ports.js';

const HELPERS = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../helpers');
/** Debian's python3 (python3-zeroconf is a Debian package), not whatever python3 PATH finds first. */
const PYTHON = '/usr/bin/python3';
const SKIP = canUseNetns() ? false : 'needs root and iproute2 (ip netns)';
const NODE_SELF = '/x-nmos/node/v1.3/self';

/** stdout lines of a child, kept as they come. */
function linesOf(child: ChildProcess): string[] {
  const lines: string[] = [];
  if (child.stdout !== null) createInterface({ input: child.stdout }).on('line', (line) => lines.push(line));
  return lines;
}

/** /etc/netns/<ns>/resolv.conf (what `ip netns exec` mounts on /etc/resolv.conf), removed in the teardown. */
function resolvConf(t: Test, ns: string, lines: string[]): void {
  const dir = path.join('/etc/netns', ns);
  mkdirSync(dir, { recursive: true });
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(path.join(dir, 'resolv.conf'), `${lines.join('\n')}\n`);
}

interface NsRegistry {
  url: string;
  port: number;
  child: ChildProcess;
  state(): RegistryState;
}

async function registryIn(t: Test, ns: string, address: string): Promise<NsRegistry> {
  const child = spawnIn(ns, process.execPath, ['--import', 'tsx', path.join(HELPERS, 'nmos-registry-cli.ts'), address, '240']);
  t.teardown(() => void child.kill('SIGKILL'));
  const lines = linesOf(child);
  const stderr: string[] = [];
  child.stderr?.on('data', (chunk: Buffer) => stderr.push(chunk.toString()));
  const first = await eventually(() => lines[0], 60_000, 'the registry in the namespace listening').catch((error: unknown) => {
    throw new Error(`${(error as Error).message}: ${stderr.join('')}`);
  });
  const { url } = JSON.parse(first) as { url: string };
  const empty: RegistryState = { counts: {}, senders: [], heartbeats: 0, invalid: [], requests: 0, firstRequestAt: null };
  return {
    url,
    port: Number(new URL(url).port),
    child,
    state: () => (lines.length > 1 ? (JSON.parse(lines[lines.length - 1] ?? '') as RegistryState) : empty),
  };
}

/** `_nmos-register._tcp` advertised by python3-zeroconf from namespace b. */
async function advertiseRegistry(t: Test, net: NetnsPair, name: string, port: number, txt: Record<string, string>): Promise<ChildProcess> {
  const pairs = Object.entries(txt).map(([k, v]) => `${k}=${v}`);
  const child = spawnIn(net.b.ns, PYTHON, [path.join(HELPERS, 'mdns-peer.py'), 'advertise', net.b.address, name, String(port), ...pairs]);
  t.teardown(() => void child.kill('SIGKILL'));
  const lines = linesOf(child);
  const stderr: string[] = [];
  child.stderr?.on('data', (chunk: Buffer) => stderr.push(chunk.toString()));
  await eventually(() => (lines.includes('ready') ? true : undefined), 15_000, `${name} advertised`).catch((error: unknown) => {
    throw new Error(`${(error as Error).message}: ${stderr.join('')}`);
  });
  return child;
}

const REGISTRY_TXT = { api_proto: 'http', api_ver: 'v1.3', api_auth: 'false' };

async function nmosEngine(t: Test, net: NetnsPair, options: { bindAll?: boolean } = {}): Promise<{ engine: EngineProcess; nmosPort: number }> {
  const nmosPort = await freeTcpPort();
  const extraToml = [
    '[nmos]', 'enabled = true', `http_port = ${nmosPort}`, 'registries = []', 'label = "dnssd test node"',
    '[aes67]', 'sap = false', `interface = "${net.a.ifname}"`,
  ].join('\n');
  const written = await writeConfig(t, { extraToml });
  if (options.bindAll === true) {
    // The Node API reachable from namespace b (peer-to-peer: the browser follows the advertisement).
    const text = readFileSync(written.file, 'utf8');
    if (!text.includes('bind = "127.0.0.1"')) throw new Error('the base config has no bind = "127.0.0.1" to replace');
    writeFileSync(written.file, text.replace('bind = "127.0.0.1"', 'bind = "0.0.0.0"'));
  }
  const engine = await startEngine(t, { netns: net.a.ns, configFile: written.file, restPort: written.restPort, waitForReady: false });
  t.teardown(() => {
    if (t.passing()) return;
    const lines = engine.logs.filter((l) => String(l.event ?? '').startsWith('nmos') || Number(l.level) >= 40);
    t.comment(`engine log:\n${lines.map((l) => JSON.stringify(l)).join('\n')}\nstderr:\n${engine.stderr.join('\n')}`);
  });
  await engine.waitForLog((l) => l.event === 'restored', 60_000);
  return { engine, nmosPort };
}

function createPipelineIn(net: NetnsPair, engine: EngineProcess, name: string, srtPort: number): string {
  const created = nsApi<{ id: string }>(net.a.ns, 'POST', `http://127.0.0.1:${engine.restPort}/api/v1/pipelines`, {
    name,
    input: { type: 'srt', port: srtPort, latency: 300 },
    processing: [],
    output: { type: 'rtp', host: '127.0.0.1', port: 9 },
  });
  if (created.status !== 201) throw new Error(`create failed: ${created.status} ${created.text}`);
  return created.body.id;
}

const registeredAll = (state: RegistryState): boolean =>
  ['node', 'device', 'source', 'flow', 'sender'].every((type) => (state.counts[type] ?? 0) === 1);

void t.test('mDNS: the engine finds the registries, highest priority first, v1.2-only ones left out', { skip: SKIP }, async (t) => {
  const net = createNetnsPair(t, 'nmdm');
  resolvConf(t, net.a.ns, [`nameserver ${net.b.address}`]);
  const high = await registryIn(t, net.b.ns, net.b.address);
  const low = await registryIn(t, net.b.ns, net.b.address);
  const old = await registryIn(t, net.b.ns, net.b.address);
  const highAd = await advertiseRegistry(t, net, 'reg-high', high.port, { ...REGISTRY_TXT, pri: '10' });
  await advertiseRegistry(t, net, 'reg-low', low.port, { ...REGISTRY_TXT, pri: '20' });
  await advertiseRegistry(t, net, 'reg-old', old.port, { ...REGISTRY_TXT, api_ver: 'v1.0,v1.1,v1.2', pri: '0' });

  const { engine } = await nmosEngine(t, net);
  createPipelineIn(net, engine, 'dnssd one', 9100);
  const registered = await eventually(() => {
    const state = high.state();
    return registeredAll(state) && state.heartbeats >= 1 ? state : undefined;
  }, 30_000, 'node, device, source, flow and sender registered with pri 10 and a heartbeat');
  t.same(registered.invalid, [], 'every Registration API body validated against the IS-04 v1.3 schemas');
  // On a loaded machine a slow answer (over 2 s) is a failed registry and the node may move on:
  // what must hold is the order in which they were asked.
  const lowFirst = low.state().firstRequestAt;
  t.ok(lowFirst === null || lowFirst > (registered.firstRequestAt ?? Infinity), 'pri 10 is asked before pri 20');
  t.equal(old.state().requests, 0, 'the v1.2-only registry is never asked, pri 0 or not');
  t.ok(engine.logs.some((l) => l.event === 'nmos-registered' && l.registry === high.url), 'the log names the registry');

  // pri 10 goes (registry and advertisement): the node moves to pri 20.
  highAd.kill('SIGTERM');
  high.child.kill('SIGTERM');
  const moved = await eventually(() => {
    const state = low.state();
    return registeredAll(state) ? state : undefined;
  }, 30_000, 'registered with pri 20 after pri 10 stopped');
  t.same(moved.invalid, [], 'pri 20 got valid bodies too');
  t.equal(old.state().requests, 0, 'still nothing to the v1.2-only registry');
});

interface BrowseLine {
  event: 'added' | 'updated' | 'removed' | 'settled';
  name: string;
  addresses?: string[];
  port?: number;
  txt?: Record<string, string | null>;
}

void t.test('peer-to-peer: without a registry the node advertises _nmos-node._tcp; ver_ counters follow', { skip: SKIP }, async (t) => {
  const net = createNetnsPair(t, 'nmdp');
  resolvConf(t, net.a.ns, [`nameserver ${net.b.address}`]);
  const browser = spawnIn(net.b.ns, PYTHON, [path.join(HELPERS, 'mdns-peer.py'), 'browse', net.b.address, '200']);
  t.teardown(() => void browser.kill('SIGKILL'));
  const lines = linesOf(browser);
  await eventually(() => (lines.includes('ready') ? true : undefined), 15_000, 'the mDNS browser');
  const seen = (): BrowseLine[] => lines.filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as BrowseLine);

  const { engine, nmosPort } = await nmosEngine(t, net, { bindAll: true });
  const first = await eventually(() => seen().find((l) => l.txt !== undefined), 30_000, 'the node\'s _nmos-node._tcp seen by python3-zeroconf');
  t.match(first.name, /\._nmos-node\._tcp\.local\.$/, 'service type _nmos-node._tcp');
  t.same(first.txt, {
    api_proto: 'http', api_ver: 'v1.3', api_auth: 'false',
    ver_slf: '0', ver_src: '0', ver_flw: '0', ver_dvc: '0', ver_snd: '0', ver_rcv: '0',
  }, 'TXT: api_proto, api_ver, api_auth and every ver_ counter at 0');
  t.equal(first.port, nmosPort, 'the advertised port is the Node API\'s');
  t.ok(first.addresses?.includes(net.a.address), `the advertised addresses (${String(first.addresses)}) include the engine's veth address`);

  // The advertisement leads to the Node API.
  const self = nsApi<{ id: string }>(net.b.ns, 'GET', `http://${net.a.address}:${first.port ?? 0}${NODE_SELF}`);
  t.equal(self.status, 200, 'the Node API answers at the advertised address and port');
  t.same(nmosSchemas('is-04').errors('node.json', self.body), [], 'self validates against node.json');

  // A pipeline: sources, flows, devices (its sender list) and senders change.
  createPipelineIn(net, engine, 'p2p one', 9101);
  const moved = await eventually(() => seen().find((l) => l.txt?.ver_snd === '1'), 30_000, 'ver_snd at 1 after a pipeline was created');
  t.equal(moved.txt?.ver_src, '1', 'ver_src moved');
  t.equal(moved.txt?.ver_flw, '1', 'ver_flw moved');
  t.equal(moved.txt?.ver_dvc, '1', 'ver_dvc moved (the device lists its senders)');
  t.equal(moved.txt?.ver_rcv, '0', 'ver_rcv stays (no receivers)');

  // A registry appears: the node registers and withdraws its peer-to-peer advertisement.
  const registry = await registryIn(t, net.b.ns, net.b.address);
  await advertiseRegistry(t, net, 'reg-late', registry.port, { ...REGISTRY_TXT, pri: '10' });
  await eventually(() => (registeredAll(registry.state()) ? true : undefined), 30_000, 'registered with the registry advertised later');
  t.same(registry.state().invalid, [], 'valid bodies');
  await eventually(() => seen().find((l) => l.event === 'removed'), 15_000, 'the _nmos-node._tcp advertisement withdrawn');
  t.pass('registered: the peer-to-peer advertisement is withdrawn');
});

void t.test('unicast DNS-SD: the registry in the search domain, before mDNS', { skip: SKIP }, async (t) => {
  const net = createNetnsPair(t, 'nmdu');
  const domain = 'nmos.test';
  resolvConf(t, net.a.ns, [`nameserver ${net.b.address}`, `search ${domain}`]);
  const unicast = await registryIn(t, net.b.ns, net.b.address);
  const multicast = await registryIn(t, net.b.ns, net.b.address);
  await advertiseRegistry(t, net, 'reg-mdns', multicast.port, { ...REGISTRY_TXT, pri: '0' });

  const instance = `reg-dns._nmos-register._tcp.${domain}`;
  const dnsmasq = spawnIn(net.b.ns, 'dnsmasq', [
    '--keep-in-foreground', '--conf-file=/dev/null', '--no-resolv', '--no-hosts', '--no-poll', '--user=root', '--pid-file',
    '--log-facility=-', '--log-queries', '--bind-interfaces', `--listen-address=${net.b.address}`, '--port=53',
    `--ptr-record=_nmos-register._tcp.${domain},${instance}`,
    `--srv-host=${instance},registry.${domain},${unicast.port},0,0`,
    `--txt-record=${instance},api_proto=http,api_ver=v1.3,api_auth=false,pri=50`,
    `--host-record=registry.${domain},${net.b.address}`,
  ]);
  t.teardown(() => void dnsmasq.kill('SIGKILL'));
  const dnsLog: string[] = [];
  dnsmasq.stderr?.on('data', (chunk: Buffer) => dnsLog.push(chunk.toString()));
  await eventually(() => (dnsLog.join('').includes('started') ? true : undefined), 15_000, 'dnsmasq started').catch((error: unknown) => {
    throw new Error(`${(error as Error).message}: ${dnsLog.join('')}`);
  });

  t.teardown(() => {
    if (!t.passing()) t.comment(`dnsmasq:\n${dnsLog.join('')}`);
  });
  const { engine } = await nmosEngine(t, net);
  createPipelineIn(net, engine, 'unicast one', 9102);
  const state = await eventually(() => (registeredAll(unicast.state()) ? unicast.state() : undefined), 30_000, 'registered with the unicast DNS-SD registry');
  t.same(state.invalid, [], 'every body valid');
  t.ok(engine.logs.some((l) => l.event === 'nmos-registered' && l.registry === `http://registry.${domain}:${unicast.port}`), 'registered by its DNS name from the SRV record');
  const multicastFirst = multicast.state().firstRequestAt;
  t.ok(multicastFirst === null || multicastFirst > (state.firstRequestAt ?? Infinity), 'the unicast DNS-SD registry is asked before the mDNS one (pri 0)');
});
