/**
 * The AES67 fields at the real edges of a real engine (REST and gRPC), on loopback only: unicast
 * outputs to 127.0.0.1, SAP off, no ptp4l on the configured socket. Multicast, SAP and PTP
 * themselves are tested inside network namespaces (test/e2e/aes67.test.ts).
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { status, type ServiceError } from '@grpc/grpc-js';
import t from 'tap';
import type { PipelineSdp } from '../../src/gen/svc/v1/engine.js';
import { api, startEngine } from '../helpers/engine-process.js';
import { freeUdpPort } from '../helpers/ports.js';
import { sendSine } from '../helpers/srt-sender.js';
import { createRequest, grpcPortOf, TestClient } from '../grpc/client.js';

const HELPERS = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../helpers');

const CONFIG = ['[aes67]', 'sap = false', 'interface = "lo"', 'ptp_socket = "/tmp/no-ptp4l-here.sock"', 'ptp_poll_ms = 500'].join('\n');

async function grpcFailure(promise: Promise<unknown>): Promise<{ code: number; details: string }> {
  try {
    await promise;
  } catch (error) {
    const e = error as ServiceError;
    return { code: e.code, details: e.details };
  }
  throw new Error('the call succeeded; a failure was expected');
}

void t.test('AES67 fields over REST and gRPC', async (t) => {
  const engine = await startEngine(t, { extraToml: CONFIG });
  const client = new TestClient(grpcPortOf(engine));
  t.teardown(() => client.close());
  const body = (port: number, output: Record<string, unknown> = {}) => ({
    name: 'Morning   Show ',
    input: { type: 'srt', port, latency: 120 },
    processing: [],
    output: { type: 'rtp', host: '127.0.0.1', port: 9, ...output },
  });

  void t.test('every new field: 400 naming it, nothing made', async (t) => {
    const port = await freeUdpPort();
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ channels: 0 }, /^body\/output\/channels must be >= 1$/],
      [{ channels: 9 }, /^body\/output\/channels must be <= 8$/],
      [{ encoding: 'L8' }, /^body\/output\/encoding must be one of "L24", "L16"; got "L8"$/],
      [{ ptime: 0.5 }, /^body\/output\/ptime must be one of 0.125, 0.25, 0.333, 1, 4; got 0.5$/],
      [{ ptime: 4, channels: 6 }, /^body\/output\/ptime 4 ms with 6 channels of L24 makes 3456-byte packets; at most 1440 bytes/],
      [{ payload_type: 0 }, /^body\/output\/payload_type must be >= 96$/],
      [{ dscp: 64 }, /^body\/output\/dscp must be <= 63$/],
      [{ dscp: '34' }, /^body\/output\/dscp must be integer$/],
    ];
    for (const [output, message] of cases) {
      const res = await api<{ statusCode: number; message: string }>(engine, 'POST', '/api/v1/pipelines', body(port, output));
      t.equal(res.status, 400, JSON.stringify(output));
      t.match(res.body.message, message);
    }
    t.same((await api<{ pipelines: unknown[] }>(engine, 'GET', '/api/v1/pipelines')).body.pipelines, []);
  });

  void t.test('every new field over gRPC: INVALID_ARGUMENT naming it', async (t) => {
    const base = createRequest(await freeUdpPort());
    const output = { type: 'rtp', host: '127.0.0.1', port: 9 };
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ channels: 0 }, /^output\.channels must be >= 1$/],
      [{ encoding: 'L20' }, /^output\.encoding must be one of "L24", "L16"; got "L20"$/],
      [{ encoding: '' }, /^output\.encoding must be one of/],
      [{ ptime: 2 }, /^output\.ptime must be one of 0.125, 0.25, 0.333, 1, 4; got 2$/],
      [{ ptime: 4, channels: 8, encoding: 'L16' }, /^output\.ptime 4 ms with 8 channels of L16 makes 3072-byte packets/],
      [{ payload_type: 200 }, /^output\.payload_type must be <= 127$/],
      [{ dscp: -1 }, /^output\.dscp must be >= 0$/],
    ];
    for (const [fields, message] of cases) {
      const result = await grpcFailure(client.create({ ...base, output: { ...output, ...fields } }));
      t.equal(result.code, status.INVALID_ARGUMENT, JSON.stringify(fields));
      t.match(result.details, message);
    }
  });

  void t.test('the SDP: REST text, the pipeline field, gRPC GetPipelineSdp, the same text', async (t) => {
    const created = await api<{ id: string; sdp: string; warnings: string[]; output: Record<string, unknown> }>(
      engine, 'POST', '/api/v1/pipelines', body(await freeUdpPort(), { channels: 1, encoding: 'L16', ptime: 0.25, payload_type: 110, dscp: 46 }),
    );
    t.equal(created.status, 201, created.text);
    t.same(created.body.warnings, []);
    t.match(created.body.output, { channels: 1, encoding: 'L16', ptime: 0.25, payload_type: 110, dscp: 46 });
    const sdp = await api<string>(engine, 'GET', `/api/v1/pipelines/${created.body.id}/sdp`);
    t.equal(sdp.status, 200);
    t.equal(sdp.headers.get('content-type'), 'application/sdp');
    t.equal(sdp.text, created.body.sdp);
    const lines = sdp.text.split('\r\n');
    t.same(lines.map((l) => l.slice(0, l.indexOf('=') + 1)), ['v=', 'o=', 's=', 't=', 'm=', 'i=', 'c=', 'a=', 'a=', 'a=', 'a=', 'a=', 'a=', 'a=', ''].slice(0, lines.length));
    t.match(lines[1], /^o=- \d+ \d+ IN IP4 127\.0\.0\.1$/);
    t.equal(lines[2], 's=Morning Show', 'spaces folded, trimmed');
    t.equal(lines[6], 'c=IN IP4 127.0.0.1', 'unicast: no TTL, in the media section');
    t.equal(lines[4], 'm=audio 9 RTP/AVP 110');
    t.equal(lines[5], 'i=1 channels: M');
    t.equal(lines[8], 'a=rtpmap:110 L16/48000/1');
    t.equal(lines[9], 'a=fmtp:110 channel-order=SMPTE2110.(M)');
    t.equal(lines[10], 'a=ptime:0.25');
    t.equal(lines[11], 'a=framecount:12');
    t.equal(lines[12], 'a=ts-refclk:localmac=00-00-00-00-00-00', 'no ptp4l: the sending interface (lo) MAC');
    t.equal(lines[13], 'a=mediaclk:direct=0');
    const fromGrpc = await new Promise<PipelineSdp>((resolve, reject) =>
      client.raw.getPipelineSdp({ id: created.body.id }, client.metadata(), (error, response) => (error === null && response !== undefined ? resolve(response) : reject(error ?? new Error('no response')))),
    );
    t.same(fromGrpc, { id: created.body.id, sdp: sdp.text });
    t.equal((await client.list()).pipelines[0]?.sdp, sdp.text);
    t.equal((await api(engine, 'GET', '/api/v1/pipelines/pl_doesnotexist00/sdp')).status, 404);
    const missing = await grpcFailure(new Promise((resolve, reject) => client.raw.getPipelineSdp({ id: 'pl_doesnotexist00' }, client.metadata(), (e, r) => (e === null ? resolve(r) : reject(e)))));
    t.equal(missing.code, status.NOT_FOUND);
    const empty = await grpcFailure(new Promise((resolve, reject) => client.raw.getPipelineSdp({ id: '' }, client.metadata(), (e, r) => (e === null ? resolve(r) : reject(e)))));
    t.same(empty, { code: status.INVALID_ARGUMENT, details: 'id is required' });
    t.same((await api<{ sessions: unknown[] }>(engine, 'GET', '/api/v1/aes67/sessions')).body, { sessions: [] }, 'SAP off, unicast: nothing announced');
    t.equal((await api(engine, 'DELETE', `/api/v1/pipelines/${created.body.id}`)).status, 204);
  });

  void t.test('mono L16, 0.25 ms, payload type 110, DSCP 46 on the wire (loopback receiver with IP_RECVTOS)', async (t) => {
    const srtPort = await freeUdpPort();
    const rtpPort = await freeUdpPort();
    const receiver = spawn('python3', [path.join(HELPERS, 'tos-receiver.py'), '0.0.0.0', String(rtpPort), '127.0.0.1', '8000', '30', 'L16', '1'], { stdio: ['ignore', 'pipe', 'inherit'] });
    t.teardown(() => void receiver.kill('SIGKILL'));
    const lines: string[] = [];
    const ready = new Promise<void>((resolve) => createInterface({ input: receiver.stdout }).on('line', (line) => (line === 'ready' ? resolve() : lines.push(line))));
    const done = new Promise<void>((resolve) => receiver.once('exit', () => resolve()));
    await ready;
    const created = await api<{ id: string }>(engine, 'POST', '/api/v1/pipelines', body(srtPort, { port: rtpPort, channels: 1, encoding: 'L16', ptime: 0.25, payload_type: 110, dscp: 46 }));
    t.equal(created.status, 201, created.text);
    // A stereo sine, both channels alike at -9.03 dBFS RMS: mono is their mean, the same tone.
    const sender = sendSine({ port: srtPort, amplitude: 0.5, seconds: 30 });
    t.teardown(() => sender.stop());
    await done;
    sender.stop();
    const report = JSON.parse(lines.at(-1) ?? '{}') as { packets: number; tos: number[]; payload_types: number[]; sizes: number[]; rms_dbfs: number[] };
    t.equal(report.packets, 8000, '8000 packets: 2 s of 0.25 ms packets');
    t.same(report.payload_types, [110]);
    t.same(report.sizes, [12 + 2 * 1 * 12], 'RTP header + 12 mono 16-bit samples');
    t.same(report.tos.map((v) => v >> 2), [46], 'DSCP 46 (EF) as asked');
    t.equal(report.rms_dbfs.length, 1);
    t.ok(Math.abs((report.rms_dbfs[0] ?? 0) - -9.03) < 1, `mono tone at ${report.rms_dbfs[0]} dBFS RMS (sent -9.03 in each channel)`);
    t.equal((await api(engine, 'DELETE', `/api/v1/pipelines/${created.body.id}`)).status, 204);
  });

  void t.test('no ptp4l: health stays healthy with a ptp field and a warning; metrics say unlocked', async (t) => {
    const health = await api<{ status: string; ptp: { state: string; reason: string }; warnings: string[] }>(engine, 'GET', '/health');
    t.equal(health.status, 200);
    t.equal(health.body.status, 'healthy');
    t.equal(health.body.ptp.state, 'unavailable');
    t.match(health.body.ptp.reason, /no ptp4l answered on \/tmp\/no-ptp4l-here\.sock in domain 0/);
    t.match(health.body.warnings, [/^ptp unavailable: /]);
    const grpcHealth = await client.health();
    t.equal(grpcHealth.status, 'healthy');
    t.equal(grpcHealth.ptp?.state, 'unavailable');
    t.equal(grpcHealth.ptp?.grandmaster_id, undefined);
    t.match(grpcHealth.warnings, [/^ptp unavailable: /]);
    const metrics = (await api<string>(engine, 'GET', '/api/v1/metrics')).text;
    t.match(metrics, /^audio_engine_ptp_locked 0$/m);
    t.notMatch(metrics, /^audio_engine_ptp_offset_seconds /m, 'no offset while unknown');
    t.notMatch(metrics, /^audio_engine_ptp_info\{/m);
  });
});
