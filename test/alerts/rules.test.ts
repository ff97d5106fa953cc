/**
 * The shipped Prometheus alerting rules (systemd/prometheus/audio-engine.rules.yml): promtool
 * accepts them (`check rules`), each rule fires and stays quiet where it should (`test rules` on
 * test/alerts/audio-engine.rules.test.yml, which covers every rule), and every metric they read
 * is one the engine exposes: the names come from the engine's own registry (createMetrics plus
 * the PTP series, as src/app.ts builds it), not from a list kept by hand.
 * Skips only when promtool (Debian's prometheus package) is missing.
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import t from 'tap';
import type { PtpStatus } from '../../src/aes67/pmc.js';
import { registerPtpMetrics } from '../../src/metrics/ptp-metrics.js';
import { createMetrics } from '../../src/metrics/registry.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const RULES = path.join(ROOT, 'systemd/prometheus/audio-engine.rules.yml');
const TESTS = path.join(ROOT, 'test/alerts/audio-engine.rules.test.yml');
const PROMTOOL = ['/usr/bin/promtool', '/usr/local/bin/promtool'].find((p) => existsSync(p));
const run = promisify(execFile);

/** Each rule of the file: its alert name and expression (one line each, as the file writes them). */
function rulesOf(text: string): { alert: string; expr: string }[] {
  const rules: { alert: string; expr: string }[] = [];
  for (const line of text.split('\n')) {
    const alert = /^\s*- alert:\s*(\S+)\s*$/.exec(line);
    if (alert?.[1] !== undefined) rules.push({ alert: alert[1], expr: '' });
    const expr = /^\s*expr:\s*(.+?)\s*$/.exec(line);
    const last = rules.at(-1);
    if (expr?.[1] !== undefined && last !== undefined) last.expr = expr[1];
  }
  return rules;
}

/** Every sample name the engine's registry can expose (histograms and summaries with their suffixes), with its label names. */
async function engineMetricNames(): Promise<Map<string, Set<string>>> {
  const ptp: { status: PtpStatus } = {
    status: { state: 'unavailable', grandmaster_id: null, domain: null, offset_seconds: null, port_states: [], clock_id: null },
  };
  const capacity = { headroomRatio: () => 1, overloaded: () => false, pipeline: () => ({ realtime_ratio: null, behind: false }) };
  const registry = createMetrics({ entries: () => [] }, '0.0.0', capacity);
  registerPtpMetrics(registry, ptp);
  const names = new Map<string, Set<string>>();
  for (const metric of (await registry.getMetricsAsJSON())) {
    const type = String(metric.type);
    const suffixes = type === 'histogram' ? ['_bucket', '_sum', '_count'] : type === 'summary' ? ['', '_sum', '_count'] : [''];
    // prom-client keeps a metric's label names on the instance; its typings do not list them.
    const declared = (registry.getSingleMetric(metric.name) as unknown as { labelNames?: readonly string[] } | undefined)?.labelNames ?? [];
    for (const suffix of suffixes) names.set(`${metric.name}${suffix}`, new Set(declared));
  }
  return names;
}

const rules = rulesOf(readFileSync(RULES, 'utf8'));

void t.test('promtool accepts the rules file', { skip: PROMTOOL === undefined ? 'promtool is not installed (Debian package prometheus)' : false }, async (t) => {
  const { stdout } = await run(PROMTOOL ?? 'promtool', ['check', 'rules', RULES]);
  t.match(stdout, 'SUCCESS', stdout.trim());
  t.match(stdout, `${rules.length} rules found`, `promtool and this test read the same ${rules.length} rules`);
});

void t.test('each rule fires and stays quiet as its unit tests say', { skip: PROMTOOL === undefined ? 'promtool is not installed (Debian package prometheus)' : false }, async (t) => {
  const tested = new Set([...readFileSync(TESTS, 'utf8').matchAll(/^\s*alertname:\s*(\S+)\s*$/gm)].map((m) => m[1]));
  for (const { alert } of rules) t.ok(tested.has(alert), `${alert} has a unit test`);
  const firing = readFileSync(TESTS, 'utf8').split(/\n(?=\s*- eval_time:)/).filter((block) => /exp_labels:/.test(block));
  const fired = new Set(firing.map((block) => /alertname:\s*(\S+)/.exec(block)?.[1]));
  for (const { alert } of rules) t.ok(fired.has(alert), `${alert} is tested firing (and not firing for the other series of its case)`);
  let result: { stdout: string; stderr: string };
  try {
    result = await run(PROMTOOL ?? 'promtool', ['test', 'rules', TESTS]);
  } catch (error) {
    const failed = error as { stdout?: string; stderr?: string };
    result = { stdout: failed.stdout ?? '', stderr: `${failed.stderr ?? ''}FAILED` };
  }
  t.notMatch(`${result.stdout}${result.stderr}`, 'FAILED', `promtool test rules:\n${result.stdout}${result.stderr}`);
  t.match(result.stdout, 'SUCCESS', 'promtool test rules: SUCCESS');
});

void t.test('every metric a rule reads is one the engine exposes', async (t) => {
  t.ok(rules.length >= 10, `${rules.length} rules read from ${path.relative(ROOT, RULES)}`);
  const exposed = await engineMetricNames();
  for (const { alert, expr } of rules) {
    t.ok(expr !== '', `${alert} has an expression`);
    const used = [...new Set([...expr.matchAll(/\b(audio_engine_[a-z0-9_]+)\b/g)].map((m) => m[1] ?? ''))];
    if (used.length === 0) {
      // The only series not from the engine: Prometheus' own `up` for the scrape target.
      t.match(expr, /^up\{job="[^"]+"\} == 0$/, `${alert} reads Prometheus' up only`);
      continue;
    }
    for (const name of used) t.ok(exposed.has(name), `${alert}: ${name} is in the engine's registry`);
    // The labels each selector matches on are the metric's own (or the ones Prometheus adds).
    for (const [, name, matchers] of expr.matchAll(/\b(audio_engine_[a-z0-9_]+)\{([^}]*)\}/g)) {
      const labels = exposed.get(name ?? '');
      if (labels === undefined) continue;
      for (const [, label] of (matchers ?? '').matchAll(/([a-z_]+)\s*(?:=~|!~|!=|=)/g)) {
        t.ok(labels.has(label ?? '') || label === 'instance' || label === 'job', `${alert}: ${name} has the label ${label ?? ''}`);
      }
    }
  }
});
