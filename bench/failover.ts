/**
 * Failover (`npm run bench -- --only failover`, docs/failover.md): what a backup input costs and
 * how fast the output switches to it.
 *
 * (a) CPU: one pipeline with a backup input (both inputs fed, main 1 kHz and backup 440 Hz) and
 * the same pipeline without a backup (main only), side by side in each round, `--rounds` rounds
 * of `--window` s, the order they start in alternating from round to round. Both graphs are the
 * compiler's own argv (src/compiler/compile.ts), no steps, RTP L24 1 ms to 127.0.0.1; CPU of each
 * gst-launch-1.0 (user + system, /proc/PID/stat) over the same window.
 * (b) Switching: one pipeline with a backup (failover.loss_ms 300, return_s 1); the main sender is
 * killed (SIGKILL) `--losses` times, each time started again and left until the bridge returned
 * to main. The received RTP audio (channel 0, placed by its RTP timestamp) says per loss how long
 * the output carried neither tone between main's last 1 kHz and the backup's 440 Hz, when the
 * backup's tone came after the kill, and the largest sample step across the switch and across the
 * return; over the whole run: RTP sequence gaps, timestamp jumps and silent 10 ms blocks.
 *
 * Senders: ffmpeg `-re -c copy` of an AAC MPEG-TS tone file made once by ffmpeg (cached), one
 * process per input, SRT caller to 127.0.0.1. Every process is killed at the end, also when the
 * bench fails. It reports figures and never asserts a timing.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createSocket, type Socket } from 'node:dgram';
import { mkdir, readFile, rename } from 'node:fs/promises';
import { cpus, hostname, release, tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { compilePipeline } from '../src/compiler/compile.js';
import { parseLine } from '../src/stats/parse-line.js';
import { parsePipelineSpec } from '../src/spec/validate.js';
import { amplitudeDbfs, largestStep, toneAmplitude } from '../test/helpers/tones.js';
import { freeTcpPort } from '../test/helpers/ports.js';
import { COST_COMPILE_OPTIONS } from './cost.js';
import { killGroup, loadAverage, percentile, procCpuSeconds, ROOT, Sender, sleep, stopAll } from './engine-harness.js';
import { median, runIfMain, scriptFlags } from './process.js';

const RATE = 48000;
/** Main: 1 kHz at -14 dBFS; backup: 440 Hz at -20 dBFS (the failover tests' tones). */
export const MAIN_TONE = { hz: 1000, amplitude: 10 ** (-14 / 20) } as const;
export const BACKUP_TONE = { hz: 440, amplitude: 10 ** (-20 / 20) } as const;
/** Length of the tone files, s: a sender plays its file from the start, looped after this. */
const TONE_FILE_S = 300;
const SRT_LATENCY_MS = 120;
export const FAILOVER_POLICY = { loss_ms: 300, return_s: 1 } as const;
/** Analysis windows: 10 ms (4.4 periods of 440 Hz) every 1 ms. */
const WINDOW = 480;
const HOP = 48;

// ---------------------------------------------------------------------------------------------
// senders and children

/** The AAC MPEG-TS file of one tone (made once, cached by name in `cacheDir`). */
export async function toneTs(cacheDir: string, tone: { hz: number; amplitude: number }): Promise<string> {
  await mkdir(cacheDir, { recursive: true });
  const file = path.join(cacheDir, `failover-tone-v1-${tone.hz}hz-${tone.amplitude.toFixed(4)}-${TONE_FILE_S}s-aac.ts`);
  const ok = await readFile(file).then((b) => b.length > 1_000_000, () => false);
  if (ok) return file;
  const tmp = `${file}.${process.pid}.tmp`;
  const expr = `${tone.amplitude}*sin(2*PI*${tone.hz}*t)`;
  const child = spawn('ffmpeg', ['-nostdin', '-hide_banner', '-loglevel', 'error', '-y', '-f', 'lavfi', '-i', `aevalsrc=${expr}|${expr}:s=48000:d=${TONE_FILE_S}`,
    '-c:a', 'aac', '-b:a', '256k', '-f', 'mpegts', tmp], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  child.stderr?.on('data', (d: Buffer) => {
    err += d.toString();
  });
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', resolve);
  });
  if (code !== 0) throw new Error(`ffmpeg could not make the tone file (${String(code)}): ${err.trim()}`);
  await rename(tmp, file);
  return file;
}

/** The compiler's argv of a pipeline with (or without) a backup input, RTP to 127.0.0.1:rtpPort. */
export function failoverArgv(ports: { main: number; backup?: number; rtp: number }): string[] {
  const spec = parsePipelineSpec({
    name: 'failover-bench',
    input: { type: 'srt', port: ports.main, latency: SRT_LATENCY_MS },
    ...(ports.backup === undefined ? {} : { backup: { type: 'srt', port: ports.backup, latency: SRT_LATENCY_MS }, failover: FAILOVER_POLICY }),
    output: { type: 'rtp', host: '127.0.0.1', port: ports.rtp },
  });
  return compilePipeline(spec, COST_COMPILE_OPTIONS);
}

/** One gst-launch-1.0 child with the descriptors the supervisor gives it, its -m lines parsed. */
class Child {
  readonly stderr: string[] = [];
  /** The last periodic clockbridge report's failover state. */
  activeInput: string | undefined;
  backupConnected: boolean | undefined;
  mainConnected: boolean | undefined;
  /** The bridge's `failover` messages, with when this process read them (performance.now()). */
  readonly switches: { atMs: number; from: string; to: string; reason: string }[] = [];
  readonly process: ChildProcess;

  constructor(readonly name: string, argv: string[], pluginPath: string) {
    // fd 3: the passphrase pipe (none here), 4: the control channel, 5: the backup's passphrase
    this.process = spawn('gst-launch-1.0', argv, {
      env: { ...process.env, GST_PLUGIN_PATH: pluginPath }, stdio: ['ignore', 'pipe', 'pipe', 'pipe', 'pipe', 'pipe'], detached: true,
    });
    this.process.on('error', () => undefined);
    if (this.process.stdout !== null) createInterface({ input: this.process.stdout }).on('line', (l) => this.onLine(l));
    if (this.process.stderr !== null) createInterface({ input: this.process.stderr }).on('line', (l) => this.stderr.length < 20 && this.stderr.push(l));
  }

  private onLine(line: string): void {
    const event = parseLine(line);
    if (event?.kind === 'clockbridge' && event.failover !== undefined) {
      this.activeInput = event.failover.activeInput;
      this.mainConnected = event.failover.main.connected;
      this.backupConnected = event.failover.backup?.connected;
    } else if (event?.kind === 'failover') {
      this.switches.push({ atMs: performance.now(), from: event.from, to: event.to, reason: event.reason });
      this.activeInput = event.to;
    }
  }

  get alive(): boolean {
    return this.process.exitCode === null && this.process.signalCode === null;
  }

  async stop(): Promise<void> {
    killGroup(this.process.pid, 'SIGKILL');
    if (this.alive) await Promise.race([new Promise((resolve) => this.process.once('exit', resolve)), sleep(2000)]);
  }
}

/** Polls `test` every 50 ms for at most `ms`: what it returned, or undefined. */
async function within<T>(ms: number, test: () => T | undefined): Promise<T | undefined> {
  const until = performance.now() + ms;
  for (;;) {
    const value = test();
    if (value !== undefined) return value;
    if (performance.now() > until) return undefined;
    await sleep(50);
  }
}

// ---------------------------------------------------------------------------------------------
// (a) CPU with and without a backup

export interface FailoverCpuRound {
  /** Which of the two started first this round. */
  first: 'backup' | 'plain';
  windowS: number;
  /** % of a core */
  withBackupPct: number;
  withoutBackupPct: number;
  /** with / without */
  ratio: number;
  /** with - without, points of a core */
  extraPct: number;
  /** The bridge's last report: both inputs delivering audio (hot standby), and main on air. */
  backupConnected: boolean;
  activeInput: string | null;
}

async function cpuRound(i: number, opts: { windowS: number; settleS: number; pluginPath: string; mainTs: string; backupTs: string }, log: (l: string) => void): Promise<FailoverCpuRound> {
  const children: Child[] = [];
  const senders: Sender[] = [];
  try {
    const ports = { aMain: await freeTcpPort(), aBackup: await freeTcpPort(), bMain: await freeTcpPort() };
    // RTP to a port nobody listens on: udpsink sends all the same (the switching part receives)
    const rtp = await freeTcpPort();
    const first = i % 2 === 0 ? 'backup' : 'plain';
    const make = (which: 'backup' | 'plain'): Child => (which === 'backup'
      ? new Child('with-backup', failoverArgv({ main: ports.aMain, backup: ports.aBackup, rtp }), opts.pluginPath)
      : new Child('without-backup', failoverArgv({ main: ports.bMain, rtp }), opts.pluginPath));
    const firstChild = make(first);
    children.push(firstChild);
    await sleep(500);
    const secondChild = make(first === 'backup' ? 'plain' : 'backup');
    children.push(secondChild);
    const withBackup = first === 'backup' ? firstChild : secondChild;
    const without = first === 'backup' ? secondChild : firstChild;
    await sleep(1500);
    senders.push(Sender.start('ffmpeg', opts.mainTs, [ports.aMain]), Sender.start('ffmpeg', opts.backupTs, [ports.aBackup]), Sender.start('ffmpeg', opts.mainTs, [ports.bMain]));
    await sleep(opts.settleS * 1000);
    for (const c of children) if (!c.alive) throw new Error(`failover: ${c.name} ended before the window: ${c.stderr.join(' | ')}`);
    for (const s of senders) if (!s.alive) throw new Error(`failover: a sender ended before the window: ${s.command.join(' ')}`);
    const t0 = performance.now();
    const before = await Promise.all(children.map((c) => procCpuSeconds(c.process.pid)));
    await sleep(opts.windowS * 1000);
    const after = await Promise.all(children.map((c) => procCpuSeconds(c.process.pid)));
    const w = (performance.now() - t0) / 1000;
    for (const c of children) if (!c.alive) throw new Error(`failover: ${c.name} ended in the window: ${c.stderr.join(' | ')}`);
    const pct = (c: Child): number => {
      const k = children.indexOf(c);
      return (((after[k] ?? 0) - (before[k] ?? 0)) / w) * 100;
    };
    const round: FailoverCpuRound = {
      first, windowS: w, withBackupPct: pct(withBackup), withoutBackupPct: pct(without), ratio: pct(withBackup) / pct(without),
      extraPct: pct(withBackup) - pct(without), backupConnected: withBackup.backupConnected === true, activeInput: withBackup.activeInput ?? null,
    };
    log(`failover cpu round ${i + 1}: with backup ${round.withBackupPct.toFixed(2)} %, without ${round.withoutBackupPct.toFixed(2)} %, ` +
      `ratio ${round.ratio.toFixed(2)} (${first} first; backup connected ${round.backupConnected}, on air ${round.activeInput ?? '?'})`);
    return round;
  } finally {
    await stopAll([...senders, ...children]);
  }
}

// ---------------------------------------------------------------------------------------------
// (b) switching: the received RTP audio

/** RTP L24 stereo on 127.0.0.1: channel 0 placed by RTP timestamp, each packet's receive time. */
class AudioCapture {
  readonly samples: Float32Array;
  /** Per packet: its first sample's index and when it arrived (performance.now()). */
  readonly at: { index: number; recvMs: number }[] = [];
  sequenceGaps = 0;
  timestampJumps = 0;
  end = 0;
  private ts0: number | undefined;
  private last: { seq: number; ts: number; frames: number } | undefined;

  private constructor(private readonly socket: Socket, readonly port: number, maxSeconds: number) {
    this.samples = new Float32Array(maxSeconds * RATE);
    socket.on('message', (m) => this.onPacket(m));
  }

  static async open(maxSeconds: number): Promise<AudioCapture> {
    const socket = createSocket('udp4');
    await new Promise<void>((resolve, reject) => {
      socket.once('error', reject);
      socket.bind(0, '127.0.0.1', () => resolve());
    });
    try {
      socket.setRecvBufferSize(8 << 20);
    } catch {
      // the default buffer then
    }
    return new AudioCapture(socket, socket.address().port, maxSeconds);
  }

  private onPacket(packet: Buffer): void {
    const recvMs = performance.now();
    if (packet.length < 12 || ((packet[0] ?? 0) >> 6) !== 2) return;
    const offset = 12 + 4 * ((packet[0] ?? 0) & 0x0f);
    const seq = packet.readUInt16BE(2);
    const ts = packet.readUInt32BE(4);
    const frames = Math.floor((packet.length - offset) / 6);
    if (this.last !== undefined) {
      if (seq !== ((this.last.seq + 1) & 0xffff)) this.sequenceGaps += 1;
      if (ts !== ((this.last.ts + this.last.frames) >>> 0)) this.timestampJumps += 1;
    }
    this.last = { seq, ts, frames };
    this.ts0 ??= ts;
    const index = (ts - this.ts0) >>> 0;
    if (index + frames > this.samples.length) return;
    for (let f = 0; f < frames; f++) this.samples[index + f] = packet.readIntBE(offset + 6 * f, 3) / 8388608;
    this.at.push({ index, recvMs });
    this.end = Math.max(this.end, index + frames);
  }

  /** The sample index on the output at host time `ms` (the first packet received at or after it). */
  indexAt(ms: number): number {
    let lo = 0;
    let hi = this.at.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((this.at[mid]?.recvMs ?? Infinity) < ms) lo = mid + 1;
      else hi = mid;
    }
    return this.at[lo]?.index ?? this.end;
  }

  /** When the packet holding sample `index` arrived. */
  recvMsOf(index: number): number {
    let lo = 0;
    let hi = this.at.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if ((this.at[mid]?.index ?? Infinity) <= index) lo = mid;
      else hi = mid - 1;
    }
    return this.at[lo]?.recvMs ?? NaN;
  }

  close(): void {
    this.socket.close();
  }
}

type Tone = 'main' | 'backup' | 'both' | 'none';

/** What the 10 ms window starting at `start` carries: each tone present at half its level or more. */
function toneAt(samples: Float32Array, start: number): Tone {
  const main = toneAmplitude(samples, start, WINDOW, MAIN_TONE.hz) >= MAIN_TONE.amplitude / 2;
  const backup = toneAmplitude(samples, start, WINDOW, BACKUP_TONE.hz) >= BACKUP_TONE.amplitude / 2;
  return main && backup ? 'both' : main ? 'main' : backup ? 'backup' : 'none';
}

export interface SwitchSample {
  /**
   * Neither tone on the output between main's last audio and the backup's tone, ms (from the
   * 10 ms windows every 1 ms: the end of the last window with main's tone to the start of the
   * first with the backup's alone, plus one window less one step, so that a switch without a hole
   * is 0; resolution 1 ms).
   */
  holeMs: number;
  /** The kill of the main sender to the backup's tone on the output (receive time), ms: SRT latency, jitter buffer and the switch. */
  killToBackupMs: number;
  /** Main's last audio on the output to the bridge's `failover` message (reason loss), ms (stdout: late by the pipe and the scheduler). */
  lastAudioToMessageMs: number | null;
  /** The largest sample step within 20 ms of the switch to the backup, and of the return to main (0..2 full scale). */
  switchStep: number;
  returnStep: number | null;
}

export interface FailoverSwitchResult {
  losses: SwitchSample[];
  /** Losses whose switch could not be found in the audio (listed, not in the figures). */
  unmeasured: string[];
  holeMs: { median: number; worst: number };
  killToBackupMs: { median: number; worst: number };
  lastAudioToMessageMs: { median: number; worst: number };
  worstSwitchStep: number;
  worstReturnStep: number;
  /** The tones' own largest step (sine: amplitude x 2 pi f / 48000), the bound of a clickless switch. */
  toneSteps: { main: number; backup: number };
  /** The bridge's messages: switches to backup for loss and back to main for return. */
  messages: { loss: number; return: number; other: string[] };
  /** Over the whole run. */
  rtp: { sequenceGaps: number; timestampJumps: number; seconds: number; silentBlocks10ms: number; silentBlocks: SilentBlock[] };
  senderCommand: string[];
}

/** A silent 10 ms block of the output: seconds after the first audio, and after which kill (1-based; null: before the first) by how long. */
export interface SilentBlock {
  atS: number;
  afterKill: number | null;
  sinceKillMs: number | null;
}

interface LossMark {
  killMs: number;
  /** Host time after the return to main: the end of this loss's part of the output. */
  untilMs: number;
}

/** The figures of one loss from the captured audio; undefined when its switch is not in it. */
function measureLoss(cap: AudioCapture, mark: LossMark, message: number | undefined): SwitchSample | string {
  const s = cap.samples;
  const from = cap.indexAt(mark.killMs - 200);
  const to = Math.min(cap.indexAt(mark.untilMs), cap.end - WINDOW);
  let firstBackup = -1;
  let lastMainEnd = -1;
  for (let i = from; i < to; i += HOP) {
    const tone = toneAt(s, i);
    if (tone === 'main' || tone === 'both') lastMainEnd = i + WINDOW;
    if (tone === 'backup' && lastMainEnd >= 0) {
      firstBackup = i;
      break;
    }
  }
  if (firstBackup < 0 || lastMainEnd < 0) return `no switch to the backup found after the kill at ${mark.killMs.toFixed(0)} ms`;
  // the return: the first window with main's tone alone after the backup went on air
  let returnAt = -1;
  let lastBackupEnd = firstBackup + WINDOW;
  for (let i = firstBackup; i < to; i += HOP) {
    const tone = toneAt(s, i);
    if (tone === 'backup' || tone === 'both') lastBackupEnd = i + WINDOW;
    if (tone === 'main') {
      returnAt = i;
      break;
    }
  }
  const margin = 2 * WINDOW;
  const switchStep = largestStep(s, lastMainEnd - WINDOW - margin, firstBackup + WINDOW + margin).step;
  const returnStep = returnAt < 0 ? null : largestStep(s, lastBackupEnd - WINDOW - margin, returnAt + WINDOW + margin).step;
  const lastAudioMs = cap.recvMsOf(lastMainEnd);
  return {
    holeMs: ((firstBackup - lastMainEnd + WINDOW - HOP) / RATE) * 1000,
    killToBackupMs: cap.recvMsOf(firstBackup) - mark.killMs,
    lastAudioToMessageMs: message === undefined ? null : message - lastAudioMs,
    switchStep,
    returnStep,
  };
}

async function switchRun(opts: { losses: number; pluginPath: string; mainTs: string; backupTs: string }, log: (l: string) => void): Promise<FailoverSwitchResult> {
  const senders: Sender[] = [];
  let child: Child | undefined;
  // bounded: at most 30 s per loss and a minute of start-up
  const cap = await AudioCapture.open(opts.losses * 30 + 60);
  try {
    const ports = { main: await freeTcpPort(), backup: await freeTcpPort(), rtp: cap.port };
    child = new Child('switching', failoverArgv(ports), opts.pluginPath);
    const c = child;
    await sleep(1500);
    let main = Sender.start('ffmpeg', opts.mainTs, [ports.main]);
    senders.push(main, Sender.start('ffmpeg', opts.backupTs, [ports.backup]));
    const marks: LossMark[] = [];
    const lossMessages: (number | undefined)[] = [];
    for (let i = 0; i < opts.losses; i++) {
      // main on air and both inputs delivering for a second before each loss
      const steady = await within(30_000, () => (c.activeInput === 'main' && c.mainConnected === true && c.backupConnected === true ? true : undefined));
      if (steady === undefined) throw new Error(`failover: main not on air with both inputs connected before loss ${i + 1}: ${c.stderr.join(' | ')}`);
      await sleep(1000);
      if (!c.alive) throw new Error(`failover: the child ended: ${c.stderr.join(' | ')}`);
      const seen = c.switches.length;
      const killMs = performance.now();
      await main.stop();
      const lost = await within(10_000, () => c.switches.slice(seen).find((x) => x.to === 'backup'));
      lossMessages.push(lost?.reason === 'loss' ? lost.atMs : undefined);
      // A new caller: the listener takes it once it has dropped the dead one (SRT's peer idle
      // timeout, 5 s: a killed sender says nothing); ffmpeg gives up on a refused connection, so
      // it is started again until main is back.
      const back = await within(30_000, () => {
        if (!main.alive) {
          main = Sender.start('ffmpeg', opts.mainTs, [ports.main]);
          senders.push(main);
        }
        return c.switches.slice(seen).find((x) => x.to === 'main');
      });
      if (back === undefined) throw new Error(`failover: no return to main within 30 s after loss ${i + 1}`);
      marks.push({ killMs, untilMs: back.atMs + 1000 });
      log(`failover loss ${i + 1}/${opts.losses}: switched to ${lost?.to ?? '?'} (${lost?.reason ?? 'no message'}) ` +
        `${lost === undefined ? '' : `${(lost.atMs - killMs).toFixed(0)} ms after the kill`}, back on main (${back.reason})`);
    }
    await sleep(1500);
    const losses: SwitchSample[] = [];
    const unmeasured: string[] = [];
    marks.forEach((mark, i) => {
      const m = measureLoss(cap, mark, lossMessages[i]);
      if (typeof m === 'string') unmeasured.push(`loss ${i + 1}: ${m}`);
      else losses.push(m);
    });
    // dead air over the whole run, from the first audio on: 10 ms blocks with no sample above -60 dBFS
    let silent = 0;
    let first = -1;
    const silentAt: SilentBlock[] = [];
    for (let i = 0; i + WINDOW <= cap.end; i += WINDOW) {
      let peak = 0;
      for (let k = i; k < i + WINDOW; k++) peak = Math.max(peak, Math.abs(cap.samples[k] ?? 0));
      if (first < 0 && peak > 0.001) first = i;
      if (first >= 0 && peak <= 0.001) {
        silent += 1;
        // where: seconds into the output, and after which kill (by receive time)
        const recvMs = cap.recvMsOf(i);
        const kill = marks.findLastIndex((m) => m.killMs <= recvMs);
        if (silentAt.length < 50) silentAt.push({ atS: (i - first) / RATE, afterKill: kill < 0 ? null : kill + 1, sinceKillMs: kill < 0 ? null : recvMs - (marks[kill]?.killMs ?? 0) });
      }
    }
    const stat = (xs: number[]): { median: number; worst: number } => ({ median: median(xs), worst: xs.length === 0 ? NaN : Math.max(...xs) });
    const reasons = c.switches.map((x) => `${x.from}>${x.to}:${x.reason}`);
    return {
      losses,
      unmeasured,
      holeMs: stat(losses.map((x) => x.holeMs)),
      killToBackupMs: stat(losses.map((x) => x.killToBackupMs)),
      lastAudioToMessageMs: stat(losses.map((x) => x.lastAudioToMessageMs).filter((x): x is number => x !== null)),
      worstSwitchStep: Math.max(0, ...losses.map((x) => x.switchStep)),
      worstReturnStep: Math.max(0, ...losses.map((x) => x.returnStep ?? 0)),
      toneSteps: { main: (MAIN_TONE.amplitude * 2 * Math.PI * MAIN_TONE.hz) / RATE, backup: (BACKUP_TONE.amplitude * 2 * Math.PI * BACKUP_TONE.hz) / RATE },
      messages: {
        loss: reasons.filter((r) => r === 'main>backup:loss').length,
        return: reasons.filter((r) => r === 'backup>main:return').length,
        other: reasons.filter((r) => r !== 'main>backup:loss' && r !== 'backup>main:return'),
      },
      rtp: { sequenceGaps: cap.sequenceGaps, timestampJumps: cap.timestampJumps, seconds: cap.end / RATE, silentBlocks10ms: first < 0 ? NaN : silent, silentBlocks: silentAt },
      senderCommand: main.command,
    };
  } finally {
    await stopAll([...senders, ...(child === undefined ? [] : [child])]);
    cap.close();
  }
}

// ---------------------------------------------------------------------------------------------

export interface FailoverBenchOptions {
  rounds?: number;
  windowS?: number;
  settleS?: number;
  losses?: number;
  pluginPath?: string;
  cacheDir?: string;
  log?: (line: string) => void;
}

export interface FailoverResult {
  host: { hostname: string; cpus: number; cpuModel: string; kernel: string; node: string; loadBefore: string; loadAfter: string };
  cpu: {
    rounds: FailoverCpuRound[];
    windowS: number;
    /** medians over rounds */
    withBackupPct: number;
    withoutBackupPct: number;
    ratio: number;
    extraPct: number;
  };
  switching: FailoverSwitchResult;
  policy: typeof FAILOVER_POLICY;
  srtLatencyMs: number;
  graphs: { withBackup: string[]; withoutBackup: string[] };
}

export async function runFailoverBench(options: FailoverBenchOptions = {}): Promise<FailoverResult> {
  const log = options.log ?? ((l: string) => process.stderr.write(`${l}\n`));
  const cacheDir = options.cacheDir ?? path.join(tmpdir(), 'audioengine-bench');
  const pluginPath = options.pluginPath ?? path.join(ROOT, 'gst-plugins', 'build');
  const windowS = options.windowS ?? 20;
  const [mainTs, backupTs] = await Promise.all([toneTs(cacheDir, MAIN_TONE), toneTs(cacheDir, BACKUP_TONE)]);
  const loadBefore = await loadAverage();
  const rounds: FailoverCpuRound[] = [];
  for (let i = 0; i < (options.rounds ?? 4); i++) rounds.push(await cpuRound(i, { windowS, settleS: options.settleS ?? 6, pluginPath, mainTs, backupTs }, log));
  const switching = await switchRun({ losses: options.losses ?? 20, pluginPath, mainTs, backupTs }, log);
  return {
    host: {
      hostname: hostname(), cpus: cpus().length, cpuModel: cpus()[0]?.model ?? 'unknown', kernel: release(), node: process.version,
      loadBefore, loadAfter: await loadAverage(),
    },
    cpu: {
      rounds, windowS,
      withBackupPct: median(rounds.map((r) => r.withBackupPct)),
      withoutBackupPct: median(rounds.map((r) => r.withoutBackupPct)),
      ratio: median(rounds.map((r) => r.ratio)),
      extraPct: median(rounds.map((r) => r.extraPct)),
    },
    switching,
    policy: FAILOVER_POLICY,
    srtLatencyMs: SRT_LATENCY_MS,
    graphs: { withBackup: failoverArgv({ main: 9000, backup: 9001, rtp: 5004 }), withoutBackup: failoverArgv({ main: 9000, rtp: 5004 }) },
  };
}

export function failoverTable(r: FailoverResult): string {
  const f = (x: number | null | undefined, d = 2): string => (x === null || x === undefined || !Number.isFinite(x) ? 'n/a' : x.toFixed(d));
  const s = r.switching;
  const p95 = (xs: number[]): string => f(percentile(xs, 95), 0);
  return [
    `Failover: one pipeline with a backup input against the same without, side by side, ${r.cpu.rounds.length} rounds of ${f(r.cpu.windowS, 0)} s; CPU % of a core:`,
    '',
    '| | median | rounds |',
    '|---|---:|---|',
    `| with a backup (both inputs fed, decoded all the time) | ${f(r.cpu.withBackupPct)} | ${r.cpu.rounds.map((x) => f(x.withBackupPct)).join(', ')} |`,
    `| without a backup | ${f(r.cpu.withoutBackupPct)} | ${r.cpu.rounds.map((x) => f(x.withoutBackupPct)).join(', ')} |`,
    `| with / without | **${f(r.cpu.ratio)}x** | ${r.cpu.rounds.map((x) => f(x.ratio)).join(', ')} |`,
    `| the second input (with − without), points | **${f(r.cpu.extraPct)}** | ${r.cpu.rounds.map((x) => f(x.extraPct)).join(', ')} |`,
    '',
    `Switching over ${s.losses.length} losses (main sender killed; loss_ms ${r.policy.loss_ms}, return_s ${r.policy.return_s}, SRT latency ${r.srtLatencyMs} ms)` +
      `${s.unmeasured.length > 0 ? `; not measured: ${s.unmeasured.join('; ')}` : ''}:`,
    '',
    '| figure | median | p95 | worst |',
    '|---|---:|---:|---:|',
    `| hole: main's last audio to the backup's tone, ms | ${f(s.holeMs.median, 1)} | ${p95(s.losses.map((x) => x.holeMs))} | ${f(s.holeMs.worst, 1)} |`,
    `| kill of the main sender to the backup's tone on the output, ms | ${f(s.killToBackupMs.median, 0)} | ${p95(s.losses.map((x) => x.killToBackupMs))} | ${f(s.killToBackupMs.worst, 0)} |`,
    `| main's last audio to the bridge's failover message (loss), ms | ${f(s.lastAudioToMessageMs.median, 0)} | ${p95(s.losses.flatMap((x) => (x.lastAudioToMessageMs === null ? [] : [x.lastAudioToMessageMs])))} | ${f(s.lastAudioToMessageMs.worst, 0)} |`,
    '',
    `- largest sample step across a switch to the backup ${f(s.worstSwitchStep, 4)}, across a return ${f(s.worstReturnStep, 4)} ` +
      `(${f(amplitudeDbfs(s.worstSwitchStep), 1)} / ${f(amplitudeDbfs(s.worstReturnStep), 1)} dBFS); the tones' own largest step: main ${f(s.toneSteps.main, 4)}, backup ${f(s.toneSteps.backup, 4)}`,
    `- the bridge's messages: ${s.messages.loss} main>backup (loss), ${s.messages.return} backup>main (return)${s.messages.other.length > 0 ? `, others: ${s.messages.other.join(', ')}` : ''}`,
    `- RTP over ${f(s.rtp.seconds, 0)} s: ${s.rtp.sequenceGaps} sequence gaps, ${s.rtp.timestampJumps} timestamp jumps, ${s.rtp.silentBlocks10ms} silent 10 ms blocks after the first audio` +
      `${s.rtp.silentBlocks.length === 0 ? '' : ` (${s.rtp.silentBlocks.slice(0, 10).map((b) => `${f(b.atS, 2)} s${b.afterKill === null ? '' : `, ${f(b.sinceKillMs, 0)} ms after kill ${b.afterKill}`}`).join('; ')})`}`,
    `- host ${r.host.hostname}, ${r.host.cpus} CPUs (${r.host.cpuModel}); load average before / after: ${r.host.loadBefore} / ${r.host.loadAfter}`,
  ].join('\n');
}

const USAGE = 'usage: node --import=tsx bench/failover.ts [--rounds N] [--window S] [--losses N] [--settle S] [--plugin-path DIR] [--cache-dir DIR]\n';

runIfMain(import.meta.url, 'failover', async () => {
  const flags = scriptFlags(USAGE);
  if (flags === undefined) return;
  const { text: arg, num } = flags;
  const r = await runFailoverBench({
    rounds: num('--rounds'), windowS: num('--window'), losses: num('--losses'), settleS: num('--settle'), pluginPath: arg('--plugin-path'), cacheDir: arg('--cache-dir'),
  });
  process.stdout.write(`\n${failoverTable(r)}\n\n${JSON.stringify(r, null, 2)}\n`);
});
