/**
 * How a changed spec reaches a running child, decided purely from the old and the new spec:
 *
 * - `live`: only the name and the parameters of existing steps changed (same plugins in the same
 *   order, same input and output). The parameters become control assignments for the running
 *   child (`step<N>.target`, `step<N>.true-peak`, `step<N>.bands`), written with the compiler's
 *   own formatting, so the child gets exactly what a fresh start would get on its command line.
 *   The output is live too when only its legs' destinations (an IP literal of the same family
 *   and kind, unicast or multicast, as before: `out.host`, `out.port`, `out2.*`) changed.
 *   A leg's `enabled` flag restarts the child: a disabled leg is compiled closed (a valve with
 *   `drop=true` before its sink) and an enabled one without any valve, so the graph of an
 *   output that sends is the same as without the flags.
 * - `restart`: anything the graph is built from changed (input, output, steps added, removed or
 *   reordered, the bridge's `jitter_max_ms`); the child starts again with the new argv.
 */
import { isIP } from 'node:net';
import { isIpLiteral, isMulticast } from '../spec/host.js';
import type { ProcessingStep, RtpOutput } from '../spec/schema.js';
import { bridgeFailoverProperties, LEG_SINKS, type CompilableSpec } from './compile.js';
import { ELEMENTS, formatValue } from './elements.js';

/** One property of one step, set in the running child (supervisor/control-channel.ts). */
export interface Assignment {
  element: string;
  property: string;
  value: string;
}

export type UpdatePlan =
  | { kind: 'live'; assignments: Assignment[] }
  | { kind: 'restart'; reasons: string[] };

function same(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** The JSON key order of a validated spec is fixed by the schema, but compare key by key anyway. */
function sameObject(a: object, b: object): boolean {
  const ka = Object.keys(a).sort();
  const kb = Object.keys(b).sort();
  return same(ka, kb) && ka.every((k) => same((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
}

function stepAssignments(prev: ProcessingStep, next: ProcessingStep, index: number): Assignment[] {
  const element = `step${index}`;
  const out: Assignment[] = [];
  if (prev.plugin === 'loudness-normalize' && next.plugin === 'loudness-normalize') {
    const types = ELEMENTS.loudnorm;
    if (prev.target !== next.target) out.push({ element, property: 'target', value: formatValue('loudnorm', 'target', types.target, next.target) });
    if (prev.true_peak !== next.true_peak) {
      out.push({ element, property: 'true-peak', value: formatValue('loudnorm', 'true-peak', types['true-peak'], next.true_peak) });
    }
  } else if (prev.plugin === 'eq' && next.plugin === 'eq') {
    if (!same(prev.bands, next.bands)) {
      // The compiler quotes the list for gst-launch's parser; the control line carries it bare.
      const quoted = formatValue('parametriceq', 'bands', ELEMENTS.parametriceq.bands, next.bands);
      out.push({ element, property: 'bands', value: quoted.slice(1, -1) });
    }
  }
  return out;
}

/** The bridge's failover properties a policy change sets live (a policy removed: the defaults). */
export function failoverAssignments(prev: CompilableSpec, next: CompilableSpec): Assignment[] {
  if ((next.backup === undefined && next.fallback === undefined) || same(prev.failover ?? null, next.failover ?? null)) return [];
  const before = bridgeFailoverProperties(prev.failover);
  const after = bridgeFailoverProperties(next.failover);
  const types = ELEMENTS.clockbridge;
  return (Object.keys(after) as (keyof typeof after)[])
    .filter((property) => before[property] !== after[property])
    .map((property) => ({ element: 'bridge', property, value: formatValue('clockbridge', property, types[property], after[property]) }));
}

/**
 * The control assignments that restart the programme measurement (integrated loudness, LRA, max
 * true peak) of every loudness step of a spec, without touching its gain (docs/elements-loudnorm.md).
 */
export function measurementResetAssignments(spec: CompilableSpec): Assignment[] {
  return spec.processing.flatMap((step, i) =>
    step.plugin === 'loudness-normalize' ? [{ element: `step${i}`, property: 'reset-measurement', value: 'true' }] : [],
  );
}

/**
 * An output without what can change live (each leg's host and port), its `enabled` flags as
 * they compile (absent = true).
 */
function fixedPart(output: RtpOutput): object {
  const rest: Record<string, unknown> = { ...output, enabled: output.enabled !== false };
  delete rest.host;
  delete rest.port;
  if (output.redundant !== undefined) {
    const leg: Record<string, unknown> = { ...output.redundant };
    delete leg.host;
    delete leg.port;
    delete leg.enabled; // added last: the legs compare as JSON
    leg.enabled = output.redundant.enabled !== false;
    rest.redundant = leg;
  }
  return rest;
}

/** A destination udpsink can take while playing: IP literals of the same family and kind. */
function liveDestination(prev: string, next: string): boolean {
  return isIpLiteral(prev) && isIpLiteral(next) && isIP(prev) === isIP(next) && isMulticast(prev) === isMulticast(next);
}

/**
 * The assignments that take a running output from `prev` to `next`, or undefined when the change
 * needs a restart. The hosts are IP literals (checked): lower case fits the control grammar.
 */
function outputAssignments(prev: RtpOutput, next: RtpOutput): Assignment[] | undefined {
  if (!sameObject(fixedPart(prev), fixedPart(next))) return undefined;
  const legs: { sink: string; before: { host: string; port: number }; after: { host: string; port: number } }[] = [
    { sink: LEG_SINKS.primary, before: { host: prev.host, port: prev.port }, after: { host: next.host, port: next.port } },
  ];
  if (prev.redundant !== undefined && next.redundant !== undefined) {
    legs.push({
      sink: LEG_SINKS.redundant,
      before: { host: prev.redundant.host, port: prev.redundant.port ?? prev.port },
      after: { host: next.redundant.host, port: next.redundant.port ?? next.port },
    });
  }
  const out: Assignment[] = [];
  for (const leg of legs) {
    if (leg.before.host !== leg.after.host) {
      if (!liveDestination(leg.before.host, leg.after.host)) return undefined;
      out.push({ element: leg.sink, property: 'host', value: leg.after.host.toLowerCase() });
    }
    if (leg.before.port !== leg.after.port) out.push({ element: leg.sink, property: 'port', value: String(leg.after.port) });
  }
  return out;
}

export function planUpdate(prev: CompilableSpec, next: CompilableSpec): UpdatePlan {
  const reasons: string[] = [];
  if (!sameObject(prev.input, next.input)) reasons.push('input');
  if (!same(prev.backup ?? null, next.backup ?? null)) reasons.push('backup');
  if (!same(prev.fallback ?? null, next.fallback ?? null)) reasons.push('fallback');
  // the bridge's ceiling is set before READY
  if (prev.jitter_max_ms !== next.jitter_max_ms) reasons.push('jitter_max_ms');
  const outputLive = sameObject(prev.output, next.output) ? [] : outputAssignments(prev.output, next.output);
  if (outputLive === undefined) reasons.push('output');
  if (prev.processing.length !== next.processing.length) reasons.push('processing steps added or removed');
  else if (prev.processing.some((step, i) => step.plugin !== next.processing[i]?.plugin)) reasons.push('processing steps reordered or replaced');
  if (reasons.length > 0) return { kind: 'restart', reasons };
  const assignments = prev.processing.flatMap((step, i) => {
    const nextStep = next.processing[i];
    return nextStep === undefined ? [] : stepAssignments(step, nextStep, i);
  });
  return { kind: 'live', assignments: [...assignments, ...failoverAssignments(prev, next), ...(outputLive ?? [])] };
}
