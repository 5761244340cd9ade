// A matrix for the tests of CG's finite-precision regime (solvers/src/lanczos_condition.hpp).
#pragma once

#include "util.hpp"

#include <cmath>

namespace ebla::test {

// A diagonal matrix in the finite-precision regime of CG: n - 10 eigenvalues spread
// geometrically from 1 to 1e4 and ten isolated ones above, 1e5 2^j (j = 0..9).
inline CsrMatrix isolated_top_diagonal(int n) {
  HostCsr h{n, n, {0}, {}, {}};
  for (int i = 0; i < n; ++i) {
    h.col.push_back(i);
    h.val.push_back(i < n - 10 ? std::pow(1e4, i / (n - 11.0)) : 1e5 * std::ldexp(1.0, i - (n - 10)));
    h.ptr.push_back(h.col.size());
  }
  return make_csr(h);
}

}  // namespace ebla::test
