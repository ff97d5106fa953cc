/** Silence inside received audio: the longest run of frames where every channel stays below a threshold. */

/** Longest run (ms at 48 kHz) of stereo frames of `interleaved` whose samples are all below `threshold` in magnitude. */
export function longestSilenceMs(interleaved: Float32Array, threshold = 1e-3, rate = 48000): number {
  let run = 0;
  let longest = 0;
  for (let i = 0; i + 1 < interleaved.length; i += 2) {
    if (Math.abs(interleaved[i] ?? 0) < threshold && Math.abs(interleaved[i + 1] ?? 0) < threshold) {
      run += 1;
      if (run > longest) longest = run;
    } else {
      run = 0;
    }
  }
  return (longest / rate) * 1000;
}
