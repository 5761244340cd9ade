/* ebla's C interface: plain functions for C and Fortran codes.
 *
 * Every function returns 0 on success or a nonzero ebla_status; after a failure,
 * ebla_last_error() describes it (a thread-local message naming the function and value).
 */
#ifndef EBLA_EBLA_H
#define EBLA_EBLA_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ebla_status {
  EBLA_OK = 0,
  EBLA_INVALID_ARGUMENT = 1, /* unknown format or mode name, bad parameter */
  EBLA_INTERNAL_ERROR = 2
} ebla_status;

/* Rounds x to the named format ("binary16", "fp8_e4m3", "custom:t=..,emin=..,emax=..")
 * in the named mode ("nearest_even", "toward_zero", "upward", "downward", "stochastic");
 * `random` in [0, 1) is used by stochastic rounding only. The result goes to *out. */
int ebla_round(double x, const char* format, const char* mode, double random, double* out);

/* Unit roundoff u = 2^-t of the named format, to *out. */
int ebla_unit_roundoff(const char* format, double* out);

/* The message of the last failure in this thread ("" if none). */
const char* ebla_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* EBLA_EBLA_H */
