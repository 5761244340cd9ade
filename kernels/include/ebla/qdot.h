/* ebla_qdot: the error-bounded quantized dot product from C and Fortran.
 *
 *   double value = ebla_qdot(x, y, n, 1e-8, &info);   |value - x^T y| <= info.bound
 *
 * Budget policy and the default ladder {binary64, binary32, binary16, perforate}: the
 * error introduced by approximation is at most tolerance * sum |x_i y_i| (see
 * ebla/kernels/qdot.hpp for the full contract). info may be NULL.
 * On bad input (tolerance <= 0 or NaN, a NULL array with n > 0) the result is NaN,
 * info->status is EBLA_INVALID_ARGUMENT and ebla_last_error() names the problem.
 */
#ifndef EBLA_QDOT_H
#define EBLA_QDOT_H

#include <ebla/ebla.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ebla_qdot_info {
  int status;            /* EBLA_OK, or the error of the call */
  double bound;          /* certified bound on |value - x^T y| */
  size_t count[4];       /* components computed in binary64, binary32, binary16, perforated */
  size_t zeros;          /* components with x_i y_i == 0 */
  int bins;              /* nonempty exponent bins */
  int nonfinite;         /* 1 if x or y held NaN or Inf (value is then the plain dot) */
  double select_seconds; /* time of the selection phase */
  double compute_seconds;/* time of the computation phase */
} ebla_qdot_info;

double ebla_qdot(const double* x, const double* y, size_t n, double tolerance, ebla_qdot_info* info);

#ifdef __cplusplus
}
#endif

#endif /* EBLA_QDOT_H */
