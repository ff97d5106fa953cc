/**
 * The cost bench's variants (bench/cost.ts) are the compiler's argv with stages cut out: the full
 * one is exactly the compiler's, each cut removes what it names and nothing else, and every
 * variant is a description gst-launch-1.0 plays.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { costVariants, COST_COMPILE_OPTIONS } from '../../bench/cost.js';
import { launchArgv, parseLaunch } from '../../bench/launch-graph.js';
import { BENCH_PROCESSING } from '../../bench/engine.js';
import { compilePipeline } from '../../src/compiler/compile.js';
import { gstEnvironment } from '../../src/gst/environment.js';
import { parsePipelineSpec } from '../../src/spec/validate.js';
import { EXAMPLE } from '../fixtures/example.js';
import { freeTcpPort } from '../helpers/ports.js';

const compiled = (srtPort: number, rtpPort: number): string[] => compilePipeline(parsePipelineSpec({
  name: 'cost', input: { type: 'srt', port: srtPort, latency: 300 }, processing: BENCH_PROCESSING,
  output: { type: 'rtp', host: '127.0.0.1', port: rtpPort },
}), COST_COMPILE_OPTIONS);

const variant = (name: string): string[] => {
  const v = costVariants((i) => 7000 + i, (k) => 9000 + k).find((x) => x.name === name);
  if (v === undefined) throw new Error(`no variant ${name}`);
  return v.argv;
};

/** The tokens of the element named `name` in an argv (its factory and properties). */
const elementTokens = (argv: string[], name: string): string[] => {
  const e = parseLaunch(argv).find((x) => x.tokens.includes(`name=${name}`));
  if (e === undefined) throw new Error(`no ${name}`);
  return e.tokens;
};

void t.test('parseLaunch and launchArgv give back the compiler argv token for token', async (t) => {
  t.same(launchArgv(parseLaunch(compiled(7000, 9000))), compiled(7000, 9000));
  t.same(launchArgv(parseLaunch(compilePipeline(parsePipelineSpec(EXAMPLE), COST_COMPILE_OPTIONS))), compilePipeline(parsePipelineSpec(EXAMPLE), COST_COMPILE_OPTIONS));
});

void t.test('the full graph and its twin are the compiler argv', async (t) => {
  t.same(variant('full'), compiled(7000, 9000));
  t.same(variant('twin'), compiled(7001, 9001));
});

void t.test('the meter cut removes the bridge\'s meter-interval and nothing else', async (t) => {
  const full = compiled(7005, 9002);
  const meter = elementTokens(full, 'bridge').find((token) => token.startsWith('meter-interval='));
  t.equal(meter, 'meter-interval=100000000', 'the full graph meters the input at the cost options\' 100 ms');
  t.same(variant('no-meter'), full.filter((token) => token !== meter), 'no-meter: the compiler argv without it');
});

void t.test('each step cut removes that element and nothing else', async (t) => {
  for (const [name, element, srt, rtp] of [['no-loudnorm', 'step0', 7006, 9003], ['no-eq', 'step1', 7007, 9004]] as const) {
    const full = compiled(srt, rtp);
    const tokens = elementTokens(full, element);
    const at = full.indexOf(tokens[0] ?? '');
    const expected = [...full.slice(0, at - 1), ...full.slice(at + tokens.length)]; // the '!' before it and its tokens
    t.same(variant(name), expected, `${name}: the compiler argv without ${element}`);
  }
});

void t.test('the cut ends keep the unlinked elements and end the chain in a fakesink', async (t) => {
  const unlinked = ['pipelinestats', 'srtaccess', 'enginecontrol'];
  for (const [name, last] of [['input', 'decodebin'], ['input+convert', 'audio/x-raw'], ['to-bridge', 'clockbridge'], ['no-convert-pay', 'parametriceq'], ['no-send', 'rtpbatch']] as const) {
    const elements = parseLaunch(variant(name));
    const chainEnd = elements.findIndex((e) => e.tokens[0] === 'fakesink');
    t.ok(chainEnd > 0, `${name}: a fakesink`);
    t.ok(elements[chainEnd - 1]?.tokens[0]?.startsWith(last), `${name}: after ${last}`);
    t.ok(elements[chainEnd]?.linked, `${name}: linked`);
    t.same(elements.slice(chainEnd + 1).map((e) => e.tokens[0]), unlinked, `${name}: nothing linked after it, the unlinked elements kept`);
    t.notOk(variant(name).includes('udpsink'), `${name}: sends nothing`);
  }
});

void t.test('every variant plays in gst-launch-1.0', async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'cost-variants-'));
  const children: ChildProcess[] = [];
  t.teardown(() => {
    for (const c of children) c.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });
  // the plugin path only: a registry of its own would be scanned cold by ten children at once
  const gst = gstEnvironment(dir, process.env);
  const env = { ...process.env, GST_PLUGIN_PATH: gst.env.GST_PLUGIN_PATH };
  const srtPorts: number[] = [];
  for (let i = 0; i < 10; i++) srtPorts.push(await freeTcpPort());
  // RTP to the discard port of 127.0.0.1: with no caller the bridge sends silence
  const variants = costVariants((i) => srtPorts[i] ?? 0, () => 9);
  const outputs = variants.map((v) => {
    const child = spawn(gst.launchCommand, v.argv, { env, stdio: ['ignore', 'pipe', 'pipe', 'pipe', 'pipe'] });
    children.push(child);
    const out = { text: '' };
    child.stdout?.on('data', (d: Buffer) => { out.text += d.toString(); });
    child.stderr?.on('data', (d: Buffer) => { out.text += d.toString(); });
    return out;
  });
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline && !outputs.every((o) => o.text.includes('Setting pipeline to PLAYING'))) await new Promise((r) => setTimeout(r, 200));
  await new Promise((r) => setTimeout(r, 1000));
  variants.forEach((v, i) => {
    const child = children[i];
    t.ok(outputs[i]?.text.includes('Setting pipeline to PLAYING'), `${v.name}: playing`);
    t.ok(child !== undefined && child.exitCode === null && child.signalCode === null, `${v.name}: still running`, { output: outputs[i]?.text.slice(-2000) });
  });
});
