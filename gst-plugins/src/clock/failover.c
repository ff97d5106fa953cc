/* failover: see failover.h. */
#include "failover.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* one core's input: its measurements and the model of its own fades */
typedef struct
{
  double *sumsq;                /* per chunk of the level window: sum of squares */
  size_t *audio;                /* per chunk of the window: frames of audio */
  size_t pos;
  /* the window's sums: kept as chunks come and go, summed afresh at each
   * turn of the window (so rounding cannot pile up) */
  double total;
  size_t with_audio;
  double level, lost_s, silent_s, healthy_s;
  int seen;                     /* it has had audio */
  /* the core's envelope: it ran through the end of the last chunk; frames
   * of its fade-in done since it (re)started */
  int was_running;
  size_t fade_done;
  double *env;                  /* this chunk's envelope, per frame */
  /* a core that ran dry exactly at a chunk's end has no fade-out: its
   * last core_fade frames (hist, a ring) play on mirrored in time, fading
   * out linearly (tail frames done; -1: none), in x, the chunk as mixed */
  float *hist, *x;
  size_t hist_pos;
  long tail;
} Meter;

struct Failover
{
  unsigned channels, rate;
  size_t chunk, core_fade, window, xfade;
  double chunk_s;
  FailoverSettings set;
  int have_backup;
  const float *fb;
  size_t fb_frames, fb_pos;
  Meter in[2];                  /* MAIN, BACKUP */
  Meter out;                    /* the output's level and silence */
  FailoverInput on_air, active;
  double w[FAILOVER_INPUTS];    /* the switch's crossfade weights, sum 1 */
};

static int
meter_init (Meter * m, size_t window, size_t chunk, size_t fade,
    unsigned channels)
{
  m->sumsq = calloc (window, sizeof (double));
  m->audio = calloc (window, sizeof (size_t));
  m->env = calloc (chunk, sizeof (double));
  m->hist = calloc (fade * channels, sizeof (float));
  m->x = calloc (chunk * channels, sizeof (float));
  m->level = FAILOVER_NO_LEVEL;
  m->tail = -1;
  return m->sumsq && m->audio && m->env && m->hist && m->x ? 0 : -1;
}

static void
meter_clear (Meter * m)
{
  free (m->sumsq);
  free (m->audio);
  free (m->env);
  free (m->hist);
  free (m->x);
}

void
failover_defaults (FailoverSettings * s)
{
  s->loss_s = 0.3;
  s->silence_level_db = -50.0;
  s->silence_s = 10.0;
  s->return_s = 10.0;
  s->fallback_on_silence = 0;
  s->select = FAILOVER_SELECT_AUTO;
}

Failover *
failover_new (unsigned channels, unsigned rate, size_t chunk,
    size_t core_fade)
{
  Failover *f;

  if (channels == 0 || rate == 0 || chunk == 0 || core_fade == 0)
    return NULL;
  f = calloc (1, sizeof (*f));
  if (f == NULL)
    return NULL;
  f->channels = channels;
  f->rate = rate;
  f->chunk = chunk;
  f->core_fade = core_fade;
  f->chunk_s = (double) chunk / rate;
  f->window = (size_t) lround (FAILOVER_LEVEL_WINDOW_S * rate / chunk);
  if (f->window < 1)
    f->window = 1;
  f->xfade = (size_t) lround (FAILOVER_XFADE_S * rate);
  if (meter_init (&f->in[0], f->window, chunk, core_fade, channels) != 0
      || meter_init (&f->in[1], f->window, chunk, core_fade, channels) != 0
      || meter_init (&f->out, f->window, chunk, core_fade, channels) != 0) {
    failover_free (f);
    return NULL;
  }
  failover_defaults (&f->set);
  f->on_air = FAILOVER_MAIN;
  f->active = FAILOVER_NONE;
  f->w[FAILOVER_MAIN] = 1.0;
  return f;
}

void
failover_free (Failover * f)
{
  if (f == NULL)
    return;
  meter_clear (&f->in[0]);
  meter_clear (&f->in[1]);
  meter_clear (&f->out);
  free (f);
}

void
failover_set_settings (Failover * f, const FailoverSettings * s)
{
  f->set = *s;
}

/* straight to `to`, no crossfade (an input that went away) */
static void
put_on_air (Failover * f, FailoverInput to)
{
  f->on_air = to;
  memset (f->w, 0, sizeof (f->w));
  f->w[to] = 1.0;
}

void
failover_set_backup (Failover * f, int present)
{
  f->have_backup = present != 0;
  if (!f->have_backup && f->on_air == FAILOVER_BACKUP)
    put_on_air (f, FAILOVER_MAIN);
}

void
failover_set_fallback (Failover * f, const float *data, size_t frames)
{
  f->fb = frames > 0 ? data : NULL;
  f->fb_frames = data != NULL ? frames : 0;
  f->fb_pos = 0;
  if (f->fb == NULL && f->on_air == FAILOVER_FALLBACK)
    put_on_air (f, FAILOVER_MAIN);
}

static int
present (const Failover * f, FailoverInput i)
{
  return i == FAILOVER_MAIN || (i == FAILOVER_BACKUP && f->have_backup)
      || (i == FAILOVER_FALLBACK && f->fb != NULL);
}

/* the sum of squares of one chunk */
static double
chunk_sumsq (const Failover * f, const float *x)
{
  size_t n = f->chunk * f->channels;
  double sum = 0.0;

  for (size_t i = 0; i < n; i++)
    sum += (double) x[i] * x[i];
  return sum;
}

/* the level, loss and silence after one more chunk whose sum of squares is
 * `sum` (audio: its first frames that are audio) */
static void
measure_sum (Failover * f, Meter * m, double sum, size_t audio)
{
  size_t n = f->chunk * f->channels;

  m->total += sum - m->sumsq[m->pos];
  m->with_audio += (audio > 0) - (m->audio[m->pos] > 0);
  m->sumsq[m->pos] = sum;
  m->audio[m->pos] = audio;
  m->pos = (m->pos + 1) % f->window;
  if (m->pos == 0) {
    m->total = 0.0;
    for (size_t i = 0; i < f->window; i++)
      m->total += m->sumsq[i];
  }
  if (m->with_audio == 0) {
    m->level = FAILOVER_NO_LEVEL;
  } else {
    double ms = m->total / ((double) f->window * (double) n);
    m->level = ms > 0.0 ? 10.0 * log10 (ms) : FAILOVER_NO_LEVEL;
    if (m->level < FAILOVER_NO_LEVEL)
      m->level = FAILOVER_NO_LEVEL;
  }
  if (audio > 0)
    m->seen = 1;
  if (audio >= f->chunk)
    m->lost_s = 0.0;
  else if (audio > 0)
    m->lost_s = (double) (f->chunk - audio) / f->rate;
  else
    m->lost_s += f->chunk_s;
  if (m->level < f->set.silence_level_db || audio == 0)
    m->silent_s += f->chunk_s;
  else
    m->silent_s = 0.0;
  if (audio >= f->chunk && m->level >= f->set.silence_level_db)
    m->healthy_s += f->chunk_s;
  else
    m->healthy_s = 0.0;
}

/* the level, loss and silence of one chunk of x (audio: its first frames
 * that are audio) */
static void
measure (Failover * f, Meter * m, const float *x, size_t audio)
{
  measure_sum (f, m, chunk_sumsq (f, x), audio);
}

/* The core's own gain on each frame of this chunk (bridge.c): a linear
 * fade-in over core_fade frames from each (re)start, gain (i + 1) /
 * core_fade; when it runs dry after `audio` frames, a fade-out over the
 * last n = min(audio, core_fade) of them, gain (n - j) / (n + 1); 0 after. */
static void
envelope (Failover * f, Meter * m, const float *x, size_t audio)
{
  size_t n = audio < f->core_fade ? audio : f->core_fade;
  size_t fade = f->core_fade;
  unsigned ch = f->channels;

  memcpy (m->x, x, f->chunk * ch * sizeof (float));
  if (m->was_running && audio == 0)
    m->tail = 0;                /* ran dry at the chunk's edge: no fade */
  else if (audio > 0)
    m->tail = -1;
  if (!m->was_running && audio > 0)
    m->fade_done = 0;
  for (size_t j = 0; j < f->chunk; j++) {
    double e = 0.0;
    if (m->tail >= 0 && (size_t) m->tail < fade) {
      /* the last frames mirrored: frame t of the tail is the t-th newest */
      size_t t = (size_t) m->tail++;
      size_t src = (m->hist_pos + fade - 1 - t) % fade;
      e = (double) (fade - t) / (double) (fade + 1);
      for (unsigned c = 0; c < ch; c++)
        m->x[j * ch + c] = (float) (e * m->hist[src * ch + c]);
    } else if (j < audio) {
      e = 1.0;
      if (m->fade_done < f->core_fade)
        e = (double) (++m->fade_done) / (double) f->core_fade;
      if (audio < f->chunk && j >= audio - n)
        e *= (double) (n - (j - (audio - n))) / (double) (n + 1);
    }
    m->env[j] = e;
  }
  for (size_t j = 0; j < audio; j++) {
    memcpy (m->hist + m->hist_pos * ch, x + j * ch, ch * sizeof (float));
    m->hist_pos = (m->hist_pos + 1) % fade;
  }
  m->was_running = audio >= f->chunk;
}

static int
connected (const Failover * f, const Meter * m)
{
  return m->seen && m->lost_s < f->set.loss_s;
}

static int
audible (const Failover * f, const Meter * m)
{
  return connected (f, m) && m->silent_s == 0.0;
}

static int
is_lost (const Failover * f, const Meter * m)
{
  return m->lost_s >= f->set.loss_s;
}

static int
is_silent (const Failover * f, const Meter * m)
{
  return m->silent_s >= f->set.silence_s;
}

/* the policy's next input from on_air (AUTO); on_air when it stays */
static FailoverInput
decide (const Failover * f, FailoverReason * why)
{
  const Meter *mm = &f->in[FAILOVER_MAIN], *mb = &f->in[FAILOVER_BACKUP];
  int hb = f->have_backup, hf = f->fb != NULL;

  switch (f->on_air) {
    case FAILOVER_MAIN:
      *why = FAILOVER_REASON_LOSS;
      if (is_lost (f, mm)) {
        if (hb && connected (f, mb))
          return FAILOVER_BACKUP;
        if (hf)
          return FAILOVER_FALLBACK;
        return FAILOVER_MAIN;
      }
      *why = FAILOVER_REASON_SILENCE;
      if (is_silent (f, mm)) {
        if (hb && audible (f, mb))
          return FAILOVER_BACKUP;
        if (hf && f->set.fallback_on_silence && (!hb || is_silent (f, mb)))
          return FAILOVER_FALLBACK;
      }
      return FAILOVER_MAIN;
    case FAILOVER_BACKUP:
      *why = FAILOVER_REASON_RETURN;
      /* healthy for at least one chunk: with return 0, "healthy for 0 s"
       * must not hold for a main without audio (it would swing back each
       * chunk and the loss rule forward again) */
      if (mm->healthy_s > 0.0 && mm->healthy_s >= f->set.return_s)
        return FAILOVER_MAIN;
      *why = FAILOVER_REASON_LOSS;
      if (is_lost (f, mb)) {
        if (connected (f, mm))
          return FAILOVER_MAIN;
        if (hf)
          return FAILOVER_FALLBACK;
        return FAILOVER_BACKUP;
      }
      *why = FAILOVER_REASON_SILENCE;
      if (is_silent (f, mb)) {
        if (audible (f, mm))
          return FAILOVER_MAIN;
        if (hf && f->set.fallback_on_silence && is_silent (f, mm))
          return FAILOVER_FALLBACK;
      }
      return FAILOVER_BACKUP;
    default:
      *why = FAILOVER_REASON_RETURN;
      if (audible (f, mm) && mm->lost_s == 0.0)
        return FAILOVER_MAIN;
      if (hb && audible (f, mb) && mb->lost_s == 0.0)
        return FAILOVER_BACKUP;
      return FAILOVER_FALLBACK;
  }
}

static FailoverInput
forced (const Failover * f)
{
  switch (f->set.select) {
    case FAILOVER_SELECT_MAIN:
      return FAILOVER_MAIN;
    case FAILOVER_SELECT_BACKUP:
      return present (f, FAILOVER_BACKUP) ? FAILOVER_BACKUP : FAILOVER_NONE;
    case FAILOVER_SELECT_FALLBACK:
      return present (f, FAILOVER_FALLBACK) ? FAILOVER_FALLBACK :
          FAILOVER_NONE;
    default:
      return FAILOVER_NONE;
  }
}

static double
lost_of (const Failover * f, FailoverInput i)
{
  return i == FAILOVER_FALLBACK ? 0.0 : f->in[i].lost_s;
}

/* the crossfade's weights one frame on toward on_air, the others scaled so
 * that all sum to 1 */
static void
ramp (Failover * f)
{
  double old = f->w[f->on_air], now, scale;

  if (old >= 1.0)
    return;
  now = old + 1.0 / (double) f->xfade;
  if (now > 1.0 - 1e-9)         /* the sum's rounding: xfade frames */
    now = 1.0;
  scale = (1.0 - now) / (1.0 - old);
  for (int i = 0; i < FAILOVER_INPUTS; i++)
    f->w[i] = (FailoverInput) i == f->on_air ? now : f->w[i] * scale;
}

static void
mix (Failover * f, const float *main, const float *backup, float *out)
{
  const FailoverInput order[FAILOVER_INPUTS] =
      { FAILOVER_MAIN, FAILOVER_BACKUP, FAILOVER_FALLBACK };
  unsigned ch = f->channels;
  int cover = f->set.select == FAILOVER_SELECT_AUTO || forced (f) ==
      FAILOVER_NONE;
  int fb_used = 0;
  double most = 0.0;

  for (size_t j = 0; j < f->chunk; j++) {
    double a[FAILOVER_INPUTS], e[FAILOVER_INPUTS], r = 1.0, gain = 0.0;
    const float *fb = f->fb != NULL ? f->fb + ((f->fb_pos + j) % f->fb_frames)
        * ch : NULL;

    ramp (f);
    e[FAILOVER_MAIN] = f->in[0].env[j];
    e[FAILOVER_BACKUP] = backup != NULL ? f->in[1].env[j] : 0.0;
    e[FAILOVER_FALLBACK] = fb != NULL ? 1.0 : 0.0;
    for (int i = 0; i < FAILOVER_INPUTS; i++) {
      a[i] = f->w[i];
      r -= f->w[i] * e[i];
    }
    /* the cover: what the inputs on air lack, from the next input with
     * audio; its own envelope passes the rest on */
    for (int k = 0; cover && k < FAILOVER_INPUTS && r > 1e-12; k++) {
      int i = order[k];
      /* not the input on air alone: its own fade is what is covered */
      if (e[i] > 0.0 && f->w[i] < 1.0) {
        a[i] += r;
        r -= r * e[i];
      }
    }
    for (int i = 0; i < FAILOVER_INPUTS; i++)
      gain += a[i] * e[i];
    if (gain > most)
      most = gain;
    if (fb != NULL && a[FAILOVER_FALLBACK] > 0.0)
      fb_used = 1;
    for (unsigned c = 0; c < ch; c++) {
      double v = a[FAILOVER_MAIN] * main[j * ch + c];
      if (backup != NULL && a[FAILOVER_BACKUP] != 0.0)
        v += a[FAILOVER_BACKUP] * backup[j * ch + c];
      if (fb != NULL && a[FAILOVER_FALLBACK] != 0.0)
        v += a[FAILOVER_FALLBACK] * fb[c];
      out[j * ch + c] = (float) v;
    }
  }
  /* the file plays on while it is used, from its start when it comes back */
  f->fb_pos = fb_used ? (f->fb_pos + f->chunk) % f->fb_frames : 0;
  f->active = most > 0.0 ? f->on_air : FAILOVER_NONE;
}

int
failover_chunk (Failover * f, const float *main, size_t main_audio,
    const float *backup, size_t backup_audio, float *out, FailoverSwitch * sw)
{
  FailoverInput to = f->on_air;
  FailoverReason why = FAILOVER_REASON_MANUAL;
  int switched = 0;
  double main_sum;

  if (main_audio > f->chunk)
    main_audio = f->chunk;
  if (backup == NULL || !f->have_backup)
    backup_audio = 0;
  if (backup_audio > f->chunk)
    backup_audio = f->chunk;
  main_sum = chunk_sumsq (f, main);
  measure_sum (f, &f->in[FAILOVER_MAIN], main_sum, main_audio);
  if (f->have_backup && backup != NULL)
    measure (f, &f->in[FAILOVER_BACKUP], backup, backup_audio);

  if (!f->have_backup && f->fb == NULL) {
    /* exactly as without failover: MAIN's chunk, whose sum is known */
    if (out != main)
      memcpy (out, main, f->chunk * f->channels * sizeof (float));
    f->active = main_audio > 0 ? FAILOVER_MAIN : FAILOVER_NONE;
    measure_sum (f, &f->out, main_sum, f->active != FAILOVER_NONE ?
        f->chunk : 0);
    return switched;
  } else {
    if (forced (f) != FAILOVER_NONE) {
      to = forced (f);
      why = FAILOVER_REASON_MANUAL;
    } else {
      to = decide (f, &why);
    }
    if (to != f->on_air) {
      sw->from = f->on_air;
      sw->to = to;
      sw->reason = why;
      sw->main_level = f->in[FAILOVER_MAIN].level;
      sw->backup_level = f->have_backup ? f->in[FAILOVER_BACKUP].level :
          FAILOVER_NO_LEVEL;
      sw->main_silent_s = f->in[FAILOVER_MAIN].silent_s;
      sw->backup_silent_s = f->have_backup ?
          f->in[FAILOVER_BACKUP].silent_s : 0.0;
      sw->lost_s = lost_of (f, f->on_air);
      f->on_air = to;
      switched = 1;
    }
    envelope (f, &f->in[FAILOVER_MAIN], main, main_audio);
    if (f->have_backup && backup != NULL)
      envelope (f, &f->in[FAILOVER_BACKUP], backup, backup_audio);
    mix (f, f->in[FAILOVER_MAIN].x, f->have_backup && backup != NULL ?
        f->in[FAILOVER_BACKUP].x : NULL, out);
  }
  measure (f, &f->out, out, f->active != FAILOVER_NONE ? f->chunk : 0);
  return switched;
}

void
failover_status (const Failover * f, FailoverStatus * st)
{
  st->on_air = f->on_air;
  st->active = f->active;
  st->selection = f->set.select;
  st->have_backup = f->have_backup;
  st->have_fallback = f->fb != NULL;
  for (int i = 0; i < 2; i++) {
    const Meter *m = &f->in[i];
    st->input[i].connected = connected (f, m);
    st->input[i].level = m->level;
    st->input[i].silent_s = m->silent_s;
    st->input[i].lost_s = m->lost_s;
    st->input[i].healthy_s = m->healthy_s;
  }
  st->output_level = f->out.level;
  st->output_silent_s = f->out.silent_s;
}

const char *
failover_input_name (FailoverInput i)
{
  static const char *names[] = { "main", "backup", "fallback", "none" };
  return i <= FAILOVER_NONE ? names[i] : "none";
}

const char *
failover_select_name (FailoverSelect s)
{
  static const char *names[] = { "auto", "main", "backup", "fallback" };
  return s <= FAILOVER_SELECT_FALLBACK ? names[s] : "auto";
}

const char *
failover_reason_name (FailoverReason r)
{
  static const char *names[] = { "loss", "silence", "return", "manual" };
  return r <= FAILOVER_REASON_MANUAL ? names[r] : "manual";
}
