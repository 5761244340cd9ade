/* The C interface from C: round, and report a bad format name. */
#include <ebla/ebla.h>
#include <ebla/qdot.h>

#include <stdio.h>
#include <string.h>

int main(void) {
  double y = 0.0;
  if (ebla_round(0.1, "binary16", "nearest_even", 0.0, &y) != EBLA_OK || y != 0x1.998p-4) return 1;
  if (ebla_round(0.1, "binary17", "nearest_even", 0.0, &y) != EBLA_INVALID_ARGUMENT) return 2;
  if (strstr(ebla_last_error(), "binary17") == NULL) return 3;
  /* qdot from C: 1 + 2^-30 + ... the bound must cover the exact value */
  double x[4] = {1.0, 0x1p-30, 3.0, -0.5}, yv[4] = {1.0, 1.0, 0x1p-40, 2.0};
  ebla_qdot_info info;
  const double exact = 1.0 + 0x1p-30 + 3.0 * 0x1p-40 - 1.0;
  const double v = ebla_qdot(x, yv, 4, 1e-6, &info);
  if (info.status != EBLA_OK || !(v - exact <= info.bound && exact - v <= info.bound)) return 4;
  if (ebla_qdot(x, yv, 4, -1.0, &info) == ebla_qdot(x, yv, 4, -1.0, &info) || info.status != EBLA_INVALID_ARGUMENT) return 5;
  printf("consumer_c: ebla_qdot = %a (bound %.3g), bad tolerance says: %s\n", v, info.bound, ebla_last_error());
  /* BLAS-shaped: x read backwards (incx = -1), y every second element: the same products */
  const double xr[4] = {-0.5, 3.0, 0x1p-30, 1.0}, ys[8] = {1.0, 9.0, 1.0, 9.0, 0x1p-40, 9.0, 2.0, 9.0};
  ebla_qdot_options opt;
  ebla_qdot_options_init(&opt);
  opt.tolerance = 1e-6;
  if (ebla_dqdot(4, xr, -1, ys, 2, &opt, &info) != v || info.status != EBLA_OK) return 7;
  /* a tolerance that would perforate every product: the top bin is computed instead */
  opt.tolerance = 1e2;
  if (ebla_dqdot(4, x, 1, x, 1, &opt, &info) == 0.0 || info.kept_top_bin != 1) return 8;
  printf("consumer_c: ebla_dqdot(incx -1, incy 2) = %a\n", v);
  /* a negative length cast to size_t: rejected before any element is read */
  const double bad = ebla_qdot(x, yv, (size_t)-1, 1e-6, &info);
  if (bad == bad || info.status != EBLA_INVALID_ARGUMENT || strstr(ebla_last_error(), "PTRDIFF_MAX") == NULL)
    return 6; /* not NaN, or not the error */
  printf("consumer_c: n = (size_t)-1 says: %s\n", ebla_last_error());
  printf("consumer_c: ebla_round(0.1, binary16) = %a; bad name says: %s\n", y, ebla_last_error());
  return 0;
}
