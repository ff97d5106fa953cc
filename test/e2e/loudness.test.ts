/**
 * End to end through the engine with real processes: an ffmpeg SRT caller (AAC in MPEG-TS) →
 * the engine's gst-launch-1.0 child (decode → loudnorm / parametriceq → RTP L24) → an RTP
 * receiver on 127.0.0.1. The received audio is measured by an independent meter (ffmpeg
 * ebur128 on a WAV of the received samples), never by our element's own messages.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import t, { type Test } from 'tap';
import { api, createPipeline, isRunning, startEngine, waitForPipeline, type EngineProcess } from '../helpers/engine-process.js';
import { measureFile, measureSamples } from '../helpers/loudness-meter.js';
import { freeUdpPort } from '../helpers/ports.js';
import { RtpReceiver, sineRmsDbfs } from '../helpers/rtp-receiver.js';
import { sendSine } from '../helpers/srt-sender.js';

const TARGET = -23;
/** 4 MB of socket buffer: seconds of 1 ms RTP packets, in case this process stalls. */
const RECEIVE_BUFFER = 4 * 1024 * 1024;
const CEILING = -1;

/**
 * The programme sent for the loudness case: steady pink noise (about -35 LUFS, 12 LU under the
 * target) with a 1 ms 3 kHz burst at 0.25 (-12 dBFS) every second. Once normalised (about
 * +12 dB) the bursts would peak above 0 dBTP, so the true-peak limiter has to work; they are
 * too short to move the loudness by more than about 1 LU.
 */
const PROGRAMME_SECONDS = 22;
function programmeInputs(seconds: number): string[] {
  return [
    '-f', 'lavfi', '-i', `anoisesrc=color=pink:seed=7:amplitude=0.06:sample_rate=48000:duration=${seconds}`,
    '-f', 'lavfi', '-i', `aevalsrc=exprs='if(lt(mod(t\\,1)\\,0.001)\\,0.25*sin(2*PI*3000*t)\\,0)':s=48000:d=${seconds}`,
    '-filter_complex', '[0:a][1:a]amix=inputs=2:normalize=0,pan=stereo|c0=c0|c1=c0[out]',
    '-map', '[out]',
  ];
}

/**
 * The normaliser's start-up (docs/elements-loudnorm.md): 80 ms gain smoothing during the first
 * second, short-term windows rescaled during the first 3 s, then a 2 s rising time constant.
 * Six seconds of the caller's audio cover that; about 15 s remain for the measure. Counted from
 * the first audio at the output, not from its first packet: the output sends silence from the
 * child's start, and the caller's own start-up (seconds on a loaded machine) would otherwise eat
 * into the six.
 */
const CONVERGE_SECONDS = 6;

interface Ffmpeg {
  done: Promise<{ code: number | null; stderr: string }>;
  stop(): void;
}

function ffmpeg(args: string[]): Ffmpeg {
  const child = spawn('ffmpeg', ['-hide_banner', '-loglevel', 'error', '-nostdin', ...args], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (d: string) => {
    stderr += d;
  });
  const done = new Promise<{ code: number | null; stderr: string }>((resolve) => {
    child.once('exit', (code) => resolve({ code, stderr }));
  });
  return {
    done,
    stop(): void {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    },
  };
}

/** On failure, the engine's warnings and errors go to the TAP output. */
function explainFailure(t: Test, engine: EngineProcess): void {
  t.teardown(() => {
    if (t.passing()) return;
    for (const line of engine.logs) if (line.level >= 40) t.comment(`engine: ${JSON.stringify(line)}`);
    if (engine.stderr.length > 0) t.comment(`engine stderr: ${engine.stderr.join('\n')}`);
  });
}

/** Creates a pipeline SRT listener → processing → RTP to the receiver and waits until it runs. */
async function runningPipeline(
  t: Test,
  engine: EngineProcess,
  receiver: RtpReceiver,
  name: string,
  processing: unknown[],
): Promise<{ id: string; srtPort: number }> {
  const srtPort = await freeUdpPort();
  const { id } = await createPipeline(engine, { name, srtPort, processing, outPort: receiver.port });
  t.pass(`created ${id}`);
  await waitForPipeline(engine, id, isRunning, 'the child to run');
  return { id, srtPort };
}

void t.test(`AAC over SRT, loudness-normalize to ${TARGET} LUFS: the received audio measures ${TARGET} ±1 LU, true peak <= ${CEILING} dBTP`, async (t) => {
  const engine = await startEngine(t);
  explainFailure(t, engine);
  const receiver = await RtpReceiver.open(0, { receiveBufferBytes: RECEIVE_BUFFER });
  t.teardown(() => receiver.close());

  // What is sent, measured offline from the same graph by the same meter.
  const sentFile = path.join(engine.dir, 'sent.wav'); // the test's fixture folder, removed after
  const offline = ffmpeg(['-y', ...programmeInputs(PROGRAMME_SECONDS), '-c:a', 'pcm_f32le', sentFile]);
  t.teardown(() => offline.stop());
  const offlineExit = await offline.done;
  t.equal(offlineExit.code, 0, `the programme was rendered offline ${offlineExit.stderr}`);
  const sent = await measureFile(sentFile);
  t.ok(sent.integratedLufs < TARGET - 8, `the input is far from the target: I ${sent.integratedLufs.toFixed(2)} LUFS, true peak ${sent.truePeakDbtp.toFixed(1)} dBTP`);

  const { id, srtPort } = await runningPipeline(t, engine, receiver, 'loudness e2e', [
    { plugin: 'loudness-normalize', target: TARGET },
  ]);
  const sender = ffmpeg([
    '-re', ...programmeInputs(PROGRAMME_SECONDS),
    '-c:a', 'aac', '-b:a', '256k',
    '-f', 'mpegts', `srt://127.0.0.1:${srtPort}?mode=caller&latency=300000&connect_timeout=3000`,
  ]);
  t.teardown(() => sender.stop());
  const senderExit = await sender.done;
  t.equal(senderExit.code, 0, `the SRT caller sent its audio ${senderExit.stderr}`);
  await new Promise((resolve) => setTimeout(resolve, 500));

  const onset = receiver.audioStats().startSeconds;
  const stats = receiver.stats(onset + CONVERGE_SECONDS, 0.5);
  t.comment(`RTP: ${stats.packets} packets, ${stats.sequenceGaps} sequence gaps, ${stats.frames} frames; the caller's audio from ${onset.toFixed(2)} s`);
  // a lost loopback datagram (1 ms) on a loaded machine cannot move I or the true peak
  t.ok(stats.sequenceGaps <= 2, `at most 2 gaps in the RTP sequence (${stats.sequenceGaps})`);
  const receivedSeconds = stats.frames / 48000;
  t.ok(receivedSeconds > PROGRAMME_SECONDS - 2, `received ${receivedSeconds.toFixed(1)} s of audio`);

  const audio = receiver.interleaved(onset + CONVERGE_SECONDS, 0.5);
  const got = await measureSamples(audio);
  const seconds = (audio.length / 2 / 48000).toFixed(1);
  t.ok(
    Math.abs(got.integratedLufs - TARGET) <= 1,
    `received audio (last ${seconds} s): I ${got.integratedLufs.toFixed(2)} LUFS, target ${TARGET} ±1 LU (input was ${sent.integratedLufs.toFixed(2)})`,
  );
  t.ok(
    got.truePeakDbtp <= CEILING + 0.2,
    `received audio: true peak ${got.truePeakDbtp.toFixed(1)} dBTP <= ${CEILING} + 0.2 (input ${sent.truePeakDbtp.toFixed(1)} + ~${(TARGET - sent.integratedLufs).toFixed(0)} dB of gain would reach ${(sent.truePeakDbtp + TARGET - sent.integratedLufs).toFixed(1)})`,
  );
  t.ok(got.lraLu < 3, `steady programme stays steady: LRA ${got.lraLu.toFixed(1)} LU`);

  const deleted = await api(engine, 'DELETE', `/api/v1/pipelines/${id}`);
  t.equal(deleted.status, 204);
});

void t.test('AAC over SRT, eq band 1 kHz +6 dB on a 1 kHz sine: received RMS is the input RMS + 6 dB ±0.2', async (t) => {
  const engine = await startEngine(t);
  explainFailure(t, engine);
  const receiver = await RtpReceiver.open(0, { receiveBufferBytes: RECEIVE_BUFFER });
  t.teardown(() => receiver.close());
  const { id, srtPort } = await runningPipeline(t, engine, receiver, 'eq e2e', [
    { plugin: 'eq', bands: [{ freq: 1000, gain: 6 }] },
  ]);

  const amplitude = 0.25;
  const sender = sendSine({ port: srtPort, amplitude, frequency: 1000, seconds: 5, codec: 'aac' });
  t.teardown(() => sender.stop());
  t.equal(await sender.done, 0, 'the SRT caller sent its audio');
  await new Promise((resolve) => setTimeout(resolve, 1000)); // the SRT latency and the sink's hold drain

  // The output sends silence from the child's start (the clock bridge) until the caller's audio
  // comes: the level is taken over the audio window (RtpReceiver.audioStats).
  const stats = receiver.audioStats(0.5);
  t.ok(stats.packets > 2500, `RTP packets arrived (${stats.packets})`);
  t.ok(stats.sequenceGaps <= 2, `at most 2 gaps in the RTP sequence (${stats.sequenceGaps})`);
  // The clock bridge running dry is the load's (docs/clock.md, Current figures): a figure here.
  t.comment(`figure: ${stats.dropouts} silent 10 ms blocks inside the audio (goal none)`);
  // RBJ peaking filter: |H| at the centre frequency is exactly the band gain
  const expected = sineRmsDbfs(amplitude) + 6;
  for (const [channel, rms] of stats.rmsDbfs.entries()) {
    t.ok(
      Math.abs(rms - expected) <= 0.2,
      `channel ${channel}: RMS ${rms.toFixed(2)} dBFS, sent ${sineRmsDbfs(amplitude).toFixed(2)} dBFS + 6 = ${expected.toFixed(2)}`,
    );
  }

  const deleted = await api(engine, 'DELETE', `/api/v1/pipelines/${id}`);
  t.equal(deleted.status, 204);
});
