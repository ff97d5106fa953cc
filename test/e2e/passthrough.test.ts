/**
 * End to end with real processes: the engine, its gst-launch-1.0 child, an ffmpeg SRT caller and
 * an RTP receiver on loopback. Audio passes an empty processing list unchanged in level.
 */
import t from 'tap';
import { api, createPipeline, isRunning, startEngine, waitForPipeline } from '../helpers/engine-process.js';
import { freeUdpPort } from '../helpers/ports.js';
import { RtpReceiver, sineRmsDbfs } from '../helpers/rtp-receiver.js';
import { sendSine } from '../helpers/srt-sender.js';

for (const codec of ['aac', 's302m'] as const) {
  void t.test(`${codec} over SRT comes out as RTP L24 at the level it went in`, async (t) => {
    const engine = await startEngine(t);
    const receiver = await RtpReceiver.open();
    t.teardown(() => receiver.close());
    const srtPort = await freeUdpPort();
    const { id } = await createPipeline(engine, { name: `passthrough ${codec}`, srtPort, outPort: receiver.port });
    await waitForPipeline(engine, id, isRunning, 'running');

    const amplitude = 0.5;
    const sender = sendSine({ port: srtPort, amplitude, seconds: 5, codec });
    t.teardown(() => sender.stop());
    t.equal(await sender.done, 0, 'the SRT caller sent its audio');
    await new Promise((resolve) => setTimeout(resolve, 1000)); // the SRT latency and the sink's hold drain

    const stats = receiver.stats(1.0, 0.5);
    t.ok(stats.packets > 2500, `RTP packets arrived (${stats.packets})`);
    t.equal(stats.payloadType, 96, 'payload type 96');
    t.equal(stats.payloadBytes, 288, '1 ms packets: 48 frames x 2 channels x 3 bytes');
    t.equal(stats.sequenceGaps, 0, 'no gaps in the RTP sequence');
    const expected = sineRmsDbfs(amplitude);
    for (const [channel, rms] of stats.rmsDbfs.entries()) {
      t.ok(Math.abs(rms - expected) < 0.2, `channel ${channel}: RMS ${rms.toFixed(2)} dBFS, sent ${expected.toFixed(2)} dBFS`);
    }

    // The caller left: the child ended cleanly and was started again at once, ready for the next one.
    await waitForPipeline(engine, id, (p) => p.restarts >= 1 && isRunning(p), 'a restart after the caller left');
    const deleted = await api(engine, 'DELETE', `/api/v1/pipelines/${id}`);
    t.equal(deleted.status, 204);
  });
}
