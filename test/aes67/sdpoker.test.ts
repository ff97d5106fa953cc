/**
 * Every SDP shape the engine serves passes sdpoker (npm, Streampunk's ST 2110 SDP checker) with
 * the shall and should clauses, the ST 2110-30 channel order and CRLF line ends: channels 1-8,
 * L16/L24, every ptime the packet-size rule allows, unicast and multicast, each reference clock.
 * The SDPs come from the engine's own session table (Aes67Sessions.sdp over a validated spec).
 *
 * sdpoker's checks run twice: its library (checkRFC4566, checkST2110: the code the CLI runs) over
 * every shape in this process, and the `sdpoker` command itself over a covering subset (each
 * channel count, both encodings, each ptime, both casts), since a process per shape would take
 * minutes on a loaded machine. A shape without the channel order must fail: the checker checks.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pino from 'pino';
import t from 'tap';
import { NO_PTP, type PtpStatus } from '../../src/aes67/pmc.js';
import { Aes67Sessions } from '../../src/aes67/sessions.js';
import { checkConfig } from '../../src/config/load.js';
import { PTIMES } from '../../src/spec/rtp-format.js';
import { parsePipelineSpec } from '../../src/spec/validate.js';
import { EXAMPLE } from '../fixtures/example.js';

const run = promisify(execFile);
const SDPOKER = join(process.cwd(), 'node_modules', '.bin', 'sdpoker');

interface SdpokerLib {
  checkRFC4566: (sdp: string, params: Record<string, boolean>) => Error[];
  checkST2110: (sdp: string, params: Record<string, boolean>) => Error[];
}
const sdpoker = createRequire(import.meta.url)('sdpoker') as SdpokerLib;

const LOCKED: PtpStatus = { state: 'locked', grandmaster_id: '1E-C2-9E-FF-FE-22-5E-6A', domain: 0, offset_seconds: 0, port_states: ['SLAVE'], clock_id: '92-8A-8B-FF-FE-50-C0-93' };

function sessions(ptp: PtpStatus, traceable = false): Aes67Sessions {
  return new Aes67Sessions({
    config: checkConfig({ aes67: { interface: 'veth0', ptp_traceable: traceable } }, 'c.toml').aes67,
    streams: () => [],
    ptp: () => ptp,
    findInterface: () => ({ name: 'veth0', address: '10.0.0.2', mac: '92:8a:8b:50:c0:93' }),
    openSender: () => Promise.reject(new Error('no SAP here')),
    log: pino({ level: 'silent' }),
    now: () => 1_700_000_000_000,
    random: () => 0.5,
    tickMs: 500,
  });
}

/** The flags the issue names; the CLI's defaults for the rest. */
function params(multicast: boolean, extra: Record<string, boolean> = {}): Record<string, boolean> {
  return {
    nmos: true, checkEndings: true, whitespace: false, should: true, noCopy: true, duplicate: false,
    videoOnly: false, audioOnly: true, channelOrder: true, useIP4: false, useIP6: false,
    multicast, unicast: false, shaping: false, ...extra,
  };
}

function flags(multicast: boolean, extra: string[] = []): string[] {
  return ['--nmos', '--audioOnly', '--should', '--channelOrder', '--checkEndings', ...(multicast ? ['--multicast'] : []), ...extra];
}

function check(sdp: string, p: Record<string, boolean>): string[] {
  return [...sdpoker.checkRFC4566(sdp, p), ...sdpoker.checkST2110(sdp, p)].map((e) => e.message);
}

/** Runs the sdpoker command on one SDP file; resolves with its complaints (none: passed). */
async function poke(dir: string, name: string, sdp: string, args: string[]): Promise<{ code: number; stderr: string }> {
  const file = join(dir, `${name}.sdp`);
  writeFileSync(file, sdp);
  try {
    const { stderr } = await run(SDPOKER, [...args, file]);
    return { code: 0, stderr };
  } catch (error) {
    const e = error as { code?: number; stderr?: string };
    return { code: e.code ?? -1, stderr: e.stderr ?? '' };
  }
}

interface Shape {
  name: string;
  multicast: boolean;
  sdp: string;
}

function shapes(): Shape[] {
  const all: Shape[] = [];
  const clocks = [sessions(LOCKED), sessions(NO_PTP, true), sessions(NO_PTP)];
  let n = 0;
  for (const channels of [1, 2, 3, 4, 5, 6, 7, 8]) {
    for (const encoding of ['L16', 'L24'] as const) {
      for (const ptime of PTIMES) {
        for (const multicast of [false, true]) {
          const output = { ...EXAMPLE.output, host: multicast ? '239.69.1.1' : '10.0.0.9', channels, encoding, ptime };
          let spec;
          try {
            spec = parsePipelineSpec({ ...EXAMPLE, output });
          } catch {
            continue; // beyond the 1440-byte packet rule: the engine serves no such SDP
          }
          const clock = clocks[n++ % clocks.length] as Aes67Sessions;
          all.push({ name: `${channels}ch-${encoding}-${ptime}ms-${multicast ? 'multicast' : 'unicast'}`, multicast, sdp: clock.sdp({ id: 'pl_abcdefghijkl', name: 'Morning Show', output: spec.output }) });
        }
      }
    }
  }
  return all;
}

void t.test('every shape passes sdpoker\'s checks (library, in process)', async (t) => {
  const all = shapes();
  t.ok(all.length >= 100, `${all.length} shapes`);
  for (const shape of all) t.same(check(shape.sdp, params(shape.multicast)), [], shape.name);
  t.match(all.find((s) => s.name === '1ch-L24-1ms-unicast')?.sdp, /\r\na=fmtp:96 channel-order=SMPTE2110\.\(M\)\r\n/);
  t.match(all.find((s) => s.name === '2ch-L24-1ms-unicast')?.sdp, /\r\na=fmtp:96 channel-order=SMPTE2110\.\(ST\)\r\n/);
  t.match(all.find((s) => s.name === '6ch-L16-1ms-multicast')?.sdp, /\r\na=fmtp:96 channel-order=SMPTE2110\.\(U06\)\r\n/);
});

void t.test('the sdpoker command passes a covering subset; without channel order it fails', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'sdpoker-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const all = shapes();
  // Each channel count once, the cast, encoding and ptime turning over between them.
  const subset: Shape[] = [];
  for (const channels of [1, 2, 3, 4, 5, 6, 7, 8]) {
    const candidates = all.filter((s) => s.name.startsWith(`${channels}ch-`) && s.multicast === (channels % 2 === 0));
    const pick = candidates[(channels * 3) % candidates.length];
    if (pick !== undefined) subset.push(pick);
  }
  for (const cast of [false, true]) t.ok(subset.some((s) => s.multicast === cast), `subset has ${cast ? 'multicast' : 'unicast'}`);
  for (const e of ['L16', 'L24']) t.ok(subset.some((s) => s.name.includes(`-${e}-`)), `subset has ${e}`);
  for (const p of PTIMES) t.ok(subset.some((s) => s.name.includes(`-${p}ms-`)), `subset has ${p} ms`);
  for (const shape of subset) {
    const result = await poke(dir, shape.name, shape.sdp, flags(shape.multicast));
    t.same(result, { code: 0, stderr: '' }, `sdpoker ${flags(shape.multicast).join(' ')} ${shape.name}`);
  }
  const first = subset[0] as Shape;
  const without = first.sdp.replace(/a=fmtp:[^\r]*\r\n/, '');
  const failed = await poke(dir, 'no-order', without, flags(first.multicast));
  t.equal(failed.code, 1, 'no channel order: sdpoker fails');
  t.match(failed.stderr, /channel order for an audio stream is required/);
});

void t.test('an ST 2022-7 output: RFC 7104 DUP grouping, one section per leg; passes with --duplicate', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'sdpoker-dup-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const twoNetworks = new Aes67Sessions({
    config: checkConfig({ aes67: { interface: 'veth0' } }, 'c.toml').aes67,
    streams: () => [],
    ptp: () => LOCKED,
    findInterface: (name) => (name === 'veth1' ? { name, address: '10.1.0.2', mac: '92:8a:8b:50:c0:94' } : { name: 'veth0', address: '10.0.0.2', mac: '92:8a:8b:50:c0:93' }),
    openSender: () => Promise.reject(new Error('no SAP here')),
    log: pino({ level: 'silent' }),
    now: () => 1_700_000_000_000,
    random: () => 0.5,
    tickMs: 500,
  });
  const multicast = parsePipelineSpec({ ...EXAMPLE, output: { ...EXAMPLE.output, interface: 'veth0', redundant: { host: '239.69.2.1', interface: 'veth1' } } });
  const sdp = twoNetworks.sdp({ id: 'pl_abcdefghijkl', name: 'Morning Show', output: multicast.output });
  t.match(sdp, /\r\nt=0 0\r\na=group:DUP primary secondary\r\nm=audio 5004 RTP\/AVP 96\r\ni=2 channels: L, R\r\nc=IN IP4 239\.69\.1\.1\/16\r\n/);
  t.match(sdp, /a=source-filter: incl IN IP4 239\.69\.1\.1 10\.0\.0\.2\r\na=mid:primary\r\nm=audio 5004 RTP\/AVP 96\r\ni=2 channels: L, R\r\nc=IN IP4 239\.69\.2\.1\/16\r\n/);
  t.match(sdp, /a=source-filter: incl IN IP4 239\.69\.2\.1 10\.1\.0\.2\r\na=mid:secondary\r\n$/);
  t.equal(sdp.match(/a=fmtp:96 channel-order=SMPTE2110\.\(ST\)/g)?.length, 2, 'each leg its channel order');
  const unicast = parsePipelineSpec({ ...EXAMPLE, output: { ...EXAMPLE.output, host: '10.0.0.9', redundant: { host: '10.1.0.9', port: 5006 } } });
  const unicastSdp = twoNetworks.sdp({ id: 'pl_abcdefghijkm', name: 'Morning Show', output: unicast.output });
  t.notMatch(unicastSdp, /source-filter/, 'unicast: no source filter');
  t.match(unicastSdp, /m=audio 5006 RTP\/AVP 96\r\ni=2 channels: L, R\r\nc=IN IP4 10\.1\.0\.9\r\n/);
  for (const [name, text, mc] of [['dup-multicast', sdp, true], ['dup-unicast', unicastSdp, false]] as const) {
    t.same(check(text, params(mc, { duplicate: true })), [], `${name}: library`);
    const result = await poke(dir, name, text, flags(mc, ['--duplicate']));
    t.same(result, { code: 0, stderr: '' }, `sdpoker ${flags(mc, ['--duplicate']).join(' ')} ${name}`);
  }
  const single = await poke(dir, 'single', twoNetworks.sdp({ id: 'pl_x', name: 'x', output: parsePipelineSpec(EXAMPLE).output }), flags(true, ['--duplicate']));
  t.equal(single.code, 1, 'one leg with --duplicate: sdpoker fails, it checks');
});
