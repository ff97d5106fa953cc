/**
 * Two network namespaces joined by a veth pair, made by a test and always removed in its
 * teardown (every process still inside killed first). Multicast (SAP, RTP, PTP) stays between
 * them: each side routes 224.0.0.0/4 to its veth end, loopback is up, the host's own interfaces
 * never see a packet.
 */
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import type { Test } from 'tap';

export interface NetnsPair {
  /** The engine's side. */
  a: { ns: string; ifname: string; address: string; mac: string };
  /** The receiver's side. */
  b: { ns: string; ifname: string; address: string; mac: string };
}

function ip(...args: string[]): string {
  return execFileSync('ip', args, { encoding: 'utf8' });
}

/** True when this process may create namespaces (root, iproute2). */
export function canUseNetns(): boolean {
  const probe = spawnSync('ip', ['netns', 'list'], { encoding: 'utf8' });
  return probe.status === 0 && process.getuid?.() === 0;
}

export function killNamespaceProcesses(ns: string): void {
  const pids = spawnSync('ip', ['netns', 'pids', ns], { encoding: 'utf8' }).stdout.split('\n').filter((p) => /^\d+$/.test(p));
  for (const pid of pids) {
    try {
      process.kill(Number(pid), 'SIGKILL');
    } catch {
      // gone
    }
  }
}

/** Adds the namespaces; the test's teardown kills what runs in them and deletes them, even on failure. */
function addNamespaces(t: Test, names: string[]): void {
  t.teardown(() => {
    for (const ns of names) {
      killNamespaceProcesses(ns);
      spawnSync('ip', ['netns', 'del', ns]);
    }
  });
  for (const ns of names) ip('netns', 'add', ns);
}

export function createNetnsPair(t: Test, tag: string): NetnsPair {
  const id = `${tag}${process.pid % 100000}`;
  const subnet = `10.${100 + (process.pid % 100)}.${Math.floor(Math.random() * 250)}`;
  const a = { ns: `${id}a`, ifname: `${id}a`.slice(0, 15), address: `${subnet}.1`, mac: '' };
  const b = { ns: `${id}b`, ifname: `${id}b`.slice(0, 15), address: `${subnet}.2`, mac: '' };
  addNamespaces(t, [a.ns, b.ns]);
  ip('link', 'add', a.ifname, 'type', 'veth', 'peer', 'name', b.ifname);
  for (const side of [a, b]) {
    ip('link', 'set', side.ifname, 'netns', side.ns);
    ip('-n', side.ns, 'addr', 'add', `${side.address}/24`, 'dev', side.ifname);
    ip('-n', side.ns, 'link', 'set', 'lo', 'up');
    ip('-n', side.ns, 'link', 'set', side.ifname, 'up');
    ip('-n', side.ns, 'route', 'add', '224.0.0.0/4', 'dev', side.ifname);
    side.mac = /link\/ether ([0-9a-f:]{17})/.exec(ip('-n', side.ns, 'link', 'show', side.ifname))?.[1] ?? '';
  }
  return { a, b };
}

/** Starts a command inside a namespace (ip netns exec execs it: the pid is the command's). */
export function spawnIn(ns: string, command: string, args: readonly string[], options: { stdio?: 'pipe' | 'ignore' } = {}): ChildProcess {
  const stdio = options.stdio ?? 'pipe';
  return spawn('ip', ['netns', 'exec', ns, command, ...args], { stdio: ['ignore', stdio, stdio] });
}

export interface NsResponse<T = unknown> {
  status: number;
  body: T;
  text: string;
  contentType: string;
}

/** An HTTP request made from inside a namespace (curl), for an engine that listens there. */
export function nsApi<T = unknown>(ns: string, method: string, url: string, body?: unknown): NsResponse<T> {
  const args = ['netns', 'exec', ns, 'curl', '-s', '-S', '-X', method, '-o', '-', '-w', '\n%{http_code} %{content_type}', '--max-time', '10'];
  if (body !== undefined) args.push('-H', 'content-type: application/json', '--data-binary', JSON.stringify(body));
  args.push(url);
  const out = execFileSync('ip', args, { encoding: 'utf8' });
  const cut = out.lastIndexOf('\n');
  const text = out.slice(0, cut);
  const [code = '0', contentType = ''] = out.slice(cut + 1).split(' ');
  let parsed: unknown = text;
  if (contentType.includes('json') && text !== '') parsed = JSON.parse(text);
  return { status: Number(code), body: parsed as T, text, contentType };
}

export interface DualNetwork {
  /** The engine's namespace and its two interfaces: legs[0] on network 1, legs[1] on network 2. */
  a: { ns: string; legs: { ifname: string; address: string }[] };
  /** The receivers' namespace, an interface on each network. */
  b: { ns: string; legs: { ifname: string; address: string }[] };
}

/**
 * Two namespaces joined by two veth pairs: two independent networks (ST 2022-7's two legs), each
 * its own /24. No multicast route: senders and receivers name their interface. Removed in the
 * teardown like createNetnsPair's.
 */
export function createDualNetwork(t: Test, tag: string): DualNetwork {
  const id = `${tag}${process.pid % 100000}`;
  const subnet = (n: number) => `10.${100 + (process.pid % 100)}.${(Math.floor(Math.random() * 120) * 2 + n) % 250}`;
  const nets = [subnet(0), subnet(1)];
  const a = { ns: `${id}a`, legs: nets.map((net, i) => ({ ifname: `${id}a${i + 1}`.slice(0, 15), address: `${net}.1` })) };
  const b = { ns: `${id}b`, legs: nets.map((net, i) => ({ ifname: `${id}b${i + 1}`.slice(0, 15), address: `${net}.2` })) };
  addNamespaces(t, [a.ns, b.ns]);
  nets.forEach((_, i) => {
    const [ea, eb] = [a.legs[i], b.legs[i]];
    if (ea === undefined || eb === undefined) return;
    ip('link', 'add', ea.ifname, 'type', 'veth', 'peer', 'name', eb.ifname);
    for (const [side, end] of [[a, ea], [b, eb]] as const) {
      ip('link', 'set', end.ifname, 'netns', side.ns);
      ip('-n', side.ns, 'addr', 'add', `${end.address}/24`, 'dev', end.ifname);
      ip('-n', side.ns, 'link', 'set', end.ifname, 'up');
    }
  });
  for (const side of [a, b]) ip('-n', side.ns, 'link', 'set', 'lo', 'up');
  return { a, b };
}

/** Takes an interface of a namespace down or up (`ip link set`). */
export function setLink(ns: string, ifname: string, state: 'up' | 'down'): void {
  ip('-n', ns, 'link', 'set', ifname, state);
}
