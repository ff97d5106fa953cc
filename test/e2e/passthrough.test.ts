/**
 * End to end with real processes: the engine, its gst-launch-1.0 child, an ffmpeg SRT caller and
 * an RTP receiver on loopback. Audio passes an empty processing list unchanged in level.
 */
import { readFile } from 'node:fs/promises';
import t from 'tap';
import { api, createPipeline, isRunning, startEngine, waitForPipeline } from '../helpers/engine-process.js';
import { freeUdpPort } from '../helpers/ports.js';
import { RtpReceiver, sineRmsDbfs } from '../helpers/rtp-receiver.js';
import { sendSine } from '../helpers/srt-sender.js';
import { CAPS } from '../../src/compiler/elements.js';

/** The argv of a pipeline's running child (setpriv execs gst-launch-1.0 in the same process). */
async function childArgv(engine: Awaited<ReturnType<typeof startEngine>>, id: string): Promise<string[]> {
  const spawned = await engine.waitForLog((l) => l.event === 'spawn' && l.pipeline_id === id);
  if (spawned.stdout_polled !== true) throw new Error(`the child's stdout is not read in batches: ${JSON.stringify(spawned)}`);
  const cmdline = await readFile(`/proc/${String(spawned.pid)}/cmdline`, 'utf8');
  return cmdline.split('\0');
}

// packetsPerSend: undefined = the default config (4 packets per send, lists of 4 from rtpbatch); 1 = one per ms
// video: the transport stream carries a video stream before the audio (an encoder's A/V feed)
const cases = [
  { codec: 'aac', packetsPerSend: undefined, video: false },
  { codec: 's302m', packetsPerSend: undefined, video: false },
  { codec: 'aac', packetsPerSend: 1, video: false },
  { codec: 'aac', packetsPerSend: undefined, video: true },
] as const;

for (const { codec, packetsPerSend, video } of cases) {
  const sending = packetsPerSend === undefined ? 'default sending' : `rtp_packets_per_send = ${packetsPerSend}`;
  const what = video ? `${codec} with video` : codec;
  void t.test(`${what} over SRT comes out as RTP L24 at the level it went in (${sending})`, async (t) => {
    const engine = await startEngine(t, packetsPerSend === undefined ? {} : { extraToml: `rtp_packets_per_send = ${packetsPerSend}` });
    // 4 MB of socket buffer (capped by net.core.rmem_max): "no gaps in the RTP sequence" is about
    // the engine's output, not about this process stalled on a loaded machine while datagrams
    // pile up (the default buffer holds about 0.2 s of them).
    const receiver = await RtpReceiver.open(0, { receiveBufferBytes: 4 << 20 });
    t.teardown(() => receiver.close());
    const srtPort = await freeUdpPort();
    const { id } = await createPipeline(engine, { name: `passthrough ${what}`, srtPort, outPort: receiver.port });
    await waitForPipeline(engine, id, isRunning, 'running');
    const argv = await childArgv(engine, id);
    const batch = argv.indexOf('rtpbatch');
    const packets = packetsPerSend ?? 4;
    t.same(argv.slice(batch - 1, batch + 5), ['!', 'rtpbatch', 'name=batch', `packets=${packets}`, 'media-clock=true', '!'], `rtpbatch packets=${packets} with media-clock timestamps before the sink`);
    const demux = argv.indexOf('tsdemux');
    t.same(argv.slice(demux, demux + 5), ['tsdemux', 'name=demux', '!', CAPS.audioInTransportStream, '!'], 'tsdemux links the first audio stream');

    const amplitude = 0.5;
    // The output sends silence from the child's start; measure from the caller's start on.
    receiver.reset();
    const sender = sendSine({ port: srtPort, amplitude, seconds: 5, codec, video });
    t.teardown(() => sender.stop());
    t.equal(await sender.done, 0, 'the SRT caller sent its audio');
    await new Promise((resolve) => setTimeout(resolve, 1000)); // the SRT latency and the bridge drain

    // The level of the audio window (the output sends silence before and after the caller; with
    // video the caller's audio starts later), less 0.2 s at each end for the decoder's start and
    // the bridge's fade-in; a silent block inside the window is counted, not averaged away.
    const stats = receiver.audioStats();
    t.ok(stats.packets > 2500, `RTP packets arrived (${stats.packets})`);
    // How much of the 5 s came out and whether the bridge ran dry follow the machine's load (the
    // bridge trims the caller's start-up backlog; docs/clock.md): figures, with their goals.
    t.comment(`figure: ${stats.audioSeconds.toFixed(2)} s of audio of 5 s sent (goal >= 4.5), starting ${stats.startSeconds.toFixed(2)} s after the caller started; ${stats.dropouts} silent 10 ms blocks inside it (goal none)`);
    t.ok(stats.audioSeconds > 0, `the caller's audio came out (${stats.audioSeconds.toFixed(2)} s)`);
    t.equal(stats.payloadType, 96, 'payload type 96');
    t.equal(stats.payloadBytes, 288, '1 ms packets: 48 frames x 2 channels x 3 bytes');
    t.equal(stats.sequenceGaps, 0, 'no gaps in the RTP sequence');
    const expected = sineRmsDbfs(amplitude);
    for (const [channel, rms] of stats.rmsDbfs.entries()) {
      const level = `channel ${channel}: RMS ${rms.toFixed(2)} dBFS, sent ${expected.toFixed(2)} dBFS`;
      // silent blocks inside the window (above) lower the level: it is judged only without them
      if (stats.dropouts === 0) t.ok(Math.abs(rms - expected) < 0.2, level);
      else t.comment(`figure: ${level}, with ${stats.dropouts} silent blocks in the window (goal within 0.2 dB)`);
    }

    // The caller left: the child keeps running (srtsrc keeps listening, the output sends silence).
    const left = await waitForPipeline(engine, id, (p) => p.input_state === 'waiting', 'waiting after the caller left');
    t.equal(left.restarts, 0, 'no restart: the same child waits for the next caller');
    t.ok(isRunning(left));
    const deleted = await api(engine, 'DELETE', `/api/v1/pipelines/${id}`);
    t.equal(deleted.status, 204);
  });
}
