/**
 * The benches' ffmpeg reference (bench/ffmpeg-pipeline.ts): every value is checked before it
 * reaches the argv, and the argv is one ffmpeg really runs: fed by a real SRT caller, it sends
 * L24 RTP in 1 ms packets (288-byte payloads, payload type 96) to the port it was given, with no
 * sequence gap, audio in it, and no RTCP to the port above.
 */
import { spawn } from 'node:child_process';
import { createSocket, type Socket } from 'node:dgram';
import t from 'tap';
import { ffmpegPipelineArgv, type FfmpegPipelineOptions } from '../../bench/ffmpeg-pipeline.js';
import { freeUdpPort } from '../helpers/ports.js';
import { RtpReceiver } from '../helpers/rtp-receiver.js';
import { sendSine } from '../helpers/srt-sender.js';

const GOOD: FfmpegPipelineOptions = {
  srtPort: 7000, rtpPort: 9000, latencyMs: 300, targetLufs: -23,
  bands: [{ freq: 100, gain: 4 }, { freq: 1000, gain: -3, q: 2.5 }, { freq: 8000, gain: 2 }],
};

void t.test('a value out of range is refused, naming the field', async (t) => {
  const bad: [Partial<FfmpegPipelineOptions>, RegExp][] = [
    [{ rtpPort: 0 }, /rtpPort must be a whole number 1-65535, got 0/],
    [{ rtpPort: 65536 }, /rtpPort must be a whole number 1-65535, got 65536/],
    [{ rtpPort: 5004.5 }, /rtpPort must be a whole number/],
    [{ rtpPort: Number.NaN }, /rtpPort must be a whole number 1-65535, got NaN/],
    [{ rtpPort: '5004' as unknown as number }, /rtpPort must be a whole number/],
    [{ srtPort: -1 }, /srtPort must be a whole number 1-65535, got -1/],
    [{ latencyMs: 10 }, /latencyMs must be a whole number 20-8000, got 10/],
    [{ targetLufs: 0 }, /targetLufs must be a number -70--5, got 0/],
    [{ bands: [{ freq: 10, gain: 0 }] }, /bands\[0\]\.freq must be a number 20-20000, got 10/],
    [{ bands: [{ freq: 100, gain: 0 }, { freq: 200, gain: 30 }] }, /bands\[1\]\.gain must be a number -24-24, got 30/],
    [{ bands: [{ freq: 100, gain: 0, q: 0 }] }, /bands\[0\]\.q must be a number 0.1-30, got 0/],
    [{ bands: Array.from({ length: 17 }, () => ({ freq: 100, gain: 0 })) }, /bands must be at most 16, got 17/],
  ];
  for (const [change, message] of bad) t.throws(() => ffmpegPipelineArgv({ ...GOOD, ...change }), message, JSON.stringify(change));
});

void t.test('the argv: SRT listener with the latency in microseconds, the chain, L24 RTP in 1 ms packets without RTCP', async (t) => {
  const argv = ffmpegPipelineArgv(GOOD);
  const after = (flag: string): string | undefined => argv[argv.indexOf(flag) + 1];
  t.equal(after('-i'), 'srt://127.0.0.1:7000?mode=listener&latency=300000');
  t.equal(after('-af'), 'aformat=channel_layouts=stereo,loudnorm=I=-23:TP=-1,aresample=48000,aformat=channel_layouts=stereo,' +
    'equalizer=f=100:t=q:w=1:g=4,equalizer=f=1000:t=q:w=2.5:g=-3,equalizer=f=8000:t=q:w=1:g=2');
  t.equal(after('-c:a'), 'pcm_s24be');
  t.equal(after('-payload_type'), '96');
  t.equal(after('-rtpflags'), 'skip_rtcp');
  t.equal(argv.at(-1), 'rtp://127.0.0.1:9000?pkt_size=300');
  const plain = ffmpegPipelineArgv({ ...GOOD, bands: [], targetLufs: -16 });
  t.equal(plain[plain.indexOf('-af') + 1], 'aformat=channel_layouts=stereo,loudnorm=I=-16:TP=-1,aresample=48000,aformat=channel_layouts=stereo', 'no bands: no equalizer');
});

/** A receiver on a free port whose port + 1 is free too (bound: where RTCP would go). */
async function receiverPair(): Promise<{ rtp: RtpReceiver; rtcp: Socket }> {
  for (let i = 0; i < 20; i++) {
    const rtp = await RtpReceiver.open(0, { receiveBufferBytes: 4 << 20 });
    const rtcp = createSocket('udp4');
    const bound = await new Promise<boolean>((resolve) => {
      rtcp.once('error', () => resolve(false));
      rtcp.bind(rtp.port + 1, '127.0.0.1', () => resolve(true));
    });
    if (bound) return { rtp, rtcp };
    await rtp.close();
    rtcp.close();
  }
  throw new Error('no free pair of UDP ports');
}

void t.test('ffmpeg runs the argv: RTP L24 in 1 ms packets to the given port, no gap, audio, no RTCP', async (t) => {
  const { rtp, rtcp } = await receiverPair();
  t.teardown(async () => {
    await rtp.close();
    rtcp.close();
  });
  let rtcpPackets = 0;
  rtcp.on('message', () => {
    rtcpPackets += 1;
  });
  const srtPort = await freeUdpPort();
  const ffmpeg = spawn('ffmpeg', ffmpegPipelineArgv({ ...GOOD, srtPort, rtpPort: rtp.port }), { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  ffmpeg.stderr.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  t.teardown(() => void ffmpeg.kill('SIGKILL'));
  const sender = sendSine({ port: srtPort, amplitude: 0.3, frequency: 997, seconds: 30 });
  t.teardown(() => sender.stop());

  // the loudnorm look-ahead holds 3 s: generous bounds for a loaded machine
  t.ok(await rtp.waitForPackets(4000, 60_000), `4000 packets within 60 s (got ${rtp.received}; ffmpeg: ${stderr.trim()})`);
  const stats = rtp.stats();
  t.equal(stats.payloadType, 96);
  t.equal(stats.payloadBytes, 288, '48 stereo L24 frames: 1 ms');
  t.equal(stats.sequenceGaps, 0);
  t.ok((stats.rmsDbfs[0] ?? -Infinity) > -60 && (stats.rmsDbfs[1] ?? -Infinity) > -60, `audio in both channels (${stats.rmsDbfs.map((x) => x.toFixed(1)).join(', ')} dBFS)`);
  t.equal(rtcpPackets, 0, 'nothing sent to the RTP port + 1');
});
