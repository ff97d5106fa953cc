/**
 * The scale bench's side-by-side reference: the `--reference` flag and its errors, the commands
 * of each kind (the floor's input cut out of the compiler's graph as the cost bench cuts it; the
 * passthrough and no-bridge graphs the compiler's without steps, meter or bridge), and the one
 * real-time rule both kinds are judged by (bench/scale-window.ts), fed with what each kind can
 * tell (the engine's SRT, underrun and restart counts; a reference process that ended).
 */
import t from 'tap';
import { driftRange, ENGINE_USAGE, parseEngineBenchArgs, type EngineBenchOptions } from '../../bench/engine.js';
import { costVariants, COST_COMPILE_OPTIONS } from '../../bench/cost.js';
import { floorInputArgv, referenceScaleCommands, referenceSrtStats } from '../../bench/scale-reference.js';
import { realTimeReasons, rtpWindowSample, sweepEnd, sweepSideBySide, wholeNs, type JudgedPipeline } from '../../bench/scale-window.js';

const parse = (...argv: string[]): EngineBenchOptions => parseEngineBenchArgs(argv);

void t.test('--reference ffmpeg|floor|passthrough|no-bridge is read; anything else is refused, naming the flag', async (t) => {
  t.equal(parse('--reference', 'ffmpeg').reference, 'ffmpeg');
  t.equal(parse('--reference', 'floor').reference, 'floor');
  t.equal(parse('--reference', 'passthrough').reference, 'passthrough');
  t.equal(parse('--reference', 'no-bridge').reference, 'no-bridge');
  t.equal(parse('--scale', '2').reference, undefined, 'no reference unless asked for');
  t.throws(() => parse('--reference', 'gst'), /--reference ffmpeg\|floor\|passthrough\|no-bridge, not gst/);
  t.throws(() => parse('--reference', 'FFMPEG'), /--reference ffmpeg\|floor\|passthrough\|no-bridge, not FFMPEG/);
  t.throws(() => parse('--reference'), /--reference needs a value/);
  t.match(ENGINE_USAGE, /\[--reference ffmpeg\|floor\|passthrough\|no-bridge\]/);
});

const job = { latencyMs: 300, targetLufs: -23, bands: [], floorSender: '/cache/floor-sender', compileOptions: COST_COMPILE_OPTIONS };

void t.test("the floor's input is the cost bench's: the compiler's graph cut after the decoder", async (t) => {
  const costInput = costVariants((i) => 7000 + i, (k) => 9000 + k).find((v) => v.name === 'input');
  t.same(floorInputArgv(job, 7002), costInput?.argv, 'the cost variant "input" (its third graph: SRT port 7002)');
  const [input, sender, ...more] = referenceScaleCommands({ ...job, kind: 'floor' });
  t.same(more, [], 'two processes per pipeline');
  t.match(input?.join(' '), /^gst-launch-1\.0 .* srtsrc name=src mode=listener .*localport=SRT_PORT latency=300 .*! decodebin name=decode ! fakesink /);
  t.notOk(input?.some((a) => a.includes('udpsink') || a.includes('clockbridge')), 'no bridge, no send: the floor sender sends');
  t.same(sender, ['/cache/floor-sender', '127.0.0.1', 'RTP_PORT']);
  const [ffmpeg, ...none] = referenceScaleCommands({ ...job, kind: 'ffmpeg' });
  t.same(none, [], 'one ffmpeg per pipeline');
  t.match(ffmpeg?.join(' '), /^ffmpeg .*srt:\/\/127\.0\.0\.1:SRT_PORT\?mode=listener&latency=300000 .*rtp:\/\/127\.0\.0\.1:RTP_PORT\?pkt_size=300$/);
  t.match(referenceSrtStats('floor'), /not read/);
  t.match(referenceSrtStats('ffmpeg'), /not read/);
  t.match(referenceSrtStats('passthrough'), /not read/);
});

void t.test("the passthrough is the compiler's graph without steps or level: every element the design keeps", async (t) => {
  const [graph, ...more] = referenceScaleCommands({ ...job, kind: 'passthrough' });
  t.same(more, [], 'one gst-launch-1.0 per pipeline');
  const line = graph?.join(' ') ?? '';
  t.match(line, /^gst-launch-1\.0 .* srtsrc name=src mode=listener .*localport=SRT_PORT latency=300 .*! decodebin name=decode ! audioconvert name=inconvert ! audioresample name=resample ! \S+ ! clockbridge name=bridge [^!]*! l24pack name=outconvert ! rtpL24pay name=pay [^!]*! rtpbatch name=batch packets=4 [^!]*! udpsink name=out host=127\.0\.0\.1 port=RTP_PORT /);
  t.notOk(/\b(level|loudnorm|parametriceq) /.test(line), 'no meter, no step');
  t.match(line, /pipelinestats name=stats .*enginecontrol name=control fd=4/, "the engine's unlinked elements stay: the child is the engine's but for the steps and the meter");

  const [noBridge, ...alone] = referenceScaleCommands({ ...job, kind: 'no-bridge' });
  t.same(alone, [], 'one gst-launch-1.0 per pipeline');
  t.notOk(noBridge?.includes('clockbridge'), 'no clock bridge');
  t.same(noBridge?.join(' '), line.replace(/ ! clockbridge name=bridge [^!]*!/, ' !'), 'the passthrough without the clock bridge, nothing else changed');
  t.match(referenceSrtStats('no-bridge'), /not read/);
});

const none = { senders: [] };
const clean: JudgedPipeline = { rtpPackets: 20000, rtpGaps: 0, rtpCounterDrops: 0, rtpRatePerS: 1000, silentMs: 0, silences: 0 };

void t.test('the real-time rule: every reason, for either kind', async (t) => {
  t.same(realTimeReasons([clean, { ...clean, srtLost: 0, srtDropped: 0, underruns: 0, restarts: 0 }, { ...clean, ended: false }], none), [], 'clean: real time');
  t.same(realTimeReasons([{ ...clean, rtpGaps: 2, rtpCounterDrops: 1 }, { ...clean, rtpGaps: 1 }], none), ["3 RTP sequence gap(s) in 2 pipeline(s) (the counter's sockets dropped 1 datagram(s))"]);
  t.same(realTimeReasons([clean, { ...clean, rtpRatePerS: 979 }], none), ['1 pipeline(s) off 1000 RTP packets/s by > 2 % (min 979/s)']);
  t.same(realTimeReasons([{ ...clean, rtpRatePerS: 1020 }, { ...clean, rtpRatePerS: 980 }], none), [], '2 % either way is still real time');
  t.same(realTimeReasons([{ ...clean, silences: 2, silentMs: 30 }, { ...clean, silences: 1, silentMs: 12 }], none), ['inserted silence in 2 pipeline(s) (42 ms in all, at most 30 ms in one)']);
  t.same(realTimeReasons([{ ...clean, srtLost: 3, srtDropped: 1, underruns: 2, restarts: 1 }], none), ['2 underrun(s) in 1 pipeline(s)', '3 SRT packet(s) lost', '1 SRT packet(s) dropped', '1 child restart(s)']);
  t.same(realTimeReasons([{ ...clean, restarts: 2 }], { senders: [], restartsSaid: ['2x "child exited"'] }), ['2 child restart(s) (the engine said: 2x "child exited")']);
  t.same(realTimeReasons([{ ...clean, srtLost: -5 }], none), [], 'a counter that went back (a restarted child) is not a loss');
  t.same(
    realTimeReasons([{ ...clean, ended: true, lastError: 'Connection setup failure' }, clean], { senders: [{ alive: false, lastError: '' }, { alive: true, lastError: 'x' }] }),
    ['1 pipeline process(es) ended before the window did ("Connection setup failure")', '1 sender process(es) ended before the window did'],
  );
});

void t.test("a pipeline's RTP figures from the counter's snapshot", async (t) => {
  const snapshot = { windowS: 20, sockets: [{ port: 5000, packets: 20000, gaps: 1, drops: 0, silent_frames: 480, silences: 1, longest_silence: 480, audio_frames: 47520 }] };
  t.same(rtpWindowSample(snapshot, 5000), { rtpPackets: 20000, rtpGaps: 1, rtpCounterDrops: 0, rtpRatePerS: 1000, silentMs: 10, silences: 1 });
  t.same(rtpWindowSample(snapshot, 5002), { rtpPackets: 0, rtpGaps: 0, rtpCounterDrops: 0, rtpRatePerS: 0, silentMs: 0, silences: 0 }, 'no socket: nothing received');
});

void t.test('side by side, each kind stops at its own first N that is not real time, the other goes on', async (t) => {
  const ns = [1, 8, 16, 24, 32];
  const calls: string[] = [];
  const kind = (name: string, lastRealTime: number) => async (n: number) => {
    calls.push(`${name} ${n}`);
    return { n, realTime: n <= lastRealTime };
  };
  const r = await sweepSideBySide(ns, kind('engine', 24), kind('ffmpeg', 8));
  t.same(calls, ['engine 1', 'ffmpeg 1', 'engine 8', 'ffmpeg 8', 'engine 16', 'ffmpeg 16', 'engine 24', 'engine 32'], 'the reference stopped at 16, the engine went on');
  t.same(sweepEnd(r.first, ns), { largestRealTimeN: 24, stoppedEarly: false }, 'the engine reached the last N (not real time there)');
  t.same(sweepEnd(r.second, ns), { largestRealTimeN: 8, stoppedEarly: true });

  calls.length = 0;
  const both = await sweepSideBySide(ns, kind('engine', 1), kind('ffmpeg', 1));
  t.same(calls, ['engine 1', 'ffmpeg 1', 'engine 8', 'ffmpeg 8'], 'both stopped: the sweep ends');
  t.same(sweepEnd(both.first, ns), { largestRealTimeN: 1, stoppedEarly: true });

  calls.length = 0;
  const alone = await sweepSideBySide(ns, kind('engine', 100), null);
  t.same(calls, ns.map((n) => `engine ${n}`), 'no reference: the engine alone, every N');
  t.same(alone.second, []);
  t.same(sweepEnd(alone.first, ns), { largestRealTimeN: 32, stoppedEarly: false });
  t.same(sweepEnd([{ n: 1, realTime: false }], ns), { largestRealTimeN: 0, stoppedEarly: true }, 'none real time: 0');
});

void t.test('the drift readings: the range of those known, the unknown (NaN) counted apart', async (t) => {
  t.equal(driftRange([-4.04, 7.5, 1]), '-4.0..7.5 ppm');
  t.equal(driftRange([3, Number.NaN, -2, Number.NaN]), '-2.0..3.0 ppm (2 of 4 readings not known yet)');
  t.equal(driftRange([Number.NaN]), 'none known (1 of 1 readings not known yet)');
});

void t.test('rounds: the kinds take turns at each N, and an N is whole only when every round was', async (t) => {
  const ns = [8, 24, 32];
  const calls: string[] = [];
  // the engine breaks up in round 2 at 24 only; the reference holds everything
  const engine = async (n: number, round: number) => {
    calls.push(`engine ${n}/${round}`);
    return { n, realTime: !(n === 24 && round === 2) };
  };
  const ffmpeg = async (n: number, round: number) => {
    calls.push(`ffmpeg ${n}/${round}`);
    return { n, realTime: true };
  };
  const r = await sweepSideBySide(ns, engine, ffmpeg, 3);
  t.same(calls.slice(0, 6), ['engine 8/1', 'ffmpeg 8/1', 'engine 8/2', 'ffmpeg 8/2', 'engine 8/3', 'ffmpeg 8/3'], 'interleaved round by round');
  t.ok(calls.includes('engine 24/3'), 'a broken round does not end the N: every round is run');
  t.notOk(calls.some((c) => c.startsWith('engine 32')), 'the engine stops after the N it did not hold in every round');
  t.equal(calls.filter((c) => c.startsWith('ffmpeg 32')).length, 3, 'the reference goes on');
  t.same(wholeNs(r.first), [8]);
  t.same(sweepEnd(r.first, ns), { largestRealTimeN: 8, stoppedEarly: true }, '2 of 3 rounds at 24 is not whole');
  t.same(sweepEnd(r.second, ns), { largestRealTimeN: 32, stoppedEarly: false });
});
