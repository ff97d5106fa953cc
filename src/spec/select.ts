/**
 * The manual input selection (docs/failover.md): `{"select": "main"|"backup"|"fallback"|"auto"}`
 * of POST /api/v1/pipelines/{id}/input and gRPC SelectInput. `auto` hands back to the policy and
 * is stored as no `selection` (a spec without one compiles as before); an input the pipeline does
 * not have is refused naming `select`.
 */
import { ValidationError } from '../errors.js';
import type { PipelineSpec } from './schema.js';
import { joinPath, type PathStyle } from './validate.js';

export const SELECT_VALUES = ['auto', 'main', 'backup', 'fallback'] as const;
export type SelectValue = (typeof SELECT_VALUES)[number];

/** The request body's selection, or a ValidationError naming `select`. */
export function parseSelectBody(body: unknown, style: PathStyle): SelectValue {
  const field = joinPath(style, ['select']);
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new ValidationError(`${joinPath(style, [])} must be an object with ${field}`, []);
  const extra = Object.keys(body).filter((key) => key !== 'select');
  if (extra.length > 0) throw new ValidationError(`${joinPath(style, [extra[0] ?? ''])} is not a known field (only select)`, [extra[0] ?? '']);
  const value = (body as { select?: unknown }).select;
  if (typeof value !== 'string' || !(SELECT_VALUES as readonly string[]).includes(value)) {
    throw new ValidationError(`${field} must be one of ${SELECT_VALUES.join(', ')}`, ['select']);
  }
  return value as SelectValue;
}

/** The spec with the selection applied; an input the spec does not have is a ValidationError naming `select`. */
export function withSelection(spec: PipelineSpec, select: SelectValue, style: PathStyle): PipelineSpec {
  if ((select === 'backup' && spec.backup === undefined) || (select === 'fallback' && spec.fallback === undefined)) {
    throw new ValidationError(`${joinPath(style, ['select'])} ${select}: the pipeline has no ${select === 'backup' ? 'backup input' : 'fallback file'}`, ['select']);
  }
  const next: PipelineSpec = { ...spec, selection: select === 'auto' ? undefined : select };
  if (select === 'auto') delete next.selection;
  return next;
}
