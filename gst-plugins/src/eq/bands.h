/* Parser of the parametriceq "bands" string: no GStreamer or GLib types.
 *
 *   bands := band ( "," band )*                1 to EQ_MAX_BANDS bands
 *   band  := [ type ":" ] freq ":" gain [ ":" q ]
 *   type  := "peak"                            (the default; other types
 *                                               such as shelves or passes
 *                                               can be added later)
 *
 * freq in Hz (EQ_FREQ_MIN..EQ_FREQ_MAX), gain in dB (EQ_GAIN_MIN..
 * EQ_GAIN_MAX), q as in the RBJ cookbook (EQ_Q_MIN..EQ_Q_MAX, default
 * EQ_Q_DEFAULT). Numbers are plain decimals: optional sign, digits, optional
 * "." and digits (no exponent, no locale: "." is always the decimal point).
 * Spaces and tabs around fields are ignored.
 */
#ifndef AUDIOENGINE_EQ_BANDS_H
#define AUDIOENGINE_EQ_BANDS_H

#include <stddef.h>

#include "biquad.h"

#ifdef __cplusplus
extern "C" {
#endif

#define EQ_FREQ_MIN 20.0
#define EQ_FREQ_MAX 20000.0
#define EQ_GAIN_MIN -24.0
#define EQ_GAIN_MAX 24.0
#define EQ_Q_MIN 0.1
#define EQ_Q_MAX 30.0
#define EQ_Q_DEFAULT 1.0

/* Parses str into bands[EQ_MAX_BANDS]. Returns the number of bands (1..
 * EQ_MAX_BANDS) or -1 on error, with a message in err (if err != NULL). On
 * error, bands is left untouched. */
int eq_bands_parse (const char *str, EqBand * bands, char *err,
    size_t err_size);

/* 1 when every band has gain 0 (the whole filter is the identity). */
int eq_bands_all_flat (const EqBand * bands, int n);

#ifdef __cplusplus
}
#endif
#endif
