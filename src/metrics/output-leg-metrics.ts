/**
 * `audio_engine_pipeline_output_leg_up{pipeline_id, leg}`: 1 while the leg sends, 0 while it
 * failed (its sends fail or its interface has no carrier, the child goes on: stats/output-legs.ts),
 * is switched off (`output.enabled`, `output.redundant.enabled`) or no child runs. One series per
 * leg of every pipeline and station (`primary`, and `redundant` for an ST 2022-7 output), from its
 * creation to its deletion.
 */
import { Gauge, type Registry } from 'prom-client';
import type { PipelineSpec } from '../spec/schema.js';
import { outputLegViews } from '../pipelines/output-legs-view.js';
import type { PipelineRuntime } from '../pipelines/managed-pipeline.js';

export interface LegSource {
  entries(): Iterable<{ record: { id: string; spec?: { output?: PipelineSpec['output'] } }; managed: Pick<PipelineRuntime, 'legs' | 'snapshot'> }>;
}

export function registerOutputLegMetrics(registry: Registry, pipelines: LegSource): void {
  new Gauge({
    name: 'audio_engine_pipeline_output_leg_up',
    help: 'The output leg sends (1), or not (0: its sends fail or its interface has no carrier while the pipeline goes on, or no child runs); leg primary or redundant (ST 2022-7).',
    labelNames: ['pipeline_id', 'leg'],
    registers: [registry],
    collect() {
      this.reset();
      for (const { record, managed } of pipelines.entries()) {
        const output = record.spec?.output;
        if (output === undefined) continue;
        for (const leg of outputLegViews(output, managed)) this.set({ pipeline_id: record.id, leg: leg.leg }, leg.state === 'sending' ? 1 : 0);
      }
    },
  });
}
