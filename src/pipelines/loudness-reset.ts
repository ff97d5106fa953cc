/**
 * Restarting the programme measurement (integrated loudness, LRA, max true peak) of every
 * loudness step of a running child, for a pipeline or a station (managed-pipeline.ts): the
 * compiler's assignments (`step<N>.reset-measurement=true`) go through the child's control
 * channel, and the answer waits for its acknowledgement. The gain and the audio are not touched;
 * nothing is stored.
 */
import type { Logger } from 'pino';
import type { CompilableSpec } from '../compiler/compile.js';
import { measurementResetAssignments } from '../compiler/update.js';
import { NotMeasuringError } from '../errors.js';
import { ControlFailure, throwAsEngineError } from '../supervisor/control-channel.js';
import type { ChildSupervisor, LiveOutcome } from '../supervisor/child-supervisor.js';

/** `what` names the pipeline or station in messages ("pipeline pl_…", "station studio-a"); resolves with the steps reset. */
export async function resetLoudnessMeasurement(what: string, spec: CompilableSpec, supervisor: ChildSupervisor, log: Logger): Promise<string[]> {
  const assignments = measurementResetAssignments(spec);
  if (assignments.length === 0) throw new NotMeasuringError(`${what} has no loudness-normalize step in its processing: there is no loudness measurement to reset`);
  let outcome: LiveOutcome;
  try {
    outcome = await supervisor.applyLive(assignments);
  } catch (error) {
    if (error instanceof ControlFailure) log.warn({ event: 'loudness-reset-failed', reason: error.reason }, `${what}: loudness measurement not reset: ${error.message}`);
    throwAsEngineError(error, what);
  }
  if (outcome === 'next-start') {
    throw new NotMeasuringError(`${what} has no running child (state ${supervisor.snapshot().state}): its next child measures from its start`);
  }
  const steps = assignments.map((a) => a.element);
  log.info({ event: 'loudness-reset', steps }, `${what}: loudness measurement reset (${steps.join(', ')})`);
  return steps;
}
