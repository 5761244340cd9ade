#include <ebla/solvers/operators.hpp>

#include <ebla/core/error.hpp>
#include <ebla/kernels/qdot_views.hpp>  // two_sum

#include <KokkosBlas2_gemv.hpp>
#include <KokkosSparse_spmv.hpp>

#include <cmath>
#include <limits>
#include <string>

namespace ebla {

namespace {

using detail::two_sum;

// A double-double accumulator: hi + lo carries a sum with about 106 significant bits.
struct DoubleDouble {
  double hi = 0, lo = 0;
  KOKKOS_INLINE_FUNCTION void add(double v) {
    double s, e;
    two_sum(hi, v, s, e);
    hi = s;
    lo += e;
  }
  KOKKOS_INLINE_FUNCTION void add_product(double a, double b) {  // TwoProduct: a b = p + e exactly
    const double p = a * b;
    const double e = std::fma(a, b, -p);
    add(p);
    lo += e;
  }
  KOKKOS_INLINE_FUNCTION double value() const { return hi + lo; }
};

void check_size(const char* function, std::size_t n, ConstVector x, const char* name) {
  if (x.extent(0) != n)
    throw_invalid(function, std::string(name) + " has " + std::to_string(x.extent(0)) + " entries, the operator " +
                                std::to_string(n) + " rows");
}

// Sum of r_i^2 in double-double, r_i = row_residual(i) (each a double-double sum rounded
// once); partial sums merge by TwoSum.
template <class RowResidual>
struct SquaredResiduals {
  using value_type = DoubleDouble;
  RowResidual row_residual;
  KOKKOS_INLINE_FUNCTION void operator()(const std::size_t i, DoubleDouble& acc) const {
    const double r = row_residual(i);
    acc.add_product(r, r);
  }
  KOKKOS_INLINE_FUNCTION void init(DoubleDouble& v) const { v = DoubleDouble{}; }
  KOKKOS_INLINE_FUNCTION void join(DoubleDouble& d, const DoubleDouble& s) const {
    d.add(s.hi);
    d.lo += s.lo;
  }
  KOKKOS_INLINE_FUNCTION void join(volatile DoubleDouble& d, const volatile DoubleDouble& s) const {
    DoubleDouble t{d.hi, d.lo};
    t.add(s.hi);
    t.lo += s.lo;
    d.hi = t.hi;
    d.lo = t.lo;
  }
};

// ||r|| with r_i = row_residual(i).
template <class RowResidual>
double residual_norm_of(std::size_t n, RowResidual row_residual) {
  DoubleDouble sum;
  Kokkos::parallel_reduce("ebla::residual_norm", Kokkos::RangePolicy<Kokkos::DefaultExecutionSpace>(0, n),
                          SquaredResiduals<RowResidual>{row_residual}, sum);
  return std::sqrt(sum.value());
}

}  // namespace

// ---- CSR ---------------------------------------------------------------------------------

CsrOperator::CsrOperator(CsrMatrix A) : A_(std::move(A)) {
  if (A_.numRows() != A_.numCols())
    throw_invalid("ebla::CsrOperator", "the matrix is " + std::to_string(A_.numRows()) + " x " +
                                           std::to_string(A_.numCols()) + ", not square");
}

std::size_t CsrOperator::size() const { return static_cast<std::size_t>(A_.numRows()); }
std::size_t CsrOperator::nonzeros() const { return static_cast<std::size_t>(A_.nnz()); }

void CsrOperator::apply(ConstVector x, Vector y) const { KokkosSparse::spmv("N", 1.0, A_, x, 0.0, y); }

Vector CsrOperator::diagonal() const {
  Vector d("ebla::diagonal", size());
  const auto rows = A_.graph.row_map;
  const auto cols = A_.graph.entries;
  const auto vals = A_.values;
  Kokkos::parallel_for(
      "ebla::csr_diagonal", Kokkos::RangePolicy<Kokkos::DefaultExecutionSpace>(0, size()),
      KOKKOS_LAMBDA(const std::size_t i) {
        double v = 0;
        for (std::size_t k = rows(i); k < rows(i + 1); ++k)
          if (static_cast<std::size_t>(cols(k)) == i) v += vals(k);
        d(i) = v;
      });
  return d;
}

double CsrOperator::residual_norm(ConstVector x, ConstVector b) const {
  check_size("ebla::CsrOperator::residual_norm", size(), x, "x");
  check_size("ebla::CsrOperator::residual_norm", size(), b, "b");
  const auto rows = A_.graph.row_map;
  const auto cols = A_.graph.entries;
  const auto vals = A_.values;
  return residual_norm_of(size(), KOKKOS_LAMBDA(const std::size_t i) {
    DoubleDouble acc;
    acc.add(b(i));
    for (std::size_t k = rows(i); k < rows(i + 1); ++k) acc.add_product(-vals(k), x(cols(k)));
    return acc.value();
  });
}

// ---- 27-point stencil ----------------------------------------------------------------------

StencilOperator::StencilOperator(int nx, int ny, int nz) : nx_(nx), ny_(ny), nz_(nz) {
  if (nx < 1 || ny < 1 || nz < 1)
    throw_invalid("ebla::StencilOperator", "grid " + std::to_string(nx) + " x " + std::to_string(ny) + " x " +
                                               std::to_string(nz) + ": every dimension must be at least 1");
  if (static_cast<double>(nx) * ny * nz > static_cast<double>(std::numeric_limits<int>::max()))
    throw_invalid("ebla::StencilOperator", "grid " + std::to_string(nx) + " x " + std::to_string(ny) + " x " +
                                               std::to_string(nz) + " has more rows than an int holds");
}

std::size_t StencilOperator::nonzeros() const {
  // pairs (i, j) with |i - j| <= 1 on an axis of length m: 3 per point, less the two
  // missing at the ends
  auto line = [](int m) { return static_cast<std::size_t>(3 * m - 2); };
  return line(nx_) * line(ny_) * line(nz_);
}

// y = A x: y_i = 28 x_i - (sum of x_j over the 3 x 3 x 3 block around i, cut by the grid),
// i.e. 27 on the diagonal and -1 for every neighbour inside. Each (iz, iy) line of the
// grid is one work item, taken in chunks of `chunk` points: first the column sums
// t(ix) = sum of x over the (up to) 3 x 3 neighbouring lines at ix (contiguous, vectorised),
// then y(ix) = 28 x(ix) - (t(ix - 1) + t(ix) + t(ix + 1)), cut at the ends of the line.
void StencilOperator::apply(ConstVector x, Vector y) const {
  constexpr int chunk = 256;
  const int nx = nx_, ny = ny_, nz = nz_;
  const std::ptrdiff_t plane = static_cast<std::ptrdiff_t>(nx) * ny;
  Kokkos::parallel_for(
      "ebla::stencil27", Kokkos::RangePolicy<Kokkos::DefaultExecutionSpace>(0, static_cast<std::size_t>(ny) * nz),
      KOKKOS_LAMBDA(const std::size_t line) {
        const int iy = static_cast<int>(line % ny), iz = static_cast<int>(line / ny);
        const std::ptrdiff_t base = iz * plane + static_cast<std::ptrdiff_t>(iy) * nx;
        const int z0 = iz > 0 ? -1 : 0, z1 = iz < nz - 1 ? 1 : 0;
        const int y0 = iy > 0 ? -1 : 0, y1 = iy < ny - 1 ? 1 : 0;
        double t[chunk + 2];  // t[k] is the column sum at ix = c0 - 1 + k
        for (int c0 = 0; c0 < nx; c0 += chunk) {
          const int lo = c0 > 0 ? c0 - 1 : 0, hi = c0 + chunk < nx ? c0 + chunk : nx - 1;  // columns [lo, hi]
          for (int ix = lo; ix <= hi; ++ix) t[ix - c0 + 1] = 0;
          for (int dz = z0; dz <= z1; ++dz)
            for (int dy = y0; dy <= y1; ++dy) {
              const std::ptrdiff_t row = base + dz * plane + static_cast<std::ptrdiff_t>(dy) * nx;
              for (int ix = lo; ix <= hi; ++ix) t[ix - c0 + 1] += x(row + ix);
            }
          const int end = c0 + chunk < nx ? c0 + chunk : nx;
          for (int ix = c0; ix < end; ++ix) {
            const double left = ix > 0 ? t[ix - c0] : 0.0, right = ix < nx - 1 ? t[ix - c0 + 2] : 0.0;
            y(base + ix) = 28.0 * x(base + ix) - (left + t[ix - c0 + 1] + right);
          }
        }
      });
}

Vector StencilOperator::diagonal() const {
  Vector d("ebla::diagonal", size());
  Kokkos::deep_copy(d, 27.0);
  return d;
}

double StencilOperator::residual_norm(ConstVector x, ConstVector b) const {
  check_size("ebla::StencilOperator::residual_norm", size(), x, "x");
  check_size("ebla::StencilOperator::residual_norm", size(), b, "b");
  const int nx = nx_, ny = ny_, nz = nz_;
  return residual_norm_of(size(), KOKKOS_LAMBDA(const std::size_t i) {
    const int ix = static_cast<int>(i % nx), iy = static_cast<int>(i / nx % ny), iz = static_cast<int>(i / nx / ny);
    DoubleDouble acc;
    acc.add(b(i));
    for (int dz = -1; dz <= 1; ++dz)
      for (int dy = -1; dy <= 1; ++dy)
        for (int dx = -1; dx <= 1; ++dx) {
          const int jx = ix + dx, jy = iy + dy, jz = iz + dz;
          if (jx < 0 || jx >= nx || jy < 0 || jy >= ny || jz < 0 || jz >= nz) continue;
          const std::size_t j = (static_cast<std::size_t>(jz) * ny + jy) * nx + jx;
          acc.add_product(j == i ? -27.0 : 1.0, x(j));
        }
    return acc.value();
  });
}

// ---- dense ---------------------------------------------------------------------------------

DenseOperator::DenseOperator(Kokkos::View<double**, Kokkos::LayoutRight> A) : A_(std::move(A)) {
  if (A_.extent(0) != A_.extent(1))
    throw_invalid("ebla::DenseOperator", "the matrix is " + std::to_string(A_.extent(0)) + " x " +
                                             std::to_string(A_.extent(1)) + ", not square");
}

void DenseOperator::apply(ConstVector x, Vector y) const { KokkosBlas::gemv("N", 1.0, A_, x, 0.0, y); }

Vector DenseOperator::diagonal() const {
  Vector d("ebla::diagonal", size());
  const auto A = A_;
  Kokkos::parallel_for(
      "ebla::dense_diagonal", Kokkos::RangePolicy<Kokkos::DefaultExecutionSpace>(0, size()),
      KOKKOS_LAMBDA(const std::size_t i) { d(i) = A(i, i); });
  return d;
}

double DenseOperator::residual_norm(ConstVector x, ConstVector b) const {
  check_size("ebla::DenseOperator::residual_norm", size(), x, "x");
  check_size("ebla::DenseOperator::residual_norm", size(), b, "b");
  const auto A = A_;
  const std::size_t n = size();
  return residual_norm_of(n, KOKKOS_LAMBDA(const std::size_t i) {
    DoubleDouble acc;
    acc.add(b(i));
    for (std::size_t j = 0; j < n; ++j) acc.add_product(-A(i, j), x(j));
    return acc.value();
  });
}

}  // namespace ebla
