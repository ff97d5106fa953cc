/* The recordings of arrivals/ for the replay tests: one write a line,
 * "<us after the previous write> <frames>", '#' lines are comments. */
#ifndef CLOCK_TEST_ARRIVALS_H
#define CLOCK_TEST_ARRIVALS_H

#include <stdio.h>
#include <stdlib.h>

typedef struct
{
  double t;                     /* arrival, s after the first write */
  unsigned frames;
} Write;

/* the writes of a recording, each arrival time t given as map (t / scale)
 * (map NULL: as it is); NULL on a file that cannot be read */
static inline Write *
arrivals_load (const char *path, double scale, double (*map) (double),
    size_t *n)
{
  FILE *f = fopen (path, "r");
  char line[1024];
  size_t cap = 1024;
  Write *w = malloc (cap * sizeof (*w));
  double t = 0.0;

  *n = 0;
  if (f == NULL || w == NULL) {
    if (f)
      fclose (f);
    free (w);
    return NULL;
  }
  while (fgets (line, sizeof (line), f)) {
    long us;
    unsigned frames;
    if (line[0] == '#' || sscanf (line, "%ld %u", &us, &frames) != 2)
      continue;
    if (*n == cap) {
      Write *bigger = realloc (w, 2 * cap * sizeof (*w));
      if (bigger == NULL)
        break;
      w = bigger;
      cap *= 2;
    }
    t += (double) us / 1e6;
    w[*n].t = map != NULL ? map (t / scale) : t / scale;
    w[*n].frames = frames;
    (*n)++;
  }
  fclose (f);
  return w;
}

#endif
