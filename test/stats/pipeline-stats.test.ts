import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { parseLine, type StatsEvent } from '../../src/stats/parse-line.js';
import { NO_SIGNAL_DB, PipelineStats } from '../../src/stats/pipeline-stats.js';

const dir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/gst-launch-1.22');
/** The statistics events of one real child run (idle, an ffmpeg caller for 4 s, then EOS). */
const run: StatsEvent[] = readFileSync(path.join(dir, 'pipelinestats-srt.stdout'), 'utf8')
  .split('\n')
  .map((line) => parseLine(line))
  .filter((e): e is StatsEvent => e !== undefined);
const reports = run.filter((e) => e.kind === 'pipelinestats');
const last = reports.at(-1);
/** One caller, one connection: the most SRT packets any report counted (the last, after it left, reads 0). */
const srtReceived = Math.max(...reports.map((e) => e.srt?.packetsReceived ?? 0));
const srtBytes = Math.max(...reports.map((e) => e.srt?.bytesReceived ?? 0));

/** A clock bridge report that received `inputFrames` so far. */
const bridgeReport = (inputFrames: number): StatsEvent => ({
  kind: 'clockbridge', element: 'bridge', driftPpm: 0, fillSeconds: 0.03, targetSeconds: 0.02, setpointSeconds: 0.03,
  underruns: 0, overruns: 0, inputActive: inputFrames > 0, inputFrames, insertedSilenceSeconds: 0, lastUnderrunSeconds: 0, latencySeconds: 0.037, ratio: 1,
});

const feed = (stats: PipelineStats, events: StatsEvent[], from: number): void => {
  events.forEach((e, i) => stats.apply(e, from + i * 100));
};

void t.test('before any report every value reads "no signal" and every count 0', async (t) => {
  const stats = new PipelineStats(1000, { loudnessSteps: ['step0', 'step2'], srtInput: true });
  t.same(stats.inputLevels(), { rmsDb: [NO_SIGNAL_DB, NO_SIGNAL_DB], peakDb: [NO_SIGNAL_DB, NO_SIGNAL_DB] });
  t.same(stats.loudnessSteps().map(([name, v]) => [name, v.inputMomentary, v.gain]), [['step0', NO_SIGNAL_DB, 0], ['step2', NO_SIGNAL_DB, 0]]);
  t.same(stats.srtNow(), { connected: false, rttMs: 0, receiveRateMbps: 0 });
  t.equal(stats.bufferFill(), undefined, 'the buffer\'s fill is unknown');
  t.same(Object.values(stats.counts()), [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
  t.equal(new PipelineStats(1000, { loudnessSteps: [], srtInput: false }).srtNow(), undefined, 'a stdin input has no SRT values at all');
});

void t.test('the buffer fill is the clock bridge\'s fill over its setpoint, and only that', async (t) => {
  const stats = new PipelineStats(1000, { loudnessSteps: [], srtInput: true });
  stats.childStarted();
  // the fixture's pipelinestats lines still carry the queue reading of an older element (buffer-fill=1)
  feed(stats, run, 0);
  t.ok(stats.transport !== undefined, 'pipelinestats reports are current');
  t.equal(stats.bufferFill(), undefined, 'no bridge report: unknown, whatever pipelinestats printed');
  stats.apply({ ...bridgeReport(48_000), fillSeconds: 0.027, setpointSeconds: 0.036 } as StatsEvent, 0);
  t.equal(stats.bufferFill(), 0.027 / 0.036);
  stats.apply({ ...bridgeReport(48_000), fillSeconds: 0.01, setpointSeconds: 0 } as StatsEvent, 0);
  t.equal(stats.bufferFill(), 0, 'a setpoint of 0 reads empty');
  stats.childEnded();
  t.equal(stats.bufferFill(), undefined, 'unknown once the child ended');
});

void t.test('counts are summed over children and never go down; a dead child leaves no current values', async (t) => {
  t.ok(last?.kind === 'pipelinestats' && (last.output?.packets ?? 0) > 0 && srtReceived > 0, 'the fixture carried audio');
  t.equal(last?.kind === 'pipelinestats' ? last.srt?.packetsReceived : -1, 0, 'srtsrc\'s counts fell to 0 when the caller left: the engine must not pass that on');
  if (last?.kind !== 'pipelinestats' || last.output === undefined || last.srt === undefined) return;
  const stats = new PipelineStats(1000, { loudnessSteps: [], srtInput: true });
  stats.childStarted();
  feed(stats, run, 0);
  t.notOk(stats.childPassedAudio(), 'levels and RTP packets alone do not say audio came: the output sends silence from the start');
  stats.apply(bridgeReport(0), 0);
  t.notOk(stats.childPassedAudio(), 'a bridge that received nothing');
  stats.apply(bridgeReport(48_000), 0);
  t.ok(stats.childPassedAudio(), 'the bridge received audio: the child passed audio');
  t.ok(stats.level !== undefined, 'a level report is current');
  const one = stats.counts();
  t.equal(one.outputPackets, last.output.packets);
  t.equal(one.srtPacketsReceived, srtReceived, 'the count of the connection survives its end');
  stats.childEnded();
  t.same(stats.inputLevels().rmsDb, [NO_SIGNAL_DB, NO_SIGNAL_DB], 'levels read no signal once the child is gone');
  t.equal(stats.srtNow()?.connected, false);
  t.same(stats.counts(), one, 'the dead child\'s counts stay in the totals');
  stats.childStarted();
  t.notOk(stats.childPassedAudio(), 'a new child has passed nothing yet');
  t.same(stats.counts(), one, 'no dip when the next child starts');
  feed(stats, run, 100_000);
  t.equal(stats.counts().outputPackets, 2 * last.output.packets, 'the second child adds to the first');
  t.equal(stats.counts().srtBytesReceived, 2 * srtBytes);
});

void t.test('real-time demotions: counted per child, summed over children; an element without the field counts none', async (t) => {
  const stats = new PipelineStats(1000, { loudnessSteps: [], srtInput: true });
  const demoted = (n: number | undefined): StatsEvent => ({ ...bridgeReport(48_000), ...(n === undefined ? {} : { realtimeDemotions: n }) });
  stats.childStarted();
  stats.apply(demoted(undefined), 0);
  t.equal(stats.counts().bridgeRealtimeDemotions, 0, 'no field: none');
  stats.apply(demoted(1), 1000);
  stats.apply(demoted(2), 2000);
  stats.apply(demoted(2), 3000);
  t.equal(stats.counts().bridgeRealtimeDemotions, 2, 'the element\'s count since the child started');
  stats.childEnded();
  stats.childStarted();
  stats.apply(demoted(1), 4000);
  t.equal(stats.counts().bridgeRealtimeDemotions, 3, 'the next child adds to the first');
});

void t.test('a count that goes down within a child (a new SRT connection) starts a new run, not a dip', async (t) => {
  const stats = new PipelineStats(1000, { loudnessSteps: [], srtInput: true });
  const report = (received: number, packets: number): StatsEvent => ({
    kind: 'pipelinestats', element: 'stats',
    srt: { connected: true, rttMs: 1, packetsReceived: received, packetsLost: 0, packetsRetransmitted: 0, packetsDropped: 0, bytesReceived: received * 1316, receiveRateMbps: 1, bandwidthMbps: 1 },
    output: { packets, bytes: packets * 300 },
  });
  stats.childStarted();
  stats.apply(report(100, 50), 0);
  stats.apply(report(40, 60), 1000);
  t.equal(stats.counts().srtPacketsReceived, 140);
  t.equal(stats.counts().outputPackets, 60);
  t.notOk(stats.childPassedAudio(), 'RTP packets sent do not count as audio (the output sends silence)');
});

void t.test('levels below the floor read the floor', async (t) => {
  const stats = new PipelineStats(1000);
  stats.apply({ kind: 'level', element: 'level', rmsDb: [-700, -20], peakDb: [-350, Number.NEGATIVE_INFINITY] }, 0);
  t.same(stats.inputLevels(), { rmsDb: [NO_SIGNAL_DB, -20], peakDb: [NO_SIGNAL_DB, NO_SIGNAL_DB] });
});
