/** Engine views mapped to gRPC messages: the same fields REST returns, under the same names. */
import { healthWarnings, type HealthReport } from '../health.js';
import type { PipelineSpec } from '../spec/schema.js';
import type { PipelineView } from '../pipelines/registry.js';
import type { PtpStatus } from '../aes67/pmc.js';
import type { HealthResponse, InputConfig, InputHealth, Pipeline, ProcessingStep, PtpStatus as PtpStatusMessage } from '../gen/svc/v1/engine.js';
import type { SrtInputView } from '../spec/redact.js';
import type { InputHealthView } from '../stats/pipeline-stats.js';

export function ptpToProto(status: PtpStatus): PtpStatusMessage {
  return {
    state: status.state,
    grandmaster_id: opt(status.grandmaster_id),
    domain: opt(status.domain),
    offset_seconds: opt(status.offset_seconds),
    port_states: status.port_states,
    reason: status.reason,
  };
}

export function healthToProto(report: HealthReport, ptp?: PtpStatus): HealthResponse {
  return {
    status: report.status,
    version: report.version,
    uptime: report.uptime,
    reason: report.reason ?? '',
    overloaded: report.overloaded?.message ?? '',
    ptp: ptp === undefined ? undefined : ptpToProto(ptp),
    warnings: healthWarnings(report, ptp),
  };
}

function stepToProto(step: PipelineSpec['processing'][number]): ProcessingStep {
  switch (step.plugin) {
    case 'loudness-normalize':
      return { plugin: step.plugin, target: step.target, true_peak: step.true_peak, bands: [] };
    case 'eq':
      return { plugin: step.plugin, bands: step.bands.map((b) => ({ freq: b.freq, gain: b.gain, q: b.q })) };
  }
}

/** null (REST) becomes an absent optional field. */
function opt<T>(value: T | null): T | undefined {
  return value === null ? undefined : value;
}

/** A pipeline with its SDP; `warnings` only in the answer to a create. */
export function pipelineToProto(view: PipelineView, sdp: string, warnings: string[] = []): Pipeline {
  return {
    id: view.id,
    name: view.name,
    status: view.status,
    created_at: view.created_at,
    input: inputToProto(view.input),
    processing: view.processing.map(stepToProto),
    output: {
      type: view.output.type,
      host: view.output.host,
      port: view.output.port,
      ttl: view.output.ttl,
      interface: view.output.interface,
      channels: view.output.channels,
      encoding: view.output.encoding,
      ptime: view.output.ptime,
      payload_type: view.output.payload_type,
      dscp: view.output.dscp,
      redundant: view.output.redundant,
    },
    state: view.state,
    pid: opt(view.pid),
    restarts: view.restarts,
    last_error: opt(view.last_error),
    exit_code: opt(view.exit_code),
    exit_signal: opt(view.exit_signal),
    state_since: view.state_since,
    next_retry_at: opt(view.next_retry_at),
    priority: view.priority,
    realtime_ratio: opt(view.realtime_ratio),
    behind: view.behind,
    sdp,
    warnings,
    input_state: view.input_state,
    clock: view.clock === null ? undefined : { ...view.clock, drift_ppm: opt(view.clock.drift_ppm), output_realtime: opt(view.clock.output_realtime), input_realtime: opt(view.clock.input_realtime) },
    version: view.version,
    output_legs: view.output_legs.map((leg) => ({ ...leg, interface: opt(leg.interface), error: opt(leg.error) })),
    backup: view.backup === undefined ? undefined : inputToProto(view.backup),
    failover: view.failover,
    fallback: view.fallback,
    active_input: opt(view.active_input),
    selection: view.selection,
    inputs: {
      main: healthToProtoMessage(view.inputs.main),
      backup: view.inputs.backup === undefined ? undefined : healthToProtoMessage(view.inputs.backup),
    },
  };
}

function inputToProto(input: SrtInputView): InputConfig {
  return {
    type: input.type,
    port: input.port,
    latency: input.latency,
    passphrase: input.passphrase, // "set" or absent: the view never holds the secret
    pbkeylen: input.pbkeylen,
    reconnect_ms: input.reconnect_ms,
  };
}

function healthToProtoMessage(health: InputHealthView): InputHealth {
  return { connected: health.connected, level_dbfs: opt(health.level_dbfs), silent_seconds: opt(health.silent_seconds) };
}
