// Test problems (see problems.hpp): HPCCG's 27-point matrix, the 7-point variable-coefficient
// diffusion matrix, Erdos-Renyi graph Laplacians, seeded start vectors, and the symmetry check
// of input matrices. Compiled with -ffp-contract=off: the diffusion coefficients are the same
// bits on every machine, with or without fused multiply-adds.
#include <ebla/solvers/problems.hpp>

#include <ebla/core/error.hpp>
#include <ebla/core/storage.hpp>

#include "csr_words.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <utility>
#include <vector>

namespace ebla {

namespace {

using RowMap = CsrMatrix::row_map_type::non_const_type;
using Entries = CsrMatrix::index_type::non_const_type;
using Values = CsrMatrix::values_type::non_const_type;

std::string str(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// A uniform double in [0, 1) from the top 53 bits of one output: the same on every
// machine, unlike std::uniform_real_distribution, whose algorithm is not specified.
double uniform(std::mt19937_64& gen) { return static_cast<double>(gen() >> 11) * 0x1p-53; }

// ---- HPCCG ---------------------------------------------------------------------------

void check_grid(int nx, int ny, int nz, const char* function) {
  if (nx < 1 || ny < 1 || nz < 1)
    throw_invalid(function, "grid " + std::to_string(nx) + " x " + std::to_string(ny) + " x " +
                                std::to_string(nz) + ": every dimension must be >= 1");
  const long double rows = static_cast<long double>(nx) * ny * nz;
  if (rows > std::numeric_limits<int>::max())
    throw_invalid(function, "grid " + std::to_string(nx) + " x " + std::to_string(ny) + " x " +
                                std::to_string(nz) + " has more rows than an int can number");
}

// Neighbours of coordinate c in a dimension of extent n, the point itself included.
int span(int c, int n) { return 1 + (c > 0) + (c < n - 1); }

// Calls f(i, ix, iy, iz, nonzeros of row i) for every grid point of the planes
// [z_first, z_end) (all of them by default) in row order, i counted from the first.
template <class F>
void for_each_point(int nx, int ny, int nz, F&& f, int z_first = 0, int z_end = -1) {
  std::size_t i = 0;
  for (int iz = z_first; iz < (z_end < 0 ? nz : z_end); ++iz)
    for (int iy = 0; iy < ny; ++iy)
      for (int ix = 0; ix < nx; ++ix) f(i++, ix, iy, iz, span(ix, nx) * span(iy, ny) * span(iz, nz));
}

// f(column, value) for the entries of row (ix, iy, iz) in order: z outermost, x innermost
// gives ascending columns. (On the host and in kernels.)
template <class F>
KOKKOS_INLINE_FUNCTION void stencil_row(int nx, int ny, int nz, int ix, int iy, int iz, F&& f) {
  const int row = (iz * ny + iy) * nx + ix;
  const int x0 = ix > 0 ? ix - 1 : 0, x1 = ix < nx - 1 ? ix + 1 : ix;
  const int y0 = iy > 0 ? iy - 1 : 0, y1 = iy < ny - 1 ? iy + 1 : iy;
  const int z0 = iz > 0 ? iz - 1 : 0, z1 = iz < nz - 1 ? iz + 1 : iz;
  for (int z = z0; z <= z1; ++z)
    for (int y = y0; y <= y1; ++y)
      for (int c = (z * ny + y) * nx + x0, end = c + x1 - x0; c <= end; ++c) f(c, c == row ? 27.0 : -1.0);
}

// Row i = (ix, iy, iz) from offset `at`.
void fill_stencil_row(int nx, int ny, int nz, int ix, int iy, int iz, std::size_t at,
                      const Entries::HostMirror& col, const Values::HostMirror& val) {
  stencil_row(nx, ny, nz, ix, iy, iz, [&](int c, double v) {
    col(at) = c;
    val(at++) = v;
  });
}

// The row offsets of the planes [z_first, z_end) into row_map (their count plus one entries),
// returned in host memory too.
RowMap::HostMirror hpccg_row_offsets(int nx, int ny, int nz, int z_first, int z_end, const RowMap& row_map) {
  auto ptr = Kokkos::create_mirror_view(row_map);
  ptr(0) = 0;
  for_each_point(nx, ny, nz, [&](std::size_t i, int, int, int, int count) { ptr(i + 1) = ptr(i) + count; }, z_first, z_end);
  Kokkos::deep_copy(row_map, ptr);
  return ptr;
}

// The rows of the planes [z_first, z_end) of the nx x ny x nz grid, with global columns.
CsrMatrix hpccg_slab(int nx, int ny, int nz, int z_first, int z_end) {
  const std::size_t n = static_cast<std::size_t>(nx) * ny * nz;
  const std::size_t rows = static_cast<std::size_t>(nx) * ny * static_cast<std::size_t>(z_end - z_first);
  RowMap row_map("ebla::hpccg row_map", rows + 1);
  const auto ptr = hpccg_row_offsets(nx, ny, nz, z_first, z_end, row_map);
  const std::size_t nnz = ptr(rows);
  Entries entries(Kokkos::ViewAllocateWithoutInitializing("ebla::hpccg entries"), nnz);
  Values values(Kokkos::ViewAllocateWithoutInitializing("ebla::hpccg values"), nnz);
  auto col = Kokkos::create_mirror_view(entries);
  auto val = Kokkos::create_mirror_view(values);
  auto fill_row = [&](std::size_t i, int ix, int iy, int iz, int) { fill_stencil_row(nx, ny, nz, ix, iy, iz, ptr(i), col, val); };
  for_each_point(nx, ny, nz, fill_row, z_first, z_end);
  Kokkos::deep_copy(entries, col);
  Kokkos::deep_copy(values, val);
  return CsrMatrix("ebla::hpccg", static_cast<int>(rows), static_cast<int>(n), nnz, values, row_map, entries);
}

CsrMatrix hpccg_matrix(int nx, int ny, int nz) { return hpccg_slab(nx, ny, nz, 0, nz); }

// The entries of row i of HPCCG's matrix on the nx x ny x nz grid (stencil_row):
// f(m, column, value) for the m-th, its value -1 or 27 (the diagonal).
struct HpccgRow {
  int nx, ny, nz;
  template <class F>
  KOKKOS_INLINE_FUNCTION void operator()(std::size_t i, F&& f) const {
    const int row = static_cast<int>(i);
    std::size_t m = 0;
    stencil_row(nx, ny, nz, row % nx, (row / nx) % ny, row / (nx * ny), [&](int c, double v) { f(m++, c, v); });
  }
};

// The rows of the whole grid in narrow words: bfloat16 values, and columns as 16-bit
// offsets from the row, in slices of eight rows (`offsets`), or as ints in the order of the
// rows' entries.
CsrOperator hpccg_words(int nx, int ny, int nz, bool offsets) {
  const std::size_t rows = static_cast<std::size_t>(nx) * ny * nz;
  RowMap row_map("ebla::hpccg row_map", rows + 1);
  const std::size_t nnz = hpccg_row_offsets(nx, ny, nz, 0, nz, row_map)(rows);
  const HpccgRow row{nx, ny, nz};
  CsrWords words;
  Entries entries;
  if (offsets) {
    words.slices = detail::slice_offsets(row_map);
    const detail::RowEntries at{row_map, words.slices, 8};
    // -1 and 27: exact in bfloat16
    words.values16 = detail::in_slices<std::uint16_t>(
        at, "ebla::hpccg values (bfloat16, slices of 8 rows)",
        KOKKOS_LAMBDA(std::size_t i, const detail::SliceWriter<std::uint16_t>& put) {
          row(i, [&](std::size_t m, int, double v) { put(m, detail::bfloat16_bits(v)); });
        });
    words.offsets16 = detail::in_slices<std::int16_t>(
        at, "ebla::hpccg columns (16-bit offsets, slices of 8 rows)",
        KOKKOS_LAMBDA(std::size_t i, const detail::SliceWriter<std::int16_t>& put) {
          row(i, [&](std::size_t m, int c, double) { put(m, static_cast<std::int16_t>(c - static_cast<int>(i))); });
        });
  } else {
    Kokkos::View<std::uint16_t*> values(Kokkos::ViewAllocateWithoutInitializing("ebla::hpccg values (bfloat16)"), nnz);
    entries = Entries(Kokkos::ViewAllocateWithoutInitializing("ebla::hpccg entries"), nnz);
    Kokkos::parallel_for(
        "ebla::hpccg words", Kokkos::RangePolicy<Kokkos::DefaultExecutionSpace>(0, rows), KOKKOS_LAMBDA(const std::size_t i) {
          row(i, [&](std::size_t m, int c, double v) {
            values(row_map(i) + m) = detail::bfloat16_bits(v);
            entries(row_map(i) + m) = c;
          });
        });
    words.values16 = values;
  }
  const CsrMatrix held("ebla::hpccg", static_cast<int>(rows), Values(), CsrMatrix::staticcrsgraph_type(entries, row_map));
  return CsrOperator(held, words);
}

Vector constant_vector(const char* label, std::size_t n, double value) {
  Vector v(std::string(label), n);
  Kokkos::deep_copy(v, value);
  return v;
}

// ---- diffusion ------------------------------------------------------------------------

constexpr int lattice_intervals = 4;  // of the smooth field per axis: 5 nodes

// The smooth field's node values, drawn first: node (a, b, c) at (c * 5 + b) * 5 + a.
std::vector<double> lattice_values(std::mt19937_64& gen) {
  std::vector<double> v((lattice_intervals + 1) * (lattice_intervals + 1) * (lattice_intervals + 1));
  for (double& x : v) x = uniform(gen);
  return v;
}

// The lattice interval of cell c of n along an axis and the smoothstep weight of its centre,
// which lies at x = 4 (c + 1/2) / n in (0, 4) in lattice units.
struct Blend {
  int node;
  double w;
};

Blend blend(int c, int n) {
  const double x = (lattice_intervals * 2.0 * c + lattice_intervals) / (2.0 * n);
  const int node = std::min(static_cast<int>(std::floor(x)), lattice_intervals - 1);
  const double f = x - node;
  return {node, f * f * (3 - 2 * f)};
}

double lerp(double a, double b, double w) { return a + w * (b - a); }

// g at the centre of cell (ix, iy, iz): the lattice values blended along x, then y, then z.
double smooth_field(const std::vector<double>& v, const Blend& x, const Blend& y, const Blend& z) {
  constexpr int m = lattice_intervals + 1;
  auto at = [&](int a, int b, int c) { return v[static_cast<std::size_t>((c * m + b) * m + a)]; };
  double along_y[2];
  for (int dz = 0; dz < 2; ++dz) {
    double along_x[2];
    for (int dy = 0; dy < 2; ++dy)
      along_x[dy] = lerp(at(x.node, y.node + dy, z.node + dz), at(x.node + 1, y.node + dy, z.node + dz), x.w);
    along_y[dz] = lerp(along_x[0], along_x[1], y.w);
  }
  return lerp(along_y[0], along_y[1], z.w);
}

// 10^x for x in [-3, 3], linear within each decade: 10^d (1 + 9 f), d = floor(x), f = x - d.
double decade_power(double x) {
  static const double powers[] = {1e-3, 1e-2, 1e-1, 1e0, 1e1, 1e2, 1e3};
  const double d = std::floor(x);
  const double f = x - d;
  return powers[static_cast<int>(d) + 3] * (1 + 9 * f);
}

// Rounded to a multiple of 2^-38 (exact scalings; std::round does not depend on the rounding mode).
double on_grid(double v) { return std::round(v * 0x1p38) * 0x1p-38; }

// The harmonic mean of two cell coefficients: bitwise symmetric (a b = b a, a + b = b + a).
double face_coefficient(double a, double b) { return on_grid(2 * (a * b) / (a + b)); }

// The entries of row i = (ix, iy, iz): put(m, column, value) for the m-th, the neighbours
// -z, -y, -x, the cell, +x, +y, +z in ascending columns; a missing neighbour is a boundary
// face, which adds q(2 k_i) to A_ii. Returns the sum of the row's entries in their order
// (exact: see problems.hpp).
template <class Put>
double diffusion_row(int nx, int ny, int nz, int ix, int iy, int iz, const double* k, Put&& put) {
  const int plane = nx * ny;
  const int row = iz * plane + iy * nx + ix;
  const bool has[6] = {iz > 0, iy > 0, ix > 0, ix < nx - 1, iy < ny - 1, iz < nz - 1};
  const int offset[6] = {-plane, -nx, -1, 1, nx, plane};
  const double boundary = on_grid(2 * k[row]);
  int column[7];
  double value[7];
  int count = 0, diagonal_at = 0;
  double diagonal = 0;
  for (int face = 0; face < 6; ++face) {
    if (face == 3) diagonal_at = count++;  // the cell's own column, between -x and +x
    if (!has[face]) {
      diagonal += boundary;
      continue;
    }
    const int j = row + offset[face];
    const double c = face_coefficient(k[row], k[j]);
    diagonal += c;
    column[count] = j;
    value[count++] = -c;
  }
  column[diagonal_at] = row;
  value[diagonal_at] = diagonal;
  double sum = 0;
  for (int m = 0; m < count; ++m) {
    put(static_cast<std::size_t>(m), column[m], value[m]);
    sum += value[m];
  }
  return sum;
}

// The row offsets of the diffusion matrix (7 entries a row, fewer on the boundary), in
// row_map and returned in host memory.
RowMap::HostMirror diffusion_row_offsets(int nx, int ny, int nz, const RowMap& row_map) {
  auto ptr = Kokkos::create_mirror_view(row_map);
  ptr(0) = 0;
  for_each_point(nx, ny, nz, [&](std::size_t i, int ix, int iy, int iz, int) {
    ptr(i + 1) = ptr(i) + 1 + (ix > 0) + (ix < nx - 1) + (iy > 0) + (iy < ny - 1) + (iz > 0) + (iz < nz - 1);
  });
  Kokkos::deep_copy(row_map, ptr);
  return ptr;
}

// The matrix of the cell coefficients k; b = A 1 (the row sums) into row_sums.
CsrMatrix diffusion_matrix(int nx, int ny, int nz, ConstVector k_view, const Vector::HostMirror& row_sums) {
  const std::size_t n = static_cast<std::size_t>(nx) * ny * nz;
  const auto k = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), k_view);
  RowMap row_map("ebla::diffusion row_map", n + 1);
  const auto ptr = diffusion_row_offsets(nx, ny, nz, row_map);
  const std::size_t nnz = ptr(n);
  Entries entries(Kokkos::ViewAllocateWithoutInitializing("ebla::diffusion entries"), nnz);
  Values values(Kokkos::ViewAllocateWithoutInitializing("ebla::diffusion values"), nnz);
  auto col = Kokkos::create_mirror_view(entries);
  auto val = Kokkos::create_mirror_view(values);
  for_each_point(nx, ny, nz, [&](std::size_t i, int ix, int iy, int iz, int) {
    row_sums(i) = diffusion_row(nx, ny, nz, ix, iy, iz, k.data(), [&](std::size_t m, int c, double v) {
      col(ptr(i) + m) = c;
      val(ptr(i) + m) = v;
    });
  });
  Kokkos::deep_copy(entries, col);
  Kokkos::deep_copy(values, val);
  return CsrMatrix("ebla::diffusion", static_cast<int>(n), static_cast<int>(n), nnz, values, row_map, entries);
}

// The same matrix written straight into the words CsrOperator::narrowest gives it where
// nx ny <= 32767 and the slices take no more bytes than the CSR arrays: binary64 values and
// 16-bit column offsets in slices of eight rows (never in the order of the rows' entries, so
// that no second copy is ever held); else narrowest's own words.
CsrOperator diffusion_words(int nx, int ny, int nz, ConstVector k_view, const Vector::HostMirror& row_sums) {
  const std::size_t n = static_cast<std::size_t>(nx) * ny * nz;
  RowMap row_map("ebla::diffusion row_map", n + 1);
  const std::size_t nnz = diffusion_row_offsets(nx, ny, nz, row_map)(n);
  const auto slices = detail::slice_offsets(row_map);
  if (detail::slice_growth(nnz, slices, sizeof(double)) > 1)  // a small grid, whose rows differ most
    return CsrOperator::narrowest(diffusion_matrix(nx, ny, nz, k_view, row_sums));
  const auto k = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), k_view);
  const auto at = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), slices);
  const std::size_t words = at(at.extent(0) - 1);
  // zero-initialised: the words past a shorter row's end stay 0
  Kokkos::View<double*> values("ebla::diffusion values (binary64, slices of 8 rows)", words);
  Kokkos::View<std::int16_t*> offsets("ebla::diffusion columns (16-bit offsets, slices of 8 rows)", words);
  auto val = Kokkos::create_mirror_view(values);
  auto off = Kokkos::create_mirror_view(offsets);
  for_each_point(nx, ny, nz, [&](std::size_t i, int ix, int iy, int iz, int) {
    const std::size_t first = at(i / 8) + i % 8;  // entry m at first + 8 m (CsrWords)
    row_sums(i) = diffusion_row(nx, ny, nz, ix, iy, iz, k.data(), [&](std::size_t m, int c, double v) {
      off(first + 8 * m) = static_cast<std::int16_t>(c - static_cast<int>(i));
      val(first + 8 * m) = v;
    });
  });
  Kokkos::deep_copy(values, val);
  Kokkos::deep_copy(offsets, off);
  CsrWords w;
  w.values64 = values;
  w.offsets16 = offsets;
  w.slices = slices;
  const CsrMatrix held("ebla::diffusion", static_cast<int>(n), Values(), CsrMatrix::staticcrsgraph_type(Entries(), row_map));
  return CsrOperator(held, w);
}

// ---- graph Laplacians ----------------------------------------------------------------

// Calls f(i, j) for the edges i < j of G(n, p), in row-major order of the strictly upper
// triangle. Before each edge, s = floor(log(1 - u) / log(1 - p)) pairs are skipped (a
// geometric variable: the number of failures before a success of probability p), u from
// uniform(); the draw that skips past the last pair ends the graph.
template <class F>
void for_each_edge(std::size_t n, double p, std::uint64_t seed, F&& f) {
  std::mt19937_64 gen(seed);
  const double log_q = std::log1p(-p);  // -inf for p = 1: every skip is 0
  const std::uint64_t pairs = static_cast<std::uint64_t>(n) * (n - 1) / 2;
  std::uint64_t next = 0;            // the first pair not yet passed
  std::size_t i = 0;                 // the row of pair `begin`
  std::uint64_t begin = 0;           // the index of pair (i, i + 1)
  for (;;) {
    const double s = std::floor(std::log(1 - uniform(gen)) / log_q);
    if (!(s < static_cast<double>(pairs - next))) return;  // past the end (also inf)
    const std::uint64_t k = next + static_cast<std::uint64_t>(s);
    for (; k >= begin + (n - 1 - i); ++i) begin += n - 1 - i;
    f(i, i + 1 + static_cast<std::size_t>(k - begin));
    next = k + 1;
  }
}

void check_graph(std::size_t n, double mean_degree) {
  const char* function = "ebla::graph_laplacian";
  if (n < 2 || n > static_cast<std::size_t>(std::numeric_limits<int>::max()))
    throw_invalid(function, "n = " + std::to_string(n) + " must be in [2, INT_MAX]");
  if (!(mean_degree > 0) || mean_degree > static_cast<double>(n - 1))
    throw_invalid(function, "mean_degree = " + str(mean_degree) + " must be in (0, n - 1 = " +
                                std::to_string(n - 1) + "]");
}

}  // namespace

HpccgProblem hpccg_problem(int nx, int ny, int nz) {
  check_grid(nx, ny, nz, "ebla::hpccg_problem");
  HpccgProblem p;
  p.nx = nx;
  p.ny = ny;
  p.nz = nz;
  p.A = hpccg_matrix(nx, ny, nz);
  p.b = hpccg_rhs(nx, ny, nz);
  const std::size_t n = p.b.extent(0);
  p.x0 = constant_vector("ebla::hpccg x0", n, 0.0);
  p.x_exact = constant_vector("ebla::hpccg x_exact", n, 1.0);
  return p;
}

CsrMatrix hpccg_rows(int nx, int ny, int nz, int z_first, int z_count) {
  check_grid(nx, ny, nz, "ebla::hpccg_rows");
  if (z_first < 0 || z_count < 0 || z_first > nz - z_count)
    throw_invalid("ebla::hpccg_rows", "planes [" + std::to_string(z_first) + ", " + std::to_string(z_first) + " + " +
                                          std::to_string(z_count) + ") are not inside [0, " + std::to_string(nz) + ")");
  return hpccg_slab(nx, ny, nz, z_first, z_first + z_count);
}

CsrOperator hpccg_narrowest(int nx, int ny, int nz) {
  check_grid(nx, ny, nz, "ebla::hpccg_narrowest");
  // the widest |column - row|: the neighbour one plane, one line and one point away
  const double band = static_cast<double>(nx) * ny + nx + 1;
  return hpccg_words(nx, ny, nz, band <= 32767);
}

Vector hpccg_rhs(int nx, int ny, int nz) {
  check_grid(nx, ny, nz, "ebla::hpccg_rhs");
  Vector b(Kokkos::ViewAllocateWithoutInitializing("ebla::hpccg b"), static_cast<std::size_t>(nx) * ny * nz);
  auto h = Kokkos::create_mirror_view(b);
  // row sum: 27 on the diagonal, -1 for each of the count - 1 neighbours
  for_each_point(nx, ny, nz, [&](std::size_t i, int, int, int, int count) { h(i) = 28.0 - count; });
  Kokkos::deep_copy(b, h);
  return b;
}

Vector diffusion_coefficients(int nx, int ny, int nz, std::uint64_t seed) {
  check_grid(nx, ny, nz, "ebla::diffusion_coefficients");
  std::mt19937_64 gen(seed);
  const std::vector<double> lattice = lattice_values(gen);
  Vector k(Kokkos::ViewAllocateWithoutInitializing("ebla::diffusion k"), static_cast<std::size_t>(nx) * ny * nz);
  auto t = Kokkos::create_mirror_view(k);
  double low = std::numeric_limits<double>::infinity(), high = -low;
  for_each_point(nx, ny, nz, [&](std::size_t i, int ix, int iy, int iz, int) {
    const double g = smooth_field(lattice, blend(ix, nx), blend(iy, ny), blend(iz, nz));
    t(i) = 0.7 * g + 0.3 * uniform(gen);
    low = std::min(low, t(i));
    high = std::max(high, t(i));
  });
  const double range = high - low;
  for (std::size_t i = 0; i < t.extent(0); ++i) {
    const double s = range > 0 ? (t(i) - low) / range : 0.0;
    t(i) = decade_power(6 * s - 3);
  }
  Kokkos::deep_copy(k, t);
  return k;
}

DiffusionProblem diffusion_problem(int nx, int ny, int nz, std::uint64_t seed) {
  check_grid(nx, ny, nz, "ebla::diffusion_problem");
  DiffusionProblem p;
  p.nx = nx;
  p.ny = ny;
  p.nz = nz;
  p.seed = seed;
  const std::size_t n = static_cast<std::size_t>(nx) * ny * nz;
  p.b = Vector(Kokkos::ViewAllocateWithoutInitializing("ebla::diffusion b"), n);
  auto b = Kokkos::create_mirror_view(p.b);
  p.A = diffusion_matrix(nx, ny, nz, diffusion_coefficients(nx, ny, nz, seed), b);
  Kokkos::deep_copy(p.b, b);
  p.x0 = constant_vector("ebla::diffusion x0", n, 0.0);
  p.x_exact = constant_vector("ebla::diffusion x_exact", n, 1.0);
  return p;
}

DiffusionOperator diffusion_narrowest(int nx, int ny, int nz, std::uint64_t seed) {
  check_grid(nx, ny, nz, "ebla::diffusion_narrowest");
  const std::size_t n = static_cast<std::size_t>(nx) * ny * nz;
  DiffusionOperator p;
  p.b = Vector(Kokkos::ViewAllocateWithoutInitializing("ebla::diffusion b"), n);
  auto b = Kokkos::create_mirror_view(p.b);
  const Vector k = diffusion_coefficients(nx, ny, nz, seed);
  // the widest |column - row|: the neighbour one plane away (one line, one point on flatter grids)
  const double band = nz > 1 ? static_cast<double>(nx) * ny : ny > 1 ? nx : 1;
  if (band <= 32767) p.A = diffusion_words(nx, ny, nz, k, b);
  else p.A = CsrOperator(diffusion_matrix(nx, ny, nz, k, b));  // binary64 values and int columns: nothing narrower
  Kokkos::deep_copy(p.b, b);
  return p;
}

CsrMatrix graph_laplacian(std::size_t n, double mean_degree, std::uint64_t seed) {
  check_graph(n, mean_degree);
  const double p = mean_degree / static_cast<double>(n - 1);
  // pass 1: degrees, then row offsets (degree + 1 for the diagonal)
  RowMap row_map("ebla::laplacian row_map", n + 1);
  auto ptr = Kokkos::create_mirror_view(row_map);
  Kokkos::deep_copy(ptr, 0);
  for_each_edge(n, p, seed, [&](std::size_t i, std::size_t j) {
    ++ptr(i + 1);
    ++ptr(j + 1);
  });
  for (std::size_t i = 0; i < n; ++i) ptr(i + 1) += ptr(i) + 1;
  const std::size_t nnz = ptr(n);
  Entries entries(Kokkos::ViewAllocateWithoutInitializing("ebla::laplacian entries"), nnz);
  Values values(Kokkos::ViewAllocateWithoutInitializing("ebla::laplacian values"), nnz);
  auto col = Kokkos::create_mirror_view(entries);
  auto val = Kokkos::create_mirror_view(values);
  // pass 2, the same edges again: row r receives its lower entries (edges (k, r), k < r)
  // before any edge (r, j) is drawn, so the diagonal goes in just before the first
  // edge of a later row, and every row comes out sorted.
  std::vector<std::size_t> at(ptr.data(), ptr.data() + n);
  std::size_t diagonal_done = 0;
  auto place_diagonals = [&](std::size_t upto) {
    for (; diagonal_done < upto; ++diagonal_done) {
      const std::size_t r = diagonal_done;
      col(at[r]) = static_cast<int>(r);
      val(at[r]++) = static_cast<double>(ptr(r + 1) - ptr(r) - 1);
    }
  };
  auto append = [&](std::size_t r, std::size_t c) {
    col(at[r]) = static_cast<int>(c);
    val(at[r]++) = -1.0;
  };
  for_each_edge(n, p, seed, [&](std::size_t i, std::size_t j) {
    place_diagonals(i + 1);
    append(i, j);
    append(j, i);
  });
  place_diagonals(n);
  Kokkos::deep_copy(row_map, ptr);
  Kokkos::deep_copy(entries, col);
  Kokkos::deep_copy(values, val);
  return CsrMatrix("ebla::laplacian", static_cast<int>(n), static_cast<int>(n), nnz, values, row_map, entries);
}

Vector random_unit_vector(std::size_t n, std::uint64_t seed) {
  if (n == 0) throw_invalid("ebla::random_unit_vector", "n = 0: there is no unit vector of length 0");
  Vector v(Kokkos::ViewAllocateWithoutInitializing("ebla::random_unit_vector"), n);
  auto h = Kokkos::create_mirror_view(v);
  std::mt19937_64 gen(seed);
  double sum = 0;
  for (std::size_t i = 0; i < n; ++i) {
    h(i) = uniform(gen);
    sum += h(i) * h(i);
  }
  if (!(sum > 0))  // all n draws exactly 0: probability 2^(-53 n)
    throw_invalid("ebla::random_unit_vector", "seed " + std::to_string(seed) + " gives the zero vector");
  const double norm = std::sqrt(sum);
  for (std::size_t i = 0; i < n; ++i) h(i) /= norm;
  Kokkos::deep_copy(v, h);
  return v;
}

// ---- symmetry ------------------------------------------------------------------------

namespace {

// CSR arrays on the host with the columns of every row strictly ascending.
struct SortedRows {
  std::size_t n = 0;
  const std::size_t* ptr = nullptr;
  const int* col = nullptr;
  const double* val = nullptr;
  std::vector<std::size_t> own_ptr;  // a sorted copy, when the matrix itself is not sorted
  std::vector<int> own_col;
  std::vector<double> own_val;
};

bool rows_sorted(const SortedRows& s) {
  for (std::size_t i = 0; i < s.n; ++i)
    for (std::size_t k = s.ptr[i] + 1; k < s.ptr[i + 1]; ++k)
      if (s.col[k - 1] >= s.col[k]) return false;
  return true;
}

// Sorts every row by column (stably) and sums duplicates: the matrix spmv applies.
void sort_rows(SortedRows& s) {
  s.own_ptr.assign(1, 0);
  std::vector<std::pair<int, double>> row;
  for (std::size_t i = 0; i < s.n; ++i) {
    row.clear();
    for (std::size_t k = s.ptr[i]; k < s.ptr[i + 1]; ++k) row.emplace_back(s.col[k], s.val[k]);
    std::stable_sort(row.begin(), row.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (std::size_t k = 0; k < row.size(); ++k) {
      if (k > 0 && row[k].first == row[k - 1].first)
        s.own_val.back() += row[k].second;
      else {
        s.own_col.push_back(row[k].first);
        s.own_val.push_back(row[k].second);
      }
    }
    s.own_ptr.push_back(s.own_col.size());
  }
  s.ptr = s.own_ptr.data();
  s.col = s.own_col.data();
  s.val = s.own_val.data();
}

std::string entry_name(std::size_t i, std::size_t j) {
  return "A(" + std::to_string(i) + ", " + std::to_string(j) + ")";
}

// The first entry, in row order, whose mirror is missing or different; "" if none.
std::string first_asymmetry(const SortedRows& s) {
  for (std::size_t i = 0; i < s.n; ++i)
    for (std::size_t k = s.ptr[i]; k < s.ptr[i + 1]; ++k) {
      const std::size_t j = static_cast<std::size_t>(s.col[k]);
      const int* begin = s.col + s.ptr[j];
      const int* end = s.col + s.ptr[j + 1];
      const int* m = std::lower_bound(begin, end, static_cast<int>(i));
      if (m == end || *m != static_cast<int>(i))
        return entry_name(i, j) + " = " + str(s.val[k]) + " is stored but " + entry_name(j, i) + " is not";
      const double mirror = s.val[s.ptr[j] + static_cast<std::size_t>(m - begin)];
      if (!(mirror == s.val[k]))
        return entry_name(i, j) + " = " + str(s.val[k]) + " but " + entry_name(j, i) + " = " + str(mirror);
    }
  return "";
}

}  // namespace

void check_symmetric(const CsrMatrix& A, const std::string& what) {
  const char* function = "ebla::check_symmetric";
  if (A.numRows() != A.numCols())
    throw_invalid(function, what + ": the matrix is " + std::to_string(A.numRows()) + " x " +
                                std::to_string(A.numCols()) + ", not square");
  if (A.numRows() == 0) return;
  const auto ptr = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), A.graph.row_map);
  const auto col = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), A.graph.entries);
  const auto val = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), A.values);
  SortedRows s;
  s.n = static_cast<std::size_t>(A.numRows());
  s.ptr = ptr.data();
  s.col = col.data();
  s.val = val.data();
  for (std::size_t k = 0; k < s.ptr[s.n]; ++k)
    if (s.col[k] < 0 || static_cast<std::size_t>(s.col[k]) >= s.n)
      throw_invalid(function, what + ": column index " + std::to_string(s.col[k]) + " (entry " +
                                  std::to_string(k) + ") is outside [0, " + std::to_string(s.n) + ")");
  if (!rows_sorted(s)) sort_rows(s);
  const std::string m = first_asymmetry(s);
  if (!m.empty()) throw_invalid(function, what + ": not symmetric: " + m + " (0-based indices)");
}

}  // namespace ebla
