/**
 * A station's Icecast source on the plant's clock: liquidsoap %opus, whose Ogg pages come in
 * bursts (before the clock bridge: 72-93 ms holes every 0.34 s at the station's RTP output).
 * (The same test through that queue graph: 7020 packets in 10 s, holes up to 99 ms.)
 * Through the bridge with its paced input the output is timed by the host clock: measured with
 * the kernel's receive time of every packet (test/helpers/rtp-timing.ts, CLOCK_REALTIME, the
 * station's clock source here): 1000 packets per second of host time, RTP timestamps step by 48
 * on the media clock, no hole in the packet stream and no silent packet inside the audio.
 * The packet rate is judged on the packets that left on time (late packets are the sending
 * thread descheduled, not the rate). The longest hole, the media-clock band and the source's
 * underruns follow the machine's load (the sending thread, liquidsoap itself): they are the
 * bars of docs/clock.md, printed as figures, as in test/e2e/clock-drift.test.ts; as pass/fail
 * figures they belong in bench/.
 */
import t from 'tap';
import type { StationView } from '../../src/stations/station.js';
import { between, clockFigures, realtimeNs } from '../helpers/clock-analysis.js';
import { eventually, startEngine, type EngineProcess } from '../helpers/engine-process.js';
import { runLiquidsoap } from '../helpers/liquidsoap.js';
import { RtpTiming } from '../helpers/rtp-timing.js';
import { freeStationNumber, getStation, harborPortOf, stationToml } from '../helpers/stations.js';

const ID = 'clocked';
const PASSWORD = 'clock-pw';
const SEND_SECONDS = 16;
/** Packets per send (the engine's default): the media-clock band's allowance. */
const PACKETS_PER_SEND = 4;

const station = (engine: EngineProcess): Promise<StationView> => getStation(engine, ID);

void t.test('liquidsoap %opus into a station: the output runs on the host clock, without holes', async (t) => {
  const dir = t.testdir();
  const number = await freeStationNumber();
  const receiver = await RtpTiming.open(SEND_SECONDS + 90);
  t.teardown(() => receiver.close());
  const engine = await startEngine(t, {
    extraToml: `${stationToml({ id: ID, number, rtpPort: receiver.port, harbor: 'icecast', password: PASSWORD })}\n[clock]\nsource = "realtime"\n`,
  });
  await eventually(async () => ((await station(engine)).pid !== null ? true : undefined), 20_000, 'a child waiting for a source');
  const liq = runLiquidsoap(t, { dir, port: harborPortOf(number), password: PASSWORD, mount: '/liq.opus', encoder: 'opus', amplitude: 0.5, seconds: SEND_SECONDS, titleEverySeconds: 100 });
  // liquidsoap type-checks its whole library before it connects: 1 s when idle, 15 s measured at load 24.
  await eventually(async () => ((await station(engine)).source !== null ? true : undefined), 60_000, 'liquidsoap connected');
  const connected = realtimeNs();
  // The window: from 3 s after the connection (the bridge has started) to 2 s before the source ends.
  await new Promise((resolve) => setTimeout(resolve, 3000));
  const from = realtimeNs();
  await new Promise((resolve) => setTimeout(resolve, (SEND_SECONDS - 6) * 1000));
  const to = realtimeNs();
  const view = await station(engine);
  t.equal(await liq.done, 0, 'liquidsoap exited 0', { output: liq.output().slice(-1500) });
  await receiver.close();
  t.equal(receiver.kernelDrops, 0, 'the receiver lost nothing to its own buffer');

  const window = between(receiver.packets, from, to);
  const seconds = Number(to - from) / 1e9;
  const f = clockFigures(window);
  const ppm = (f.packetsPerSecond / 1000 - 1) * 1e6;
  const onTimePpm = (f.onTimePacketsPerSecond / 1000 - 1) * 1e6;
  t.ok(f.packets > seconds * 1000 * 0.99, `${f.packets} packets in ${seconds.toFixed(1)} s`);
  // Over a 10 s window one 20 ms stall of the sending thread moves a least-squares line through
  // every packet by about 10 ppm; the packets that left on time give the rate the output runs at.
  t.ok(Math.abs(onTimePpm) <= 20, `${f.onTimePacketsPerSecond.toFixed(4)} packets per second of host time (${onTimePpm.toFixed(1)} ppm; at most 20), measured on the packets that left on time (all packets, least squares: ${f.packetsPerSecond.toFixed(4)}, ${ppm.toFixed(1)} ppm)`);
  t.equal(f.sequenceGaps, 0, 'no sequence gap');
  t.equal(f.timestampSteps, 0, 'RTP timestamps step by 48');
  let hole = 0;
  window.forEach((p, i) => {
    const prev = window[i - 1];
    if (prev !== undefined) hole = Math.max(hole, Number(p.recvNs - prev.recvNs) / 1e6);
  });
  // A send is 4 packets every 4 ms; the sending thread descheduled on a loaded machine adds its
  // time off the CPU (docs/clock.md: packets up to 35-89 ms late at load 3-6): a bar, not a
  // function of the engine alone. The queue graph's holes (72-99 ms every 0.34 s, 7020 packets
  // in 10 s) fail the packet count above whatever the load.
  const holeText = `the longest time without a packet: ${hole.toFixed(2)} ms (at most 20; 99.11 ms through the 1 s queue graph before the bridge, measured with this test)`;
  t.comment(`figure: ${holeText}`);
  const bound = 2 + PACKETS_PER_SEND;
  const p98Ms = (f.offsetP99 - f.offsetP1) / 48;
  const band = `media clock: 1st..99th percentile of (rtp_ts - t_recv x 48000/1e9) within ${p98Ms.toFixed(2)} ms (at most ${bound}; all packets ${((f.offsetMax - f.offsetMin) / 48).toFixed(2)} ms)`;
  t.comment(`figure: ${band}`);

  // The audio: liquidsoap's sine from its first packet on, with no silent packet in between.
  const first = receiver.packets.findIndex((p) => p.recvNs >= connected && p.peak > 0.1);
  t.ok(first >= 0, 'the sine came out');
  const inside = receiver.packets.slice(first).filter((p) => p.recvNs < to);
  const silent = inside.filter((p) => p.peak < 0.1).length;
  t.ok(view.clock !== null, 'the station reports its clock bridge');
  // A source that stalls gets silence on time (docs/stations.md), counted as an underrun: a
  // liquidsoap starved of CPU on a loaded machine is such a source. Silence without an underrun
  // would be the engine's own.
  const underruns = view.clock?.underruns ?? 0;
  t.comment(`figure: ${silent} silent packets of ${inside.length} from the first audio to the end of the window, ${underruns} underrun(s) (goal none)`);
  t.ok(silent === 0 || underruns > 0, `no silence the engine did not report: ${silent} silent packets, ${underruns} underrun(s) counted`);
  // A same-host source: its estimate over 13 s of 0.3 s bursts is within the bridge's range (the
  // 100 ppm bar is the SRT callers' over 48 s, test/e2e/clock-drift.test.ts).
  // null: the bridge does not know it yet (its line's standard error above 10 ppm, or the
  // arrivals' 1 s minima scattered by more than 2 ms on a loaded machine: it waits for its long
  // view, docs/clock.md) rather than report a wrong figure.
  const drift = view.clock?.drift_ppm;
  t.ok(drift === null || (typeof drift === 'number' && Math.abs(drift) <= 1000), `drift of liquidsoap against the host clock: ${String(drift)} ppm (within +-1000, or not known yet)`);
});
