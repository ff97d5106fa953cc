/**
 * One validator for everything a client sends: REST bodies and gRPC messages (mapped to the
 * same JSON shape) go through `parsePipelineSpec`. Strict types (no coercion), unknown fields
 * rejected, defaults filled in, and the first problem reported with the field's path.
 */
import path from 'node:path';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import type { TSchema, Static } from '@sinclair/typebox';
import { ValidationError } from '../errors.js';
import { isValidHost } from './host.js';
import { checkRedundantLeg, checkRtpOutput, outputWarnings } from './rtp-output.js';
import { DEFAULT_PBKEYLEN, PipelineSpec, PLUGINS } from './schema.js';

export function createAjv(): Ajv {
  const ajv = new Ajv({
    coerceTypes: false,
    useDefaults: true,
    removeAdditional: false,
    allErrors: false,
    discriminator: true,
    strict: true,
    strictTuples: false,
    unicodeRegExp: true,
  });
  ajv.addFormat('engine-host', { type: 'string', validate: isValidHost });
  // Keywords TypeBox writes for documentation only.
  ajv.addKeyword({ keyword: 'kind' });
  return ajv;
}

const ajv = createAjv();

/** How a path is written: REST uses `body/input/port`, gRPC and config use `input.port`. */
export interface PathStyle {
  root: string;
  separator: string;
}
export const REST_BODY: PathStyle = { root: 'body', separator: '/' };
export const DOTTED: PathStyle = { root: '', separator: '.' };

export function joinPath(style: PathStyle, parts: readonly (string | number)[]): string {
  const all = style.root === '' ? parts : [style.root, ...parts];
  return all.length === 0 ? '(root)' : all.join(style.separator);
}

function pointerToParts(pointer: string): (string | number)[] {
  if (pointer === '') return [];
  return pointer
    .slice(1)
    .split('/')
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((p) => (/^[0-9]+$/.test(p) ? Number(p) : p));
}

function describeValue(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  if (typeof value === 'number' || typeof value === 'boolean' || value === null) return String(value);
  return Array.isArray(value) ? 'an array' : typeof value === 'object' ? 'an object' : typeof value;
}

function valueAt(data: unknown, parts: readonly (string | number)[]): unknown {
  let node: unknown = data;
  for (const part of parts) {
    if (node === null || typeof node !== 'object') return undefined;
    node = (node as Record<string | number, unknown>)[part];
  }
  return node;
}

/** Turns the first Ajv error into a ValidationError whose message starts with the field path. */
export function toValidationError(error: ErrorObject, data: unknown, style: PathStyle): ValidationError {
  const parts = pointerToParts(error.instancePath);
  const at = (extra: readonly (string | number)[]): string => joinPath(style, [...parts, ...extra]);
  switch (error.keyword) {
    case 'additionalProperties': {
      const name = String((error.params as { additionalProperty: string }).additionalProperty);
      return new ValidationError(`${at([name])} is not a known field`, [...parts, name]);
    }
    case 'required': {
      const name = String((error.params as { missingProperty: string }).missingProperty);
      return new ValidationError(`${at([name])} is required`, [...parts, name]);
    }
    case 'dependencies': {
      const { property, missingProperty } = error.params as { property: string; missingProperty: string };
      return new ValidationError(`${at([property])} is only allowed with ${at([missingProperty])}`, [...parts, property]);
    }
    case 'discriminator': {
      const { tag, tagValue } = error.params as { tag: string; tagValue: unknown };
      if (typeof tagValue !== 'string') {
        return new ValidationError(`${at([tag])} must be a string`, [...parts, tag]);
      }
      return new ValidationError(
        `${at([tag])} must be one of ${PLUGINS.join(', ')}; got ${describeValue(tagValue)}`,
        [...parts, tag],
      );
    }
    case 'format':
      return new ValidationError(
        `${at([])} must be an IPv4 or IPv6 address or a DNS name, got ${describeValue(valueAt(data, parts))}`,
        parts,
      );
    case 'const': {
      const allowed = (error.params as { allowedValue: unknown }).allowedValue;
      return new ValidationError(
        `${at([])} must be ${JSON.stringify(allowed)}, got ${describeValue(valueAt(data, parts))}`,
        parts,
      );
    }
    case 'enum': {
      const allowed = (error.params as { allowedValues: unknown[] }).allowedValues;
      return new ValidationError(
        `${at([])} must be one of ${allowed.map((v) => JSON.stringify(v)).join(', ')}; got ${describeValue(valueAt(data, parts))}`,
        parts,
      );
    }
    case 'pattern':
      return new ValidationError(`${at([])} has characters that are not allowed`, parts);
    default:
      return new ValidationError(`${at([])} ${error.message ?? 'is not valid'}`, parts);
  }
}

export interface Validator<T> {
  /** Validates a copy of `input`, fills defaults, returns it or throws ValidationError. */
  parse(input: unknown, style: PathStyle): T;
}

export function compileValidator<S extends TSchema>(schema: S, onAjv: Ajv = ajv): Validator<Static<S>> {
  const check: ValidateFunction = onAjv.compile(schema);
  return {
    parse(input: unknown, style: PathStyle): Static<S> {
      const data: unknown = input === undefined ? undefined : structuredClone(input);
      if (!check(data)) {
        const first = check.errors?.[0];
        if (first === undefined) throw new ValidationError(`${joinPath(style, [])} is not valid`);
        throw toValidationError(first, data, style);
      }
      return data;
    },
  };
}

const pipelineSpec = compileValidator(PipelineSpec);

/**
 * The one entry point for a create request, REST or gRPC. A value is never echoed for
 * `input.passphrase`: its messages name the field and the rule only.
 */
export function parsePipelineSpec(input: unknown, style: PathStyle = REST_BODY): PipelineSpec {
  const spec = pipelineSpec.parse(input, style);
  // A default that depends on another field, which JSON Schema defaults cannot say.
  if (spec.input.passphrase !== undefined) spec.input.pbkeylen ??= DEFAULT_PBKEYLEN;
  if (spec.backup?.passphrase !== undefined) spec.backup.pbkeylen ??= DEFAULT_PBKEYLEN;
  if (spec.backup !== undefined && spec.backup.port === spec.input.port) {
    throw new ValidationError(`${joinPath(style, ['backup', 'port'])} must differ from ${joinPath(style, ['input', 'port'])} (${spec.input.port})`, ['backup', 'port']);
  }
  if (spec.failover !== undefined && spec.backup === undefined && spec.fallback === undefined) {
    throw new ValidationError(`${joinPath(style, ['failover'])} is only allowed with ${joinPath(style, ['backup'])} or ${joinPath(style, ['fallback'])}`, ['failover']);
  }
  if ((spec.selection === 'backup' && spec.backup === undefined) || (spec.selection === 'fallback' && spec.fallback === undefined)) {
    throw new ValidationError(`${joinPath(style, ['selection'])} ${spec.selection}: the pipeline has no ${spec.selection}`, ['selection']);
  }
  if (spec.fallback !== undefined && path.posix.normalize(spec.fallback.path) !== spec.fallback.path) {
    throw new ValidationError(`${joinPath(style, ['fallback', 'path'])} must be a normalised absolute path (no "..", ".", "//" or trailing "/")`, ['fallback', 'path']);
  }
  checkRtpOutput(spec.output, (name) => joinPath(style, ['output', name]));
  checkRedundantLeg(spec.output, joinPath(style, ['output', 'redundant', 'host']));
  return spec;
}

/** Advice about a valid spec (REST and gRPC return it as `warnings`); empty when there is none. */
export function specWarnings(spec: PipelineSpec, style: PathStyle = REST_BODY): string[] {
  return outputWarnings(spec.output, (name) => joinPath(style, ['output', name]));
}

export type { PipelineSpec };
