/* failover: which input the clock bridge puts on air (pure C, no GStreamer
 * types).
 *
 * Inputs: MAIN (the `sink` pad's core), BACKUP (the `backup` pad's core,
 * when the pad exists) and FALLBACK (a looped file, when one is set).  The
 * element reads every core on every output chunk (the backup is hot) and
 * hands the chunks here with, for each core, how many of its frames carry
 * audio (clock_bridge_read's return: the core ran dry after them, or 0 when
 * it was filling).  failover_chunk measures each input, decides, and mixes
 * the output chunk.
 *
 * Per input, per chunk:
 *   audio     the core produced audio in this chunk (frames > 0);
 *   lost_s    time since its last frame of audio;
 *   level     short-term level: mean square of all channels over the last
 *             FAILOVER_LEVEL_WINDOW_S of its output (silence counts as 0),
 *             10 log10, dBFS (a full-scale sine -3.01); FAILOVER_NO_LEVEL
 *             when the window held no audio at all;
 *   silent_s  time its level has been below the silence level or it had no
 *             audio (0 while audible);
 *   healthy_s time it has had audio in every frame and been audible.
 *   connected: lost_s < loss.  The fallback always has audio.
 *
 * Policy, settings.select == AUTO (on = the input on air, MAIN at start):
 *   on MAIN:     lost_s >= loss: to BACKUP if it is connected (reason
 *                loss), else to FALLBACK if there is one (loss).
 *                silent_s >= silence and BACKUP audible: to BACKUP
 *                (silence); both silent: stay, or with
 *                fallback_on_silence to FALLBACK when BACKUP (if any) has
 *                been silent as long (silence).
 *   on BACKUP:   MAIN healthy for `ret`: to MAIN (return).  Else the same
 *                rules as on MAIN with the two exchanged (a lost backup goes
 *                to a connected main: loss; a silent backup to an audible
 *                main: silence).
 *   on FALLBACK: to MAIN as soon as it has audio and is audible, else to
 *                BACKUP the same way (return).
 * A main that comes and goes never has healthy_s >= ret, so it does not
 * pull the output back.  select MAIN/BACKUP/FALLBACK forces that input
 * (reason manual; an input that does not exist is not selected); AUTO
 * hands back to the policy from where it is.
 *
 * Mixing: every switch is a linear crossfade of FAILOVER_XFADE_S (the
 * weights of all inputs sum to 1).  Cover (AUTO only): when the input on
 * air has no audio (a stall shorter than `loss`, or the core's own fade-out
 * as it runs dry), the gain it lacks goes to the first other input with
 * audio, in the order MAIN, BACKUP, FALLBACK.  The cores fade their own
 * audio in and out linearly over `core_fade` frames (bridge.c: at a start
 * or resume, and when they run dry); the mixer models those envelopes
 * exactly, so the cover's gain is their complement and the output's gain
 * stays 1: a loss leaves no hole.
 *
 * Without a backup and a fallback the output is MAIN's chunk unchanged
 * (the input may be the output buffer); only the measurements run. */
#ifndef CLOCK_FAILOVER_H
#define CLOCK_FAILOVER_H

#include <stddef.h>

#define FAILOVER_LEVEL_WINDOW_S 0.4
#define FAILOVER_XFADE_S 0.010
#define FAILOVER_NO_LEVEL -200.0

typedef enum
{
  FAILOVER_MAIN = 0,
  FAILOVER_BACKUP = 1,
  FAILOVER_FALLBACK = 2,
  FAILOVER_NONE = 3             /* nothing audible on air */
} FailoverInput;

#define FAILOVER_INPUTS 3

typedef enum
{
  FAILOVER_SELECT_AUTO = 0,
  FAILOVER_SELECT_MAIN,
  FAILOVER_SELECT_BACKUP,
  FAILOVER_SELECT_FALLBACK
} FailoverSelect;

typedef enum
{
  FAILOVER_REASON_LOSS = 0,
  FAILOVER_REASON_SILENCE,
  FAILOVER_REASON_RETURN,
  FAILOVER_REASON_MANUAL
} FailoverReason;

typedef struct
{
  double loss_s;                /* failover-loss */
  double silence_level_db;      /* failover-silence-level */
  double silence_s;             /* failover-silence */
  double return_s;              /* failover-return */
  int fallback_on_silence;
  FailoverSelect select;
} FailoverSettings;

typedef struct
{
  FailoverInput from, to;
  FailoverReason reason;
  double main_level, backup_level;      /* dBFS */
  double main_silent_s, backup_silent_s;
  double lost_s;                /* how long `from` had had no audio */
} FailoverSwitch;

typedef struct
{
  int connected;
  double level;                 /* dBFS, FAILOVER_NO_LEVEL: no audio */
  double silent_s;
  double lost_s;
  double healthy_s;
} FailoverInputStatus;

typedef struct
{
  FailoverInput on_air;         /* the policy's input */
  FailoverInput active;         /* on_air, or NONE when no audio went out */
  FailoverSelect selection;
  int have_backup, have_fallback;
  FailoverInputStatus input[2]; /* MAIN, BACKUP */
  double output_level, output_silent_s;
} FailoverStatus;

typedef struct Failover Failover;

/* NULL when out of memory or a value is 0; chunk: frames per call; rate:
 * frames per second; core_fade: the cores' own fade, frames
 * (CLOCK_BRIDGE_FADE_S x rate) */
Failover *failover_new (unsigned channels, unsigned rate, size_t chunk,
    size_t core_fade);
void failover_free (Failover * f);
void failover_defaults (FailoverSettings * s);
/* takes effect at the next chunk */
void failover_set_settings (Failover * f, const FailoverSettings * s);
void failover_set_backup (Failover * f, int present);
/* interleaved frames, channels as failover_new's, kept by the caller for
 * the object's life; NULL or 0 frames: none.  Played looped, from its
 * start each time it goes on air or covers. */
void failover_set_fallback (Failover * f, const float *data, size_t frames);
/* One chunk.  main/backup: the cores' chunks (backup NULL without one),
 * main_audio/backup_audio: how many of their first frames are audio; out:
 * the output chunk (may be main when there is neither a backup nor a
 * fallback).  Returns 1 and fills *sw when the policy switched. */
int failover_chunk (Failover * f, const float *main, size_t main_audio,
    const float *backup, size_t backup_audio, float *out,
    FailoverSwitch * sw);
void failover_status (const Failover * f, FailoverStatus * st);

const char *failover_input_name (FailoverInput i);
const char *failover_select_name (FailoverSelect s);
const char *failover_reason_name (FailoverReason r);

#endif
