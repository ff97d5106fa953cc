/* gainlaw: the causal normalisation gain (pure C, no GStreamer types).
 *
 * Every 100 ms ln_gain_update() sets a desired gain that aims the output
 * short-term loudness at target + clamp(S - I_ref, +-lra_half) plus a slow
 * integral correction on the output's own long-term gated loudness; the
 * gain is frozen in pauses (momentary < -70 LUFS or short-term < I_ref - 20
 * LU) and clamped to max_gain; onsets (momentary > short-term + 6 LU) take
 * a faster downward path.  ln_gain_advance() moves the applied gain towards
 * the desired one with a one-pole smoother in dB. */
#ifndef LN_GAINLAW_H
#define LN_GAINLAW_H

#include <stddef.h>

typedef struct
{
  double target;                /* LUFS */
  double max_gain;              /* dB */
  double min_gain;              /* dB */
  double lra_half;              /* LU: output short-term kept within +- this */
  double tau_fall, tau_rise, tau_onset; /* s */
  double onset_lu;              /* momentary above short-term that is an onset */
  double integ_tau;             /* s, integral correction time constant */
  double integ_bound;           /* dB */
} LnGainParams;

typedef struct
{
  LnGainParams p;
  double desired;               /* dB */
  double current;               /* dB, smoothed */
  double corr;                  /* dB, integral correction */
  int onset;
  int started;                  /* updates of programme seen (up to 10: start-up) */
  int frozen;
} LnGainLaw;

void ln_gain_defaults (LnGainParams * p);
void ln_gain_init (LnGainLaw * g, const LnGainParams * p);

/* All loudness values in LUFS (-HUGE_VAL for none).  ref_ok: in_ref is
 * based on enough blocks; out_ok: likewise out_long. */
void ln_gain_update (LnGainLaw * g, double in_m, double in_s, double in_ref,
    int ref_ok, double out_long, int out_ok);

/* Advance the smoother by n frames; returns the applied gain in dB. */
double ln_gain_advance (LnGainLaw * g, size_t n, unsigned rate);

#endif
