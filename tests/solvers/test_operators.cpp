// The operators: the stencil against the 27-point matrix built entry by entry, the
// double-double residual norm against a binary128 reference, CSR held in narrow words
// against the binary64 matrix, and bad shapes.
#include "util.hpp"

#include <ebla/core/error.hpp>
#include <ebla/core/storage.hpp>
#include <ebla/solvers/io.hpp>
#include <ebla/solvers/operators.hpp>
#include <ebla/solvers/problems.hpp>

#include <KokkosSparse_spmv.hpp>
#include <gtest/gtest.h>
#include <quadmath.h>

#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <type_traits>

namespace {

using namespace ebla;
using namespace ebla::test;

std::vector<double> random_vector(std::size_t n, std::mt19937_64& gen) {
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> v(n);
  for (auto& x : v) x = u(gen) * std::exp2(static_cast<int>(gen() % 20) - 10);
  return v;
}

// ||b - A x|| in binary128 from the dense matrix (entries and x are doubles: the products
// are exact in binary128, the sums carry 113 bits).
double reference_residual(const std::vector<std::vector<double>>& a, const std::vector<double>& x,
                          const std::vector<double>& b) {
  __float128 sum = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    __float128 r = b[i];
    for (std::size_t j = 0; j < x.size(); ++j) r -= static_cast<__float128>(a[i][j]) * x[j];
    sum += r * r;
  }
  return static_cast<double>(sqrtq(sum));
}

TEST(StencilOperator, AppliesTheHpccgMatrixOnEveryGridShape) {
  std::mt19937_64 gen(7);
  // (lines longer than the kernel's chunk of 256 points, with and without a remainder)
  const std::array<int, 3> shapes[] = {{1, 1, 1}, {2, 3, 4}, {5, 4, 3}, {7, 1, 1}, {1, 6, 1},
                                       {3, 3, 3}, {257, 1, 2}, {512, 2, 1}, {600, 2, 2}};
  for (auto [nx, ny, nz] : shapes) {
    SCOPED_TRACE(std::to_string(nx) + "x" + std::to_string(ny) + "x" + std::to_string(nz));
    const auto a = stencil_dense(nx, ny, nz);
    const std::size_t n = a.size();
    StencilOperator S(nx, ny, nz);
    CsrOperator C(csr_from_dense(a));
    std::size_t nnz = 0;
    for (const auto& row : a)
      for (double v : row) nnz += v != 0;
    EXPECT_EQ(S.nonzeros(), nnz);
    EXPECT_EQ(C.nonzeros(), nnz);
    const auto xs = random_vector(n, gen);
    Vector x = vec(xs), ys("ys", n), yc("yc", n);
    S.apply(x, ys);
    C.apply(x, yc);
    const auto hs = host(ys), hc = host(yc);
    for (std::size_t i = 0; i < n; ++i) {
      __float128 exact = 0, mag = 0;
      for (std::size_t j = 0; j < n; ++j) {
        exact += static_cast<__float128>(a[i][j]) * xs[j];
        mag += fabsq(static_cast<__float128>(a[i][j]) * xs[j]);
      }
      // recursive summation of at most 28 terms: |error| <= gamma_28 sum |a_ij x_j|
      const double tol = static_cast<double>(mag) * 28 * 0x1p-53 / (1 - 28 * 0x1p-53);
      EXPECT_LE(std::fabs(hs[i] - static_cast<double>(exact)), tol) << "row " << i;
      EXPECT_LE(std::fabs(hc[i] - static_cast<double>(exact)), tol) << "row " << i;
    }
    for (double d : host(S.diagonal())) EXPECT_EQ(d, 27.0);
    for (double d : host(C.diagonal())) EXPECT_EQ(d, 27.0);
  }
}

// b = fl(A x) makes b - A x a sum with massive cancellation: a residual computed in
// double would be dominated by rounding; the double-double one matches binary128.
TEST(Operators, ResidualNormMatchesBinary128UnderCancellation) {
  std::mt19937_64 gen(11);
  int cases = 0;
  for (int trial = 0; trial < 20; ++trial) {
    const int nx = 2 + trial % 4, ny = 1 + trial % 3, nz = 1 + trial % 2;
    const auto a = stencil_dense(nx, ny, nz);
    const std::size_t n = a.size();
    const auto xs = random_vector(n, gen);
    Vector x = vec(xs), ax("ax", n);
    StencilOperator S(nx, ny, nz);
    S.apply(x, ax);
    auto bs = host(ax);
    if (trial % 2) bs[trial % n] += 1e-3;  // and a residual that is not only rounding
    const Vector b = vec(bs);
    const double ref = reference_residual(a, xs, bs);
    CsrOperator C(csr_from_dense(a));
    DenseOperator D(dense_view(a));
    for (double got : {S.residual_norm(x, b), C.residual_norm(x, b), D.residual_norm(x, b)}) {
      EXPECT_LE(std::fabs(got - ref), 1e-14 * ref + 1e-300) << "trial " << trial << " ref " << ref;
      ++cases;
    }
  }
  EXPECT_EQ(cases, 60);
}

TEST(DenseOperator, AppliesTheMatrixAndGivesItsDiagonal) {
  const std::vector<std::vector<double>> a{{2, -1, 0}, {-1, 2, -1}, {0, -1, 2}};
  DenseOperator D(dense_view(a));
  Vector y("y", 3);
  D.apply(vec({1, 2, 3}), y);
  EXPECT_EQ(host(y), (std::vector<double>{0, 0, 4}));
  EXPECT_EQ(host(D.diagonal()), (std::vector<double>{2, 2, 2}));
}

TEST(CsrOperator, DiagonalSumsDuplicatesAndIsZeroWhereMissing) {
  CsrOperator C(csr_from_dense({{0, 1}, {1, 5}}));
  EXPECT_EQ(host(C.diagonal()), (std::vector<double>{0, 5}));
}

// y = A x with each row's products summed in binary64 in entry order, on the host.
std::vector<double> rows_in_order(const HostCsr& a, const std::vector<double>& x) {
  std::vector<double> y(a.ptr.size() - 1);
  for (std::size_t i = 0; i + 1 < a.ptr.size(); ++i) {
    double s = 0;
    for (std::size_t k = a.ptr[i]; k < a.ptr[i + 1]; ++k) s += a.val[k] * x[static_cast<std::size_t>(a.col[k])];
    y[i] = s;
  }
  return y;
}

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

// What the narrow operator N must be for the binary64 matrix A: the same matrix back from
// its words, the same products (entry order), diagonal and residual norm, bit for bit.
void expect_same_operator(const CsrMatrix& A, const CsrOperator& N, std::mt19937_64& gen, const std::string& what) {
  const CsrOperator W(A);
  const HostCsr a = to_host(A);
  EXPECT_TRUE(to_host(N.matrix()) == a) << what;
  EXPECT_EQ(N.size(), W.size()) << what;
  EXPECT_EQ(N.nonzeros(), W.nonzeros()) << what;
  const std::size_t n = W.size();
  const auto xs = random_vector(n, gen);
  auto bs = random_vector(n, gen);
  Vector y("y", n);
  N.apply(vec(xs), y);
  EXPECT_TRUE(same_bits(host(y), rows_in_order(a, xs))) << what;
  EXPECT_TRUE(same_bits(host(N.diagonal()), host(W.diagonal()))) << what;
  const double rn = N.residual_norm(vec(xs), vec(bs)), rw = W.residual_norm(vec(xs), vec(bs));
  EXPECT_EQ(std::memcmp(&rn, &rw, sizeof rn), 0) << what << ": " << rn << " against " << rw;
}

// On a threaded host execution space a binary64 matrix of at most 2^15 stored entries is
// multiplied on the calling thread (operators.cpp) where larger ones go through
// KokkosSparse::spmv: both add each row's products in entry order from 0, so both give the
// same bits, and those of the rows summed here. (On Kokkos::Serial every product is
// KokkosSparse's own.) On the SuiteSparse matrices (ten of them small enough to run inline,
// bcsstk13 and bcsstk16 not) and on random matrices with rows of 0 to 40 entries, values and
// x of magnitudes 2^-10 to 2^10 of both signs.
TEST(CsrOperator, SmallProductsRunInline) {
#if defined(KOKKOS_ENABLE_SERIAL)
  constexpr bool threaded = !std::is_same_v<Kokkos::DefaultExecutionSpace, Kokkos::Serial>;
#else
  constexpr bool threaded = true;
#endif
  std::mt19937_64 gen(11);
  int inline_runs = 0;
  auto check = [&](const CsrMatrix& M, const std::string& what) {
    const CsrOperator A(M);
    const std::size_t n = A.size();
    const auto xs = random_vector(n, gen);
    Vector y("y", n), y_kk("y kokkos", n);
    A.apply(vec(xs), y);
    KokkosSparse::spmv("N", 1.0, M, vec(xs), 0.0, y_kk);
    EXPECT_TRUE(same_bits(host(y), host(y_kk))) << what;
    if (threaded && M.nnz() <= (1 << 15)) {
      EXPECT_TRUE(same_bits(host(y), rows_in_order(to_host(M), xs))) << what;
      ++inline_runs;
    }
  };
  for (const char* name : {"1138_bus", "494_bus", "662_bus", "LFAT5", "bcsstk01", "bcsstk02", "bcsstk13", "bcsstk16",
                           "gr_30_30", "mesh2e1", "nos3", "nos4"})
    check(read_matrix_market(std::string(EBLA_DATA_DIR "/matrices/") + name + ".mtx"), name);
  for (int trial = 0; trial < 20; ++trial) {
    HostCsr h;
    h.rows = h.cols = 1 + static_cast<int>(gen() % 800);
    h.ptr = {0};
    for (int i = 0; i < h.rows; ++i) {
      const std::size_t length = gen() % 41;
      for (std::size_t k = 0; k < length; ++k) h.col.push_back(static_cast<int>(gen() % static_cast<std::size_t>(h.cols)));
      const auto v = random_vector(length, gen);
      h.val.insert(h.val.end(), v.begin(), v.end());
      h.ptr.push_back(h.col.size());
    }
    check(make_csr(h), "random matrix " + std::to_string(trial));
  }
  EXPECT_EQ(inline_runs, threaded ? 10 + 20 : 0);  // the inline path was taken (the random ones: at most 800 x 40 entries)
}

TEST(CsrOperator, NarrowestHoldsTheMatrixInFewerBytesAndAppliesTheSameMatrix) {
  std::mt19937_64 gen(5);
  // HPCCG 12^3: -1 and 27 in bfloat16, every |column - row| <= 157: 4 bytes a nonzero
  const auto P = hpccg_problem(12, 12, 12);
  const CsrOperator N = CsrOperator::narrowest(P.A), H = hpccg_narrowest(12, 12, 12);
  for (const CsrOperator* op : {&N, &H}) {
    EXPECT_TRUE(op->narrow());
    // in slices of eight rows: 216 slices, each as long as its longest row (a row of 27
    // beside rows of 18 where a grid line starts or ends)
    EXPECT_EQ(op->words().slices.extent(0), 12u * 12 * 12 / 8 + 1);
    EXPECT_EQ(op->words().values16.extent(0), op->words().offsets16.extent(0));
    EXPECT_GE(op->words().values16.extent(0), P.A.nnz());
    EXPECT_LE(op->words().values16.extent(0), P.A.nnz() * 11 / 10);
    EXPECT_EQ(op->nonzeros(), P.A.nnz());
    EXPECT_EQ(op->held().values.extent(0), 0u);  // the binary64 arrays are not kept
    EXPECT_EQ(op->held().graph.entries.extent(0), 0u);
    expect_same_operator(P.A, *op, gen, op == &N ? "narrowest(hpccg 12^3)" : "hpccg_narrowest(12, 12, 12)");
  }
  // values exact in binary32 but not in bfloat16; values exact in neither (kept binary64)
  // A slice of three rows takes 8 words for each entry of its longest row: 24 words for 7
  // nonzeros, more bytes than the CSR arrays, so only max_growth = inf makes it.
  constexpr double any = std::numeric_limits<double>::infinity();
  HostCsr t = to_host(csr_from_dense({{4, 1 + 0x1p-20, 0}, {1 + 0x1p-20, 4, 1}, {0, 1, 4}}));
  const CsrOperator F = CsrOperator::narrowest(make_csr(t), any), F1 = CsrOperator::narrowest(make_csr(t));
  EXPECT_EQ(F.words().values32.extent(0), 8u * 3);  // one slice: three rows of at most 3 entries
  EXPECT_EQ(F.words().values16.extent(0), 0u);
  EXPECT_EQ(F1.words().values32.extent(0), 7u);  // (24 x 6 + 16) / (7 x 12) = 1.9: in order
  EXPECT_EQ(F1.words().slices.extent(0), 0u);
  expect_same_operator(make_csr(t), F, gen, "binary32 values");
  expect_same_operator(make_csr(t), F1, gen, "binary32 values, in order");
  t.val[1] = t.val[3] = 0.1;
  const CsrOperator D = CsrOperator::narrowest(make_csr(t), any), D1 = CsrOperator::narrowest(make_csr(t));
  EXPECT_EQ(D.words().values16.extent(0) + D.words().values32.extent(0), 0u);
  EXPECT_EQ(D.words().values64.extent(0), 8u * 3);  // no narrower word holds 0.1: binary64 in the slice
  EXPECT_EQ(D.words().offsets16.extent(0), 8u * 3);
  EXPECT_EQ(D.words().slices.extent(0), 2u);
  EXPECT_EQ(D.held().values.extent(0), 0u);  // the slices replace the CSR arrays
  EXPECT_EQ(D.held().graph.entries.extent(0), 0u);
  expect_same_operator(make_csr(t), D, gen, "binary64 values, 16-bit columns");
  EXPECT_EQ(D1.words().values64.extent(0), 0u);  // in order: the matrix's own binary64 values
  EXPECT_EQ(D1.held().values.extent(0), t.val.size());
  EXPECT_EQ(D1.words().offsets16.extent(0), t.val.size());
  EXPECT_EQ(D1.words().slices.extent(0), 0u);
  expect_same_operator(make_csr(t), D1, gen, "binary64 values, 16-bit columns in order");
  // rows of 0 to 40 entries at random columns, 1,003 rows (the last slice holds 3), values
  // exact in bfloat16, then in binary32 only (integers below 32 times 1 + 2^-16), then in
  // binary64 only (times 1 + 2^-40). Each row padded to the longest of its slice, the words
  // number about 1.8 times the nonzeros: 0.6 and 0.9 times the CSR arrays' bytes in bfloat16
  // and binary32, 1.5 in binary64, which max_growth = 1 refuses and inf takes.
  for (double ulp : {0.0, 0x1p-16, 0x1p-40}) {
    HostCsr r{1003, 1003, {0}, {}, {}};
    for (std::size_t i = 0; i < 1003; ++i) {
      const std::size_t length = gen() % 41;
      for (std::size_t m = 0; m < length; ++m) {
        r.col.push_back(static_cast<int>(gen() % 1003));
        r.val.push_back((static_cast<double>(gen() % 64) - 32) * (1 + ulp));
      }
      r.ptr.push_back(r.col.size());
    }
    const CsrOperator R = CsrOperator::narrowest(make_csr(r), ulp == 0x1p-40 ? any : 1.0);
    if (ulp == 0x1p-40) {
      const CsrOperator R1 = CsrOperator::narrowest(make_csr(r));
      EXPECT_EQ(R1.words().slices.extent(0), 0u);
      EXPECT_EQ(R1.words().offsets16.extent(0), r.val.size());
      expect_same_operator(make_csr(r), R1, gen, "random rows, binary64, in order");
    }
    EXPECT_EQ(R.words().slices.extent(0), 1003u / 8 + 2);
    const std::size_t words = ulp == 0 ? R.words().values16.extent(0)
                              : ulp == 0x1p-16 ? R.words().values32.extent(0)
                                               : R.words().values64.extent(0);
    EXPECT_EQ(words, R.words().offsets16.extent(0)) << ulp;
    EXPECT_EQ(R.words().values16.extent(0) + R.words().values32.extent(0) + R.words().values64.extent(0), words) << ulp;
    expect_same_operator(make_csr(r), R, gen, "random rows, values times 1 + " + std::to_string(ulp));
  }
  // a band wider than 32767: columns stay ints (a grid of 200 x 200 x 2 planes: 40201)
  const CsrOperator B = hpccg_narrowest(200, 200, 2);
  EXPECT_EQ(B.words().offsets16.extent(0), 0u);
  EXPECT_EQ(B.held().graph.entries.extent(0), B.nonzeros());
  EXPECT_EQ(B.words().values16.extent(0), B.nonzeros());
  expect_same_operator(hpccg_problem(200, 200, 2).A, B, gen, "hpccg_narrowest(200, 200, 2)");
  const CsrOperator C = CsrOperator::narrowest(hpccg_problem(200, 200, 2).A);
  EXPECT_EQ(C.words().offsets16.extent(0), 0u);
  // a binary64 operator is not narrow, and gives its own matrix back
  const CsrOperator W(P.A);
  EXPECT_FALSE(W.narrow());
  EXPECT_EQ(W.matrix().values.data(), P.A.values.data());
}

TEST(CsrOperator, PartsThatDoNotMakeOneMatrixAreRefused) {
  const CsrMatrix A = csr_from_dense({{2, 1}, {1, 2}});
  const CsrMatrix held("held", 2, CsrMatrix::values_type::non_const_type(),
                       CsrMatrix::staticcrsgraph_type(A.graph.entries, A.graph.row_map));
  Kokkos::View<std::uint16_t*> v16("v16", 4), short16("short", 3);
  Kokkos::View<float*> v32("v32", 4);
  Kokkos::View<double*> v64("v64", 4);
  CsrWords both, few, none, unsliced;
  both.values16 = v16;
  both.values32 = v32;
  few.values16 = short16;
  unsliced.values64 = v64;
  const std::pair<CsrWords, const char*> cases[] = {
      {both, "in 2 formats"}, {few, "3 entries"}, {none, "0 entries"}, {unsliced, "no slices are given"}};
  for (const auto& [words, expect] : cases) {
    try {
      CsrOperator op(held, words);
      FAIL() << expect;
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find("ebla::CsrOperator"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(expect), std::string::npos) << e.what();
    }
  }
  CsrWords ok;
  ok.values16 = v16;
  Kokkos::deep_copy(v16, detail::bfloat16_bits(2.0));
  const CsrOperator op(held, ok);  // all four entries 2
  EXPECT_EQ(host(op.diagonal()), (std::vector<double>{2, 2}));
  // slices: one slice of two rows of 2 entries takes 16 words
  const CsrMatrix bare("bare", 2, CsrMatrix::values_type::non_const_type(),
                       CsrMatrix::staticcrsgraph_type(CsrMatrix::index_type::non_const_type(), A.graph.row_map));
  Kokkos::View<std::uint16_t*> s16("s16", 16);
  Kokkos::View<std::int16_t*> o16("o16", 16);
  Kokkos::View<std::size_t*> good("good", 2), three("three", 3), odd("odd", 2), narrow_slice("narrow", 2);
  Kokkos::deep_copy(Kokkos::subview(good, 1), std::size_t{16});
  Kokkos::deep_copy(Kokkos::subview(three, 1), std::size_t{16});
  Kokkos::deep_copy(Kokkos::subview(three, 2), std::size_t{16});
  Kokkos::deep_copy(Kokkos::subview(odd, 1), std::size_t{15});
  Kokkos::deep_copy(Kokkos::subview(narrow_slice, 1), std::size_t{8});
  auto sliced = [&](Kokkos::View<std::size_t*> slices, bool offsets) {
    CsrWords w;
    w.values16 = s16;
    if (offsets) w.offsets16 = o16;
    w.slices = slices;
    return w;
  };
  const std::pair<CsrWords, const char*> slice_cases[] = {
      {sliced(good, false), "need both the values"},
      {sliced(three, true), "3 offsets where 2 rows take 2"},
      {sliced(odd, true), "slice 0 (rows 0 to 7)"},
      {sliced(narrow_slice, true), "slice 0 (rows 0 to 7)"}};
  for (const auto& [words, expect] : slice_cases) {
    try {
      CsrOperator bad(words.offsets16.extent(0) ? bare : held, words);
      FAIL() << expect;
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find(expect), std::string::npos) << e.what();
    }
  }
  // the good slices: entry m of row i at 8 m + i (columns as offsets: 0 -> 0, 0 -> 1, 1 -> 0, 1 -> 1)
  auto hs = Kokkos::create_mirror_view(s16);
  auto ho = Kokkos::create_mirror_view(o16);
  const double a[2][2] = {{2, 1}, {1, 3}};
  for (int i = 0; i < 2; ++i)
    for (int m = 0; m < 2; ++m) {
      hs(8 * m + i) = detail::bfloat16_bits(a[i][m]);
      ho(8 * m + i) = static_cast<std::int16_t>(m - i);
    }
  Kokkos::deep_copy(s16, hs);
  Kokkos::deep_copy(o16, ho);
  const CsrOperator two(bare, sliced(good, true));
  EXPECT_EQ(two.nonzeros(), 4u);
  EXPECT_EQ(host(two.diagonal()), (std::vector<double>{2, 3}));
  Vector y("y", 2);
  two.apply(vec({1, 10}), y);
  EXPECT_EQ(host(y), (std::vector<double>{12, 31}));
  EXPECT_TRUE(to_host(two.matrix()) == to_host(csr_from_dense({{2, 1}, {1, 3}})));
}

TEST(Operators, RejectNonSquareMatricesAndMismatchedVectors) {
  try {
    CsrOperator C(csr_from_dense({{1, 2, 3}, {4, 5, 6}}, 3));
    FAIL() << "no exception";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("2 x 3"), std::string::npos) << e.what();
  }
  EXPECT_THROW(DenseOperator(Kokkos::View<double**, Kokkos::LayoutRight>("A", 2, 3)), InvalidArgument);
  EXPECT_THROW(StencilOperator(0, 1, 1), InvalidArgument);
  EXPECT_THROW(StencilOperator(100000, 100000, 1), InvalidArgument);
  StencilOperator S(2, 2, 2);
  try {
    S.residual_norm(vec({1, 2, 3}), vec(std::vector<double>(8, 1.0)));
    FAIL() << "no exception";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("residual_norm"), std::string::npos) << e.what();
  }
}

}  // namespace
