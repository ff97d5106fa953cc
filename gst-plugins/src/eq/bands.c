/* Parser of the parametriceq "bands" string (see bands.h). */
#include "bands.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static void
set_err (char *err, size_t err_size, const char *fmt, ...)
{
  va_list ap;

  if (err == NULL || err_size == 0)
    return;
  va_start (ap, fmt);
  if (vsnprintf (err, err_size, fmt, ap) < 0)
    err[0] = '\0';
  va_end (ap);
}

static int
is_space (char c)
{
  return c == ' ' || c == '\t';
}

/* Parses a plain decimal number in [s, e) (already trimmed). Returns 0 on
 * success. The value is mantissa / 10^k with the mantissa exact (at most 15
 * significant digits are used) and 10^k exact for k <= 22, so a number such
 * as 2.5 or 0.1 comes out as the correctly rounded double. */
static int
parse_number (const char *s, const char *e, double *out)
{
  int neg = 0, sig = 0, frac = 0, in_frac = 0, any = 0;
  double mant = 0.0;

  if (s < e && (*s == '+' || *s == '-')) {
    neg = (*s == '-');
    s++;
  }
  for (; s < e; s++) {
    if (*s >= '0' && *s <= '9') {
      any = 1;
      if (sig == 0 && *s == '0') {
        /* leading zero */
        if (in_frac)
          frac++;
        continue;
      }
      if (sig >= 15) {
        /* more precision than any of our ranges needs: drop further fraction
         * digits, refuse absurd integer parts */
        if (!in_frac)
          return -1;
        continue;
      }
      mant = mant * 10.0 + (*s - '0');
      sig++;
      if (in_frac)
        frac++;
    } else if (*s == '.' && !in_frac) {
      in_frac = 1;
    } else {
      return -1;
    }
  }
  if (!any)
    return -1;
  *out = (neg ? -mant : mant) / pow (10.0, frac);
  return 0;
}

/* one field: trimmed [s, e) */
typedef struct
{
  const char *s, *e;
} Span;

static Span
trim (const char *s, const char *e)
{
  Span sp;

  while (s < e && is_space (*s))
    s++;
  while (e > s && is_space (e[-1]))
    e--;
  sp.s = s;
  sp.e = e;
  return sp;
}

static int
has_digit (Span f)
{
  const char *p;

  for (p = f.s; p < f.e; p++)
    if (*p >= '0' && *p <= '9')
      return 1;
  return 0;
}

static int
span_eq (Span f, const char *word)
{
  size_t n = strlen (word);

  return (size_t) (f.e - f.s) == n && strncmp (f.s, word, n) == 0;
}

static int
field_number (Span f, double *out)
{
  if (f.s >= f.e || !has_digit (f))
    return -1;
  return parse_number (f.s, f.e, out);
}

static int
parse_band (const char *s, const char *e, int index, EqBand * b, char *err,
    size_t err_size)
{
  Span f[4];
  int nf = 0, first = 0, n;
  const char *p = s, *q;

  for (;;) {
    q = p;
    while (q < e && *q != ':')
      q++;
    if (nf == 4) {
      set_err (err, err_size, "band %d: too many ':' fields", index + 1);
      return -1;
    }
    f[nf++] = trim (p, q);
    if (q >= e)
      break;
    p = q + 1;
  }

  b->type = EQ_BAND_PEAK;
  b->q = EQ_Q_DEFAULT;
  /* optional type prefix: a field that starts with a letter */
  if (f[0].s < f[0].e && ((*f[0].s >= 'a' && *f[0].s <= 'z')
          || (*f[0].s >= 'A' && *f[0].s <= 'Z'))) {
    if (span_eq (f[0], "peak")) {
      b->type = EQ_BAND_PEAK;
    } else {
      set_err (err, err_size, "band %d: unknown band type '%.*s' (only "
          "'peak' is supported)", index + 1, (int) (f[0].e - f[0].s), f[0].s);
      return -1;
    }
    first = 1;
  }
  n = nf - first;
  if (n < 2 || n > 3) {
    set_err (err, err_size, "band %d: expected freq:gain[:q]", index + 1);
    return -1;
  }
  if (field_number (f[first], &b->freq) < 0) {
    set_err (err, err_size, "band %d: bad frequency '%.*s'", index + 1,
        (int) (f[first].e - f[first].s), f[first].s);
    return -1;
  }
  if (field_number (f[first + 1], &b->gain_db) < 0) {
    set_err (err, err_size, "band %d: bad gain '%.*s'", index + 1,
        (int) (f[first + 1].e - f[first + 1].s), f[first + 1].s);
    return -1;
  }
  if (n == 3 && field_number (f[first + 2], &b->q) < 0) {
    set_err (err, err_size, "band %d: bad q '%.*s'", index + 1,
        (int) (f[first + 2].e - f[first + 2].s), f[first + 2].s);
    return -1;
  }
  if (!(b->freq >= EQ_FREQ_MIN && b->freq <= EQ_FREQ_MAX)) {
    set_err (err, err_size, "band %d: frequency %g Hz out of range %g..%g",
        index + 1, b->freq, EQ_FREQ_MIN, EQ_FREQ_MAX);
    return -1;
  }
  if (!(b->gain_db >= EQ_GAIN_MIN && b->gain_db <= EQ_GAIN_MAX)) {
    set_err (err, err_size, "band %d: gain %g dB out of range %g..%g",
        index + 1, b->gain_db, EQ_GAIN_MIN, EQ_GAIN_MAX);
    return -1;
  }
  if (!(b->q >= EQ_Q_MIN && b->q <= EQ_Q_MAX)) {
    set_err (err, err_size, "band %d: q %g out of range %g..%g",
        index + 1, b->q, EQ_Q_MIN, EQ_Q_MAX);
    return -1;
  }
  return 0;
}

int
eq_bands_parse (const char *str, EqBand * bands, char *err, size_t err_size)
{
  EqBand tmp[EQ_MAX_BANDS];
  const char *p, *q, *end;
  int n = 0;

  if (str == NULL) {
    set_err (err, err_size, "no bands (NULL)");
    return -1;
  }
  end = str + strlen (str);
  {
    Span all = trim (str, end);

    if (all.s == all.e) {
      set_err (err, err_size, "no bands (empty string)");
      return -1;
    }
  }
  p = str;
  for (;;) {
    Span b;

    q = p;
    while (q < end && *q != ',')
      q++;
    b = trim (p, q);
    if (b.s == b.e) {
      set_err (err, err_size, "band %d is empty", n + 1);
      return -1;
    }
    if (n == EQ_MAX_BANDS) {
      set_err (err, err_size, "more than %d bands", EQ_MAX_BANDS);
      return -1;
    }
    if (parse_band (b.s, b.e, n, &tmp[n], err, err_size) < 0)
      return -1;
    n++;
    if (q >= end)
      break;
    p = q + 1;
  }
  memcpy (bands, tmp, (size_t) n * sizeof (EqBand));
  return n;
}

int
eq_bands_all_flat (const EqBand * bands, int n)
{
  int i;

  for (i = 0; i < n; i++)
    if (bands[i].gain_db != 0.0)
      return 0;
  return 1;
}
