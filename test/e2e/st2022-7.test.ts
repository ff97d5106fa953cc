/**
 * ST 2022-7 end to end, in two network namespaces joined by two veth pairs (two independent
 * networks), made and removed by the test:
 * - namespace a: the engine, its output's primary leg on interface 1 and its redundant leg on
 *   interface 2, and the ffmpeg SRT caller that feeds it;
 * - namespace b: a receiver on each network (test/helpers/leg-receiver.py) and a SAP listener on
 *   each.
 * Both legs carry identical packets (SSRC, sequence number, timestamp, payload); SAP announces the
 * two-leg SDP on both networks. Then interface 2 goes down in the engine's namespace: the primary
 * leg goes on without a gap, the child keeps running (same pid, no restart), the pipeline says
 * its redundant leg failed (view, metric, log); the interface back up: both legs again.
 */
import { spawn } from 'node:child_process';
import { collectLines } from '../helpers/child-lines.js';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseSdp } from 'sdp-transform';
import t from 'tap';
import { decodeSap, type SapMessage } from '../../src/aes67/sap.js';
import type { PipelineView } from '../../src/pipelines/registry.js';
import { eventually, startEngine } from '../helpers/engine-process.js';
import { gaps, missingIn, type Packet } from '../helpers/leg-packets.js';
import { canUseNetns, createDualNetwork, nsApi, setLink, spawnIn } from '../helpers/netns.js';
import { sendSine } from '../helpers/srt-sender.js';

const HELPERS = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../helpers');

void t.test('both legs carry identical packets; one leg down: the other goes on, the pipeline reports it, and recovers', { skip: canUseNetns() ? false : 'needs root and iproute2 (ip netns)' }, async (t) => {
  const { a, b } = createDualNetwork(t, 'st27');
  const [a1, a2] = a.legs;
  const [b1, b2] = b.legs;
  if (a1 === undefined || a2 === undefined || b1 === undefined || b2 === undefined) throw new Error('two legs expected');

  const engine = await startEngine(t, {
    netns: a.ns,
    extraToml: ['[aes67]', `interface = "${a1.ifname}"`, 'sap_ttl = 4', 'sap_interval_ms = 2000'].join('\n'),
    waitForReady: false,
  });
  // Ready (the `restored` event); generous: a loaded 2-core machine has taken over 20 s.
  await engine.waitForLog((l) => l.event === 'restored', 90_000);
  const base = `http://127.0.0.1:${engine.restPort}`;
  const api = <T>(method: string, url: string, body?: unknown) => nsApi<T>(a.ns, method, `${base}${url}`, body);

  // SAP listeners on both networks, before anything is announced.
  const sapOn = (address: string) => {
    const listener = spawnIn(b.ns, process.execPath, ['--import', 'tsx', path.join(HELPERS, 'sap-listener.ts'), address, '110']);
    t.teardown(() => void listener.kill('SIGKILL'));
    return collectLines(listener);
  };
  const sap = [sapOn(b1.address), sapOn(b2.address)];
  await Promise.all(sap.map((s) => s.ready));
  // A socket joined on one interface still receives the group from the other network (Linux's
  // IP_MULTICAST_ALL): the origin tells the networks apart. The engine sends each from a socket
  // bound to that network's address, out of that network's interface only.
  const announced = (i: number, origin: string): SapMessage | undefined =>
    sap[i]?.lines.filter((l) => l !== 'ready').map((l) => decodeSap(Buffer.from(l.split(' ')[1] ?? '', 'base64'))).find((m) => m.type === 'announce' && m.origin === origin);

  // The receivers of both legs, each joined on its own network's interface.
  // (stdin piped: the receiver ends when it closes)
  const receiver = spawn('ip', ['netns', 'exec', b.ns, 'python3', path.join(HELPERS, 'leg-receiver.py'), '100', `239.69.11.1:5004:${b1.address}`, `239.69.12.1:5004:${b2.address}`], { stdio: ['pipe', 'pipe', 'inherit'] });
  receiver.stdin?.on('error', () => undefined);
  t.teardown(() => void receiver.kill('SIGKILL'));
  const received = collectLines(receiver);
  await received.ready;

  const created = api<PipelineView & { sdp: string }>('POST', '/api/v1/pipelines', {
    name: 'Two Legs',
    input: { type: 'srt', port: 9000, latency: 300 },
    output: { type: 'rtp', host: '239.69.11.1', port: 5004, interface: a1.ifname, redundant: { host: '239.69.12.1', interface: a2.ifname } },
  });
  t.equal(created.status, 201, 'created');
  const id = created.body.id;
  const sender = sendSine({ port: 9000, amplitude: 0.5, frequency: 1000, seconds: 100, netns: a.ns });
  t.teardown(() => sender.stop());

  // SAP: the two-leg SDP on both networks, each announcement from its own network's address.
  const [sap1, sap2] = await eventually(() => {
    const both = [announced(0, a1.address), announced(1, a2.address)];
    return both[0] !== undefined && both[1] !== undefined ? both : undefined;
  }, 15_000, 'a SAP announcement on each network');
  t.equal(sap1?.payload, sap2?.payload, 'the same SDP on both');
  t.equal(sap1?.hash, sap2?.hash, 'the same hash');
  t.equal(sap1?.payload, created.body.sdp, "the pipeline's SDP");
  const sdp = parseSdp(sap2?.payload ?? '');
  t.same(sdp.groups, [{ type: 'DUP', mids: 'primary secondary' }], 'RFC 7104 duplication group');
  t.equal(sdp.connection, undefined, 'no session-level c=');
  t.same(sdp.media.map((m) => [m.mid, m.port, m.connection?.ip]), [['primary', 5004, '239.69.11.1/16'], ['secondary', 5004, '239.69.12.1/16']]);
  t.same(sdp.media.map((m) => m.sourceFilter?.srcList), [a1.address, a2.address], "each leg's source filter names its interface's address");
  t.same(sdp.media.map((m) => m.rtp), [[{ payload: 96, codec: 'L24', rate: 48000, encoding: 2 }], [{ payload: 96, codec: 'L24', rate: 48000, encoding: 2 }]]);
  t.comment(`announced SDP:\n${(sap2?.payload ?? '').replace(/\r\n$/, '').replace(/\r\n/g, '\n')}`);

  // Running, audio arriving, both legs sending.
  const running = await eventually(() => {
    const view = api<PipelineView>('GET', `/api/v1/pipelines/${id}`).body;
    return view.state === 'running' && view.input_state === 'receiving' ? view : undefined;
  }, 30_000, 'the pipeline running with audio');
  t.same(running.output_legs, [
    { leg: 'primary', host: '239.69.11.1', port: 5004, interface: a1.ifname, state: 'sending', error: null },
    { leg: 'redundant', host: '239.69.12.1', port: 5004, interface: a2.ifname, state: 'sending', error: null },
  ]);
  const pid = running.pid;
  await new Promise((resolve) => setTimeout(resolve, 2000));

  // Network 2's link goes down on the engine's side.
  setLink(a.ns, a2.ifname, 'down');
  const failed = await eventually(() => {
    const view = api<PipelineView>('GET', `/api/v1/pipelines/${id}`).body;
    return view.output_legs[1]?.state === 'failed' ? view : undefined;
  }, 10_000, 'the redundant leg reported failed');
  t.match(failed.output_legs[1]?.error, /Network is unreachable/);
  t.equal(failed.output_legs[0]?.state, 'sending', 'the primary leg sends');
  const metricsDown = api<string>('GET', '/api/v1/metrics').text;
  t.match(metricsDown, new RegExp(`^audio_engine_pipeline_output_leg_up\\{pipeline_id="${id}",leg="primary"\\} 1$`, 'm'));
  t.match(metricsDown, new RegExp(`^audio_engine_pipeline_output_leg_up\\{pipeline_id="${id}",leg="redundant"\\} 0$`, 'm'));
  const failLog = await engine.waitForLog((l) => l.event === 'output-leg-failed' && l.pipeline_id === id);
  // Both rules see it (docs/aes67.md): the sends fail, and the link watcher reads the interface down; the log names the first.
  if (failLog.interface === undefined) t.match(failLog, { leg: 'redundant', sink: 'out2', destination: '239.69.12.1:5004', error: /Network is unreachable/ });
  else t.match(failLog, { leg: 'redundant', sink: 'out2', interface: a2.ifname, error: `${a2.ifname} is down` });
  await new Promise((resolve) => setTimeout(resolve, 3000));
  const during = api<PipelineView>('GET', `/api/v1/pipelines/${id}`).body;
  t.equal(during.state, 'running', 'the child goes on');
  t.equal(during.pid, pid, 'the same child');
  t.equal(during.restarts, 0, 'no restart');
  t.equal(during.output_legs[1]?.state, 'failed', 'still failed while the link is down');

  // The link back: both legs again.
  setLink(a.ns, a2.ifname, 'up');
  await eventually(() => (api<PipelineView>('GET', `/api/v1/pipelines/${id}`).body.output_legs[1]?.state === 'sending' ? true : undefined), 10_000, 'the redundant leg sending again');
  await engine.waitForLog((l) => l.event === 'output-leg-recovered' && l.pipeline_id === id);
  t.match(api<string>('GET', '/api/v1/metrics').text, new RegExp(`^audio_engine_pipeline_output_leg_up\\{pipeline_id="${id}",leg="redundant"\\} 1$`, 'm'));
  await new Promise((resolve) => setTimeout(resolve, 2000));
  receiver.stdin?.end();
  const result = await eventually(() => received.lines.find((l) => l.startsWith('{')), 10_000, "the receiver's packets");
  const [leg1 = [], leg2 = []] = (JSON.parse(result) as { legs: Packet[][] }).legs;
  const after = api<PipelineView>('GET', `/api/v1/pipelines/${id}`).body;
  t.equal(after.pid, pid, 'the same child throughout');
  t.equal(after.restarts, 0);

  // Leg 1: every packet, in order, no gap, all the while.
  t.ok(leg1.length > 8000, `leg 1: ${leg1.length} packets`);
  t.same(gaps(leg1), [], 'leg 1: no sequence gap');
  // Leg 2: the same packets while up (identical SSRC, sequence, timestamp and payload), one gap while down.
  const byKey = new Map(leg1.map((p) => [p[0] * 2 ** 32 + p[1], p]));
  const mismatched = leg2.filter((p) => {
    const twin = byKey.get(p[0] * 2 ** 32 + p[1]);
    return twin === undefined || twin[2] !== p[2] || twin[3] !== p[3];
  });
  t.equal(mismatched.length, 0, `every leg 2 packet has an identical twin on leg 1 (${leg2.length} compared)`);
  t.equal(new Set(leg1.map((p) => p[2])).size, 1, 'one SSRC');
  t.ok(new Set(leg1.map((p) => p[3])).size > 100, 'payloads differ from packet to packet (the tone, not silence)');
  const legGaps = gaps(leg2);
  t.equal(legGaps.length, 1, `leg 2: one gap, while its link was down (${JSON.stringify(legGaps)})`);
  const missing = missingIn(legGaps[0]);
  t.ok(missing > 2000, `leg 2 missed ${missing} packets (about 3 s down)`);
  t.ok(leg2.length > 4000, `leg 2: ${leg2.length} packets, before and after`);
  t.same(leg2.at(-1)?.slice(0, 2), leg1.at(-1)?.slice(0, 2), 'both legs end on the same packet: leg 2 is back');

  // SAP kept announcing the same session on network 1 all the while: the SDP does not change with a leg's link.
  const network1 = sap[0]?.lines.filter((l) => l !== 'ready').map((l) => decodeSap(Buffer.from(l.split(' ')[1] ?? '', 'base64'))).filter((m) => m.origin === a1.address) ?? [];
  t.same(network1.filter((m) => m.type === 'delete'), [], 'no deletion on network 1');
  t.same([...new Set(network1.map((m) => m.hash))], [sap1?.hash], 'one hash throughout');

  // The pipeline's log ring: the failure and recovery, not udpsink's flood of warnings.
  const logs = api<string>('GET', `/api/v1/pipelines/${id}/logs?lines=500`).text.split('\n');
  t.notOk(logs.some((l) => l.includes('Error sending UDP packets')), "udpsink's warning text is not kept");
  t.ok(logs.some((l) => l.includes('output leg redundant failed')));
  t.ok(logs.some((l) => l.includes('output leg redundant is sending again')));
});
