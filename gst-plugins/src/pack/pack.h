/* pack: F32 samples to the S24BE that RTP L24 carries (pure C, no GStreamer
 * types).
 *
 * The values are GStreamer 1.22 audioconvert's for F32 to S24 (it does not
 * dither at 24 bits, its dithering-threshold being 20): each sample to 32
 * bits, scaled by 2^31 and cut towards zero, clipped; then to 24 bits, half
 * an LSB (2^7) added and the lower 8 bits cut off (floor), clipped.  That
 * is rounding half up but for a sliver below zero: -9038.503 x 2^-23 gives
 * -9038.  So the output is byte for byte what audioconvert made, in one
 * pass.  NaN gives 2^23 - 1 (audioconvert: the full scale of the NaN's
 * sign; none comes from the engine's steps).
 */
#ifndef PACK_PACK_H
#define PACK_PACK_H

#include <stddef.h>
#include <stdint.h>

/* `samples` floats (frames x channels, interleaved) to 3 * samples bytes */
void pack_f32_s24be (const float *in, uint8_t * out, size_t samples);

/* the same one sample at a time, without SSE2: what a CPU without it runs
 * for every sample (the test holds the two equal) */
void pack_f32_s24be_scalar (const float *in, uint8_t * out, size_t samples);

#endif
