// The reference of ebla::gemm: A B correctly rounded to binary64, and the observed error.
#include "gemm_internal.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace ebla::gemm_detail {

// ---- the reference --------------------------------------------------------------------------

/// A B correctly rounded to binary64: every product exact, the sum exact, one rounding. An
/// entry with an inf or NaN factor is what IEEE arithmetic gives whatever the order: NaN for a
/// NaN, inf * 0 or inf - inf, else the infinity.
HostMatrix exact_product(const ConstHostMatrix& A, const ConstHostMatrix& B) {
  const std::int64_t m = A.extent(0), k = A.extent(1), n = B.extent(1);
  HostMatrix E("exact", m, n);
  const detail::RoundingTarget rt =
      detail::rounding_target(formats::binary64(), Rounding::nearest_even, true);
  Kokkos::parallel_for(
      "ebla::gemm_reference",
      Kokkos::MDRangePolicy<Kokkos::DefaultHostExecutionSpace, Kokkos::Rank<2>>({0, 0}, {m, n}),
      [=](const std::int64_t i, const std::int64_t j) {
        detail::Wide w;
        w.clear(detail::wide_limbs, -2148);  // binary64 products are multiples of 2^-2148
        bool finite = true;
        double nonfinite = 0.0;  // the IEEE sum of the products with an inf or NaN factor
        for (std::int64_t l = 0; l < k; ++l) {
          const detail::Term t = detail::product_term(A(i, l), B(l, j));
          if (!t.finite()) {
            finite = false;
            nonfinite += t.nonfinite;
          } else if (!t.zero()) {
            w.add(t);
          }
        }
        const bool negative = w.take_sign();
        if (!finite) E(i, j) = nonfinite;  // inf + (a finite exact sum) = inf
        else E(i, j) = w.leading_bit() < 0 ? 0.0 : detail::round_wide(w, negative, rt);
      });
  return E;
}

/// The observed error: ||C - A B||_inf (each row's sum in order) and max_ij |C - A B|_ij / bound_ij.
void observe(const ConstHostMatrix& A, const ConstHostMatrix& B, GemmResult& r) {
  r.exact = exact_product(A, B);
  const std::int64_t m = r.C.extent(0), n = r.C.extent(1);
  const bool ratios = r.bound.size() > 0;
  std::vector<double> row_error(static_cast<std::size_t>(m), 0.0), row_ratio(row_error.size(), 0.0);
  for_each_row(m, n, [&](std::int64_t i) {
    double row = 0, ratio = 0;
    for (std::int64_t j = 0; j < n; ++j) {
      const double err = std::fabs(r.C(i, j) - r.exact(i, j));
      row += err;
      if (ratios && err > 0) ratio = std::max(ratio, err / r.bound(i, j));
    }
    row_error[static_cast<std::size_t>(i)] = row;
    row_ratio[static_cast<std::size_t>(i)] = ratio;
  });
  r.observed_normwise = 0;
  r.observed_max_ratio = ratios ? 0 : -1;
  for (std::size_t i = 0; i < row_error.size(); ++i) {
    r.observed_normwise = std::max(r.observed_normwise, row_error[i]);
    if (ratios) r.observed_max_ratio = std::max(r.observed_max_ratio, row_ratio[i]);
  }
}

}  // namespace ebla::gemm_detail
