// Small helpers for the solver tests: matrices from dense arrays, vectors from lists.
#pragma once

#include <ebla/core/error.hpp>
#include <ebla/solvers/operators.hpp>

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdlib>
#include <string>
#include <vector>

namespace ebla::test {

/// CSR matrix of the nonzeros of a dense row-major matrix (columns ascending).
inline CsrMatrix csr_from_dense(const std::vector<std::vector<double>>& a, std::size_t ncols = 0) {
  const std::size_t n = a.size();
  if (ncols == 0) ncols = n;
  std::vector<std::size_t> rows{0};
  std::vector<int> cols;
  std::vector<double> vals;
  for (const auto& row : a) {
    for (std::size_t j = 0; j < row.size(); ++j)
      if (row[j] != 0) {
        cols.push_back(static_cast<int>(j));
        vals.push_back(row[j]);
      }
    rows.push_back(cols.size());
  }
  Kokkos::View<std::size_t*> r("rows", n + 1);
  Kokkos::View<int*> c("cols", cols.size());
  Kokkos::View<double*> v("vals", vals.size());
  auto hr = Kokkos::create_mirror_view(r);
  auto hc = Kokkos::create_mirror_view(c);
  auto hv = Kokkos::create_mirror_view(v);
  for (std::size_t i = 0; i <= n; ++i) hr(i) = rows[i];
  for (std::size_t k = 0; k < cols.size(); ++k) hc(k) = cols[k], hv(k) = vals[k];
  Kokkos::deep_copy(r, hr);
  Kokkos::deep_copy(c, hc);
  Kokkos::deep_copy(v, hv);
  return CsrMatrix("A", static_cast<int>(n), static_cast<int>(ncols), static_cast<std::size_t>(vals.size()), v, r, c);
}

inline Kokkos::View<double**, Kokkos::LayoutRight> dense_view(const std::vector<std::vector<double>>& a) {
  Kokkos::View<double**, Kokkos::LayoutRight> m("A", a.size(), a.empty() ? 0 : a[0].size());
  auto h = Kokkos::create_mirror_view(m);
  for (std::size_t i = 0; i < a.size(); ++i)
    for (std::size_t j = 0; j < a[i].size(); ++j) h(i, j) = a[i][j];
  Kokkos::deep_copy(m, h);
  return m;
}

inline Vector vec(const std::vector<double>& v) {
  Vector x("v", v.size());
  auto h = Kokkos::create_mirror_view(x);
  for (std::size_t i = 0; i < v.size(); ++i) h(i) = v[i];
  Kokkos::deep_copy(x, h);
  return x;
}

inline std::vector<double> host(ConstVector x) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), x);
  return std::vector<double>(h.data(), h.data() + h.extent(0));
}

/// The 27-point HPCCG matrix built entry by entry (independent of StencilOperator).
inline std::vector<std::vector<double>> stencil_dense(int nx, int ny, int nz) {
  const int n = nx * ny * nz;
  std::vector<std::vector<double>> a(n, std::vector<double>(n, 0.0));
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      const int ix = i % nx, iy = i / nx % ny, iz = i / (nx * ny);
      const int jx = j % nx, jy = j / nx % ny, jz = j / (nx * ny);
      if (std::abs(ix - jx) <= 1 && std::abs(iy - jy) <= 1 && std::abs(iz - jz) <= 1) a[i][j] = i == j ? 27 : -1;
    }
  return a;
}

/// The message of the InvalidArgument that f throws ("(no InvalidArgument thrown)" if none).
template <class F>
inline std::string error_of(F&& f) {
  try {
    f();
  } catch (const ebla::InvalidArgument& e) {
    return e.what();
  }
  return "(no InvalidArgument thrown)";
}

inline ::testing::AssertionResult contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "'" << text << "' does not contain '" << part << "'";
}

}  // namespace ebla::test
