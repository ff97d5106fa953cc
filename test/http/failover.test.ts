/**
 * Failover over REST against a real engine: a backup port that clashes with an input or backup
 * port of any pipeline (or with its own input) is refused naming the field, nothing stored and
 * no child started; the view of a pipeline with a backup shows it (passphrase "set") and its
 * health fields.
 */
import t from 'tap';
import type { PipelineView } from '../../src/supervisor/registry.js';
import { api, gstLaunchChildren, startEngine, type EngineProcess } from '../helpers/engine-process.js';
import { freeUdpPort } from '../helpers/ports.js';

interface ErrorBody { statusCode: number; code: string; message: string }

function request(port: number, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { name: 'failover', input: { type: 'srt', port, latency: 120 }, processing: [], output: { type: 'rtp', host: '127.0.0.1', port: 5004 }, ...extra };
}

async function pipelineCount(engine: EngineProcess): Promise<number> {
  return (await api<{ pipelines: PipelineView[] }>(engine, 'GET', '/api/v1/pipelines')).body.pipelines.length;
}

void t.test('backup ports', async (t) => {
  const engine = await startEngine(t);
  const [a, b, c, d] = [await freeUdpPort(), await freeUdpPort(), await freeUdpPort(), await freeUdpPort()];
  const first = await api<PipelineView>(engine, 'POST', '/api/v1/pipelines', request(a, { backup: { type: 'srt', port: b, passphrase: 'backup-secret-1' }, failover: { loss_ms: 400 } }));
  t.equal(first.status, 201, first.text);
  t.same(first.body.backup, { type: 'srt', port: b, latency: 120, passphrase: 'set', pbkeylen: 16 }, 'the view shows the backup, never its secret');
  t.notMatch(first.text, /backup-secret-1/);
  t.same(first.body.failover, { silence_dbfs: -50, silence_s: 10, loss_ms: 400, return_s: 10, fallback_on_silence: false });
  t.equal(first.body.selection, 'auto');
  t.ok('active_input' in first.body, 'active_input is in the view (null before the first report)');
  t.same(Object.keys(first.body.inputs).sort(), ['backup', 'main']);
  const children = (await gstLaunchChildren(engine.stateDir)).length;

  const refusals: [Record<string, unknown>, number, string][] = [
    [request(c, { backup: { type: 'srt', port: c } }), 400, `body/backup/port must differ from body/input/port (${c})`],
    [request(c, { backup: { type: 'srt', port: a } }), 409, `backup.port ${a} is already in use by pipeline ${first.body.id}`],
    [request(c, { backup: { type: 'srt', port: b } }), 409, `backup.port ${b} is already in use by pipeline ${first.body.id}`],
    [request(b, { backup: { type: 'srt', port: c } }), 409, `input.port ${b} is already in use by pipeline ${first.body.id}`],
    [request(c, { backup: { type: 'srt', port: d }, failover: { loss_ms: 20 } }), 400, 'body/failover/loss_ms must be >= 50'],
    [request(c, { failover: { loss_ms: 300 } }), 400, 'body/failover is only allowed with'],
  ];
  for (const [body, status, message] of refusals) {
    const refused = await api<ErrorBody>(engine, 'POST', '/api/v1/pipelines', body);
    t.equal(refused.status, status, message);
    t.match(refused.body.message, message);
  }
  t.equal(await pipelineCount(engine), 1, 'nothing stored');
  t.equal((await gstLaunchChildren(engine.stateDir)).length, children, 'no child started');

  const second = await api<PipelineView>(engine, 'POST', '/api/v1/pipelines', request(c));
  t.equal(second.status, 201);
  t.equal(second.body.backup, undefined);
  t.same(Object.keys(second.body.inputs), ['main'], 'no backup: only main');
  const patched = await api<ErrorBody>(engine, 'PATCH', `/api/v1/pipelines/${second.body.id}`, { backup: { type: 'srt', port: b } });
  t.equal(patched.status, 409, 'PATCH: another pipeline\'s backup port');
  t.match(patched.body.message, `backup.port ${b} is already in use by pipeline ${first.body.id}`);
  const added = await api<PipelineView & { applied: string }>(engine, 'PATCH', `/api/v1/pipelines/${second.body.id}`, { backup: { type: 'srt', port: d } });
  t.equal(added.status, 200, added.text);
  t.equal(added.body.applied, 'restart');
  t.equal(added.body.backup?.port, d);
});
