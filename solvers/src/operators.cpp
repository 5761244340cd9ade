#include <ebla/solvers/operators.hpp>

#include <ebla/core/error.hpp>
#include <ebla/core/exact.hpp>

#include <KokkosBlas2_gemv.hpp>
#include <KokkosSparse_spmv.hpp>

#include "cg_steps.hpp"
#include "csr_words.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>

namespace ebla {

namespace {

template <class V>  // a Vector, or refined_cg's float vectors
void check_size(const char* function, std::size_t n, const V& x, const char* name) {
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
  KOKKOS_INLINE_FUNCTION void join(DoubleDouble& d, const DoubleDouble& s) const { d.join(s); }
#if KOKKOS_VERSION < 40000  // Kokkos 3 joins volatile partial sums; Kokkos 4 deprecates this form
  KOKKOS_INLINE_FUNCTION void join(volatile DoubleDouble& d, const volatile DoubleDouble& s) const {
    DoubleDouble t{d.hi, d.lo};
    t.join(DoubleDouble{s.hi, s.lo});
    d.hi = t.hi;
    d.lo = t.lo;
  }
#endif
};

// sum of r_i^2 from `items` work items (see SquaredResiduals).
template <class Item>
DoubleDouble squared_residuals(std::size_t items, Item item) {
  DoubleDouble sum;
  Kokkos::parallel_reduce("ebla::residual_norm", Kokkos::RangePolicy<Kokkos::DefaultExecutionSpace>(0, items),
                          SquaredResiduals<Item>{item}, sum);
  return sum;
}

// ||r|| from `items` work items.
template <class Item>
double residual_norm_of(std::size_t items, Item item) {
  return std::sqrt(squared_residuals(items, item).value());
}

}  // namespace

// ---- CSR ---------------------------------------------------------------------------------

namespace {

using Rows = CsrMatrix::row_map_type::const_type;
using detail::Columns;
using detail::entries_of;
using detail::RowEntries;
using detail::Values64;

// y_i = sum_k value(k) x(column(i, k)) in binary64, in the order of the row's entries.
template <class Value, class Column>
void apply_words(RowEntries at, Value value, Column column, ConstVector x, Vector y) {
  Kokkos::parallel_for(
      "ebla::csr_apply (narrow words)", Kokkos::RangePolicy<Kokkos::DefaultExecutionSpace>(0, y.extent(0)),
      KOKKOS_LAMBDA(const std::size_t i) {
        double s = 0;
        for (std::size_t m = 0, k = at.first(i); m < at.count(i); ++m, k += at.stride) s += value(k) * x(column(i, k));
        y(i) = s;
      });
}

// d_i = the sum of row i's entries in column i (duplicates add up).
template <class Value, class Column>
void diagonal_words(RowEntries at, Value value, Column column, Vector d) {
  Kokkos::parallel_for(
      "ebla::csr_diagonal", Kokkos::RangePolicy<Kokkos::DefaultExecutionSpace>(0, d.extent(0)),
      KOKKOS_LAMBDA(const std::size_t i) {
        double v = 0;
        for (std::size_t m = 0, k = at.first(i); m < at.count(i); ++m, k += at.stride)
          if (column(i, k) == i) v += value(k);
        d(i) = v;
      });
}

// The double-double sum of (b_i - (A x)_i)^2, each row's products in entry order, whichever
// words hold A: the same operations, so the same bits, as on the binary64 matrix
// (csr_residual_squares).
template <class Value, class Column>
DoubleDouble residual_words(RowEntries at, Value value, Column column, ConstVector x, ConstVector b) {
  return squared_residuals(b.extent(0), KOKKOS_LAMBDA(const std::size_t i, DoubleDouble& squares) {
    DoubleDouble r;
    r.add(b(i));
    for (std::size_t m = 0, k = at.first(i); m < at.count(i); ++m, k += at.stride)
      r.add_product(-value(k), x(column(i, k)));
    squares.add_product(r.value(), r.value());
  });
}

// A's binary64 values and int columns from its words.
template <class Value, class Column>
CsrMatrix binary64_words(const CsrMatrix& held, RowEntries at, std::size_t nnz, Value value, Column column) {
  using Values = CsrMatrix::values_type::non_const_type;
  using Entries = CsrMatrix::index_type::non_const_type;
  const Rows rows = held.graph.row_map;
  const std::size_t n = static_cast<std::size_t>(held.numRows());
  Values vals(Kokkos::ViewAllocateWithoutInitializing("ebla::csr values (binary64 from narrow words)"), nnz);
  Entries cols(Kokkos::ViewAllocateWithoutInitializing("ebla::csr columns (from narrow words)"), nnz);
  Kokkos::parallel_for(
      "ebla::csr_binary64", Kokkos::RangePolicy<Kokkos::DefaultExecutionSpace>(0, n),
      KOKKOS_LAMBDA(const std::size_t i) {
        for (std::size_t m = 0, k = at.first(i); m < at.count(i); ++m, k += at.stride) {
          vals(rows(i) + m) = value(k);
          cols(rows(i) + m) = static_cast<int>(column(i, k));
        }
      });
  return CsrMatrix("ebla::csr", held.numCols(), vals, CsrMatrix::staticcrsgraph_type(cols, held.graph.row_map));
}

// The last of a View of offsets (the row offsets' entry count, the slices' word count), read
// from wherever they live.
template <class Offsets>
std::size_t last_offset(const Offsets& rows) {
  if (rows.extent(0) == 0) return 0;
  std::size_t last = 0;
  Kokkos::deep_copy(Kokkos::View<std::size_t, Kokkos::HostSpace>(&last), Kokkos::subview(rows, rows.extent(0) - 1));
  return last;
}

// The number of values the words hold (in one of values16, values32, values64).
std::size_t word_values(const CsrWords& w) {
  return w.values16.extent(0) + w.values32.extent(0) + w.values64.extent(0);
}

// Throws unless words' slices (CsrWords) suit the rows of row_map: values in words and
// columns as offsets, ceil(rows / 8) + 1 offsets from 0, each slice a multiple of eight
// words and at least eight times as long as each of its rows.
void check_slices(const char* f, Rows row_map, const CsrWords& words) {
  if (word_values(words) == 0 || words.offsets16.extent(0) == 0)
    throw_invalid(f, "the words are given in slices of eight rows, which need both the values (values16, values32 "
                     "or values64) and the columns (offsets16) in words of their own");
  const std::size_t rows = row_map.extent(0) > 0 ? row_map.extent(0) - 1 : 0, count = (rows + 7) / 8;
  if (words.slices.extent(0) != count + 1)
    throw_invalid(f, "the slices: " + std::to_string(words.slices.extent(0)) + " offsets where " +
                         std::to_string(rows) + " rows take " + std::to_string(count + 1));
  const auto slices = words.slices;
  std::size_t bad = count;  // the first slice that does not hold its rows (count: none)
  Kokkos::parallel_reduce(
      "ebla::CsrOperator slices", Kokkos::RangePolicy<Kokkos::DefaultExecutionSpace>(0, count),
      KOKKOS_LAMBDA(const std::size_t s, std::size_t& first) {
        const std::size_t from = s == 0 ? 0 : slices(s), to = slices(s + 1);
        bool ok = (s > 0 || slices(0) == 0) && to >= from && (to - from) % 8 == 0;
        for (std::size_t i = 8 * s; ok && i < 8 * s + 8 && i < rows; ++i) ok = 8 * (row_map(i + 1) - row_map(i)) <= to - from;
        if (!ok && s < first) first = s;
      },
      Kokkos::Min<std::size_t>(bad));
  if (bad < count)
    throw_invalid(f, "the slices: slice " + std::to_string(bad) + " (rows " + std::to_string(8 * bad) + " to " +
                         std::to_string(8 * bad + 7) +
                         ") is not a whole number of groups of 8 words from where the slice before it ends (word "
                         "0 for the first), or has fewer groups than one of its rows has entries");
}

}  // namespace

CsrOperator::CsrOperator(CsrMatrix A) : A_(std::move(A)) {
  if (A_.numRows() != A_.numCols())
    throw_invalid("ebla::CsrOperator", "the matrix is " + std::to_string(A_.numRows()) + " x " +
                                           std::to_string(A_.numCols()) + ", not square");
}

CsrOperator::CsrOperator(CsrMatrix held, CsrWords words) : A_(std::move(held)), words_(std::move(words)) {
  const char* f = "ebla::CsrOperator";
  if (A_.numRows() != A_.numCols())
    throw_invalid(f, "the matrix is " + std::to_string(A_.numRows()) + " x " + std::to_string(A_.numCols()) +
                         ", not square");
  const std::size_t nnz = last_offset(A_.graph.row_map);
  const bool narrow_values = word_values(words_) > 0;
  const int formats = (words_.values16.extent(0) > 0) + (words_.values32.extent(0) > 0) + (words_.values64.extent(0) > 0);
  if (formats > 1) throw_invalid(f, "the values are given in " + std::to_string(formats) + " formats: give one");
  if (words_.values64.extent(0) > 0 && words_.slices.extent(0) == 0)
    throw_invalid(f, "values64 holds binary64 values in slices of eight rows, and no slices are given (in the "
                     "order of the rows' entries, give them as the matrix's own values)");
  auto check = [&](std::size_t extent, const char* what) {
    if (extent != nnz)
      throw_invalid(f, std::string(what) + ": " + std::to_string(extent) + " entries where the row offsets give " +
                           std::to_string(nnz));
  };
  const std::size_t slices = words_.slices.extent(0);
  if (slices > 0) check_slices(f, A_.graph.row_map, words_);
  const std::size_t sliced = slices > 0 ? last_offset(words_.slices) : nnz;
  auto check_words = [&](std::size_t extent, const char* what) {
    if (slices == 0) return check(extent, what);
    if (extent != sliced)
      throw_invalid(f, std::string(what) + ": " + std::to_string(extent) + " words where the slices give " +
                           std::to_string(sliced));
  };
  check_words(narrow_values ? word_values(words_) : A_.values.extent(0), "the values");
  check_words(words_.offsets16.extent(0) > 0 ? words_.offsets16.extent(0) : A_.graph.entries.extent(0), "the columns");
  // the arrays the words replace are not held
  if (narrow_values) A_.values = CsrMatrix::values_type();
  if (words_.offsets16.extent(0) > 0) A_.graph.entries = CsrMatrix::index_type();
}

CsrOperator CsrOperator::narrowest(CsrMatrix A, double max_growth) {
  CsrOperator given(std::move(A));
  const RowsOf rows = detail::narrowed(rows_of(given), max_growth);
  CsrWords words;
  words.values16 = rows.values16;
  words.values32 = rows.values32;
  words.values64 = rows.values64;
  words.offsets16 = rows.offsets16;
  words.slices = rows.slices;
  return CsrOperator(given.A_, words);
}

bool CsrOperator::narrow() const {
  return word_values(words_) > 0 || words_.offsets16.extent(0) > 0;
}

std::size_t CsrOperator::size() const { return static_cast<std::size_t>(A_.numRows()); }
std::size_t CsrOperator::nonzeros() const { return rows_of(*this).nonzeros(); }

namespace {

// Matrices of at most this many stored entries are multiplied on the calling thread where the
// vectors are host memory: below it, starting and joining the host threads costs more than
// they save. On 2 vCPUs of the Xeon of docs/solvers.md, with each product through the threads,
// an iteration of exact CG took 3.5 us on one thread and 9.5 us on two on HB/494_bus (1,666
// entries), 11.6 and 32.7 us on HB/nos3 (15,844), about as long on either on HB/bcsstk13
// (83,883); with this bound 2.4 and 2.6 us on 494_bus, 10.2 and 9.5 us on nos3.
constexpr std::size_t inline_entries = std::size_t{1} << 15;

// Where the product runs inline: on a host execution space with threads to start (OpenMP,
// Threads). On Kokkos::Serial, KokkosSparse::spmv runs on the calling thread already, and
// in an order of its own (Kokkos Kernels 3.4: four partial sums a row), so it is kept there.
#if defined(KOKKOS_ENABLE_SERIAL)
constexpr bool serial_space = std::is_same_v<Kokkos::DefaultExecutionSpace, Kokkos::Serial>;
#else
constexpr bool serial_space = false;
#endif
constexpr bool inline_products =
    Kokkos::SpaceAccessibility<Kokkos::HostSpace, Vector::memory_space>::accessible && !serial_space;

// y = A x on the calling thread: each row's products added in the order of its entries, from
// 0, as KokkosSparse::spmv adds them on a threaded host space (Kokkos Kernels 4: the same
// bits, CsrOperator.SmallProductsRunInline).
void apply_inline(const CsrMatrix& A, const ConstVector& x, const Vector& y) {
  const auto* row = A.graph.row_map.data();
  const int* col = A.graph.entries.data();
  const double* val = A.values.data();
  const double* xp = x.data();
  double* yp = y.data();
  const std::size_t rows = static_cast<std::size_t>(A.numRows());
  // the stores of the pass that wrote x just before (CG's direction update) drain first: the
  // gathers from x ran into them still in flight, which cost up to a sixth of an iteration
  // on the small SuiteSparse matrices (exact CG on HB/494_bus: 1.49 -> 1.31 us an iteration)
  std::atomic_thread_fence(std::memory_order_seq_cst);
  for (std::size_t i = 0; i < rows; ++i) {
    const int* c = col + row[i];
    const double* v = val + row[i];
    const int length = static_cast<int>(row[i + 1] - row[i]);  // (a loop on an int count ran
    double s = 0;                                                //  twice as fast as on k < row[i+1])
    for (int k = 0; k < length; ++k) s += v[k] * xp[c[k]];
    yp[i] = s;
  }
}

}  // namespace

void CsrOperator::apply(ConstVector x, Vector y) const {
  if (!narrow()) {
    if constexpr (inline_products) {
      if (static_cast<std::size_t>(A_.nnz()) <= inline_entries) {
        check_size("ebla::CsrOperator::apply", size(), x, "x");
        check_size("ebla::CsrOperator::apply", size(), y, "y");
        apply_inline(A_, x, y);
        return;
      }
    }
    KokkosSparse::spmv("N", 1.0, A_, x, 0.0, y);
    return;
  }
  check_size("ebla::CsrOperator::apply", size(), x, "x");
  check_size("ebla::CsrOperator::apply", size(), y, "y");
  const RowsOf rows = rows_of(*this);
  detail::with_entries(rows, [&](auto value, auto column) { apply_words(entries_of(rows), value, column, x, y); });
}

Vector CsrOperator::diagonal() const {
  Vector d("ebla::diagonal", size());
  const RowsOf rows = rows_of(*this);
  detail::with_entries(rows, [&](auto value, auto column) { diagonal_words(entries_of(rows), value, column, d); });
  return d;
}

double CsrOperator::residual_norm(ConstVector x, ConstVector b) const {
  check_size("ebla::CsrOperator::residual_norm", size(), x, "x");
  check_size("ebla::CsrOperator::residual_norm", size(), b, "b");
  if (!narrow()) return std::sqrt(detail::csr_residual_squares(A_, x, b).value());
  const RowsOf rows = rows_of(*this);
  return std::sqrt(detail::with_entries(rows, [&](auto value, auto column) {
                     return residual_words(entries_of(rows), value, column, x, b);
                   }).value());
}

std::size_t RowsOf::nonzeros() const { return kind == Kind::csr ? last_offset(A.graph.row_map) : 0; }

Kokkos::View<std::size_t*> detail::slice_offsets(Rows row_map) {
  const std::size_t rows = row_map.extent(0) > 0 ? row_map.extent(0) - 1 : 0, count = (rows + 7) / 8;
  Kokkos::View<std::size_t*> slices("ebla::csr slices", count + 1);
  // slice s: 8 words for each entry of its longest row, after the slices before it
  Kokkos::parallel_scan(
      "ebla::csr slice offsets", Kokkos::RangePolicy<Kokkos::DefaultExecutionSpace>(0, count),
      KOKKOS_LAMBDA(const std::size_t s, std::size_t& before, const bool final) {
        std::size_t longest = 0;
        for (std::size_t i = 8 * s; i < 8 * s + 8 && i < rows; ++i) {
          const std::size_t length = row_map(i + 1) - row_map(i);
          longest = length > longest ? length : longest;
        }
        if (final) slices(s) = before;
        before += 8 * longest;
        if (final && s + 1 == count) slices(count) = before;
      });
  return slices;
}

double detail::slice_growth(std::size_t nnz, Kokkos::View<const std::size_t*> slices, double value_bytes) {
  const double words = static_cast<double>(last_offset(slices));
  const double sliced = words * (value_bytes + sizeof(std::int16_t)) + static_cast<double>(slices.extent(0) * sizeof(std::size_t));
  return sliced / (static_cast<double>(nnz) * (sizeof(double) + sizeof(int)));
}

CsrMatrix CsrOperator::matrix() const { return narrow() ? detail::binary64_matrix(rows_of(*this)) : A_; }

CsrMatrix detail::binary64_matrix(const RowsOf& rows) {
  const std::size_t nnz = rows.nonzeros();
  if (rows.A.values.extent(0) == nnz && rows.A.graph.entries.extent(0) == nnz) return rows.A;
  return with_entries(rows, [&](auto value, auto column) {
    return binary64_words(rows.A, entries_of(rows), nnz, value, column);
  });
}

DoubleDouble detail::csr_residual_squares(const CsrMatrix& A, ConstVector x, ConstVector b) {
  if (static_cast<std::size_t>(A.numRows()) != b.extent(0) || static_cast<std::size_t>(A.numCols()) != x.extent(0))
    throw_invalid("ebla::detail::csr_residual_squares",
                  "A is " + std::to_string(A.numRows()) + " x " + std::to_string(A.numCols()) + ", b has " +
                      std::to_string(b.extent(0)) + " entries and x " + std::to_string(x.extent(0)));
  return residual_words(RowEntries{A.graph.row_map, {}, 1}, Values64{A.values}, Columns{A.graph.entries}, x, b);
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

namespace {

// The 27-point stencil on a block of nz planes, with optional ghost planes under and over
// it: plane(iz) is where the entries of plane iz (-1 <= iz <= nz) are read from.
template <class T>
struct StencilBlock {
  int nx, ny, nz;
  const T* x;      // the block's planes
  const T* below;  // plane -1, or null where the grid ends
  const T* above;  // plane nz, or null
  KOKKOS_INLINE_FUNCTION const T* plane(int iz) const {
    return iz < 0 ? below : iz >= nz ? above : x + static_cast<std::ptrdiff_t>(iz) * nx * ny;
  }
  // the planes next to iz that the grid has: iz + dz for dz in [z0, z1]
  KOKKOS_INLINE_FUNCTION int z0(int iz) const { return iz > 0 || below ? -1 : 0; }
  KOKKOS_INLINE_FUNCTION int z1(int iz) const { return iz < nz - 1 || above ? 1 : 0; }
};

template <class T>
StencilBlock<T> stencil_block(const char* function, int nx, int ny, int nz, Kokkos::View<const T*> x,
                              Kokkos::View<const T*> below, Kokkos::View<const T*> above) {
  const std::size_t plane = static_cast<std::size_t>(nx) * ny;
  check_size(function, plane * nz, x, "x");
  if (below.extent(0) != 0) check_size(function, plane, below, "the plane below");
  if (above.extent(0) != 0) check_size(function, plane, above, "the plane above");
  return {nx, ny, nz, x.data(), below.extent(0) ? below.data() : nullptr, above.extent(0) ? above.data() : nullptr};
}

// y = A x: y_i = 28 x_i - (sum of x_j over the 3 x 3 x 3 block around i, cut by the grid),
// i.e. 27 on the diagonal and -1 for every neighbour inside. Each (iz, iy) line of the
// grid is one work item, taken in chunks of `chunk` points: first the column sums
// t(ix) = sum of x over the (up to) 3 x 3 neighbouring lines at ix (contiguous, vectorised),
// then y(ix) = 28 x(ix) - (t(ix - 1) + t(ix) + t(ix + 1)), cut at the ends of the line.
// T = double for the operator, float for refined_cg's inner solve (every operation in T).
template <class T>
void stencil27_kernel(int nx, int ny, int nz, Kokkos::View<const T*> xv, Kokkos::View<const T*> below,
                      Kokkos::View<const T*> above, Kokkos::View<T*> y) {
  constexpr int chunk = 256;
  const StencilBlock<T> g = stencil_block<T>("ebla::StencilOperator::apply", nx, ny, nz, xv, below, above);
  check_size("ebla::StencilOperator::apply", xv.extent(0), y, "y");
  Kokkos::parallel_for(
      "ebla::stencil27", Kokkos::RangePolicy<Kokkos::DefaultExecutionSpace>(0, static_cast<std::size_t>(ny) * nz),
      KOKKOS_LAMBDA(const std::size_t line) {
        const int iy = static_cast<int>(line % ny), iz = static_cast<int>(line / ny);
        const std::ptrdiff_t base = static_cast<std::ptrdiff_t>(iz) * nx * ny + static_cast<std::ptrdiff_t>(iy) * nx;
        const int y0 = iy > 0 ? -1 : 0, y1 = iy < ny - 1 ? 1 : 0;
        T t[chunk + 2];  // t[k] is the column sum at ix = c0 - 1 + k
        for (int c0 = 0; c0 < nx; c0 += chunk) {
          const int lo = c0 > 0 ? c0 - 1 : 0, hi = c0 + chunk < nx ? c0 + chunk : nx - 1;  // columns [lo, hi]
          for (int ix = lo; ix <= hi; ++ix) t[ix - c0 + 1] = 0;
          for (int dz = g.z0(iz); dz <= g.z1(iz); ++dz)
            for (int dy = y0; dy <= y1; ++dy) {
              const T* row = g.plane(iz + dz) + static_cast<std::ptrdiff_t>(iy + dy) * nx;
              for (int ix = lo; ix <= hi; ++ix) t[ix - c0 + 1] += row[ix];
            }
          const int end = c0 + chunk < nx ? c0 + chunk : nx;
          for (int ix = c0; ix < end; ++ix) {
            const T left = ix > 0 ? t[ix - c0] : T(0), right = ix < nx - 1 ? t[ix - c0 + 2] : T(0);
            y(base + ix) = T(28) * g.x[base + ix] - (left + t[ix - c0 + 1] + right);
          }
        }
      });
}

}  // namespace

void detail::stencil27_apply(int nx, int ny, int nz, ConstVector xv, ConstVector below, ConstVector above, Vector y) {
  stencil27_kernel<double>(nx, ny, nz, xv, below, above, y);
}

void detail::stencil27_apply(int nx, int ny, int nz, ConstFloatVector x, FloatVector y) {
  stencil27_kernel<float>(nx, ny, nz, x, ConstFloatVector(), ConstFloatVector(), y);
}

DoubleDouble detail::stencil27_residual_squares(int nx, int ny, int nz, ConstVector xv, ConstVector below,
                                                ConstVector above, ConstVector b) {
  const StencilBlock<double> g =
      stencil_block<double>("ebla::StencilOperator::residual_norm", nx, ny, nz, xv, below, above);
  check_size("ebla::StencilOperator::residual_norm", xv.extent(0), b, "b");
  // one grid line per work item, as in apply(); the -1 entries add x_j exactly
  return squared_residuals(static_cast<std::size_t>(ny) * nz, KOKKOS_LAMBDA(const std::size_t line, DoubleDouble& squares) {
    const int iy = static_cast<int>(line % ny), iz = static_cast<int>(line / ny);
    const std::ptrdiff_t base = static_cast<std::ptrdiff_t>(iz) * nx * ny + static_cast<std::ptrdiff_t>(iy) * nx;
    const int y0 = iy > 0 ? -1 : 0, y1 = iy < ny - 1 ? 1 : 0;
    for (int ix = 0; ix < nx; ++ix) {
      const int x0 = ix > 0 ? -1 : 0, x1 = ix < nx - 1 ? 1 : 0;
      DoubleDouble r;  // b_i - 27 x_i + sum of the neighbours
      r.add(b(base + ix));
      r.add_product(-27.0, g.x[base + ix]);
      for (int dz = g.z0(iz); dz <= g.z1(iz); ++dz)
        for (int dy = y0; dy <= y1; ++dy) {
          const double* row = g.plane(iz + dz) + static_cast<std::ptrdiff_t>(iy + dy) * nx + ix;
          for (int dx = x0; dx <= x1; ++dx)
            if (dz != 0 || dy != 0 || dx != 0) r.add(row[dx]);
        }
      squares.add_product(r.value(), r.value());
    }
  });
}

void StencilOperator::apply(ConstVector x, Vector y) const {
  detail::stencil27_apply(nx_, ny_, nz_, x, ConstVector(), ConstVector(), y);
}

Vector StencilOperator::diagonal() const {
  Vector d("ebla::diagonal", size());
  Kokkos::deep_copy(d, 27.0);
  return d;
}

double StencilOperator::residual_norm(ConstVector x, ConstVector b) const {
  check_size("ebla::StencilOperator::residual_norm", size(), x, "x");
  return std::sqrt(detail::stencil27_residual_squares(nx_, ny_, nz_, x, ConstVector(), ConstVector(), b).value());
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

// ---- a function of the caller ------------------------------------------------------------

FunctionOperator::FunctionOperator(std::size_t n, Function apply, Vector diagonal)
    : n_(n), apply_(std::move(apply)), diagonal_(std::move(diagonal)) {
  if (!apply_) throw_invalid("ebla::FunctionOperator", "no function to apply");
  if (diagonal_.extent(0) != 0 && diagonal_.extent(0) != n_)
    throw_invalid("ebla::FunctionOperator", "the diagonal has " + std::to_string(diagonal_.extent(0)) +
                                                 " entries, the operator " + std::to_string(n_) + " rows");
}

void FunctionOperator::apply(ConstVector x, Vector y) const {
  check_size("ebla::FunctionOperator::apply", size(), x, "x");
  check_size("ebla::FunctionOperator::apply", size(), y, "y");
  const auto hx = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), x);
  const auto hy = Kokkos::create_mirror_view(Kokkos::HostSpace(), y);
  apply_(hx, hy);
  Kokkos::deep_copy(y, hy);
}

double FunctionOperator::residual_norm(ConstVector x, ConstVector b) const {
  check_size("ebla::FunctionOperator::residual_norm", size(), x, "x");
  check_size("ebla::FunctionOperator::residual_norm", size(), b, "b");
  Vector y("ebla::FunctionOperator A x", size());
  apply(x, y);
  return residual_norm_of(size(), KOKKOS_LAMBDA(const std::size_t i, DoubleDouble& squares) {
    DoubleDouble r;
    r.add(b(i));
    r.add(-y(i));
    squares.add_product(r.value(), r.value());
  });
}

}  // namespace ebla
