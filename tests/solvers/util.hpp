// Small helpers for the solver tests: matrices from dense arrays, vectors from lists.
#pragma once

#include <ebla/core/error.hpp>
#include <ebla/solvers/operators.hpp>

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdlib>
#include <ostream>
#include <string>
#include <vector>

namespace ebla::test {

/// A CSR matrix as host vectors (to build test matrices and to compare results).
struct HostCsr {
  int rows = 0, cols = 0;
  std::vector<std::size_t> ptr;
  std::vector<int> col;
  std::vector<double> val;
  std::size_t length(std::size_t i) const { return ptr[i + 1] - ptr[i]; }
  bool operator==(const HostCsr& o) const {
    return rows == o.rows && cols == o.cols && ptr == o.ptr && col == o.col && val == o.val;
  }
};

inline std::ostream& operator<<(std::ostream& os, const HostCsr& A) {
  os << A.rows << " x " << A.cols << ":";
  for (std::size_t i = 0; i + 1 < A.ptr.size(); ++i)
    for (std::size_t k = A.ptr[i]; k < A.ptr[i + 1]; ++k) os << " (" << i << ", " << A.col[k] << ") " << A.val[k];
  return os;
}

inline HostCsr to_host(const CsrMatrix& A) {
  const auto p = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), A.graph.row_map);
  const auto c = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), A.graph.entries);
  const auto v = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), A.values);
  return HostCsr{A.numRows(), A.numCols(), std::vector<std::size_t>(p.data(), p.data() + p.extent(0)),
                 std::vector<int>(c.data(), c.data() + c.extent(0)),
                 std::vector<double>(v.data(), v.data() + v.extent(0))};
}

inline std::vector<double> to_host(ConstVector x) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), x);
  return std::vector<double>(h.data(), h.data() + h.extent(0));
}

inline CsrMatrix make_csr(const HostCsr& h) {
  CsrMatrix::row_map_type::non_const_type p("ptr", h.ptr.size());
  CsrMatrix::index_type::non_const_type c("col", h.col.size());
  CsrMatrix::values_type::non_const_type v("val", h.val.size());
  auto hp = Kokkos::create_mirror_view(p);
  auto hc = Kokkos::create_mirror_view(c);
  auto hv = Kokkos::create_mirror_view(v);
  for (std::size_t i = 0; i < h.ptr.size(); ++i) hp(i) = h.ptr[i];
  for (std::size_t k = 0; k < h.col.size(); ++k) hc(k) = h.col[k], hv(k) = h.val[k];
  Kokkos::deep_copy(p, hp);
  Kokkos::deep_copy(c, hc);
  Kokkos::deep_copy(v, hv);
  return CsrMatrix("test", h.rows, h.cols, h.col.size(), v, p, c);
}

/// CSR matrix of the nonzeros of a dense row-major matrix (columns ascending).
inline CsrMatrix csr_from_dense(const std::vector<std::vector<double>>& a, std::size_t ncols = 0) {
  HostCsr h{static_cast<int>(a.size()), static_cast<int>(ncols ? ncols : a.size()), {0}, {}, {}};
  for (const auto& row : a) {
    for (std::size_t j = 0; j < row.size(); ++j)
      if (row[j] != 0) h.col.push_back(static_cast<int>(j)), h.val.push_back(row[j]);
    h.ptr.push_back(h.col.size());
  }
  return make_csr(h);
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

inline std::vector<double> host(ConstVector x) { return to_host(x); }

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
