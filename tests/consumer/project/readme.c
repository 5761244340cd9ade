/* The C example of README.md, whole: the part between "README: begin" and "README: end" is the
   block of the README as shown there (tests/apps/doc_snippets.py compares them); this
   program, built against an installed ebla, runs it and checks what it computes. */
#include <ebla/qdot.h>

#include <math.h>
#include <stdio.h>

enum { n = 1000 };

int main(void) {
  static double x[n], y[n], y2[2 * n - 1]; /* y2: y at every second place, from the end */
  for (int i = 0; i < n; ++i) {
    x[i] = 1.0 / (i + 1);
    y[i] = (i % 3) - 1.0;
    y2[2 * (n - 1 - i)] = y[i];
  }
  /* README: begin */
#include <ebla/qdot.h>

ebla_qdot_info info;
double v = ebla_qdot(x, y, n, 1e-8, &info);             /* |v - x^T y| <= info.bound */
if (info.status != EBLA_OK) fprintf(stderr, "%s\n", ebla_last_error());

ebla_qdot_options opt;                                  /* as BLAS ddot: n, x, incx, y, incy */
ebla_qdot_options_init(&opt);
opt.tolerance = 1e-6;
opt.policy = "paper";
double w = ebla_dqdot(n, x, 1, y2, -2, &opt, &info);    /* y2: 2 n - 1 doubles, y read backwards */
  /* README: end */
  double exact = 0.0; /* x^T y, summed from the smallest terms */
  for (int i = n - 1; i >= 0; --i) exact += x[i] * y[i];
  const double w_bound = info.bound;
  ebla_qdot_info v_info; /* v's bound: the same call again gives the same bits */
  const double v_again = ebla_qdot(x, y, n, 1e-8, &v_info);
  int failures = 0;
  if (v_again != v || !(fabs(v - exact) <= v_info.bound + 1e-13)) ++failures;
  if (info.status != EBLA_OK || !(fabs(w - exact) <= w_bound + 1e-13)) ++failures;
  printf("readme_c: x^T y = %.6f, qdot %.6f (bound %.2g), strided qdot %.6f (bound %.2g), %d failures\n", exact, v,
         v_info.bound, w, w_bound, failures);
  return failures == 0 ? 0 : 1;
}
