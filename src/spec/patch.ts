/**
 * A change to an existing pipeline (PATCH /api/v1/pipelines/{id}, gRPC UpdatePipeline): a JSON
 * merge patch (RFC 7396) of the pipeline spec, with one rule for `processing`:
 *
 * - `name`, `input`, `backup`, `fallback`, `failover`, `output`: merged as RFC 7396 says (an object merges key by key, `null`
 *   removes an optional key).
 * - `processing`: the list the pipeline will have, in order. An item whose `plugin` is left out
 *   or equals the plugin of the step at the same index is merged into that step (so `{}` keeps
 *   it, `{"target": -16}` changes one parameter); an item naming another plugin is a new step.
 *   `bands` is replaced as a whole, like every array of a merge patch.
 *
 * The merged spec goes through the same validator as create (spec/validate.ts), so errors have
 * the same shape and name the field (`body/processing/1/bands/0/gain must be <= 24`).
 */
import { Type } from '@sinclair/typebox';
import { ValidationError } from '../errors.js';
import { EqBand, FailoverPolicy, FallbackFile, PipelineSpec, PLUGINS, SrtInput, type PipelineSpec as Spec } from './schema.js';
import { compileValidator, joinPath, parsePipelineSpec, type PathStyle } from './validate.js';

type Json = Record<string, unknown>;

const PATCHABLE = ['name', 'input', 'backup', 'fallback', 'failover', 'output', 'processing'] as const;

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** RFC 7396 MergePatch(target, patch). */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return structuredClone(patch);
  const result: Json = isObject(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete result[key];
    else result[key] = mergePatch(result[key], value);
  }
  return result;
}

function mergeProcessing(current: Spec['processing'], patch: unknown, style: PathStyle): unknown {
  if (!Array.isArray(patch)) return patch; // the validator names it
  return patch.map((item: unknown, index) => {
    const existing = current[index];
    if (!isObject(item) || existing === undefined) return item;
    if (item.plugin === null) throw new ValidationError(`${joinPath(style, ['processing', index, 'plugin'])} cannot be removed`, ['processing', index, 'plugin']);
    if (item.plugin !== undefined && item.plugin !== existing.plugin) return item;
    return mergePatch(existing, item);
  });
}

/**
 * The spec a patch makes of `current`, validated as a create request is; throws ValidationError
 * naming the field. `current` is not changed.
 */
export function applyPipelinePatch(current: Spec, patch: unknown, style: PathStyle): Spec {
  if (!isObject(patch)) throw new ValidationError(`${joinPath(style, [])} must be an object`);
  for (const key of Object.keys(patch)) {
    if (!(PATCHABLE as readonly string[]).includes(key)) {
      throw new ValidationError(`${joinPath(style, [key])} is not a known field (a change may name ${PATCHABLE.join(', ')})`, [key]);
    }
  }
  const { processing, ...rest } = patch;
  const merged = mergePatch(current, rest) as Json;
  // The last of backup and fallback removed takes the policy with it (it is only allowed with one).
  // A forced input removed hands back to the policy.
  if ((merged.selection === 'backup' && merged.backup === undefined) || (merged.selection === 'fallback' && merged.fallback === undefined)) delete merged.selection;
  if ((rest.backup === null || rest.fallback === null) && rest.failover === undefined && merged.backup === undefined && merged.fallback === undefined) delete merged.failover;
  if (processing !== undefined) {
    merged.processing = processing === null ? [] : mergeProcessing(current.processing, processing, style);
  }
  return parsePipelineSpec(merged, style);
}

const processingOnly = compileValidator(Type.Object({ processing: PipelineSpec.properties.processing }, { additionalProperties: false }));

/**
 * The processing a station's change (PATCH /api/stations/{id}: `{"processing": [...]}`) makes of
 * `current`, merged by the same rule as a pipeline's and validated as the create schema does.
 */
export function applyProcessingPatch(current: Spec['processing'], patch: unknown, style: PathStyle): Spec['processing'] {
  if (!isObject(patch)) throw new ValidationError(`${joinPath(style, [])} must be an object`);
  for (const key of Object.keys(patch)) {
    if (key !== 'processing') throw new ValidationError(`${joinPath(style, [key])} is not a known field (a station change names processing only)`, [key]);
  }
  if (patch.processing === undefined) throw new ValidationError(`${joinPath(style, ['processing'])} is required`, ['processing']);
  const merged = patch.processing === null ? [] : mergeProcessing(current, patch.processing, style);
  return processingOnly.parse({ processing: merged }, style).processing;
}

/** The shape of a patch, for the OpenAPI document (the validation is `applyPipelinePatch`). */
const PatchStep = Type.Object(
  {
    plugin: Type.Optional(Type.Union(PLUGINS.map((p) => Type.Literal(p)), { description: 'left out: the step at this index' })),
    target: Type.Optional(Type.Number({ minimum: -70, maximum: -5, description: 'LUFS (loudness-normalize)' })),
    true_peak: Type.Optional(Type.Number({ minimum: -9, maximum: 0, description: 'dBTP (loudness-normalize)' })),
    bands: Type.Optional(Type.Array(EqBand, { minItems: 1, maxItems: 16, description: 'replaced as a whole (eq)' })),
  },
  { additionalProperties: false },
);

export const PipelinePatch = Type.Object(
  {
    name: Type.Optional(PipelineSpec.properties.name),
    input: Type.Optional(Type.Partial(PipelineSpec.properties.input, { additionalProperties: false })),
    backup: Type.Optional(Type.Union([Type.Partial(SrtInput, { additionalProperties: false }), Type.Null()], { description: 'null removes the backup' })),
    fallback: Type.Optional(Type.Union([Type.Partial(FallbackFile, { additionalProperties: false }), Type.Null()], { description: 'null removes the fallback file' })),
    failover: Type.Optional(Type.Union([Type.Partial(FailoverPolicy, { additionalProperties: false }), Type.Null()], { description: 'null: the defaults' })),
    processing: Type.Optional(Type.Array(PatchStep, { maxItems: 32, description: 'the new list; items merge into the step at their index' })),
    output: Type.Optional(Type.Partial(PipelineSpec.properties.output, { additionalProperties: false })),
  },
  { additionalProperties: false, description: 'JSON merge patch (RFC 7396) of the pipeline; see docs/api.md' },
);
