/**
 * Two network namespaces joined by a veth pair, made by a test and always removed in its
 * teardown (every process still inside killed first). Multicast (SAP, RTP, PTP) stays between
 * them: each side routes 224.0.0.0/4 to its veth end, loopback is up, the host's own interfaces
 * never see a packet.
 *
 * Every namespace made here is named `aet-<tag>-<pid>-<side>` (namespaceName): the pid is the
 * creating process's. A test file that tap kills at its timeout never runs its teardown; the
 * next create sweeps such leftovers (sweepStaleNamespaces: a name of that form whose pid is no
 * longer alive), and never touches a namespace of another form. The veth ends keep their short
 * names (`<tag><pid % 100000><side>[leg]`, at most 15 characters); they live inside the
 * namespaces and go with them.
 */
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import path from 'node:path';
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

/** A test's tag: a letter and up to 4 more letters or digits (it is part of 15-character veth names). */
const TAG = /^[a-z][a-z0-9]{0,4}$/;
/** The namespaces these helpers make: `aet-<tag>-<creating pid>-<side>`. */
const HELPER_NAMESPACE = /^aet-([a-z][a-z0-9]{0,4})-([1-9][0-9]{0,9})-([ab])$/;

/** The name of a namespace the helpers make for `tag`, by process `pid`. */
export function namespaceName(tag: string, pid: number, side: 'a' | 'b'): string {
  if (!TAG.test(tag)) throw new Error(`netns tag ${JSON.stringify(tag)} must be a letter and up to 4 letters or digits`);
  return `aet-${tag}-${pid}-${side}`;
}

/** The pid that made `ns`, when the helpers made it; else undefined (a namespace to leave alone). */
export function creatorOf(ns: string): number | undefined {
  const match = HELPER_NAMESPACE.exec(ns);
  return match === null ? undefined : Number(match[2]);
}

/** Whether process `pid` exists (EPERM: it does, owned by another user). */
function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function removeNamespace(ns: string): void {
  killNamespaceProcesses(ns);
  spawnSync('ip', ['netns', 'del', ns]);
  // A resolv.conf a test gave the namespace (`ip netns exec` mounts /etc/netns/<ns>/*).
  rmSync(path.join('/etc/netns', ns), { recursive: true, force: true });
}

/**
 * Removes the namespaces the helpers made whose creating process is gone (a test file killed at
 * its timeout, whose teardown never ran), killing what still runs in them first. Namespaces of
 * any other name are never touched. Returns the names removed.
 */
export function sweepStaleNamespaces(alive: (pid: number) => boolean = isAlive): string[] {
  const listed = spawnSync('ip', ['netns', 'list'], { encoding: 'utf8' });
  if (listed.status !== 0) return [];
  const removed: string[] = [];
  for (const line of listed.stdout.split('\n')) {
    const ns = line.split(' ')[0] ?? ''; // "name (id: 3)"
    const pid = creatorOf(ns);
    if (pid === undefined || alive(pid)) continue;
    removeNamespace(ns);
    removed.push(ns);
  }
  return removed;
}

/**
 * Adds the namespaces (after sweeping stale ones); the test's teardown kills what runs in them
 * and deletes them, even on failure.
 */
function addNamespaces(t: Test, names: string[]): void {
  sweepStaleNamespaces();
  t.teardown(() => {
    for (const ns of names) removeNamespace(ns);
  });
  for (const ns of names) ip('netns', 'add', ns);
}

export function createNetnsPair(t: Test, tag: string): NetnsPair {
  const id = `${tag}${process.pid % 100000}`;
  const subnet = `10.${100 + (process.pid % 100)}.${Math.floor(Math.random() * 250)}`;
  const a = { ns: namespaceName(tag, process.pid, 'a'), ifname: `${id}a`, address: `${subnet}.1`, mac: '' };
  const b = { ns: namespaceName(tag, process.pid, 'b'), ifname: `${id}b`, address: `${subnet}.2`, mac: '' };
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
  const a = { ns: namespaceName(tag, process.pid, 'a'), legs: nets.map((net, i) => ({ ifname: `${id}a${i + 1}`, address: `${net}.1` })) };
  const b = { ns: namespaceName(tag, process.pid, 'b'), legs: nets.map((net, i) => ({ ifname: `${id}b${i + 1}`, address: `${net}.2` })) };
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
