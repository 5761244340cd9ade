/* ebla_qdot: the error-bounded quantized dot product from C and Fortran.
 *
 *   double value = ebla_qdot(x, y, n, 1e-8, &info);   |value - x^T y| <= info.bound
 *
 * Budget policy and the default ladder {binary64, binary32, binary16, perforate}: the
 * error introduced by approximation is at most tolerance * sum |x_i y_i| (see
 * ebla/kernels/qdot.hpp for the full contract). info may be NULL. At tolerances that would
 * perforate every product (about 4 and above), the top bin is computed instead
 * (info->kept_top_bin).
 * On bad input (tolerance <= 0 or NaN, a NULL array with n > 0) the result is NaN,
 * info->status is EBLA_INVALID_ARGUMENT and ebla_last_error() names the problem.
 * x and y are arrays in host memory; the call runs on every thread of Kokkos' default host
 * execution space, in any build (a CUDA build's device is not used).
 */
#ifndef EBLA_QDOT_H
#define EBLA_QDOT_H

#include <ebla/ebla.h>
#include <stddef.h> /* size_t, ptrdiff_t */

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ebla_qdot_info {
  int status;            /* EBLA_OK, or the error of the call */
  double bound;          /* certified bound on |value - x^T y| */
  size_t count[4];       /* components per ladder level, in order (default ladder of double:
                            binary64, binary32, binary16, perforated); levels past the fourth
                            are not reported */
  size_t zeros;          /* components with x_i y_i == 0 */
  int bins;              /* nonempty exponent bins */
  int nonfinite;         /* 1 if x or y held NaN or Inf (value is then the plain dot) */
  double select_seconds; /* time of the selection phase */
  double compute_seconds;/* time of the computation phase */
  int kept_top_bin;      /* 1 if the tolerance allowed perforating every product: the calls
                            of this header then compute the largest products' bin at the
                            least precise level that is not perforate, so that a nonzero
                            x^T y never comes back as exactly 0 from nothing computed */
} ebla_qdot_info;

double ebla_qdot(const double* x, const double* y, size_t n, double tolerance, ebla_qdot_info* info);

/* ---- BLAS-shaped calls ------------------------------------------------------------------
 *
 *   ebla_qdot_options opt;
 *   ebla_qdot_options_init(&opt);               tolerance 1e-8, budget, default ladder
 *   opt.tolerance = 1e-6;
 *   double v = ebla_dqdot(n, x, incx, y, incy, &opt, &info);   as ddot(n, x, incx, y, incy)
 *
 * Element i of x is x[i * incx] for incx >= 0 and x[(n - 1 - i) * (-incx)] for incx < 0, as
 * BLAS defines it (incx = 0 repeats x[0]); likewise y. The products are those of the
 * contiguous arrays in that order, so a call with increments 1 gives the bits of ebla_qdot
 * and of ebla::qdot. Strided arrays are gathered into contiguous ones first; a vector of
 * increment 0 is not copied (its one value is read where a copy would hold it: the same
 * bits). An n beyond what an array or the memory available holds is EBLA_INVALID_ARGUMENT,
 * found before any allocation, its message naming the function and n. opt may be
 * NULL (the defaults); info may be NULL. ebla_sqdot takes float arrays (ladder default
 * {binary32, binary16, perforate}) and returns its value as a double. Safe to call from
 * several threads at once. On bad input the result is NaN, info->status is
 * EBLA_INVALID_ARGUMENT and ebla_last_error() names the function and the value. */
typedef struct ebla_qdot_options {
  double tolerance;   /* > 0 */
  const char* policy; /* "budget" (NULL: budget) or "paper" */
  const char* ladder; /* e.g. "binary64,binary32,binary16,perforate"; NULL: the default. Levels
                         are separated by ';' or ','; a custom format keeps its own key=value
                         pieces: "binary64;custom:t=8,emin=-6,emax=7;perforate" */
} ebla_qdot_options;

/* The defaults: tolerance 1e-8, budget policy, the default ladder. */
void ebla_qdot_options_init(ebla_qdot_options* options);

double ebla_dqdot(size_t n, const double* x, ptrdiff_t incx, const double* y, ptrdiff_t incy,
                  const ebla_qdot_options* options, ebla_qdot_info* info);
double ebla_sqdot(size_t n, const float* x, ptrdiff_t incx, const float* y, ptrdiff_t incy,
                  const ebla_qdot_options* options, ebla_qdot_info* info);

/* Plan reuse (the two phases of qdot): select once, compute on other vectors of the same
 * length and type. *plan receives a handle owned by the caller (ebla_qdot_plan_destroy;
 * NULL is ignored); it may be used from any thread. Return EBLA_OK or an ebla_status. */
typedef struct ebla_qdot_plan ebla_qdot_plan;
int ebla_dqdot_select(size_t n, const double* x, ptrdiff_t incx, const double* y, ptrdiff_t incy,
                      const ebla_qdot_options* options, ebla_qdot_plan** plan);
int ebla_sqdot_select(size_t n, const float* x, ptrdiff_t incx, const float* y, ptrdiff_t incy,
                      const ebla_qdot_options* options, ebla_qdot_plan** plan);
double ebla_dqdot_compute(const ebla_qdot_plan* plan, size_t n, const double* x, ptrdiff_t incx, const double* y,
                          ptrdiff_t incy, ebla_qdot_info* info);
double ebla_sqdot_compute(const ebla_qdot_plan* plan, size_t n, const float* x, ptrdiff_t incx, const float* y,
                          ptrdiff_t incy, ebla_qdot_info* info);
void ebla_qdot_plan_destroy(ebla_qdot_plan* plan);

#ifdef __cplusplus
}
#endif

#endif /* EBLA_QDOT_H */
