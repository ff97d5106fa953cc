/**
 * How a changed spec reaches a running child, decided purely from the old and the new spec:
 *
 * - `live`: only the name and the parameters of existing steps changed (same plugins in the same
 *   order, same input and output). The parameters become control assignments for the running
 *   child (`step<N>.target`, `step<N>.true-peak`, `step<N>.bands`), written with the compiler's
 *   own formatting, so the child gets exactly what a fresh start would get on its command line.
 * - `restart`: anything the graph is built from changed (input, output, steps added, removed or
 *   reordered); the child starts again with the new argv.
 */
import type { ProcessingStep } from '../spec/schema.js';
import { bridgeFailoverProperties, type CompilableSpec } from './compile.js';
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

export function planUpdate(prev: CompilableSpec, next: CompilableSpec): UpdatePlan {
  const reasons: string[] = [];
  if (!sameObject(prev.input, next.input)) reasons.push('input');
  if (!same(prev.backup ?? null, next.backup ?? null)) reasons.push('backup');
  if (!same(prev.fallback ?? null, next.fallback ?? null)) reasons.push('fallback');
  if (!sameObject(prev.output, next.output)) reasons.push('output');
  if (prev.processing.length !== next.processing.length) reasons.push('processing steps added or removed');
  else if (prev.processing.some((step, i) => step.plugin !== next.processing[i]?.plugin)) reasons.push('processing steps reordered or replaced');
  if (reasons.length > 0) return { kind: 'restart', reasons };
  const assignments = prev.processing.flatMap((step, i) => {
    const nextStep = next.processing[i];
    return nextStep === undefined ? [] : stepAssignments(step, nextStep, i);
  });
  return { kind: 'live', assignments: [...assignments, ...failoverAssignments(prev, next)] };
}
