/**
 * A pipeline's output legs as clients see them (REST `output_legs`, gRPC `Pipeline.output_legs`,
 * the metric `audio_engine_pipeline_output_leg_up`): the primary, and the ST 2022-7 `redundant`
 * leg when the output has one, each with its destination and state.
 */
import { LEG_SINKS, legSends, type OutputLegName } from '../compiler/compile.js';
import type { PipelineSpec } from '../spec/schema.js';
import type { OutputLegs } from '../stats/output-legs.js';
import type { RuntimeInfo } from '../supervisor/child-supervisor.js';

/**
 * `sending`: the child runs and the leg's sends go out; `failed`: they fail or its interface has no
 * carrier (its network is gone) while the child goes on; `idle`: no child runs; `off`: the leg is
 * switched off (`output.enabled` or `output.redundant.enabled` false), whether a child runs or not.
 */
export type OutputLegState = 'sending' | 'failed' | 'idle' | 'off';

export interface OutputLegView {
  leg: OutputLegName;
  host: string;
  port: number;
  /** The leg's `interface`; null: the host's default route (the primary) */
  interface: string | null;
  state: OutputLegState;
  /** Why the leg failed (udpsink's reason: "Error sending message: Network is unreachable"; the link's: "no carrier on eth1"); null unless failed. */
  error: string | null;
}

export function outputLegViews(output: PipelineSpec['output'], pipeline: { legs: OutputLegs; snapshot: () => Pick<RuntimeInfo, 'state'> }): OutputLegView[] {
  const running = pipeline.snapshot().state === 'running';
  const leg = (name: OutputLegName, host: string, port: number, iface: string | undefined): OutputLegView => {
    const status = pipeline.legs.status(LEG_SINKS[name]);
    const on = legSends(output, name);
    return {
      leg: name,
      host,
      port,
      interface: iface ?? null,
      state: !on ? 'off' : running ? status.state : 'idle',
      error: on && running ? status.error : null,
    };
  };
  const legs = [leg('primary', output.host, output.port, output.interface)];
  const second = output.redundant;
  if (second !== undefined) legs.push(leg('redundant', second.host, second.port ?? output.port, second.interface));
  return legs;
}
