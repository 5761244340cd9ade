// The operators: the stencil against the 27-point matrix built entry by entry, the
// double-double residual norm against a binary128 reference, and bad shapes.
#include "util.hpp"

#include <ebla/core/error.hpp>
#include <ebla/solvers/operators.hpp>

#include <gtest/gtest.h>
#include <quadmath.h>

#include <array>
#include <cmath>
#include <random>

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
