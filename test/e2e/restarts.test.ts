/**
 * Real children restarted under a real SRT caller: metrics scraped all along keep every series
 * without a gap, counters never go down, and a dead child's values do not linger. An SRT caller
 * or an Icecast source that connects and leaves without sending is no failure: no back-off, a
 * prompt restart.
 */
import { spawn, spawnSync } from 'node:child_process';
import { connect } from 'node:net';
import t from 'tap';
import type { StationView } from '../../src/stations/station.js';
import type { PipelineView } from '../../src/pipelines/registry.js';
import { api, createPipeline, eventually, startEngine, waitForPipeline, type EngineProcess } from '../helpers/engine-process.js';
import { freeUdpPort } from '../helpers/ports.js';
import { sendSine } from '../helpers/srt-sender.js';
import { dashboardOf, freeStationNumber, harborPortOf, stationToml } from '../helpers/stations.js';

/** Every series of the scrape with a `pipeline_id="id"` label: `name{labels}` -> value. */
function seriesOf(scrape: string, id: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of scrape.split('\n')) {
    if (line.startsWith('#') || !line.includes(`pipeline_id="${id}"`)) continue;
    const cut = line.lastIndexOf(' ');
    out.set(line.slice(0, cut), Number(line.slice(cut + 1)));
  }
  return out;
}

const PER_PIPELINE = [
  'audio_engine_pipeline_up', 'audio_engine_pipeline_state', 'audio_engine_pipeline_restarts_total', 'audio_engine_pipeline_child_cpu_seconds_total',
  'audio_engine_pipeline_child_resident_memory_bytes', 'audio_engine_pipeline_input_rms_dbfs', 'audio_engine_pipeline_input_peak_dbfs',
  'audio_engine_pipeline_silence_seconds', 'audio_engine_pipeline_loudness_momentary_lufs', 'audio_engine_pipeline_loudness_short_term_lufs',
  'audio_engine_pipeline_loudness_integrated_lufs', 'audio_engine_pipeline_true_peak_dbtp', 'audio_engine_pipeline_loudness_range_lu',
  'audio_engine_pipeline_gain_db', 'audio_engine_pipeline_loudness_measured_seconds', 'audio_engine_pipeline_srt_connected', 'audio_engine_pipeline_srt_rtt_seconds',
  'audio_engine_pipeline_srt_receive_rate_bytes_per_second', 'audio_engine_pipeline_srt_packets_received_total',
  'audio_engine_pipeline_srt_packets_lost_total', 'audio_engine_pipeline_srt_packets_retransmitted_total',
  'audio_engine_pipeline_srt_packets_dropped_total', 'audio_engine_pipeline_srt_received_bytes_total',
  'audio_engine_pipeline_buffer_fill_ratio', 'audio_engine_pipeline_output_packets_total', 'audio_engine_pipeline_output_bytes_total',
  'audio_engine_pipeline_realtime_ratio', 'audio_engine_pipeline_input_clock_drift_ppm', 'audio_engine_pipeline_input_clock_drift_uncertainty_ppm',
  'audio_engine_pipeline_jitter_buffer_seconds', 'audio_engine_pipeline_jitter_depth_seconds', 'audio_engine_pipeline_jitter_ceiling_seconds',
  'audio_engine_pipeline_jitter_ceiling_hits_total', 'audio_engine_pipeline_jitter_ceiling_underruns_total',
  'audio_engine_pipeline_jitter_buffer_underruns_total', 'audio_engine_pipeline_jitter_buffer_overruns_total', 'audio_engine_pipeline_latency_seconds',
  'audio_engine_pipeline_inserted_silence_seconds_total', 'audio_engine_pipeline_output_realtime', 'audio_engine_pipeline_realtime_demotions_total',
  // Failover (docs/failover.md): the main input's series exist for every pipeline.
  'audio_engine_pipeline_active_input', 'audio_engine_pipeline_input_connected', 'audio_engine_pipeline_input_level_dbfs',
  'audio_engine_pipeline_input_silence_seconds', 'audio_engine_pipeline_output_silence_seconds',
  // Output legs (docs/aes67.md): the primary leg's.
  'audio_engine_pipeline_output_leg_up',
];

const get = async (engine: EngineProcess, id: string): Promise<PipelineView> => (await api<PipelineView>(engine, 'GET', `/api/v1/pipelines/${id}`)).body;

void t.test('metrics through real child restarts: no gap, counters only grow, no stale values', async (t) => {
  const engine = await startEngine(t, { extraToml: 'metrics_interval_ms = 250' });
  const port = await freeUdpPort();
  const made = await createPipeline(engine, { srtPort: port, processing: [{ plugin: 'loudness-normalize', target: -23 }] });
  const id = made.id;
  const scrapes: { at: number; state: string; series: Map<string, number>; text: string }[] = [];
  let scraping = true;
  const scraper = (async () => {
    while (scraping) {
      const [text, view] = await Promise.all([api(engine, 'GET', '/api/v1/metrics').then((r) => r.text), get(engine, id)]);
      scrapes.push({ at: Date.now(), state: view.state, series: seriesOf(text, id), text });
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  })();
  t.teardown(async () => {
    scraping = false;
    await scraper;
  });

  // Two callers one after the other. A caller leaving no longer ends the child (srtsrc keeps
  // listening, the clock bridge sends silence: docs/clock.md), so each child is killed once its
  // caller is done, and the supervisor starts a new one. Should a child end by itself first (seen
  // once on CI, cause not logged), the test says what the engine logged and kills the child
  // running then (three tries): the series must bear any number of restarts, so they are counted.
  const exitsLogged = () => engine.logs.filter((l) => l.pipeline_id === id && (l.event === 'exit' || l.event === 'stalled')).map((l) => l.msg);
  const killRunningChild = async (round: number): Promise<number> => {
    for (let attempt = 1; ; attempt++) {
      const view = await waitForPipeline(engine, id, (p) => p.state === 'running' && p.pid !== null, `a running child to kill, round ${round}`, 20_000);
      if (view.pid === null) throw new Error('a running child without a pid');
      try {
        process.kill(view.pid, 'SIGKILL');
        return view.restarts;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ESRCH' || attempt === 3) throw error;
        t.comment(`child ${String(view.pid)} had already ended; the engine logged: ${exitsLogged().join(' | ')}`);
        await waitForPipeline(engine, id, (p) => p.pid !== view.pid, `the engine sees child ${String(view.pid)} gone`, 20_000);
      }
    }
  };
  let restarts = 0;
  for (let round = 1; round <= 2; round++) {
    await waitForPipeline(engine, id, (p) => p.state === 'running' && p.restarts === restarts, `running, round ${round}`, 20_000);
    const sender = sendSine({ port, amplitude: 0.3, seconds: 3 });
    t.teardown(() => sender.stop());
    t.equal(await sender.done, 0, `caller ${round} sent its 3 s`);
    await new Promise((resolve) => setTimeout(resolve, 1000)); // its audio plays out of the jitter buffer
    const before = await killRunningChild(round);
    restarts = (await waitForPipeline(engine, id, (p) => p.restarts > before, `restart after child ${round} was killed`, 20_000)).restarts;
  }
  if (restarts > 2) t.comment(`${restarts - 2} restart(s) besides the test's kills; the engine logged: ${exitsLogged().join(' | ')}`);
  await waitForPipeline(engine, id, (p) => p.state === 'running', 'running after the second restart');
  await new Promise((resolve) => setTimeout(resolve, 1500)); // a few statistics of the new, idle child
  scraping = false;
  await scraper;

  t.ok(scrapes.length > 20, `${scrapes.length} scrapes`);
  t.ok(scrapes.some((s) => s.state !== 'running'), `some scrapes fell between children (states: ${[...new Set(scrapes.map((s) => s.state))].join(', ')})`);
  const names = (series: Map<string, number>) => new Set([...series.keys()].map((k) => k.slice(0, k.indexOf('{'))));
  const reference = scrapes[0]?.series ?? new Map<string, number>();
  t.same([...names(reference)].sort(), [...PER_PIPELINE].sort(), 'the first scrape after creation has every per-pipeline series');
  const gaps = scrapes.filter((s) => s.series.size !== reference.size || [...reference.keys()].some((k) => !s.series.has(k)));
  t.equal(gaps.length, 0, `every scrape has the same ${reference.size} series (${gaps.length} with a gap)`);

  const counters = [...reference.keys()].filter((k) => k.includes('_total{'));
  for (const counter of counters) {
    const values = scrapes.map((s) => s.series.get(counter) ?? Number.NaN);
    const drops = values.filter((v, i) => i > 0 && v < (values[i - 1] ?? 0));
    t.equal(drops.length, 0, `${counter.slice(0, counter.indexOf('{'))} never goes down (${values[0]} -> ${values.at(-1)})`);
  }
  const last = scrapes.at(-1)?.series ?? new Map<string, number>();
  const key = (name: string, extra = '') => `${name}{pipeline_id="${id}"${extra}}`;
  const packets = last.get(key('audio_engine_pipeline_output_packets_total')) ?? 0;
  const afterFirst = scrapes.find((s) => s.series.get(key('audio_engine_pipeline_restarts_total')) === 1)?.series.get(key('audio_engine_pipeline_output_packets_total')) ?? 0;
  t.ok(afterFirst > 1000 && packets - afterFirst > 1000, `RTP packets: ${afterFirst} by the first child, ${packets} with the second's added`);
  t.ok((last.get(key('audio_engine_pipeline_srt_packets_received_total')) ?? 0) > 0, 'SRT packets of earlier connections kept');
  t.equal(last.get(key('audio_engine_pipeline_restarts_total')), restarts, `restarts_total ${restarts}, as the pipeline's view says`);
  // The new child has no caller: nothing of the callers' audio may linger as current.
  t.equal(last.get(key('audio_engine_pipeline_srt_connected')), 0);
  t.equal(last.get(key('audio_engine_pipeline_srt_receive_rate_bytes_per_second')), 0);
  t.equal(last.get(key('audio_engine_pipeline_input_rms_dbfs', ',channel="0"')), -120, 'input level reads no signal');
  t.equal(last.get(key('audio_engine_pipeline_loudness_momentary_lufs', ',step="step0",stage="input"')), -120, 'loudness reads no signal');
  // While a caller sent, the values were real.
  const loud = scrapes.map((s) => s.series.get(key('audio_engine_pipeline_input_rms_dbfs', ',channel="0"')) ?? -120);
  t.ok(loud.some((db) => Math.abs(db - 20 * Math.log10(0.3 / Math.SQRT2)) < 1), 'the callers\' level was seen');
  // After a child ended, the first scrape without a running child shows no level of the old one.
  const between = scrapes.filter((s) => s.state !== 'running');
  t.ok(between.every((s) => s.series.get(key('audio_engine_pipeline_srt_connected')) === 0), 'no scrape between children shows a connection');

  const promtool = spawnSync('promtool', ['check', 'metrics'], { input: scrapes.at(-1)?.text ?? '', encoding: 'utf8' });
  t.equal(promtool.status, 0, `promtool check metrics: ${promtool.stdout}${promtool.stderr}`);
});

/** An SRT caller that connects, sends nothing and leaves (srt-live-transmit reading a pipe that closes). */
function emptyCaller(port: number): Promise<void> {
  return new Promise((resolve) => {
    const caller = spawn('sh', ['-c', `(sleep 1) | timeout 4 srt-live-transmit -q file://con srt://127.0.0.1:${port}`], { stdio: 'ignore' });
    caller.once('exit', () => resolve());
  });
}

void t.test('SRT callers that connect and send nothing: the child keeps listening, never backed off', async (t) => {
  const engine = await startEngine(t);
  const port = await freeUdpPort();
  const made = await createPipeline(engine, { srtPort: port });
  const seen = new Set<string>();
  let watching = true;
  const watcher = (async () => {
    while (watching) {
      seen.add((await get(engine, made.id)).state);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  })();
  t.teardown(async () => {
    watching = false;
    await watcher;
  });
  const first = await waitForPipeline(engine, made.id, (p) => p.state === 'running', 'running');
  for (let round = 1; round <= 3; round++) {
    await emptyCaller(port);
    // srtsrc keeps listening after a caller leaves (docs/clock.md): the same child waits for the next.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const after = await get(engine, made.id);
    t.equal(after.pid, first.pid, `round ${round}: the same child (pid ${String(after.pid)})`);
    t.equal(after.state, 'running', `round ${round}: running`);
    t.equal(after.restarts, 0, `round ${round}: no restart`);
  }
  watching = false;
  await watcher;
  t.notOk(seen.has('backoff'), `never in back-off (states seen: ${[...seen].join(', ')})`);
  t.notOk(engine.logs.some((l) => l.pipeline_id === made.id && l.event === 'retry'), 'no back-off scheduled');
});

/** An Icecast source client (PUT, as ffmpeg) that is accepted, sends no byte of audio and hangs up. */
function emptyIcecastSource(port: number, password: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let answer = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => {
      answer += chunk;
      if (answer.includes('\r\n\r\n')) setTimeout(() => socket.end(), 500);
    });
    socket.once('error', reject);
    socket.once('close', () => resolve(answer.split('\r\n')[0] ?? ''));
    const auth = Buffer.from(`source:${password}`).toString('base64');
    socket.write(`PUT /live HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Basic ${auth}\r\nContent-Type: audio/mpeg\r\nExpect: 100-continue\r\n\r\n`);
  });
}

void t.test('Icecast sources that connect and send nothing: the station waits for the next, never backed off', async (t) => {
  const number = await freeStationNumber();
  const password = 'quiet source';
  const engine = await startEngine(t, { extraToml: stationToml({ id: 'empty-ice', number, rtpPort: 9, harbor: 'icecast', password }) });
  const dashboard = dashboardOf(engine);
  const station = async (): Promise<StationView> => (await api<StationView>(dashboard, 'GET', '/api/stations/empty-ice')).body;
  const seen = new Set<string>();
  for (let round = 1; round <= 3; round++) {
    const before = await eventually(async () => {
      const s = await station();
      seen.add(s.state);
      return s.pid !== null ? s : undefined;
    }, 20_000, `a child waiting for a source, round ${round}`);
    const status = await emptyIcecastSource(harborPortOf(number), password);
    t.match(status, /^HTTP\/1\.[01] (100|200)/, `round ${round}: the source was accepted (${status})`);
    const started = Date.now();
    // The harbor keeps a child that got no audio for the next source, or replaces it at once (no
    // back-off): either way a child waits for the next source within a few seconds.
    const back = await eventually(async () => {
      const s = await station();
      seen.add(s.state);
      return (s.state === 'running' || s.state === 'starting') && s.pid !== null && (s.pid !== before.pid || Date.now() - started > 3000) ? s : undefined;
    }, 20_000, `a child waiting again after empty source ${round}`);
    t.ok(back.restarts <= before.restarts + 1, `round ${round}: at most one restart (${before.restarts} -> ${back.restarts}, a child ${Date.now() - started} ms after the source left)`);
  }
  t.notOk(seen.has('backoff'), `never in back-off (states seen: ${[...seen].join(', ')})`);
  t.notOk(engine.logs.some((l) => l.station_id === 'empty-ice' && l.event === 'retry'), 'no back-off scheduled');
});
