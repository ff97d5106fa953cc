/**
 * A gRPC CreatePipelineRequest mapped to the REST JSON body shape, so the one spec validator
 * (spec/validate.ts) judges both edges alike. Nothing is checked here: a field the request
 * carries goes into the JSON as it is (an empty string stays "" and is rejected by the validator
 * naming the field); a proto3 `optional` field that is absent is left out, so the validator
 * fills its default or reports it as required; repeated `bands` are left out when empty, so an
 * eq step without bands is "required" and a loudness step with bands names the stray field.
 */
import type { CreatePipelineRequest, EqBand, FailoverConfig, FallbackConfig, InputConfig, OutputConfig, ProcessingStep, RedundantLeg, UpdatePipelineRequest } from '../gen/svc/v1/engine.js';

type Json = Record<string, unknown>;

/** Copies the keys whose value is not undefined. */
function present(fields: Json): Json {
  return Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined));
}

function input(message: InputConfig): Json {
  return present({
    type: message.type,
    port: message.port,
    latency: message.latency,
    passphrase: message.passphrase,
    pbkeylen: message.pbkeylen,
    reconnect_ms: message.reconnect_ms,
  });
}

function failover(message: FailoverConfig): Json {
  return present({
    silence_dbfs: message.silence_dbfs,
    silence_s: message.silence_s,
    loss_ms: message.loss_ms,
    return_s: message.return_s,
    fallback_on_silence: message.fallback_on_silence,
  });
}

function fallback(message: FallbackConfig): Json {
  return present({ type: message.type, path: message.path, loop: message.loop });
}

function band(message: EqBand): Json {
  return present({ freq: message.freq, gain: message.gain, q: message.q });
}

function step(message: ProcessingStep): Json {
  return present({
    plugin: message.plugin,
    target: message.target,
    true_peak: message.true_peak,
    bands: message.bands.length > 0 ? message.bands.map(band) : undefined,
  });
}

function redundantLeg(message: RedundantLeg): Json {
  return present({ host: message.host, port: message.port, interface: message.interface });
}

function output(message: OutputConfig): Json {
  return present({
    type: message.type,
    host: message.host,
    port: message.port,
    ttl: message.ttl,
    interface: message.interface,
    channels: message.channels,
    encoding: message.encoding,
    ptime: message.ptime,
    payload_type: message.payload_type,
    dscp: message.dscp,
    redundant: message.redundant === undefined ? undefined : redundantLeg(message.redundant),
  });
}

/** The request as a REST body would carry it; validate with parsePipelineSpec(json, DOTTED). */
export function createRequestToJson(request: CreatePipelineRequest): Json {
  return present({
    name: request.name,
    input: request.input === undefined ? undefined : input(request.input),
    processing: request.processing.map(step),
    output: request.output === undefined ? undefined : output(request.output),
    priority: request.priority,
    backup: request.backup === undefined ? undefined : input(request.backup),
    failover: request.failover === undefined ? undefined : failover(request.failover),
    fallback: request.fallback === undefined ? undefined : fallback(request.fallback),
  });
}

/** Drops the key when its value is "" (a proto3 string that was not set). */
function nonEmpty(fields: Json, keys: readonly string[]): Json {
  return Object.fromEntries(Object.entries(fields).filter(([key, value]) => !(keys.includes(key) && value === '')));
}

/**
 * An UpdatePipelineRequest as the REST merge patch (spec/patch.ts) it stands for: the fields
 * that are set. A step's plugin "" means the step at its index; type and host "" keep theirs.
 */
export function updateRequestToPatch(request: UpdatePipelineRequest): Json {
  return present({
    name: request.name,
    input: request.input === undefined ? undefined : nonEmpty(input(request.input), ['type']),
    processing: request.processing === undefined ? undefined : request.processing.steps.map((s) => nonEmpty(step(s), ['plugin'])),
    output: request.output === undefined ? undefined : nonEmpty(output(request.output), ['type', 'host']),
    // remove_backup / remove_fallback: null removes it (RFC 7396), whatever else is set; the policy goes with the last of them
    backup: request.remove_backup === true ? null : request.backup === undefined ? undefined : nonEmpty(input(request.backup), ['type']),
    failover: request.failover === undefined ? undefined : failover(request.failover),
    fallback: request.remove_fallback === true ? null : request.fallback === undefined ? undefined : nonEmpty(fallback(request.fallback), ['type', 'path']),
  });
}
