#include <ebla/solvers/operators.hpp>

#include <ebla/core/error.hpp>
#include <ebla/core/exact.hpp>

#include <KokkosBlas2_gemv.hpp>
#include <KokkosSparse_spmv.hpp>

#include <cmath>
#include <limits>
#include <string>

namespace ebla {

namespace {

using detail::two_prod;
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
  KOKKOS_INLINE_FUNCTION void add_product(double a, double b) {  // a b = p + e exactly
    double p, e;
    two_prod(a, b, p, e);
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

// Sum of r_i^2 in double-double over work items: item(k, acc) adds the squares of its
// residual components (each a double-double sum rounded once); partial sums merge by
// TwoSum.
template <class Item>
struct SquaredResiduals {
  using value_type = DoubleDouble;
  Item item;
  KOKKOS_INLINE_FUNCTION void operator()(const std::size_t k, DoubleDouble& acc) const { item(k, acc); }
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

// ||r|| from `items` work items (see SquaredResiduals).
template <class Item>
double residual_norm_of(std::size_t items, Item item) {
  DoubleDouble sum;
  Kokkos::parallel_reduce("ebla::residual_norm", Kokkos::RangePolicy<Kokkos::DefaultExecutionSpace>(0, items),
                          SquaredResiduals<Item>{item}, sum);
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
  return residual_norm_of(size(), KOKKOS_LAMBDA(const std::size_t i, DoubleDouble& squares) {
    DoubleDouble r;
    r.add(b(i));
    for (std::size_t k = rows(i); k < rows(i + 1); ++k) r.add_product(-vals(k), x(cols(k)));
    squares.add_product(r.value(), r.value());
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
  // one grid line per work item, as in apply(); the -1 entries add x_j exactly
  const int nx = nx_, ny = ny_, nz = nz_;
  const std::ptrdiff_t plane = static_cast<std::ptrdiff_t>(nx) * ny;
  return residual_norm_of(static_cast<std::size_t>(ny) * nz, KOKKOS_LAMBDA(const std::size_t line, DoubleDouble& squares) {
    const int iy = static_cast<int>(line % ny), iz = static_cast<int>(line / ny);
    const std::ptrdiff_t base = iz * plane + static_cast<std::ptrdiff_t>(iy) * nx;
    const int z0 = iz > 0 ? -1 : 0, z1 = iz < nz - 1 ? 1 : 0;
    const int y0 = iy > 0 ? -1 : 0, y1 = iy < ny - 1 ? 1 : 0;
    for (int ix = 0; ix < nx; ++ix) {
      const int x0 = ix > 0 ? -1 : 0, x1 = ix < nx - 1 ? 1 : 0;
      DoubleDouble r;  // b_i - 27 x_i + sum of the neighbours
      r.add(b(base + ix));
      r.add_product(-27.0, x(base + ix));
      for (int dz = z0; dz <= z1; ++dz)
        for (int dy = y0; dy <= y1; ++dy) {
          const std::ptrdiff_t row = base + dz * plane + static_cast<std::ptrdiff_t>(dy) * nx + ix;
          for (int dx = x0; dx <= x1; ++dx)
            if (dz != 0 || dy != 0 || dx != 0) r.add(x(row + dx));
        }
      squares.add_product(r.value(), r.value());
    }
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
  return residual_norm_of(n, KOKKOS_LAMBDA(const std::size_t i, DoubleDouble& squares) {
    DoubleDouble r;
    r.add(b(i));
    for (std::size_t j = 0; j < n; ++j) r.add_product(-A(i, j), x(j));
    squares.add_product(r.value(), r.value());
  });
}

}  // namespace ebla
