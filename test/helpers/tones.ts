/**
 * Which tone received audio carries: the amplitude of given frequencies in short blocks
 * (Goertzel over a Hann window, so 440 Hz and 1 kHz do not leak into each other), the peak of
 * each block, and the largest step between neighbouring samples. Works on one channel of float
 * samples (-1..1), block by block in media time: block k starts at sample k x blockFrames.
 */

/** One block's figures: each frequency's sine amplitude (peak, 0..1) and the block's peak. */
export interface ToneBlock {
  amplitudes: number[];
  peak: number;
}

/** The sine amplitude of `frequency` in `samples` [start, start + n), Hann-windowed Goertzel. */
export function toneAmplitude(samples: ArrayLike<number>, start: number, n: number, frequency: number, rate = 48000): number {
  const w = (2 * Math.PI * frequency) / rate;
  const coeff = 2 * Math.cos(w);
  let s1 = 0;
  let s2 = 0;
  let windowSum = 0;
  for (let i = 0; i < n; i++) {
    const hann = 0.5 - 0.5 * Math.cos((2 * Math.PI * i) / (n - 1));
    windowSum += hann;
    const s0 = (samples[start + i] ?? 0) * hann + coeff * s1 - s2;
    s2 = s1;
    s1 = s0;
  }
  const power = s1 * s1 + s2 * s2 - coeff * s1 * s2;
  return (2 * Math.sqrt(Math.max(0, power))) / windowSum;
}

/** Blocks of `blockFrames` samples (the last partial block left out), each with the amplitudes of `frequencies`. */
export function toneBlocks(samples: ArrayLike<number>, frequencies: readonly number[], blockFrames = 480, rate = 48000): ToneBlock[] {
  const blocks: ToneBlock[] = [];
  for (let start = 0; start + blockFrames <= samples.length; start += blockFrames) {
    let peak = 0;
    for (let i = start; i < start + blockFrames; i++) peak = Math.max(peak, Math.abs(samples[i] ?? 0));
    blocks.push({ amplitudes: frequencies.map((f) => toneAmplitude(samples, start, blockFrames, f, rate)), peak });
  }
  return blocks;
}

/** The largest |x[i] - x[i-1]| over [from, to), and where. */
export function largestStep(samples: ArrayLike<number>, from = 1, to = samples.length): { step: number; at: number } {
  let step = 0;
  let at = -1;
  for (let i = Math.max(1, from); i < to; i++) {
    const d = Math.abs((samples[i] ?? 0) - (samples[i - 1] ?? 0));
    if (d > step) {
      step = d;
      at = i;
    }
  }
  return { step, at };
}

/** Amplitude as dBFS (peak of a sine against full scale). */
export function amplitudeDbfs(amplitude: number): number {
  return 20 * Math.log10(Math.max(amplitude, 1e-12));
}
