/* fifo: see fifo.h. */
#include "fifo.h"

#include <stdlib.h>
#include <string.h>

int
clock_fifo_init (ClockFifo * f, unsigned channels, size_t capacity)
{
  memset (f, 0, sizeof (*f));
  f->channels = channels;
  f->capacity = capacity;
  for (unsigned c = 0; c < channels; c++) {
    f->data[c] = calloc (capacity, sizeof (float));
    if (f->data[c] == NULL) {
      clock_fifo_clear (f);
      return -1;
    }
  }
  return 0;
}

void
clock_fifo_clear (ClockFifo * f)
{
  for (unsigned c = 0; c < CLOCK_FIFO_MAX_CHANNELS; c++) {
    free (f->data[c]);
    f->data[c] = NULL;
  }
  f->start = f->end = 0;
}

static void
make_room (ClockFifo * f, size_t frames)
{
  size_t n = clock_fifo_frames (f);

  if (f->end + frames <= f->capacity)
    return;
  for (unsigned c = 0; c < f->channels; c++)
    memmove (f->data[c], f->data[c] + f->start, n * sizeof (float));
  f->start = 0;
  f->end = n;
}

void
clock_fifo_write (ClockFifo * f, const float *interleaved, size_t frames)
{
  unsigned ch = f->channels;

  make_room (f, frames);
  for (unsigned c = 0; c < ch; c++) {
    float *d = f->data[c] + f->end;
    for (size_t i = 0; i < frames; i++)
      d[i] = interleaved[i * ch + c];
  }
  f->end += frames;
}

void
clock_fifo_write_silence (ClockFifo * f, size_t frames)
{
  make_room (f, frames);
  for (unsigned c = 0; c < f->channels; c++)
    memset (f->data[c] + f->end, 0, frames * sizeof (float));
  f->end += frames;
}

void
clock_fifo_drop (ClockFifo * f, size_t frames)
{
  if (frames > clock_fifo_frames (f))
    frames = clock_fifo_frames (f);
  f->start += frames;
  if (f->start == f->end)
    f->start = f->end = 0;
}
