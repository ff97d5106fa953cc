/**
 * The benches' reference: one ffmpeg doing a pipeline's job as users would write it. SRT listener
 * on 127.0.0.1 -> loudnorm (LUFS target, -1 dBTP; it works at 192 kHz, so aresample back to
 * 48 kHz; aformat pins the stereo layout both sides) -> one peaking `equalizer` per band ->
 * pcm_s24be RTP to 127.0.0.1 in 1 ms packets (pkt_size 300 = 12 + 288 bytes: 48 stereo frames),
 * payload type 96, no RTCP (`-rtpflags skip_rtcp`: ffmpeg would send its sender reports to the
 * RTP port + 1, which may be another receiver's socket). Used by bench/clock-cpu.ts and the scale
 * bench's `--reference ffmpeg` (bench/scale-reference.ts).
 */

/** One peaking band, as the engine's `eq` step takes it (q defaults to 1 there too). */
export interface FfmpegEqBand {
  freq: number;
  gain: number;
  q?: number;
}

export interface FfmpegPipelineOptions {
  /** the SRT listener's UDP port on 127.0.0.1 */
  srtPort: number;
  /** where the RTP goes: 127.0.0.1:rtpPort */
  rtpPort: number;
  /** SRT latency, ms (the engine's `input.latency`) */
  latencyMs: number;
  /** integrated loudness target, LUFS */
  targetLufs: number;
  bands: readonly FfmpegEqBand[];
}

function check(field: string, v: number, min: number, max: number, whole: boolean): void {
  if (typeof v !== 'number' || !Number.isFinite(v) || (whole && !Number.isInteger(v)) || v < min || v > max) {
    throw new Error(`ffmpeg pipeline: ${field} must be ${whole ? 'a whole number' : 'a number'} ${min}-${max}, got ${String(v)}`);
  }
}

/**
 * The argv (without the `ffmpeg` itself) of one ffmpeg doing the pipeline's job. Every value is
 * checked to the engine's own ranges first (src/spec/schema.ts): an error names the field.
 */
export function ffmpegPipelineArgv(o: FfmpegPipelineOptions): string[] {
  check('srtPort', o.srtPort, 1, 65535, true);
  check('rtpPort', o.rtpPort, 1, 65535, true);
  check('latencyMs', o.latencyMs, 20, 8000, true);
  check('targetLufs', o.targetLufs, -70, -5, false);
  if (o.bands.length > 16) throw new Error(`ffmpeg pipeline: bands must be at most 16, got ${o.bands.length}`);
  o.bands.forEach((b, i) => {
    check(`bands[${i}].freq`, b.freq, 20, 20000, false);
    check(`bands[${i}].gain`, b.gain, -24, 24, false);
    check(`bands[${i}].q`, b.q ?? 1, 0.1, 30, false);
  });
  const eq = o.bands.map((b) => `,equalizer=f=${b.freq}:t=q:w=${b.q ?? 1}:g=${b.gain}`).join('');
  return [
    '-hide_banner', '-loglevel', 'error', '-nostdin',
    '-i', `srt://127.0.0.1:${o.srtPort}?mode=listener&latency=${o.latencyMs * 1000}`,
    '-af', `aformat=channel_layouts=stereo,loudnorm=I=${o.targetLufs}:TP=-1,aresample=48000,aformat=channel_layouts=stereo${eq}`,
    '-c:a', 'pcm_s24be', '-ar', '48000', '-ac', '2', '-f', 'rtp', '-payload_type', '96', '-rtpflags', 'skip_rtcp',
    `rtp://127.0.0.1:${o.rtpPort}?pkt_size=300`,
  ];
}
