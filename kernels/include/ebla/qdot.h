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

/* ---- A stored vector for many dot products ------------------------------------------------
 *
 *   ebla_qdot_stored_vector* xs = NULL;
 *   ebla_qdot_store(n, x, incx, &opt, &xs);              select on x once, store it
 *   double v = ebla_qdot_stored(xs, n, y, incy, &info);   |v - x^T y| <= info.bound
 *   ebla_qdot_stored_free(xs);
 *
 * ebla_qdot_store selects the levels of x's exponent bins (budget policy, opt->ladder of
 * binary64, binary32, binary16, bfloat16 and perforate; opt may be NULL) so that
 * ||x~ - x||_1 <= tolerance ||x||_1 for the stored x~, and keeps x in the formats they allow
 * (see ebla/kernels/qdot_stored.hpp). Then every y of n elements gives
 * |x~^T y - x^T y| <= tolerance ||x||_1 ||y||_inf, and ebla_qdot_stored returns x~^T y with a
 * bound certified for that y (info: status, bound, components per ladder level as stored,
 * zeros of x, bins, kept_top_bin, the time of the call in compute_seconds; select_seconds is
 * that of the store). Increments as in ebla_dqdot. The handle is owned by the caller
 * (ebla_qdot_stored_free; NULL is ignored) and may be used from several threads at once.
 * These calls run Kokkos kernels: the first one initialises Kokkos if the program has not
 * (and finalises it at exit). On bad input (bad options, a NULL array with n > 0, NaN or Inf
 * in x or y, a y of another length) ebla_qdot_store returns EBLA_INVALID_ARGUMENT and leaves
 * *stored NULL, ebla_qdot_stored returns NaN with info->status set, and ebla_last_error()
 * names the function and the value. */
typedef struct ebla_qdot_stored_vector ebla_qdot_stored_vector;
int ebla_qdot_store(size_t n, const double* x, ptrdiff_t incx, const ebla_qdot_options* options,
                    ebla_qdot_stored_vector** stored);
double ebla_qdot_stored(const ebla_qdot_stored_vector* stored, size_t n, const double* y, ptrdiff_t incy,
                        ebla_qdot_info* info);
/* Bytes the stored vector holds (its words and its tiles' data); 0 for NULL. */
size_t ebla_qdot_stored_bytes(const ebla_qdot_stored_vector* stored);
void ebla_qdot_stored_free(ebla_qdot_stored_vector* stored);

#ifdef __cplusplus
}
#endif

#endif /* EBLA_QDOT_H */
