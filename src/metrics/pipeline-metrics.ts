/**
 * Per-pipeline audio and transport metrics, read at scrape time from each pipeline's statistics
 * (level, loudnorm, pipelinestats and clockbridge messages of its children). Every series of a
 * pipeline exists from its creation to its deletion, whatever its child does: no series depends on
 * a report being there. Where there is no report of a running child (before its first, between
 * children, from the moment one ends), a value reads what docs/api.md says for it: levels and
 * loudness the "no signal" floor (-120), connection and SRT rates 0, the clock bridge's values
 * (buffer fill, jitter buffer, drift, latency) NaN, Prometheus' "unknown". While a child runs its
 * last report stands until the next one (a late or missing message changes nothing). Counters are
 * the engine's, summed over the pipeline's children, so they never go down when a child restarts.
 * A deleted pipeline's series vanish at the next scrape.
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import type { SupervisedSource } from './registry.js';
import { NO_SIGNAL_DB, type PipelineCounts, type PipelineStats } from '../stats/pipeline-stats.js';
import { BRIDGE_INPUTS } from '../stats/parse-line.js';

type Labels = Record<string, string>;
type Reading = [Labels, number][];
type SourceRecord = ReturnType<SupervisedSource['entries']> extends Iterable<{ record: infer R }> ? R : never;

export function registerPipelineMetrics(registry: Registry, pipelines: SupervisedSource, now: () => number = Date.now): void {
  type Read = (id: string, stats: PipelineStats, record: SourceRecord) => Reading;
  const each = (read: Read): Reading =>
    [...pipelines.entries()].flatMap(({ record, managed }) => read(record.id, managed.stats, record));

  const gauge = (name: string, help: string, labelNames: string[], read: Read): void => {
    new Gauge({
      name, help, labelNames, registers: [registry],
      collect() {
        this.reset();
        for (const [labels, value] of each(read)) this.set(labels, value);
      },
    });
  };
  const counter = (name: string, help: string, labelNames: string[], read: Read): void => {
    new Counter({
      name, help, labelNames, registers: [registry],
      collect() {
        this.reset();
        for (const [labels, value] of each(read)) this.inc(labels, Math.max(0, value));
      },
    });
  };

  const perChannel = (values: number[], id: string): Reading =>
    values.map((db, channel) => [{ pipeline_id: id, channel: String(channel) }, db]);
  gauge('audio_engine_pipeline_input_rms_dbfs', 'RMS level of the decoded input per channel over the last interval, dBFS (-120 without signal or child).', ['pipeline_id', 'channel'],
    (id, s) => perChannel(s.inputLevels().rmsDb, id));
  gauge('audio_engine_pipeline_input_peak_dbfs', 'Sample peak of the decoded input per channel over the last interval, dBFS (-120 without signal or child).', ['pipeline_id', 'channel'],
    (id, s) => perChannel(s.inputLevels().peakDb, id));
  gauge('audio_engine_pipeline_silence_seconds', 'How long the input has been silent (below -60 dBFS RMS) or absent, seconds.', ['pipeline_id'],
    (id, s) => [[{ pipeline_id: id }, s.silenceSeconds(now())]]);

  type Loudness = ReturnType<PipelineStats['loudnessSteps']>[number][1];
  const loudness = (pick: (e: Loudness) => [string, number][]) =>
    (id: string, s: PipelineStats): Reading =>
      s.loudnessSteps().flatMap(([step, e]) => pick(e).map(([stage, v]): [Labels, number] => [{ pipeline_id: id, step, stage }, v]));
  const lk = ['pipeline_id', 'step', 'stage'];
  gauge('audio_engine_pipeline_loudness_momentary_lufs', 'Momentary loudness (400 ms), LUFS; stage input or output of the loudness step.', lk,
    loudness((e) => [['input', e.inputMomentary], ['output', e.outputMomentary]]));
  gauge('audio_engine_pipeline_loudness_short_term_lufs', 'Short-term loudness (3 s), LUFS.', lk,
    loudness((e) => [['input', e.inputShortTerm], ['output', e.outputShortTerm]]));
  gauge('audio_engine_pipeline_loudness_integrated_lufs', 'Integrated (gated) loudness since the current child started or its measurement was last reset, LUFS.', lk,
    loudness((e) => [['input', e.inputIntegrated], ['output', e.outputIntegrated]]));
  gauge('audio_engine_pipeline_true_peak_dbtp', 'Highest true peak since the current child started or its measurement was last reset, dBTP.', lk,
    loudness((e) => [['input', e.inputTruePeak], ['output', e.outputTruePeak]]));
  gauge('audio_engine_pipeline_loudness_range_lu', 'Loudness range (EBU Tech 3342) of the input since the current child started or its measurement was last reset, LU.', ['pipeline_id', 'step'],
    (id, s) => s.loudnessSteps().map(([step, e]) => [{ pipeline_id: id, step }, e.inputLoudnessRange]));
  gauge('audio_engine_pipeline_loudness_measured_seconds', 'Seconds of programme the integrated loudness, loudness range and true peak cover (POST /api/v1/pipelines/{id}/loudness/reset starts them again).', ['pipeline_id', 'step'],
    (id, s) => s.loudnessSteps().map(([step, e]) => [{ pipeline_id: id, step }, e.measuredSeconds ?? 0]));
  gauge('audio_engine_pipeline_gain_db', 'Gain the loudness step applies now, dB.', ['pipeline_id', 'step'],
    (id, s) => s.loudnessSteps().map(([step, e]) => [{ pipeline_id: id, step }, e.gain]));

  // SRT series exist for every pipeline with an SRT input (the layout, from its argv), reported or not.
  const srt = (pick: (x: NonNullable<ReturnType<PipelineStats['srtNow']>>) => number) =>
    (id: string, s: PipelineStats): Reading => {
      const now = s.srtNow();
      return now === undefined ? [] : [[{ pipeline_id: id }, pick(now)]];
    };
  const srtCount = (pick: (c: PipelineCounts) => number) =>
    (id: string, s: PipelineStats): Reading => (s.layout.srtInput ? [[{ pipeline_id: id }, pick(s.counts())]] : []);
  gauge('audio_engine_pipeline_srt_connected', '1 while an SRT caller is connected to the input.', ['pipeline_id'], srt((x) => (x.connected ? 1 : 0)));
  gauge('audio_engine_pipeline_srt_rtt_seconds', 'SRT round-trip time, seconds (0 without a caller).', ['pipeline_id'], srt((x) => x.rttMs / 1000));
  gauge('audio_engine_pipeline_srt_receive_rate_bytes_per_second', 'SRT receive rate, bytes per second (0 without a caller).', ['pipeline_id'], srt((x) => (x.receiveRateMbps * 1e6) / 8));
  counter('audio_engine_pipeline_srt_packets_received_total', 'SRT packets received since the pipeline was loaded (all connections and children).', ['pipeline_id'], srtCount((c) => c.srtPacketsReceived));
  counter('audio_engine_pipeline_srt_packets_lost_total', 'SRT packets lost since the pipeline was loaded.', ['pipeline_id'], srtCount((c) => c.srtPacketsLost));
  counter('audio_engine_pipeline_srt_packets_retransmitted_total', 'SRT packets retransmitted since the pipeline was loaded.', ['pipeline_id'], srtCount((c) => c.srtPacketsRetransmitted));
  counter('audio_engine_pipeline_srt_packets_dropped_total', 'SRT packets dropped (too late) since the pipeline was loaded.', ['pipeline_id'], srtCount((c) => c.srtPacketsDropped));
  counter('audio_engine_pipeline_srt_received_bytes_total', 'SRT payload bytes received since the pipeline was loaded.', ['pipeline_id'], srtCount((c) => c.srtBytesReceived));

  // The clock bridge (docs/clock.md): drift tracking, jitter buffer and latency; NaN (unknown)
  // without a report of a running child, the current child's last report otherwise.
  const bridge = (pick: (c: NonNullable<PipelineStats['clock']>) => number) =>
    (id: string, s: PipelineStats): Reading => [[{ pipeline_id: id }, s.clock === undefined ? Number.NaN : pick(s.clock)]];
  gauge('audio_engine_pipeline_buffer_fill_ratio', 'Fill of the jitter buffer (clock bridge FIFO) against the fill it keeps (setpoint): 1 = steady, 0 = empty; NaN without a report of a running child.', ['pipeline_id'],
    (id, s) => [[{ pipeline_id: id }, s.bufferFill() ?? Number.NaN]]);
  gauge('audio_engine_pipeline_input_clock_drift_ppm', 'Sender clock against the output clock as the clock bridge measures it, ppm (positive: sender fast), from about 10 s of input on, within audio_engine_pipeline_input_clock_drift_uncertainty_ppm of the truth in about 95 % of readings; NaN without a report of a running child or while the bridge has no estimate.', ['pipeline_id'],
    (id, s) => [[{ pipeline_id: id }, s.drift().drift_ppm ?? Number.NaN]]);
  gauge('audio_engine_pipeline_input_clock_drift_uncertainty_ppm', 'Uncertainty of audio_engine_pipeline_input_clock_drift_ppm: the half-width that holds the truth in about 95 % of readings, ppm, shrinking as the bridge sees more of the input; NaN without an estimate.', ['pipeline_id'],
    (id, s) => [[{ pipeline_id: id }, s.drift().drift_uncertainty_ppm ?? Number.NaN]]);
  gauge('audio_engine_pipeline_jitter_buffer_seconds', 'Fill of the jitter buffer (clock bridge FIFO, time average), seconds; held at engine.jitter_ms + the input\'s packet saw-tooth depth; NaN without a report of a running child.', ['pipeline_id'],
    bridge((c) => c.fillSeconds));
  gauge('audio_engine_pipeline_jitter_depth_seconds', 'The jitter buffer\'s setpoint above its reserve (engine.jitter_ms), seconds: the depth the input\'s packet pattern and lateness ask for; at rest about half a packet, above 25 ms the latency is above SRT latency + jitter_ms + 25 ms; NaN without a report of a running child or from an element that does not say.', ['pipeline_id'],
    bridge((c) => c.depthSeconds ?? Number.NaN));
  gauge('audio_engine_pipeline_jitter_ceiling_seconds', 'Ceiling of the jitter buffer\'s setpoint (engine.jitter_max_ms or the pipeline\'s jitter_max_ms), seconds; NaN without a report of a running child or from an element that does not say.', ['pipeline_id'],
    bridge((c) => c.ceilingSeconds ?? Number.NaN));
  counter('audio_engine_pipeline_jitter_ceiling_hits_total', 'Times the input asked the jitter buffer for a depth above its ceiling (held at it instead), since the pipeline was loaded (all children).', ['pipeline_id'],
    (id, s) => [[{ pipeline_id: id }, s.counts().bridgeCeilingHits]]);
  counter('audio_engine_pipeline_jitter_ceiling_underruns_total', 'Underruns while the jitter buffer was held at its ceiling (input later than the ceiling allows: silence inserted), since the pipeline was loaded (all children).', ['pipeline_id'],
    (id, s) => [[{ pipeline_id: id }, s.counts().bridgeCeilingUnderruns]]);
  counter('audio_engine_pipeline_jitter_buffer_underruns_total', 'Times the jitter buffer ran empty (silence sent), once per episode, since the pipeline was loaded (all children).', ['pipeline_id'],
    (id, s) => [[{ pipeline_id: id }, s.counts().bridgeUnderruns]]);
  counter('audio_engine_pipeline_realtime_demotions_total', 'Real-time threads (clock bridge output or input) that ran 200 ms of CPU without blocking and were moved to SCHED_OTHER instead of the child being ended, since the pipeline was loaded (all children): a host too short of CPU for its pipelines, or a spinning element.', ['pipeline_id'],
    (id, s) => [[{ pipeline_id: id }, s.counts().bridgeRealtimeDemotions]]);
  counter('audio_engine_pipeline_inserted_silence_seconds_total', 'Silence the output carried while the input had audio that came late (an underrun the input came back from within 1 s), seconds since the pipeline was loaded (all children): dead air the engine caused, not the sender.', ['pipeline_id'],
    (id, s) => [[{ pipeline_id: id }, s.counts().bridgeInsertedSilence]]);
  counter('audio_engine_pipeline_jitter_buffer_overruns_total', 'Times the jitter buffer overflowed (input dropped) since the pipeline was loaded (all children).', ['pipeline_id'],
    (id, s) => [[{ pipeline_id: id }, s.counts().bridgeOverruns]]);
  gauge('audio_engine_pipeline_latency_seconds', 'Sender-to-RTP latency estimate: SRT latency plus the clock bridge latency, seconds; NaN without a report of a running child.', ['pipeline_id'],
    (id, s, record) => [[{ pipeline_id: id }, s.clockReport(record.spec?.input.latency ?? 0)?.latency_seconds ?? Number.NaN]]);
  gauge('audio_engine_pipeline_output_realtime', 'Whether the current child\'s output thread (clock bridge to udpsink) runs real time (SCHED_FIFO): 1 yes, 0 refused (see /health warnings for why); NaN without a report of a running child or from an element that does not say.', ['pipeline_id'],
    bridge((c) => (c.outputRealtime === undefined ? Number.NaN : c.outputRealtime ? 1 : 0)));
  counter('audio_engine_pipeline_output_packets_total', 'RTP packets sent since the pipeline was loaded (all children).', ['pipeline_id'],
    (id, s) => [[{ pipeline_id: id }, s.counts().outputPackets]]);
  counter('audio_engine_pipeline_output_bytes_total', 'RTP bytes sent since the pipeline was loaded (all children).', ['pipeline_id'],
    (id, s) => [[{ pipeline_id: id }, s.counts().outputBytes]]);

  // Failover (docs/failover.md): the input on air and each SRT input's health, from the bridge's
  // report; NaN (unknown) without a report of a running child. The backup's series exist while
  // the graph has a backup (its layout), the main's for every pipeline.
  type Health = NonNullable<ReturnType<PipelineStats['failoverState']>>['main'];
  const inputsOf = (s: PipelineStats): ('main' | 'backup')[] => (s.layout.backupInput === true ? ['main', 'backup'] : ['main']);
  const perInput = (pick: (h: Health) => number) =>
    (id: string, s: PipelineStats): Reading => {
      const state = s.failoverState();
      return inputsOf(s).map((input): [Labels, number] => {
        const health = state === undefined ? undefined : input === 'main' ? state.main : state.backup;
        return [{ pipeline_id: id, input }, health === undefined ? Number.NaN : pick(health)];
      });
    };
  gauge('audio_engine_pipeline_active_input', 'The input on air: 1 for the one (main, backup, fallback, or none: nothing audible), 0 for the others; NaN without a report of a running child.', ['pipeline_id', 'input'],
    (id, s) => {
      const active = s.failoverState()?.activeInput;
      return BRIDGE_INPUTS.map((input): [Labels, number] => [{ pipeline_id: id, input }, active === undefined ? Number.NaN : active === input ? 1 : 0]);
    });
  counter('audio_engine_pipeline_failovers_total', 'Switches of the output between inputs since the pipeline was loaded (all children), by from, to and reason (loss, silence, return, manual).', ['pipeline_id', 'from', 'to', 'reason'],
    (id, s) => s.failoverCounts().map(({ from, to, reason, count }): [Labels, number] => [{ pipeline_id: id, from, to, reason }, count]));
  counter('audio_engine_pipeline_srt_callers_refused_total', 'SRT callers an input refused since the pipeline was loaded (all children), by input (main, backup) and cause (busy: the connected caller was delivering; passphrase: wrong or missing; other).', ['pipeline_id', 'input', 'cause'],
    (id, s) => s.refusedCallerCounts().map(({ input, cause, count }): [Labels, number] => [{ pipeline_id: id, input, cause }, count]));
  gauge('audio_engine_pipeline_input_connected', '1 while the input delivers audio (within failover.loss_ms), per SRT input (main, backup); NaN without a report of a running child.', ['pipeline_id', 'input'],
    perInput((h) => (h.connected ? 1 : 0)));
  gauge('audio_engine_pipeline_input_level_dbfs', 'Short-term level (400 ms) of each SRT input as the clock bridge measures it, dBFS (-120 without audio); NaN without a report of a running child.', ['pipeline_id', 'input'],
    perInput((h) => (Number.isFinite(h.levelDb) ? Math.max(NO_SIGNAL_DB, h.levelDb) : NO_SIGNAL_DB)));
  gauge('audio_engine_pipeline_input_silence_seconds', 'How long each SRT input has been below failover.silence_dbfs or without audio, seconds (0 while audible); NaN without a report of a running child.', ['pipeline_id', 'input'],
    perInput((h) => h.silentSeconds));
  gauge('audio_engine_pipeline_output_silence_seconds', 'Dead air: how long the output has been continuously silent (below failover.silence_dbfs), whatever the cause, seconds; NaN without a report of a running child.', ['pipeline_id'],
    (id, s) => [[{ pipeline_id: id }, s.failoverState()?.outputSilentSeconds ?? Number.NaN]]);
}
