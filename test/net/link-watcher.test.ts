import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { isInterfaceName } from '../../src/net/interface-name.js';
import { linkDownCause, readSysfsLink, type LinkReading } from '../../src/net/link-state.js';
import { LinkWatcher } from '../../src/net/link-watcher.js';

const UP: LinkReading = { exists: true, operstate: 'up', carrier: true };
const NO_CARRIER: LinkReading = { exists: true, operstate: 'down', carrier: false };
const ADMIN_DOWN: LinkReading = { exists: true, operstate: 'down', carrier: null };
const GONE: LinkReading = { exists: false, operstate: null, carrier: null };

void t.test('interface names: what the spec accepts, never a path step', async (t) => {
  for (const name of ['eth0', 'enp3s0f1', 'veth-a.10', 'br_0', 'a', '123456789012345']) t.ok(isInterfaceName(name), name);
  for (const name of ['', '.', '..', '../etc', 'eth0/..', 'a b', '1234567890123456', 'eth0\n']) t.notOk(isInterfaceName(name), JSON.stringify(name));
});

void t.test("a link's cause: no carrier, down, gone, or none", async (t) => {
  t.equal(linkDownCause('eth1', UP), null);
  t.equal(linkDownCause('eth1', NO_CARRIER), 'no carrier on eth1');
  t.equal(linkDownCause('eth1', { exists: true, operstate: 'lowerlayerdown', carrier: false }), 'no carrier on eth1');
  t.equal(linkDownCause('eth1', ADMIN_DOWN), 'eth1 is down');
  t.equal(linkDownCause('eth1', GONE), 'no interface eth1');
  t.equal(linkDownCause('tun0', { exists: true, operstate: 'unknown', carrier: true }), null, 'no operstate support, carrier 1');
  t.equal(linkDownCause('x', { exists: true, operstate: 'unknown', carrier: null }), null, 'Linux does not say: not failed');
});

void t.test('readSysfsLink reads operstate and carrier under its root and refuses a name that is not one', async (t) => {
  const root = mkdtempSync(path.join(tmpdir(), 'sysfs-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const iface = (name: string, operstate: string, carrier?: string) => {
    mkdirSync(path.join(root, name));
    writeFileSync(path.join(root, name, 'operstate'), `${operstate}\n`);
    if (carrier !== undefined) writeFileSync(path.join(root, name, 'carrier'), `${carrier}\n`);
  };
  iface('eth0', 'up', '1');
  iface('eth1', 'down', '0');
  iface('eth2', 'down'); // carrier unreadable (administratively down: EINVAL in sysfs)
  t.same(readSysfsLink('eth0', root), UP);
  t.same(readSysfsLink('eth1', root), NO_CARRIER);
  t.same(readSysfsLink('eth2', root), ADMIN_DOWN);
  t.same(readSysfsLink('eth9', root), GONE);
  t.throws(() => readSysfsLink('..', root), /not an interface name/);
  t.throws(() => readSysfsLink('../eth0', root), /not an interface name/);
});

/** A watcher over readings the test sets, and what each listener heard. */
function fixture() {
  const readings = new Map<string, LinkReading>();
  const reads: string[] = [];
  const watcher = new LinkWatcher((ifname) => {
    reads.push(ifname);
    return readings.get(ifname) ?? GONE;
  }, { periodMs: 60_000 });
  return { readings, reads, watcher };
}

void t.test('a watch hears the current state at once, then each change, and nothing else', async (t) => {
  const { readings, watcher } = fixture();
  t.teardown(() => watcher.close());
  readings.set('eth1', UP);
  const heard: (string | null)[] = [];
  const end = watcher.watch('eth1', (cause) => heard.push(cause));
  t.same(heard, [null], 'the current state at once');
  watcher.poll();
  t.same(heard, [null], 'no change: nothing heard');
  readings.set('eth1', NO_CARRIER);
  watcher.poll();
  watcher.poll();
  t.same(heard, [null, 'no carrier on eth1'], 'carrier lost: heard once');
  readings.set('eth1', ADMIN_DOWN);
  watcher.poll();
  readings.set('eth1', UP);
  watcher.poll();
  t.same(heard, [null, 'no carrier on eth1', 'eth1 is down', null], 'another cause, then the carrier back');
  end();
  readings.set('eth1', NO_CARRIER);
  watcher.poll();
  t.equal(heard.length, 4, 'an ended watch hears nothing more');
  t.same(watcher.interfaces(), []);
});

void t.test('one reading per interface per poll, however many watch it; the last watch ended stops reading it', async (t) => {
  const { readings, reads, watcher } = fixture();
  t.teardown(() => watcher.close());
  readings.set('eth1', UP);
  readings.set('eth2', NO_CARRIER);
  const heard: string[] = [];
  const ends = [
    watcher.watch('eth1', (c) => heard.push(`a ${String(c)}`)),
    watcher.watch('eth1', (c) => heard.push(`b ${String(c)}`)),
    watcher.watch('eth2', (c) => heard.push(`c ${String(c)}`)),
  ];
  t.same(heard, ['a null', 'b null', 'c no carrier on eth2'], 'a later watch of a watched interface gets its known state');
  t.same(reads, ['eth1', 'eth2'], 'read once when first watched');
  reads.length = 0;
  watcher.poll();
  t.same(reads.sort(), ['eth1', 'eth2'], 'one read of each per poll');
  readings.set('eth1', NO_CARRIER);
  watcher.poll();
  t.same(heard.slice(3), ['a no carrier on eth1', 'b no carrier on eth1'], 'every watcher of the interface hears it');
  ends[0]?.();
  ends[0]?.(); // ending twice ends once
  t.same(watcher.interfaces().sort(), ['eth1', 'eth2'], 'eth1 still watched by b');
  ends[1]?.();
  ends[2]?.();
  reads.length = 0;
  watcher.poll();
  t.same(reads, [], 'nothing watched: nothing read');
});

void t.test('the same listener watched twice is two watches', async (t) => {
  const { readings, watcher } = fixture();
  t.teardown(() => watcher.close());
  readings.set('eth1', UP);
  let calls = 0;
  const listener = () => (calls += 1);
  const end1 = watcher.watch('eth1', listener);
  watcher.watch('eth1', listener);
  end1();
  readings.set('eth1', NO_CARRIER);
  watcher.poll();
  t.equal(calls, 3, 'two at the start, one change for the watch still held');
});

void t.test('a reader that throws makes a cause, not a crash; a name that is not one is refused', async (t) => {
  const watcher = new LinkWatcher(() => {
    throw new Error('EIO');
  }, { periodMs: 60_000 });
  t.teardown(() => watcher.close());
  const heard: (string | null)[] = [];
  watcher.watch('eth1', (c) => heard.push(c));
  t.same(heard, ['cannot read the link of eth1: EIO']);
  t.throws(() => watcher.watch('../x', () => undefined), /not an interface name/);
  t.same(watcher.interfaces(), ['eth1']);
});

void t.test('the timer reads once per period while something is watched', async (t) => {
  const readings = new Map<string, LinkReading>([['eth1', UP]]);
  let reads = 0;
  const watcher = new LinkWatcher((ifname) => {
    reads += 1;
    return readings.get(ifname) ?? GONE;
  }, { periodMs: 20 });
  t.teardown(() => watcher.close());
  const heard: (string | null)[] = [];
  const end = watcher.watch('eth1', (c) => heard.push(c));
  readings.set('eth1', NO_CARRIER);
  // bounded wait for the timer's poll (no timing asserted, only that it polls)
  for (let i = 0; i < 500 && heard.length < 2; i += 1) await new Promise((resolve) => setTimeout(resolve, 10));
  t.same(heard, [null, 'no carrier on eth1'], 'the timer polled');
  end();
  const after = reads;
  await new Promise((resolve) => setTimeout(resolve, 100));
  t.equal(reads, after, 'no watch: the timer stopped');
});
