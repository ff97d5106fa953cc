/* meter: lean BS.1770-4 / EBU R128 loudness meter.  See meter.h. */
#include "meter.h"
#include "truepeak.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define NBINS 1000              /* 0.1 LU bins from -70 to +30 LUFS */
#define BIN_LO (-70.0)
#define ABS_GATE (-70.0)
#define SUBS_M 40               /* 400 ms */
#define SUBS_S 300              /* 3 s */
#define TP_BLOCK 1024

typedef struct
{
  unsigned long long count[NBINS];
  double esum[NBINS];
  unsigned long long total;
} Hist;

typedef struct
{
  double s1[2], s2[2];          /* transposed DF-II states of both stages */
} KState;

struct LnMeter
{
  LnMeterConfig cfg;
  double *w;
  double b1[3], a1[3], b2[3], a2[3];
  KState *k;
  unsigned sub_len;             /* frames per 10 ms sub-block */
  unsigned sub_pos;             /* frames in the current sub-block */
  double acc;                   /* weighted energy of the current sub-block */
  double ring[SUBS_S];          /* sub-block energy sums */
  unsigned ring_pos;
  unsigned long long nsub;      /* completed sub-blocks */
  double sum_m, sum_s;
  Hist ihist, lhist, whist;
  double *wring;                /* window ring of block energies (-1: gated out) */
  unsigned wpos;
  unsigned wfill;
  LnTruePeak *tp;
  double peak;
  unsigned long long frames;
  /* the programme measurement (ihist, lhist, peak) since the start or the
   * last ln_meter_reset_measurement: */
  unsigned long long meas_sub;  /* first sub-block wholly inside it */
  unsigned long long meas_frames;       /* frames fed since */
  unsigned tp_skip;             /* true-peak frames still describing audio
                                 * from before it (the interpolator's delay) */
};

void
ln_kweight_coefs (unsigned rate, double b1[3], double a1[3], double b2[3],
    double a2[3])
{
  double f0 = 1681.974450955533;
  double G = 3.999843853973347;
  double Q = 0.7071752369554196;
  double K = tan (M_PI * f0 / (double) rate);
  double Vh = pow (10.0, G / 20.0);
  double Vb = pow (Vh, 0.4996667741545416);
  double a0 = 1.0 + K / Q + K * K;

  b1[0] = (Vh + Vb * K / Q + K * K) / a0;
  b1[1] = 2.0 * (K * K - Vh) / a0;
  b1[2] = (Vh - Vb * K / Q + K * K) / a0;
  a1[0] = 1.0;
  a1[1] = 2.0 * (K * K - 1.0) / a0;
  a1[2] = (1.0 - K / Q + K * K) / a0;

  f0 = 38.13547087602444;
  Q = 0.5003270373238773;
  K = tan (M_PI * f0 / (double) rate);
  a0 = 1.0 + K / Q + K * K;
  b2[0] = 1.0;
  b2[1] = -2.0;
  b2[2] = 1.0;
  a2[0] = 1.0;
  a2[1] = 2.0 * (K * K - 1.0) / a0;
  a2[2] = (1.0 - K / Q + K * K) / a0;
}

static double
energy_to_lufs (double e)
{
  if (!(e > 0.0))
    return -HUGE_VAL;
  return -0.691 + 10.0 * log10 (e);
}

static int
bin_of (double lufs)
{
  int b = (int) floor ((lufs - BIN_LO) * 10.0);
  if (b < 0)
    b = 0;
  if (b >= NBINS)
    b = NBINS - 1;
  return b;
}

static void
hist_add (Hist * h, double e, double lufs)
{
  int b = bin_of (lufs);
  h->count[b]++;
  h->esum[b] += e;
  h->total++;
}

static void
hist_remove (Hist * h, double e)
{
  int b = bin_of (energy_to_lufs (e));
  if (h->count[b] == 0)
    return;
  h->count[b]--;
  h->esum[b] -= e;
  if (h->count[b] == 0 || h->esum[b] < 0.0)
    h->esum[b] = 0.0;
  h->total--;
}

/* Gated mean: absolute gate already applied on insertion; relative gate at
 * `rel` LU under the abs-gated mean.  Returns the first bin kept in *first. */
static double
hist_rel_threshold (const Hist * h, double rel)
{
  double e = 0.0;
  unsigned long long n = 0;
  for (int b = 0; b < NBINS; b++) {
    e += h->esum[b];
    n += h->count[b];
  }
  if (n == 0)
    return HUGE_VAL;
  return energy_to_lufs (e / (double) n) + rel;
}

/* the bin holding the threshold is kept if its mean block is above it */
static int
bin_kept (const Hist * h, int b, double thr_lufs, int thr_bin)
{
  if (h->count[b] == 0)
    return 0;
  if (b > thr_bin)
    return 1;
  if (b < thr_bin)
    return 0;
  return energy_to_lufs (h->esum[b] / (double) h->count[b]) >= thr_lufs;
}

static double
hist_gated (const Hist * h)
{
  double thr = hist_rel_threshold (h, -10.0);
  if (thr == HUGE_VAL)
    return -HUGE_VAL;
  int tb = bin_of (thr);
  if (thr < BIN_LO)
    tb = -1;
  double e = 0.0;
  unsigned long long n = 0;
  for (int b = 0; b < NBINS; b++) {
    if (bin_kept (h, b, thr, tb)) {
      e += h->esum[b];
      n += h->count[b];
    }
  }
  if (n == 0)
    return -HUGE_VAL;
  return energy_to_lufs (e / (double) n);
}

LnMeter *
ln_meter_new (const LnMeterConfig * cfg)
{
  if (cfg->rate < 100 || cfg->channels == 0)
    return NULL;
  LnMeter *m = calloc (1, sizeof *m);
  if (!m)
    return NULL;
  m->cfg = *cfg;
  m->cfg.weights = NULL;
  if (m->cfg.lra_step == 0)
    m->cfg.lra_step = 10;
  m->w = calloc (cfg->channels, sizeof (double));
  m->k = calloc (cfg->channels, sizeof (KState));
  if (cfg->window_blocks)
    m->wring = calloc (cfg->window_blocks, sizeof (double));
  if (cfg->true_peak)
    m->tp = ln_tp_new (cfg->channels, TP_BLOCK);
  if (!m->w || !m->k || (cfg->window_blocks && !m->wring)
      || (cfg->true_peak && !m->tp)) {
    ln_meter_free (m);
    return NULL;
  }
  for (unsigned c = 0; c < cfg->channels; c++)
    m->w[c] = cfg->weights ? cfg->weights[c] : 1.0;
  ln_kweight_coefs (cfg->rate, m->b1, m->a1, m->b2, m->a2);
  m->sub_len = cfg->rate / 100;
  ln_meter_reset (m);
  return m;
}

void
ln_meter_free (LnMeter * m)
{
  if (!m)
    return;
  free (m->w);
  free (m->k);
  free (m->wring);
  ln_tp_free (m->tp);
  free (m);
}

void
ln_meter_reset (LnMeter * m)
{
  memset (m->k, 0, m->cfg.channels * sizeof (KState));
  m->sub_pos = 0;
  m->acc = 0.0;
  memset (m->ring, 0, sizeof m->ring);
  m->ring_pos = 0;
  m->nsub = 0;
  m->sum_m = m->sum_s = 0.0;
  memset (&m->ihist, 0, sizeof m->ihist);
  memset (&m->lhist, 0, sizeof m->lhist);
  memset (&m->whist, 0, sizeof m->whist);
  if (m->wring)
    for (unsigned i = 0; i < m->cfg.window_blocks; i++)
      m->wring[i] = -1.0;
  m->wpos = 0;
  m->wfill = 0;
  if (m->tp)
    ln_tp_reset (m->tp);
  m->peak = 0.0;
  m->frames = 0;
  m->meas_sub = 0;
  m->meas_frames = 0;
  m->tp_skip = 0;
}

void
ln_meter_reset_measurement (LnMeter * m)
{
  memset (&m->ihist, 0, sizeof m->ihist);
  memset (&m->lhist, 0, sizeof m->lhist);
  m->peak = 0.0;
  /* a sub-block under way holds audio from before: the measurement starts
   * at the next sub-block boundary */
  m->meas_sub = m->nsub + (m->sub_pos > 0 ? 1 : 0);
  m->meas_frames = 0;
  /* the peaks found when the next LN_TP_DELAY frames arrive describe the
   * waveform before this instant */
  m->tp_skip = m->tp ? LN_TP_DELAY : 0;
}

size_t
ln_meter_frames_to_step (const LnMeter * m)
{
  unsigned sub_in_step = (unsigned) (m->nsub % 10);
  return (size_t) (10 - sub_in_step) * m->sub_len - m->sub_pos;
}

/* K-weight and accumulate frames [0, n) into the current sub-block.
 * Channels go in pairs through one loop, one channel per lane of a two-double
 * vector (GCC/Clang vector extension, SSE2 on x86-64): half the instructions
 * of two scalar recursions, and the same results. */
typedef double v2d __attribute__ ((vector_size (16)));
#define KSTEP(in, s10, s11, s20, s21, sum) do { \
    double y1_ = b10 * (in) + s10; \
    s10 = b11 * (in) - a11 * y1_ + s11; \
    s11 = b12 * (in) - a12 * y1_; \
    double y2_ = y1_ + s20; \
    s20 = -2.0 * y1_ - a21 * y2_ + s21; \
    s21 = y1_ - a22 * y2_; \
    sum += y2_ * y2_; \
  } while (0)

static void
flush_tiny (KState * k)
{
  if (fabs (k->s1[0]) < 1e-25 && fabs (k->s1[1]) < 1e-25
      && fabs (k->s2[0]) < 1e-25 && fabs (k->s2[1]) < 1e-25)
    k->s1[0] = k->s1[1] = k->s2[0] = k->s2[1] = 0.0;
}

/* Built twice (target_clones): with AVX the same two-lane operations take
 * the three-operand encoding and need no register copies; no FMA in either
 * build, so both give the same results. */
__attribute__ ((target_clones ("avx", "default")))
static void
accumulate (LnMeter * m, const float *x, size_t n)
{
  const unsigned nch = m->cfg.channels;
  const double b10 = m->b1[0], b11 = m->b1[1], b12 = m->b1[2];
  const double a11 = m->a1[1], a12 = m->a1[2];
  const double a21 = m->a2[1], a22 = m->a2[2];
  double acc = 0.0;
  unsigned c = 0;

  for (; c + 1 < nch; c += 2) {
    KState *k = &m->k[c], *q = &m->k[c + 1];
    /* lane 0: channel c, lane 1: channel c + 1; the same operations in the
     * same order as KSTEP, so the same results as two scalar recursions */
    const v2d B10 = { b10, b10 }, B11 = { b11, b11 }, B12 = { b12, b12 };
    const v2d A11 = { a11, a11 }, A12 = { a12, a12 };
    const v2d A21 = { a21, a21 }, A22 = { a22, a22 }, M2 = { -2.0, -2.0 };
    v2d s10 = { k->s1[0], q->s1[0] }, s11 = { k->s1[1], q->s1[1] };
    v2d s20 = { k->s2[0], q->s2[0] }, s21 = { k->s2[1], q->s2[1] };
    v2d sum = { 0.0, 0.0 };
    for (size_t i = 0; i < n; i++) {
      const v2d in = { x[i * nch + c], x[i * nch + c + 1] };
      const v2d y1 = B10 * in + s10;
      s10 = B11 * in - A11 * y1 + s11;
      s11 = B12 * in - A12 * y1;
      const v2d y2 = y1 + s20;
      s20 = M2 * y1 - A21 * y2 + s21;
      s21 = y1 - A22 * y2;
      sum += y2 * y2;
    }
    k->s1[0] = s10[0];
    k->s1[1] = s11[0];
    k->s2[0] = s20[0];
    k->s2[1] = s21[0];
    q->s1[0] = s10[1];
    q->s1[1] = s11[1];
    q->s2[0] = s20[1];
    q->s2[1] = s21[1];
    /* flush tiny states: no denormals through digital silence */
    flush_tiny (k);
    flush_tiny (q);
    acc += m->w[c] * sum[0] + m->w[c + 1] * sum[1];
  }
  for (; c < nch; c++) {
    KState *k = &m->k[c];
    double s10 = k->s1[0], s11 = k->s1[1], s20 = k->s2[0], s21 = k->s2[1];
    double sum = 0.0;
    for (size_t i = 0; i < n; i++) {
      double in = x[i * nch + c];
      KSTEP (in, s10, s11, s20, s21, sum);
    }
    k->s1[0] = s10;
    k->s1[1] = s11;
    k->s2[0] = s20;
    k->s2[1] = s21;
    flush_tiny (k);
    acc += m->w[c] * sum;
  }
  m->acc += acc;
}

void
ln_meter_reset_window (LnMeter * m)
{
  memset (&m->whist, 0, sizeof m->whist);
  if (m->wring)
    for (unsigned i = 0; i < m->cfg.window_blocks; i++)
      m->wring[i] = -1.0;
  m->wpos = 0;
  m->wfill = 0;
}

static void
window_push (LnMeter * m, double e_block, int gated_in)
{
  if (!m->wring)
    return;
  double old = m->wring[m->wpos];
  if (old >= 0.0)
    hist_remove (&m->whist, old);
  if (gated_in) {
    m->wring[m->wpos] = e_block;
    hist_add (&m->whist, e_block, energy_to_lufs (e_block));
  } else {
    m->wring[m->wpos] = -1.0;
  }
  m->wpos = (m->wpos + 1) % m->cfg.window_blocks;
  if (m->wfill < m->cfg.window_blocks)
    m->wfill++;
}

static unsigned
finish_sub_block (LnMeter * m)
{
  unsigned steps = 0;
  double e = m->acc;
  unsigned pos = m->ring_pos;
  unsigned pos_m = (pos + SUBS_S - SUBS_M) % SUBS_S;    /* leaves M window */

  m->sum_m += e - m->ring[pos_m];
  m->sum_s += e - m->ring[pos];
  m->ring[pos] = e;
  m->ring_pos = (pos + 1) % SUBS_S;
  m->nsub++;
  m->acc = 0.0;
  m->sub_pos = 0;

  /* re-sum now and then against rounding drift */
  if (m->nsub % 1000 == 0) {
    double sm = 0.0, ss = 0.0;
    for (unsigned i = 0; i < SUBS_S; i++) {
      ss += m->ring[i];
    }
    for (unsigned i = 0; i < SUBS_M; i++)
      sm += m->ring[(m->ring_pos + SUBS_S - 1 - i) % SUBS_S];
    m->sum_m = sm;
    m->sum_s = ss;
  }
  if (m->sum_m < 0.0)
    m->sum_m = 0.0;
  if (m->sum_s < 0.0)
    m->sum_s = 0.0;

  if (m->nsub % 10 == 0) {
    steps = 1;
    if (m->nsub >= SUBS_M) {
      double eb = m->sum_m / (double) (SUBS_M * m->sub_len);
      double lb = energy_to_lufs (eb);
      int in = lb >= ABS_GATE;
      if (in && m->nsub >= m->meas_sub + SUBS_M)
        hist_add (&m->ihist, eb, lb);
      window_push (m, eb, in);
    }
  }
  if (m->nsub >= m->meas_sub + SUBS_S
      && (m->nsub - m->meas_sub - SUBS_S) % m->cfg.lra_step == 0) {
    double es = m->sum_s / (double) (SUBS_S * m->sub_len);
    double ls = energy_to_lufs (es);
    if (ls >= ABS_GATE)
      hist_add (&m->lhist, es, ls);
  }
  return steps;
}

unsigned
ln_meter_process (LnMeter * m, const float *x, size_t frames)
{
  unsigned steps = 0;
  const unsigned nch = m->cfg.channels;

  if (m->tp) {
    size_t skip = m->tp_skip < frames ? m->tp_skip : frames;
    if (skip > 0) {
      /* through the interpolator (its history), but not into the peak */
      ln_tp_process (m->tp, x, skip, (float) m->peak, NULL);
      m->tp_skip -= (unsigned) skip;
    }
    for (size_t off = skip; off < frames; off += TP_BLOCK) {
      size_t n = frames - off < TP_BLOCK ? frames - off : TP_BLOCK;
      float p = ln_tp_process (m->tp, x + off * nch, n, (float) m->peak, NULL);
      if (p > m->peak)
        m->peak = p;
    }
  }
  m->frames += frames;
  m->meas_frames += frames;
  while (frames > 0) {
    size_t n = m->sub_len - m->sub_pos;
    if (n > frames)
      n = frames;
    accumulate (m, x, n);
    m->sub_pos += (unsigned) n;
    x += n * nch;
    frames -= n;
    if (m->sub_pos == m->sub_len)
      steps += finish_sub_block (m);
  }
  return steps;
}

double
ln_meter_momentary (const LnMeter * m)
{
  return energy_to_lufs (m->sum_m / (double) (SUBS_M * m->sub_len));
}

double
ln_meter_short_term (const LnMeter * m)
{
  return energy_to_lufs (m->sum_s / (double) (SUBS_S * m->sub_len));
}

double
ln_meter_integrated (const LnMeter * m)
{
  return hist_gated (&m->ihist);
}

double
ln_meter_window (const LnMeter * m)
{
  return hist_gated (&m->whist);
}

unsigned
ln_meter_window_count (const LnMeter * m)
{
  return (unsigned) m->whist.total;
}

double
ln_meter_loudness_range (const LnMeter * m)
{
  const Hist *h = &m->lhist;
  double thr = hist_rel_threshold (h, -20.0);
  if (thr == HUGE_VAL)
    return 0.0;
  int tb = bin_of (thr);
  if (thr < BIN_LO)
    tb = -1;
  unsigned long long n = 0;
  for (int b = 0; b < NBINS; b++)
    if (bin_kept (h, b, thr, tb))
      n += h->count[b];
  if (n == 0)
    return 0.0;
  /* percentiles as libebur128: the sorted values at round((n-1)*p) */
  unsigned long long lo_i = (unsigned long long) ((double) (n - 1) * 0.10 + 0.5);
  unsigned long long hi_i = (unsigned long long) ((double) (n - 1) * 0.95 + 0.5);
  double lo = 0.0, hi = 0.0;
  unsigned long long seen = 0;
  int have_lo = 0;
  for (int b = 0; b < NBINS; b++) {
    if (!bin_kept (h, b, thr, tb))
      continue;
    unsigned long long c = h->count[b];
    double mean = energy_to_lufs (h->esum[b] / (double) c);
    if (!have_lo && lo_i < seen + c) {
      lo = mean;
      have_lo = 1;
    }
    if (hi_i < seen + c) {
      hi = mean;
      break;
    }
    seen += c;
  }
  return hi - lo > 0.0 ? hi - lo : 0.0;
}

double
ln_meter_true_peak (const LnMeter * m)
{
  return m->peak;
}

unsigned long long
ln_meter_frames (const LnMeter * m)
{
  return m->frames;
}

double
ln_meter_measured_seconds (const LnMeter * m)
{
  return (double) m->meas_frames / (double) m->cfg.rate;
}
