/**
 * ST 2022-7, a leg's cable cut: in two network namespaces joined by two veth pairs (as
 * st2022-7.test.ts), the receivers' end of network 2 goes down (`ip link set <peer> down`). The
 * engine's interface of that network stays up with NO-CARRIER: the kernel takes the packets and
 * drops them, udpsink's sends do not fail. The engine's link watcher reads the interface's carrier
 * (sysfs, inside the engine's namespace) and the pipeline says its redundant leg failed with that
 * cause (view, metric, log); the primary leg goes on without a gap, the child runs on; the peer
 * up: both legs again.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import type { PipelineView } from '../../src/pipelines/registry.js';
import { collectLines } from '../helpers/child-lines.js';
import { eventually, startEngine } from '../helpers/engine-process.js';
import { gaps, missingIn, type Packet } from '../helpers/leg-packets.js';
import { canUseNetns, createDualNetwork, nsApi, setLink } from '../helpers/netns.js';
import { sendSine } from '../helpers/srt-sender.js';

const HELPERS = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../helpers');

void t.test("a leg's peer down (no carrier, its interface up): the leg is reported failed, the other goes on, and it recovers", { skip: canUseNetns() ? false : 'needs root and iproute2 (ip netns)' }, async (t) => {
  const { a, b } = createDualNetwork(t, 'st27c');
  const [a1, a2] = a.legs;
  const [b1, b2] = b.legs;
  if (a1 === undefined || a2 === undefined || b1 === undefined || b2 === undefined) throw new Error('two legs expected');

  const engine = await startEngine(t, { netns: a.ns, extraToml: ['[aes67]', `interface = "${a1.ifname}"`].join('\n'), waitForReady: false });
  // Ready (the `restored` event); generous: a loaded 2-core machine has taken over 20 s.
  await engine.waitForLog((l) => l.event === 'restored', 90_000);
  const base = `http://127.0.0.1:${engine.restPort}`;
  const api = <T>(method: string, url: string, body?: unknown) => nsApi<T>(a.ns, method, `${base}${url}`, body);
  const view = () => api<PipelineView>('GET', `/api/v1/pipelines/${id}`).body;
  const legUp = (leg: string) => new RegExp(`^audio_engine_pipeline_output_leg_up\\{pipeline_id="${id}",leg="${leg}"\\} (\\d)$`, 'm').exec(api<string>('GET', '/api/v1/metrics').text)?.[1];

  // The receivers of both legs, each joined on its own network's interface (stdin piped: it ends when it closes).
  const receiver = spawn('ip', ['netns', 'exec', b.ns, 'python3', path.join(HELPERS, 'leg-receiver.py'), '100', `239.69.21.1:5004:${b1.address}`, `239.69.22.1:5004:${b2.address}`], { stdio: ['pipe', 'pipe', 'inherit'] });
  receiver.stdin?.on('error', () => undefined);
  t.teardown(() => void receiver.kill('SIGKILL'));
  const received = collectLines(receiver);
  await received.ready;

  const created = api<PipelineView>('POST', '/api/v1/pipelines', {
    name: 'Cut Cable',
    input: { type: 'srt', port: 9000, latency: 300 },
    output: { type: 'rtp', host: '239.69.21.1', port: 5004, interface: a1.ifname, redundant: { host: '239.69.22.1', interface: a2.ifname } },
  });
  t.equal(created.status, 201, 'created');
  const id = created.body.id;
  const sender = sendSine({ port: 9000, amplitude: 0.5, frequency: 1000, seconds: 100, netns: a.ns });
  t.teardown(() => sender.stop());

  const running = await eventually(() => {
    const v = view();
    return v.state === 'running' && v.input_state === 'receiving' ? v : undefined;
  }, 30_000, 'the pipeline running with audio');
  t.same(running.output_legs.map((l) => [l.leg, l.state]), [['primary', 'sending'], ['redundant', 'sending']], 'both legs sending');
  const pid = running.pid;
  await new Promise((resolve) => setTimeout(resolve, 2000));

  // The cable of network 2 cut: the far end goes down, the engine's interface stays up without carrier.
  const cutAt = Date.now();
  setLink(b.ns, b2.ifname, 'down');
  const failed = await eventually(() => {
    const v = view();
    return v.output_legs[1]?.state === 'failed' ? v : undefined;
  }, 10_000, 'the redundant leg reported failed');
  t.equal(failed.output_legs[1]?.error, `no carrier on ${a2.ifname}`, 'the cause is the missing carrier (the sends do not fail)');
  t.equal(failed.output_legs[0]?.state, 'sending', 'the primary leg sends');
  t.equal(legUp('primary'), '1', 'metric: primary up');
  t.equal(legUp('redundant'), '0', 'metric: redundant down');
  const failLog = await engine.waitForLog((l) => l.event === 'output-leg-failed' && l.pipeline_id === id);
  t.comment(`reported in the log ${Date.parse(String(failLog.time)) - cutAt} ms after the cut (the watcher reads once a second)`);
  t.match(failLog, { level: 40, leg: 'redundant', sink: 'out2', interface: a2.ifname, error: `no carrier on ${a2.ifname}` });
  await new Promise((resolve) => setTimeout(resolve, 3000));
  const during = view();
  t.equal(during.output_legs[1]?.state, 'failed', 'still failed while the peer is down');
  t.same([during.state, during.pid, during.restarts], ['running', pid, 0], 'the same child runs on');

  // The cable back.
  const backAt = Date.now();
  setLink(b.ns, b2.ifname, 'up');
  await eventually(() => (view().output_legs[1]?.state === 'sending' ? true : undefined), 10_000, 'the redundant leg sending again');
  t.same(view().output_legs[1], { leg: 'redundant', host: '239.69.22.1', port: 5004, interface: a2.ifname, state: 'sending', error: null });
  const recoverLog = await engine.waitForLog((l) => l.event === 'output-leg-recovered' && l.pipeline_id === id);
  t.comment(`recovery logged ${Date.parse(String(recoverLog.time)) - backAt} ms after the peer came up`);
  t.equal(legUp('redundant'), '1', 'metric: redundant up again');
  await new Promise((resolve) => setTimeout(resolve, 2000));
  receiver.stdin?.end();
  const result = await eventually(() => received.lines.find((l) => l.startsWith('{')), 10_000, "the receiver's packets");
  const [leg1 = [], leg2 = []] = (JSON.parse(result) as { legs: Packet[][] }).legs;
  const after = view();
  t.same([after.pid, after.restarts], [pid, 0], 'the same child throughout');

  t.ok(leg1.length > 8000, `leg 1: ${leg1.length} packets`);
  t.same(gaps(leg1), [], 'leg 1: no sequence gap');
  const legGaps = gaps(leg2);
  t.equal(legGaps.length, 1, `leg 2: one gap, while its cable was cut (${JSON.stringify(legGaps)})`);
  t.ok(missingIn(legGaps[0]) > 2000, `leg 2 missed ${missingIn(legGaps[0])} packets while its cable was cut (at least the 3 s waited)`);
  // The receiver stops its two sockets in turn while the stream runs: their last packets may be
  // a send or two apart (4 packets each, one sendmmsg a leg). Leg 2 is back when its last packet
  // and leg 1's end on the same packet (sequence and timestamp) give or take 8 packets.
  const apart = (a: Packet[], b: Packet[]): number => {
    const last = a.at(-1);
    const at = b.findLastIndex((p) => p[0] === last?.[0] && p[1] === last[1]);
    return at < 0 ? Infinity : b.length - 1 - at;
  };
  const ends = Math.min(apart(leg2, leg1), apart(leg1, leg2));
  t.ok(ends <= 8, `leg 2 is back: the legs' last packets ${JSON.stringify([leg1.at(-1)?.slice(0, 2), leg2.at(-1)?.slice(0, 2)])} are ${ends} apart (at most 8)`);

  const logs = api<string>('GET', `/api/v1/pipelines/${id}/logs?lines=500`).text.split('\n');
  t.ok(logs.some((l) => l.includes(`output leg redundant failed: link of ${a2.ifname}: no carrier on ${a2.ifname}`)), 'the log ring says it');
  t.ok(logs.some((l) => l.includes('output leg redundant is sending again')), 'and the recovery');
});
