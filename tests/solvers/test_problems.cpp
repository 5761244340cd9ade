// Test problems: HPCCG's matrix against a construction from its definition, the diffusion
// matrix against its definition written out afresh (coefficients, entries, b = A 1 exactly,
// symmetry and diagonal dominance), graph Laplacians against an independent O(n^2)
// generator and against the statistics of G(n, p), seeded unit vectors, and the symmetry
// check.
#include <ebla/solvers/problems.hpp>

#include <ebla/core/error.hpp>

#include "util.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace {

using ebla::test::contains;
using ebla::test::error_of;
using ebla::test::HostCsr;
using ebla::test::to_host;

// A CSR matrix from its arrays.
ebla::CsrMatrix make_csr_of(int rows, int cols, std::vector<std::size_t> ptr, std::vector<int> col,
                            std::vector<double> val) {
  return ebla::test::make_csr(HostCsr{rows, cols, std::move(ptr), std::move(col), std::move(val)});
}

// ---- HPCCG -------------------------------------------------------------------------

// A_ij from the definition: 27 on the diagonal, -1 if the grid points differ by at most
// one in every coordinate, 0 otherwise (rows i = iz nx ny + iy nx + ix).
double stencil_entry(int nx, int ny, int i, int j) {
  if (i == j) return 27;
  const int dx = i % nx - j % nx;
  const int dy = i / nx % ny - j / nx % ny;
  const int dz = i / (nx * ny) - j / (nx * ny);
  return std::abs(dx) <= 1 && std::abs(dy) <= 1 && std::abs(dz) <= 1 ? -1 : 0;
}

struct Grid {
  int nx, ny, nz;
};

class ProblemsHpccg : public ::testing::TestWithParam<Grid> {};

TEST_P(ProblemsHpccg, EveryEntryMatchesTheDefinition) {
  const Grid g = GetParam();
  const int n = g.nx * g.ny * g.nz;
  const auto A = to_host(ebla::hpccg_problem(g.nx, g.ny, g.nz).A);
  ASSERT_EQ(A.rows, n);
  ASSERT_EQ(A.cols, n);
  ASSERT_EQ(A.ptr.size(), static_cast<std::size_t>(n) + 1);
  EXPECT_EQ(A.ptr[0], 0u);
  ASSERT_EQ(A.col.size(), A.ptr[static_cast<std::size_t>(n)]);
  for (int i = 0; i < n; ++i) {
    std::vector<std::pair<int, double>> expected;
    for (int j = 0; j < n; ++j)
      if (stencil_entry(g.nx, g.ny, i, j) != 0) expected.emplace_back(j, stencil_entry(g.nx, g.ny, i, j));
    std::vector<std::pair<int, double>> stored;
    for (std::size_t k = A.ptr[static_cast<std::size_t>(i)]; k < A.ptr[static_cast<std::size_t>(i) + 1]; ++k)
      stored.emplace_back(A.col[k], A.val[k]);
    EXPECT_EQ(stored, expected) << "row " << i;  // also: columns ascending
  }
}

TEST_P(ProblemsHpccg, VectorsAreAOnesZerosAndOnes) {
  const Grid g = GetParam();
  const int n = g.nx * g.ny * g.nz;
  const auto p = ebla::hpccg_problem(g.nx, g.ny, g.nz);
  EXPECT_EQ(p.nx, g.nx);
  EXPECT_EQ(p.ny, g.ny);
  EXPECT_EQ(p.nz, g.nz);
  const auto b = to_host(p.b);
  const auto rhs = to_host(ebla::hpccg_rhs(g.nx, g.ny, g.nz));
  ASSERT_EQ(b.size(), static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    double row_sum = 0;
    for (int j = 0; j < n; ++j) row_sum += stencil_entry(g.nx, g.ny, i, j);
    EXPECT_EQ(b[static_cast<std::size_t>(i)], row_sum) << "row " << i;
  }
  EXPECT_EQ(rhs, b);
  EXPECT_EQ(to_host(p.x0), std::vector<double>(static_cast<std::size_t>(n), 0.0));
  EXPECT_EQ(to_host(p.x_exact), std::vector<double>(static_cast<std::size_t>(n), 1.0));
}

TEST_P(ProblemsHpccg, IsSymmetric) {
  const Grid g = GetParam();
  const auto p = ebla::hpccg_problem(g.nx, g.ny, g.nz);
  const auto A = to_host(p.A);
  const std::size_t n = static_cast<std::size_t>(A.rows);
  std::vector<double> dense(n * n, 0.0);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t k = A.ptr[i]; k < A.ptr[i + 1]; ++k) dense[i * n + static_cast<std::size_t>(A.col[k])] = A.val[k];
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < i; ++j) EXPECT_EQ(dense[i * n + j], dense[j * n + i]) << i << ", " << j;
  EXPECT_NO_THROW(ebla::check_symmetric(p.A, "hpccg"));
}

INSTANTIATE_TEST_SUITE_P(Grids, ProblemsHpccg,
                         ::testing::Values(Grid{1, 1, 1}, Grid{2, 3, 4}, Grid{5, 5, 5}, Grid{4, 1, 3}, Grid{1, 6, 1}),
                         [](const auto& info) {
                           const Grid g = info.param;
                           return std::to_string(g.nx) + "x" + std::to_string(g.ny) + "x" + std::to_string(g.nz);
                         });

TEST(ProblemsHpccgRows, CornerEdgeFaceInteriorCounts) {
  const auto A = to_host(ebla::hpccg_problem(5, 5, 5).A);
  auto row = [](int ix, int iy, int iz) { return static_cast<std::size_t>((iz * 5 + iy) * 5 + ix); };
  EXPECT_EQ(A.length(row(0, 0, 0)), 8u);    // corner
  EXPECT_EQ(A.length(row(4, 4, 4)), 8u);    // the opposite corner
  EXPECT_EQ(A.length(row(2, 0, 0)), 12u);   // edge
  EXPECT_EQ(A.length(row(2, 2, 0)), 18u);   // face
  EXPECT_EQ(A.length(row(2, 2, 2)), 27u);   // interior
  EXPECT_EQ(A.length(row(1, 3, 2)), 27u);
  const auto B = to_host(ebla::hpccg_problem(2, 3, 4).A);
  EXPECT_EQ(B.length(0), 8u);
  const auto one = to_host(ebla::hpccg_problem(1, 1, 1).A);
  EXPECT_EQ(one.col, std::vector<int>{0});
  EXPECT_EQ(one.val, std::vector<double>{27.0});
  EXPECT_EQ(to_host(ebla::hpccg_rhs(1, 1, 1)), std::vector<double>{27.0});
}

// Per dimension of extent m, the pairs (a, b) with |a - b| <= 1 number 3m - 2.
TEST(ProblemsHpccgRows, LargeGridNonzerosMatchTheFormula) {
  const auto p = ebla::hpccg_problem(100, 100, 100);
  const std::size_t n = 1000000;
  ASSERT_EQ(static_cast<std::size_t>(p.A.numRows()), n);
  EXPECT_EQ(p.A.nnz(), 298u * 298u * 298u);
  const auto ptr = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), p.A.graph.row_map);
  EXPECT_EQ(ptr(n), 298u * 298u * 298u);
  const auto b = to_host(p.b);
  double sum = 0;  // sum of row sums = 28 n - nnz, exact in double
  for (double x : b) sum += x;
  EXPECT_EQ(sum, 28.0 * static_cast<double>(n) - 298.0 * 298.0 * 298.0);
  // a non-cubic grid with distinct extents: nnz from the formula as well
  EXPECT_EQ(ebla::hpccg_problem(7, 3, 11).A.nnz(), 19u * 7u * 31u);
}

TEST(ProblemsHpccgRows, RejectsBadGrids) {
  EXPECT_TRUE(contains(error_of([] { ebla::hpccg_problem(0, 1, 1); }), "ebla::hpccg_problem"));
  EXPECT_TRUE(contains(error_of([] { ebla::hpccg_problem(2, -1, 2); }), "2 x -1 x 2"));
  EXPECT_TRUE(contains(error_of([] { ebla::hpccg_problem(2000, 2000, 1000); }), "int"));
  EXPECT_TRUE(contains(error_of([] { ebla::hpccg_rhs(1, 1, 0); }), "ebla::hpccg_rhs"));
  EXPECT_TRUE(contains(error_of([] { ebla::hpccg_rhs(70000, 70000, 1); }), "int"));
}

TEST(ProblemsHpccgRows, SlabsAreTheRowsOfTheWholeMatrix) {
  for (const Grid g : {Grid{3, 4, 5}, Grid{1, 1, 4}, Grid{5, 2, 1}}) {
    const HostCsr A = to_host(ebla::hpccg_problem(g.nx, g.ny, g.nz).A);
    const std::size_t plane = static_cast<std::size_t>(g.nx) * g.ny;
    for (int first = 0; first <= g.nz; ++first)
      for (int count = 0; first + count <= g.nz; ++count) {
        const HostCsr S = to_host(ebla::hpccg_rows(g.nx, g.ny, g.nz, first, count));
        SCOPED_TRACE("planes " + std::to_string(first) + " + " + std::to_string(count));
        ASSERT_EQ(S.rows, static_cast<int>(plane * count));
        ASSERT_EQ(S.cols, A.cols);
        for (std::size_t r = 0; r < plane * count; ++r) {
          const std::size_t g_row = first * plane + r;
          ASSERT_EQ(S.ptr[r + 1] - S.ptr[r], A.ptr[g_row + 1] - A.ptr[g_row]);
          for (std::size_t k = 0; k < S.ptr[r + 1] - S.ptr[r]; ++k) {
            EXPECT_EQ(S.col[S.ptr[r] + k], A.col[A.ptr[g_row] + k]);
            EXPECT_EQ(S.val[S.ptr[r] + k], A.val[A.ptr[g_row] + k]);
          }
        }
      }
  }
  EXPECT_TRUE(contains(error_of([] { ebla::hpccg_rows(2, 2, 3, 2, 2); }), "not inside [0, 3)"));
  EXPECT_TRUE(contains(error_of([] { ebla::hpccg_rows(2, 2, 3, -1, 1); }), "ebla::hpccg_rows"));
}

// ---- diffusion ----------------------------------------------------------------------

// The cell coefficients by the rule of problems.hpp, written out afresh.
std::vector<double> reference_coefficients(int nx, int ny, int nz, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  auto uniform = [&] { return static_cast<double>(gen() >> 11) * 0x1p-53; };
  double node[5][5][5];  // [z][y][x]
  for (auto& plane : node)
    for (auto& line : plane)
      for (double& v : line) v = uniform();
  struct Axis {
    int at;
    double w;
  };
  auto axis = [](int c, int n) {
    const double x = 4 * (c + 0.5) / n;  // the cell centre in lattice units
    const int at = std::min(static_cast<int>(x), 3);
    const double f = x - at;
    return Axis{at, f * f * (3 - 2 * f)};
  };
  auto mix = [](double a, double b, double w) { return a + w * (b - a); };
  std::vector<double> t;
  for (int iz = 0; iz < nz; ++iz)
    for (int iy = 0; iy < ny; ++iy)
      for (int ix = 0; ix < nx; ++ix) {
        const Axis x = axis(ix, nx), y = axis(iy, ny), z = axis(iz, nz);
        double yz[2][2];
        for (int dz = 0; dz < 2; ++dz)
          for (int dy = 0; dy < 2; ++dy)
            yz[dz][dy] = mix(node[z.at + dz][y.at + dy][x.at], node[z.at + dz][y.at + dy][x.at + 1], x.w);
        const double g = mix(mix(yz[0][0], yz[0][1], y.w), mix(yz[1][0], yz[1][1], y.w), z.w);
        t.push_back(0.7 * g + 0.3 * uniform());
      }
  const double low = *std::min_element(t.begin(), t.end()), high = *std::max_element(t.begin(), t.end());
  const double decades[] = {1e-3, 1e-2, 1e-1, 1, 10, 100, 1000};
  for (double& v : t) {
    const double x = 6 * (high > low ? (v - low) / (high - low) : 0) - 3;
    const double d = std::floor(x);
    v = decades[static_cast<int>(d) + 3] * (1 + 9 * (x - d));
  }
  return t;
}

double to_grid(double v) { return std::round(v * 0x1p38) * 0x1p-38; }

// Row i of the diffusion matrix by its definition: {column: value}.
std::map<int, double> diffusion_row(const Grid& g, const std::vector<double>& k, int i) {
  const int ix = i % g.nx, iy = i / g.nx % g.ny, iz = i / (g.nx * g.ny);
  const int c[3] = {ix, iy, iz}, extent[3] = {g.nx, g.ny, g.nz}, stride[3] = {1, g.nx, g.nx * g.ny};
  std::map<int, double> row;
  double diagonal = 0;
  for (int axis = 0; axis < 3; ++axis)
    for (int step : {-1, 1}) {
      if (c[axis] + step < 0 || c[axis] + step >= extent[axis]) {
        diagonal += to_grid(2 * k[i]);
        continue;
      }
      const int j = i + step * stride[axis];
      const double face = to_grid(2 * (k[i] * k[j]) / (k[i] + k[j]));
      row[j] = -face;
      diagonal += face;
    }
  row[i] = diagonal;
  return row;
}

// The number of faces of cell i on the boundary of the grid.
int boundary_faces(const Grid& g, int i) {
  const int ix = i % g.nx, iy = i / g.nx % g.ny, iz = i / (g.nx * g.ny);
  return (ix == 0) + (ix == g.nx - 1) + (iy == 0) + (iy == g.ny - 1) + (iz == 0) + (iz == g.nz - 1);
}

constexpr std::uint64_t diffusion_seed = 11;

class ProblemsDiffusion : public ::testing::TestWithParam<Grid> {};

TEST_P(ProblemsDiffusion, EveryEntryMatchesTheDefinition) {
  const Grid g = GetParam();
  const int n = g.nx * g.ny * g.nz;
  const std::vector<double> k = to_host(ebla::diffusion_coefficients(g.nx, g.ny, g.nz, diffusion_seed));
  EXPECT_EQ(k, reference_coefficients(g.nx, g.ny, g.nz, diffusion_seed));  // bit for bit
  const ebla::DiffusionProblem p = ebla::diffusion_problem(g.nx, g.ny, g.nz, diffusion_seed);
  EXPECT_EQ(p.nx, g.nx);
  EXPECT_EQ(p.seed, diffusion_seed);
  const HostCsr A = to_host(p.A);
  ASSERT_EQ(A.rows, n);
  ASSERT_EQ(A.cols, n);
  ASSERT_EQ(A.ptr.size(), static_cast<std::size_t>(n) + 1);
  for (int i = 0; i < n; ++i) {
    const std::map<int, double> expected = diffusion_row(g, k, i);
    std::vector<std::pair<int, double>> stored;
    for (std::size_t e = A.ptr[static_cast<std::size_t>(i)]; e < A.ptr[static_cast<std::size_t>(i) + 1]; ++e)
      stored.emplace_back(A.col[e], A.val[e]);
    const std::vector<std::pair<int, double>> defined(expected.begin(), expected.end());
    EXPECT_EQ(stored, defined) << "row " << i;
  }
}

TEST_P(ProblemsDiffusion, SymmetricWithAPositiveDominantDiagonal) {
  const Grid g = GetParam();
  const ebla::DiffusionProblem p = ebla::diffusion_problem(g.nx, g.ny, g.nz, diffusion_seed);
  EXPECT_NO_THROW(ebla::check_symmetric(p.A, "diffusion"));
  const HostCsr A = to_host(p.A);
  for (int i = 0; i < A.rows; ++i) {
    double diagonal = 0, off = 0;
    for (std::size_t e = A.ptr[static_cast<std::size_t>(i)]; e < A.ptr[static_cast<std::size_t>(i) + 1]; ++e) {
      if (A.col[e] == i) {
        diagonal = A.val[e];
        continue;
      }
      EXPECT_LT(A.val[e], 0) << "row " << i;
      off += std::fabs(A.val[e]);  // exact: multiples of 2^-38 below 2^15
    }
    EXPECT_GT(diagonal, 0) << "row " << i;
    if (boundary_faces(g, i) > 0) {
      EXPECT_GT(diagonal, off) << "row " << i;  // strictly dominant at the boundary
    } else {
      EXPECT_EQ(diagonal, off) << "row " << i;
    }
  }
}

// b_i is the row sum of the stored entries, exactly: a double-double sum of the row (TwoSum)
// has no low part, and any order of summation in double gives the same b_i, which is q(2 k_i)
// times the boundary faces of cell i.
TEST_P(ProblemsDiffusion, BIsAOnesExactly) {
  const Grid g = GetParam();
  const ebla::DiffusionProblem p = ebla::diffusion_problem(g.nx, g.ny, g.nz, diffusion_seed);
  const HostCsr A = to_host(p.A);
  const std::vector<double> b = to_host(p.b);
  const std::vector<double> k = reference_coefficients(g.nx, g.ny, g.nz, diffusion_seed);
  const std::size_t n = static_cast<std::size_t>(A.rows);
  ASSERT_EQ(b.size(), n);
  for (std::size_t i = 0; i < n; ++i) {
    double hi = 0, lo = 0, backwards = 0;
    for (std::size_t e = A.ptr[i]; e < A.ptr[i + 1]; ++e) {
      const double s = hi + A.val[e];
      const double z = s - hi;
      lo += (hi - (s - z)) + (A.val[e] - z);
      hi = s;
    }
    for (std::size_t e = A.ptr[i + 1]; e-- > A.ptr[i];) backwards += A.val[e];
    EXPECT_EQ(lo, 0.0) << "row " << i;
    EXPECT_EQ(b[i], hi) << "row " << i;
    EXPECT_EQ(b[i], backwards) << "row " << i;
    EXPECT_EQ(b[i], boundary_faces(g, static_cast<int>(i)) * to_grid(2 * k[i])) << "row " << i;
  }
  EXPECT_EQ(to_host(p.x0), std::vector<double>(n, 0.0));
  EXPECT_EQ(to_host(p.x_exact), std::vector<double>(n, 1.0));
}

template <class V>
std::vector<typename V::non_const_value_type> words_of(const V& v) {
  const auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  return std::vector<typename V::non_const_value_type>(h.data(), h.data() + h.extent(0));
}

// Written straight into its words, the matrix is the one diffusion_problem gives, in the
// words CsrOperator::narrowest gives it, bit for bit, and b is the same: binary64 values and
// 16-bit offsets in slices of eight rows where their padding leaves them smaller than the
// CSR arrays (no CSR array is held), else 16-bit offsets in the order of the rows' entries
// beside the binary64 values: of the suite's grids 1 x 1 x 1, 4 x 1 x 3 and 1 x 6 x 1, whose
// slices would take 8.0, 1.35 and 1.33 times the CSR arrays' bytes (2 x 3 x 4, 5 x 5 x 5 and
// 9 x 7 x 8: 0.94, 0.95 and 0.89).
void expect_narrowest_diffusion(int nx, int ny, int nz, bool sliced) {
  const std::string grid = std::to_string(nx) + " x " + std::to_string(ny) + " x " + std::to_string(nz);
  const ebla::DiffusionProblem p = ebla::diffusion_problem(nx, ny, nz, diffusion_seed);
  const ebla::DiffusionOperator d = ebla::diffusion_narrowest(nx, ny, nz, diffusion_seed);
  const ebla::CsrOperator N = ebla::CsrOperator::narrowest(p.A);
  EXPECT_TRUE(to_host(d.A.matrix()) == to_host(p.A)) << grid;
  EXPECT_EQ(to_host(d.b), to_host(p.b)) << grid;
  EXPECT_EQ(words_of(d.A.words().values64), words_of(N.words().values64)) << grid;
  EXPECT_EQ(words_of(d.A.words().offsets16), words_of(N.words().offsets16)) << grid;
  EXPECT_EQ(words_of(d.A.words().slices), words_of(N.words().slices)) << grid;
  EXPECT_EQ(d.A.held().values.extent(0), N.held().values.extent(0)) << grid;
  EXPECT_EQ(d.A.held().graph.entries.extent(0), 0u) << grid;
  EXPECT_EQ(d.A.nonzeros(), p.A.nnz()) << grid;
  EXPECT_EQ(d.A.words().values64.extent(0) > 0, sliced) << grid;
  EXPECT_EQ(d.A.words().offsets16.extent(0) >= p.A.nnz(), true) << grid;
  if (sliced) {
    EXPECT_EQ(d.A.words().values64.extent(0), d.A.words().offsets16.extent(0)) << grid;
    EXPECT_EQ(d.A.held().values.extent(0), 0u) << grid;
  }
}

TEST_P(ProblemsDiffusion, NarrowestIsTheMatrixInTheWordsOfCsrOperatorNarrowest) {
  const Grid g = GetParam();
  expect_narrowest_diffusion(g.nx, g.ny, g.nz, g.nx * g.ny * g.nz >= 24);
}

TEST(ProblemsDiffusion, NarrowestWritesLargerGridsInSlices) {
  expect_narrowest_diffusion(24, 24, 24, true);
  expect_narrowest_diffusion(40, 30, 2, true);
  expect_narrowest_diffusion(3000, 1, 1, true);
}

// Where a neighbour plane lies more than 32767 rows away, the columns stay ints and the
// matrix stays in CSR (binary64 values are narrower in no format).
TEST(ProblemsDiffusion, NarrowestOfAWideGridIsTheCsrMatrix) {
  const ebla::DiffusionOperator d = ebla::diffusion_narrowest(200, 200, 2, 4);
  const ebla::DiffusionProblem p = ebla::diffusion_problem(200, 200, 2, 4);
  EXPECT_FALSE(d.A.narrow());
  EXPECT_TRUE(to_host(d.A.matrix()) == to_host(p.A));
  EXPECT_EQ(to_host(d.b), to_host(p.b));
  EXPECT_TRUE(contains(error_of([] { ebla::diffusion_narrowest(2, 0, 2, 1); }), "ebla::diffusion_narrowest"));
}

INSTANTIATE_TEST_SUITE_P(Grids, ProblemsDiffusion,
                         ::testing::Values(Grid{1, 1, 1}, Grid{2, 3, 4}, Grid{5, 5, 5}, Grid{4, 1, 3}, Grid{1, 6, 1},
                                           Grid{9, 7, 8}),
                         [](const auto& info) {
                           const Grid g = info.param;
                           return std::to_string(g.nx) + "x" + std::to_string(g.ny) + "x" + std::to_string(g.nz);
                         });

TEST(ProblemsDiffusionCoefficients, SpanSixDecades) {
  for (const Grid g : {Grid{16, 16, 16}, Grid{2, 1, 1}, Grid{40, 3, 5}})
    for (std::uint64_t seed : {1u, 2u, 99u}) {
      const std::vector<double> k = to_host(ebla::diffusion_coefficients(g.nx, g.ny, g.nz, seed));
      const auto [low, high] = std::minmax_element(k.begin(), k.end());
      EXPECT_EQ(*low, 1e-3);
      EXPECT_EQ(*high, 1e3);
      EXPECT_GE(*high / *low, 1e6 * (1 - 0x1p-50));  // 1e-3 is not exact in binary
    }
  EXPECT_EQ(to_host(ebla::diffusion_coefficients(1, 1, 1, 5)), std::vector<double>{1e-3});
  // every decade holds cells
  const std::vector<double> k = to_host(ebla::diffusion_coefficients(16, 16, 16, 1));
  for (double d = 1e-3; d < 1e3; d *= 10)
    EXPECT_TRUE(std::any_of(k.begin(), k.end(), [&](double v) { return v >= d && v < 10 * d; })) << d;
}

// The matrix values are not those of a narrow format: most are not even binary32 numbers
// (and so not bfloat16 or binary16 ones).
TEST(ProblemsDiffusionCoefficients, ValuesAreNotExactInBinary32) {
  const HostCsr A = to_host(ebla::diffusion_problem(10, 10, 10, 1).A);
  std::size_t inexact = 0;
  for (double v : A.val) inexact += static_cast<double>(static_cast<float>(v)) != v;
  EXPECT_GT(inexact, A.val.size() * 95 / 100) << inexact << " of " << A.val.size();
}

// The same (nx, ny, nz, seed), the same bits: a few coefficients and entries as they were
// first computed, another seed other values.
TEST(ProblemsDiffusionCoefficients, DeterministicForASeed) {
  const std::vector<double> k = to_host(ebla::diffusion_coefficients(4, 3, 2, 1));
  EXPECT_EQ(k, to_host(ebla::diffusion_coefficients(4, 3, 2, 1)));
  EXPECT_NE(k, to_host(ebla::diffusion_coefficients(4, 3, 2, 2)));
  const auto A = to_host(ebla::diffusion_problem(4, 3, 2, 1).A);
  EXPECT_EQ(A, to_host(ebla::diffusion_problem(4, 3, 2, 1).A));
  char printed[200];
  std::snprintf(printed, sizeof printed, "%a %a %a %a %a", k[0], k[5], k[23], A.val[0], A.val[A.val.size() - 1]);
  EXPECT_EQ(std::string(printed),
            "0x1.724dba248883cp-2 0x1.61d8032ac5e32p+5 0x1.f4feb68c28e33p-6 0x1.12879c6808p+2 0x1.486a67f59p-2");
}

// Faces: (nx - 1) ny nz + nx (ny - 1) nz + nx ny (nz - 1), each stored twice.
TEST(ProblemsDiffusion, LargeGridNonzerosMatchTheFormula) {
  const auto p = ebla::diffusion_problem(100, 100, 100, 3);
  EXPECT_EQ(p.A.numRows(), 1000000);
  EXPECT_EQ(p.A.nnz(), 1000000u + 2u * 3u * 99u * 100u * 100u);
  EXPECT_EQ(ebla::diffusion_problem(7, 3, 11, 1).A.nnz(), 231u + 2u * (6u * 33u + 7u * 2u * 11u + 21u * 10u));
}

TEST(ProblemsDiffusion, RejectsBadGrids) {
  EXPECT_TRUE(contains(error_of([] { ebla::diffusion_problem(0, 1, 1, 1); }), "ebla::diffusion_problem"));
  EXPECT_TRUE(contains(error_of([] { ebla::diffusion_problem(2, -1, 2, 1); }), "2 x -1 x 2"));
  EXPECT_TRUE(contains(error_of([] { ebla::diffusion_problem(2000, 2000, 1000, 1); }), "int"));
  EXPECT_TRUE(contains(error_of([] { ebla::diffusion_coefficients(1, 1, 0, 1); }), "ebla::diffusion_coefficients"));
}

// ---- graph Laplacians --------------------------------------------------------------

using Edges = std::set<std::pair<int, int>>;

// The edges of G(n, p) by the documented rule, walking every pair of the strictly upper
// triangle in row-major order: s = floor(log(1 - u) / log(1 - p)) pairs are passed over
// before each edge, u = (64-bit output >> 11) 2^-53 of std::mt19937_64(seed).
Edges reference_edges(std::size_t n, double mean_degree, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  const double log_q = std::log1p(-mean_degree / static_cast<double>(n - 1));
  auto draw = [&] { return std::floor(std::log(1 - static_cast<double>(gen() >> 11) * 0x1p-53) / log_q); };
  Edges e;
  double skip = draw();
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = i + 1; j < n; ++j) {
      if (skip == 0) {
        e.emplace(static_cast<int>(i), static_cast<int>(j));
        skip = draw();
      } else {
        skip -= 1;
      }
    }
  return e;
}

Edges upper_edges(const HostCsr& L) {
  Edges e;
  for (std::size_t i = 0; i < static_cast<std::size_t>(L.rows); ++i)
    for (std::size_t k = L.ptr[i]; k < L.ptr[i + 1]; ++k)
      if (static_cast<std::size_t>(L.col[k]) > i) e.emplace(static_cast<int>(i), L.col[k]);
  return e;
}

// Rows sorted, diagonal = degree, off-diagonal -1, row sums 0, pattern symmetric.
void expect_laplacian(const HostCsr& L) {
  ASSERT_EQ(L.rows, L.cols);
  const std::size_t n = static_cast<std::size_t>(L.rows);
  std::set<std::pair<int, int>> pattern;
  for (std::size_t i = 0; i < n; ++i) {
    double diagonal = std::numeric_limits<double>::quiet_NaN(), sum = 0;
    for (std::size_t k = L.ptr[i]; k < L.ptr[i + 1]; ++k) {
      if (k > L.ptr[i]) {
        ASSERT_LT(L.col[k - 1], L.col[k]) << "row " << i;
      }
      sum += L.val[k];
      if (static_cast<std::size_t>(L.col[k]) == i) {
        diagonal = L.val[k];
      } else {
        ASSERT_EQ(L.val[k], -1.0) << "row " << i;
        pattern.emplace(static_cast<int>(i), L.col[k]);
      }
    }
    ASSERT_EQ(diagonal, static_cast<double>(L.length(i) - 1)) << "row " << i;
    ASSERT_EQ(sum, 0.0) << "row " << i;
  }
  for (const auto& [i, j] : pattern) ASSERT_EQ(pattern.count({j, i}), 1u) << i << ", " << j;
}

TEST(ProblemsGraphLaplacian, EdgesFollowTheDocumentedRule) {
  for (double d : {0.5, 5.0, 60.0, 299.0})
    for (std::uint64_t seed : {1u, 2u, 12345u}) {
      SCOPED_TRACE("mean degree " + std::to_string(d) + ", seed " + std::to_string(seed));
      const auto L = to_host(ebla::graph_laplacian(300, d, seed));
      EXPECT_EQ(upper_edges(L), reference_edges(300, d, seed));
    }
}

TEST(ProblemsGraphLaplacian, IsALaplacian) {
  for (double d : {0.5, 8.0, 1000.0}) {
    SCOPED_TRACE("mean degree " + std::to_string(d));
    const ebla::CsrMatrix A = ebla::graph_laplacian(2000, d, 7);
    expect_laplacian(to_host(A));
    EXPECT_NO_THROW(ebla::check_symmetric(A, "laplacian"));
  }
}

TEST(ProblemsGraphLaplacian, IsolatedVerticesKeepTheirZeroDiagonal) {
  // mean degree 0.5: about n e^-0.5 = 607 isolated vertices
  const auto L = to_host(ebla::graph_laplacian(1000, 0.5, 3));
  int isolated = 0;
  for (std::size_t i = 0; i < 1000; ++i)
    if (L.length(i) == 1) {
      ++isolated;
      EXPECT_EQ(L.col[L.ptr[i]], static_cast<int>(i));
      EXPECT_EQ(L.val[L.ptr[i]], 0.0);
    }
  EXPECT_GT(isolated, 400);
  EXPECT_LT(isolated, 800);
}

TEST(ProblemsGraphLaplacian, CompleteGraphAtMaximalMeanDegree) {
  const auto L = to_host(ebla::graph_laplacian(50, 49, 11));
  for (std::size_t i = 0; i < 50; ++i) {
    ASSERT_EQ(L.length(i), 50u);
    EXPECT_EQ(L.val[L.ptr[i] + i], 49.0);
  }
  const auto two = to_host(ebla::graph_laplacian(2, 1, 5));
  EXPECT_EQ(two.val, (std::vector<double>{1, -1, -1, 1}));
}

// The edge count E of G(n, p) is Binomial(n(n-1)/2, p), so the mean degree 2E/n has mean
// (n-1) p = d and variance 2 d (1-p) / n; a vertex's degree is Binomial(n-1, p), and the
// edges among the first half of the vertices are Binomial(m(m-1)/2, p), m = n/2. All
// three are checked within 5 standard deviations (a false alarm has probability < 1e-6
// per check; the seeds are fixed, so the outcome is deterministic).
TEST(ProblemsGraphLaplacian, StatisticsOfGnp) {
  struct Case {
    std::size_t n;
    double d;
  };
  for (const Case c : {Case{20000, 10.0}, Case{2000, 1000.0}, Case{5000, 2.0}})
    for (std::uint64_t seed : {1u, 99u}) {
      SCOPED_TRACE("n " + std::to_string(c.n) + ", d " + std::to_string(c.d) + ", seed " + std::to_string(seed));
      const auto L = to_host(ebla::graph_laplacian(c.n, c.d, seed));
      const double n = static_cast<double>(c.n);
      const double p = c.d / (n - 1);
      double sum = 0, sum2 = 0;
      for (std::size_t i = 0; i < c.n; ++i) {
        const double deg = static_cast<double>(L.length(i) - 1);
        sum += deg;
        sum2 += deg * deg;
      }
      const double mean = sum / n;
      EXPECT_NEAR(mean, c.d, 5 * std::sqrt(2 * c.d * (1 - p) / n));
      // sample variance of Binomial(n-1, p) degrees: var = d (1-p), and the variance of
      // the estimate is about (mu4 - var^2) / n with mu4 - var^2 <= var + 2 var^2
      const double var = c.d * (1 - p);
      EXPECT_NEAR(sum2 / n - mean * mean, var, 5 * std::sqrt((var + 2 * var * var) / n));
      const double m = std::floor(n / 2);
      std::size_t half = 0;
      for (const auto& [i, j] : upper_edges(L)) half += static_cast<double>(j) < m;
      const double pairs = m * (m - 1) / 2;
      EXPECT_NEAR(static_cast<double>(half), pairs * p, 5 * std::sqrt(pairs * p * (1 - p)));
    }
}

TEST(ProblemsGraphLaplacian, SameSeedSameMatrixOtherSeedOther) {
  const auto a = to_host(ebla::graph_laplacian(3000, 6, 42));
  const auto b = to_host(ebla::graph_laplacian(3000, 6, 42));
  const auto c = to_host(ebla::graph_laplacian(3000, 6, 43));
  EXPECT_EQ(a.ptr, b.ptr);
  EXPECT_EQ(a.col, b.col);
  EXPECT_EQ(a.val, b.val);
  EXPECT_NE(a.col, c.col);
}

TEST(ProblemsGraphLaplacian, RejectsBadArguments) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_TRUE(contains(error_of([] { ebla::graph_laplacian(1, 0.5, 1); }), "ebla::graph_laplacian: n = 1"));
  EXPECT_TRUE(contains(error_of([] { ebla::graph_laplacian(0, 0.5, 1); }), "n = 0"));
  EXPECT_TRUE(contains(error_of([] { ebla::graph_laplacian(10, 0, 1); }), "mean_degree = 0"));
  EXPECT_TRUE(contains(error_of([] { ebla::graph_laplacian(10, -1, 1); }), "mean_degree = -1"));
  EXPECT_TRUE(contains(error_of([] { ebla::graph_laplacian(10, 9.5, 1); }), "n - 1 = 9"));
  EXPECT_TRUE(contains(error_of([=] { ebla::graph_laplacian(10, nan, 1); }), "mean_degree = nan"));
  EXPECT_TRUE(contains(error_of([=] { ebla::graph_laplacian(10, inf, 1); }), "mean_degree = inf"));
  EXPECT_TRUE(contains(error_of([] { ebla::graph_laplacian(std::size_t(1) << 32, 1, 1); }), "INT_MAX"));
}

// ---- random unit vectors -----------------------------------------------------------

TEST(ProblemsRandomUnitVector, UnitNormAndProportionalToTheDocumentedUniforms) {
  for (std::size_t n : {1u, 2u, 1000u, 100000u}) {
    SCOPED_TRACE("n " + std::to_string(n));
    const auto v = to_host(ebla::random_unit_vector(n, 2024));
    ASSERT_EQ(v.size(), n);
    // the sum of squares in double is off by at most about n u (u = 2^-53) relatively
    const double tol = static_cast<double>(n + 4) * 0x1p-53;
    long double norm2 = 0;
    for (double x : v) norm2 += static_cast<long double>(x) * x;
    EXPECT_NEAR(static_cast<double>(norm2), 1.0, 2 * tol);
    std::mt19937_64 gen(2024);
    std::vector<long double> u(n);
    long double unorm2 = 0;
    for (auto& x : u) {
      x = static_cast<long double>(gen() >> 11) * 0x1p-53L;
      unorm2 += x * x;
    }
    const long double unorm = std::sqrt(unorm2);
    for (std::size_t i = 0; i < n; ++i) {
      ASSERT_GE(v[i], 0.0);
      ASSERT_NEAR(static_cast<double>(v[i] * unorm), static_cast<double>(u[i]), tol * static_cast<double>(u[i])) << i;
    }
  }
}

TEST(ProblemsRandomUnitVector, ReproducibleAndSeedDependent) {
  EXPECT_EQ(to_host(ebla::random_unit_vector(500, 1)), to_host(ebla::random_unit_vector(500, 1)));
  EXPECT_NE(to_host(ebla::random_unit_vector(500, 1)), to_host(ebla::random_unit_vector(500, 2)));
  EXPECT_EQ(to_host(ebla::random_unit_vector(1, 9)), std::vector<double>{1.0});
  EXPECT_TRUE(contains(error_of([] { ebla::random_unit_vector(0, 1); }), "ebla::random_unit_vector"));
}

// ---- check_symmetric ---------------------------------------------------------------

TEST(ProblemsCheckSymmetric, AcceptsSymmetricMatricesInAnyStorageOrder) {
  // [[2, 1, 0], [1, 0, 5], [0, 5, 3]], row 0 stored backwards, row 2's 3 split in two
  EXPECT_NO_THROW(ebla::check_symmetric(make_csr_of(3, 3, {0, 2, 4, 7}, {1, 0, 0, 2, 2, 1, 2}, {1, 2, 1, 5, 1, 5, 2}),
                                        "unsorted"));
  // duplicates summed: A(0, 1) = 1 + 2 = 3 = A(1, 0)
  EXPECT_NO_THROW(ebla::check_symmetric(make_csr_of(2, 2, {0, 2, 3}, {1, 1, 0}, {1, 2, 3}), "duplicates"));
  EXPECT_NO_THROW(ebla::check_symmetric(make_csr_of(0, 0, {0}, {}, {}), "empty"));
  EXPECT_NO_THROW(ebla::check_symmetric(ebla::CsrMatrix(), "default"));
}

TEST(ProblemsCheckSymmetric, RejectsAValueDifference) {
  const auto A = make_csr_of(3, 3, {0, 2, 4, 5}, {0, 1, 0, 1, 2}, {4, 2, 3, 4, 4});
  const std::string e = error_of([&] { ebla::check_symmetric(A, "values.mtx"); });
  EXPECT_TRUE(contains(e, "ebla::check_symmetric: values.mtx: not symmetric"));
  EXPECT_TRUE(contains(e, "A(0, 1) = 2 but A(1, 0) = 3"));
}

TEST(ProblemsCheckSymmetric, RejectsAPatternDifference) {
  const auto A = make_csr_of(3, 3, {0, 2, 3, 4}, {0, 2, 1, 2}, {1, -1, 1, 1});
  const std::string e = error_of([&] { ebla::check_symmetric(A, "pattern.h5"); });
  EXPECT_TRUE(contains(e, "pattern.h5"));
  EXPECT_TRUE(contains(e, "A(0, 2) = -1 is stored but A(2, 0) is not"));
  // the missing entry in the upper triangle: reported from the lower one
  const auto B = make_csr_of(3, 3, {0, 1, 2, 4}, {0, 1, 0, 2}, {1, 1, 7, 1});
  EXPECT_TRUE(contains(error_of([&] { ebla::check_symmetric(B, "B"); }), "A(2, 0) = 7 is stored but A(0, 2) is not"));
  // a cancelling duplicate is not a zero entry: the pattern differs
  const auto C = make_csr_of(2, 2, {0, 1, 3}, {0, 0, 0}, {1, 1, -1});
  EXPECT_TRUE(contains(error_of([&] { ebla::check_symmetric(C, "C"); }), "A(1, 0) = 0 is stored but A(0, 1) is not"));
}

TEST(ProblemsCheckSymmetric, RejectsNonSquareAndBadColumns) {
  const auto A = make_csr_of(2, 3, {0, 1, 2}, {0, 1}, {1, 1});
  EXPECT_TRUE(contains(error_of([&] { ebla::check_symmetric(A, "wide"); }), "wide: the matrix is 2 x 3, not square"));
  const auto B = make_csr_of(2, 2, {0, 1, 2}, {0, 2}, {1, 1});
  EXPECT_TRUE(contains(error_of([&] { ebla::check_symmetric(B, "B"); }), "column index 2 (entry 1) is outside [0, 2)"));
  const auto C = make_csr_of(2, 2, {0, 1, 2}, {-1, 1}, {1, 1});
  EXPECT_TRUE(contains(error_of([&] { ebla::check_symmetric(C, "C"); }), "column index -1"));
}

}  // namespace
