/* fifo: planar frame FIFO for the clock bridge (pure C, no GStreamer types).
 *
 * One contiguous array per channel, so the interpolator reads its taps as
 * plain vectors.  Valid frames are [start, end); writing compacts the
 * arrays (moves the valid frames to index 0) when the tail has no room, so
 * the cost is one memmove per capacity's worth of audio. */
#ifndef CLOCK_FIFO_H
#define CLOCK_FIFO_H

#include <stddef.h>

#define CLOCK_FIFO_MAX_CHANNELS 8

typedef struct
{
  unsigned channels;
  size_t capacity;              /* frames per channel */
  size_t start, end;
  float *data[CLOCK_FIFO_MAX_CHANNELS];
} ClockFifo;

/* 0 on success, -1 when out of memory */
int clock_fifo_init (ClockFifo * f, unsigned channels, size_t capacity);
void clock_fifo_clear (ClockFifo * f);
static inline size_t
clock_fifo_frames (const ClockFifo * f)
{
  return f->end - f->start;
}
/* room for frames more (after compaction) */
static inline size_t
clock_fifo_room (const ClockFifo * f)
{
  return f->capacity - clock_fifo_frames (f);
}
/* appends frames interleaved frames; the caller makes room first */
void clock_fifo_write (ClockFifo * f, const float *interleaved, size_t frames);
/* appends frames of silence */
void clock_fifo_write_silence (ClockFifo * f, size_t frames);
/* drops the oldest frames */
void clock_fifo_drop (ClockFifo * f, size_t frames);
/* channel c from the oldest frame on */
static inline const float *
clock_fifo_channel (const ClockFifo * f, unsigned c)
{
  return f->data[c] + f->start;
}

#endif
