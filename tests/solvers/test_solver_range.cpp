// The solvers at the ends of double's range and their certificate: b whose ||b||^2
// overflows (1e160) or underflows (a matrix of 1e-200), a start vector or an operator whose
// squares do the same in the power method; every run is checked against __float128
// references, and a run that says "converged" has a true residual within tau.
#include "util.hpp"

#include <ebla/core/error.hpp>
#include <ebla/solvers/cg.hpp>
#include <ebla/solvers/power.hpp>

#include <gtest/gtest.h>

#include <quadmath.h>

#include <cmath>
#include <memory>
#include <vector>

namespace {

using namespace ebla;
using namespace ebla::test;

// The symmetric tridiagonal (2, -1) matrix of order n times s (SPD for s > 0).
std::vector<std::vector<double>> tridiagonal(std::size_t n, double s) {
  std::vector<std::vector<double>> a(n, std::vector<double>(n, 0.0));
  for (std::size_t i = 0; i < n; ++i) {
    a[i][i] = 2 * s;
    if (i + 1 < n) a[i][i + 1] = a[i + 1][i] = -s;
  }
  return a;
}

// A v for the dense a, each entry exact (products of doubles summed in __float128 and
// rounded once).
std::vector<double> times(const std::vector<std::vector<double>>& a, const std::vector<double>& v) {
  std::vector<double> y(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    __float128 s = 0;
    for (std::size_t j = 0; j < v.size(); ++j) s += static_cast<__float128>(a[i][j]) * v[j];
    y[i] = static_cast<double>(s);
  }
  return y;
}

// ||b - A x|| in __float128 (its range reaches 1e4932: no square overflows or underflows).
double residual_quad(const std::vector<std::vector<double>>& a, const std::vector<double>& x,
                     const std::vector<double>& b) {
  __float128 squares = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    __float128 r = b[i];
    for (std::size_t j = 0; j < x.size(); ++j) r -= static_cast<__float128>(a[i][j]) * x[j];
    squares += r * r;
  }
  return static_cast<double>(sqrtq(squares));
}

double norm_quad(const std::vector<double>& v) {
  __float128 squares = 0;
  for (double x : v) squares += static_cast<__float128>(x) * x;
  return static_cast<double>(sqrtq(squares));
}

std::vector<DotPolicy> every_policy() {
  QdotOptions q;
  q.tolerance = 1e-6;
  return {DotPolicy::exact(), DotPolicy::approximate(q), DotPolicy::automatic()};
}

// b = 1e160 (A 1 of the tridiagonal matrix: 1e160 at both ends), ||b||^2 = 2e320 overflows;
// the matrix times 1e-200 with b = A 1, ||b||^2 = 2e-400 underflows. Before, the first
// "converged after 0 iterations" (tau = inf) and the second reported b = 0; both exited with
// x = 0. Now each solve converges to x = 1 with a true residual, checked in __float128,
// within tau = 1e-8 ||b||, on the CSR and the dense operator, for every dot policy.
TEST(SolverRange, CgSolvesRightHandSidesWhoseSquaresLeaveDoublesRange) {
  const std::size_t n = 30;
  struct Case {
    double matrix_scale, b_scale;
  };
  for (const Case c : {Case{1, 1e160}, Case{1e-200, 1}, Case{1e150, 1e150}, Case{1, 1e-300}}) {
    const auto a = tridiagonal(n, c.matrix_scale);
    std::vector<double> b = times(a, std::vector<double>(n, 1.0));
    for (double& v : b) v *= c.b_scale;
    const double b_norm = norm_quad(b);
    for (const DotPolicy& dots : every_policy()) {
      for (int op = 0; op < 2; ++op) {
        CgOptions o;
        o.norm = Norm::relative;
        o.tolerance = 1e-8;
        const CgResult r = op == 0 ? cg(CsrOperator(csr_from_dense(a)), vec(b), vec(std::vector<double>(n)), dots, o)
                                   : cg(DenseOperator(dense_view(a)), vec(b), vec(std::vector<double>(n)), dots, o);
        SCOPED_TRACE(testing::Message() << "A scale " << c.matrix_scale << ", b scale " << c.b_scale << ", op " << op);
        ASSERT_EQ(r.status, SolverStatus::converged) << r.stop_reason;
        EXPECT_GT(r.iterations, 0);
        EXPECT_NEAR(r.b_norm / b_norm, 1, 1e-14);
        const std::vector<double> x = host(r.x);
        const double true_residual = residual_quad(a, x, b);
        EXPECT_LE(true_residual, 1e-8 * b_norm);
        EXPECT_NEAR(r.true_residual / true_residual, 1, 1e-6);
        for (double v : x) EXPECT_NEAR(v, c.b_scale, 1e-6 * c.b_scale);
        ASSERT_FALSE(r.events.empty());
        EXPECT_NE(r.events.front().what.find("b scaled by 2^"), std::string::npos) << r.events.front().what;
      }
    }
  }
}

// b = 0 is still b = 0 (x = 0, converged at once), and b of normal size is not scaled.
TEST(SolverRange, CgScalesOnlyWhereTheSquaresLeaveTheRange) {
  const auto a = tridiagonal(10, 1);
  const CgResult zero = cg(CsrOperator(csr_from_dense(a)), vec(std::vector<double>(10)), vec(std::vector<double>(10)),
                           DotPolicy::exact(), {});
  EXPECT_EQ(zero.status, SolverStatus::converged);
  EXPECT_EQ(zero.stop_reason, "b = 0: x = 0");
  for (const double size : {1e80, 1e-80}) {  // sum b_i^2 of 1e161 and 1e-159: inside [2^-600, 2^600]
    const CgResult normal = cg(CsrOperator(csr_from_dense(a)), vec(std::vector<double>(10, size)),
                               vec(std::vector<double>(10)), DotPolicy::exact(), {});
    for (const SolverEvent& e : normal.events) EXPECT_EQ(e.what.find("scaled"), std::string::npos) << e.what;
  }
}

// A stopping test that passes while the true residual does not (kappa(A) = 2e12, tau =
// 1e-10 ||b||, below what CG's recurrence can follow): the run is not converged, for every
// stopping test, and whenever a run says converged its true residual is within tau.
TEST(SolverRange, NoRunIsConvergedWhoseTrueResidualMissesTau) {
  const double e = 1e-12, h = 1e-4;
  const std::vector<std::vector<double>> a{{1, -(1 - e)}, {-(1 - e), 1}};
  const std::vector<double> b{1, 1 - h};
  int unconfirmed = 0;
  for (const StopTest stop : {StopTest::exact_norm, StopTest::certified, StopTest::approximate}) {
    for (const DotPolicy& dots : every_policy()) {
      for (const double tol : {1e-3, 1e-6, 1e-10, 1e-14}) {
        CgOptions o;
        o.tolerance = tol;
        o.norm = Norm::relative;
        o.stop = stop;
        o.max_iterations = 50;
        const CgResult r = cg(DenseOperator(dense_view(a)), vec(b), vec({0, 0}), dots, o);
        const double true_residual = residual_quad(a, host(r.x), b);
        if (r.status == SolverStatus::converged) {
          EXPECT_LE(true_residual, tol * norm_quad(b)) << to_string(stop) << " " << tol;
        }
        if (r.status == SolverStatus::unconfirmed) {
          ++unconfirmed;
          EXPECT_GT(true_residual, 0.5 * tol * norm_quad(b));
          EXPECT_NE(r.stop_reason.find("the true residual"), std::string::npos) << r.stop_reason;
        }
      }
    }
  }
  EXPECT_GT(unconfirmed, 0);  // the recurrence does pass tau = 1e-10 ||b|| here
}

// The power method from x0 of 1e160 or 1e-200 (sum x0_i^2 overflows or underflows), and on
// an operator of 1e200 or 1e-200 (||A x||^2 does): the eigenvalue of the tridiagonal matrix,
// 2 s (1 + cos(pi / (n + 1))), as from a start of normal size.
TEST(SolverRange, PowerMethodNormalisesAcrossDoublesRange) {
  const std::size_t n = 12;
  const double pi = std::acos(-1.0);
  for (const double s : {1.0, 1e200, 1e-200}) {
    const auto a = tridiagonal(n, s);
    const double lambda = 2 * s * (1 + std::cos(pi / (n + 1)));
    for (const double start : {1.0, 1e160, 1e-200, 1e-310}) {
      std::vector<double> x0(n);
      for (std::size_t i = 0; i < n; ++i) x0[i] = start * (1 + 0.1 * static_cast<double>(i));
      PowerOptions o;
      o.tolerance = 1e-10 * s;
      o.max_iterations = 5000;
      const PowerResult r = power_method(CsrOperator(csr_from_dense(a)), vec(x0), DotPolicy::exact(), o);
      SCOPED_TRACE(testing::Message() << "A scale " << s << ", x0 scale " << start);
      ASSERT_EQ(r.status, SolverStatus::converged) << r.stop_reason;
      EXPECT_NEAR(r.eigenvalue / lambda, 1, 1e-8);
    }
  }
  // x0 with a NaN or infinite entry, or zero, is refused naming it
  const auto a = tridiagonal(3, 1);
  EXPECT_NE(error_of([&] { power_method(CsrOperator(csr_from_dense(a)), vec({1, NAN, 0}), DotPolicy::exact(), {}); })
                .find("NaN or infinite"),
            std::string::npos);
  EXPECT_NE(error_of([&] { power_method(CsrOperator(csr_from_dense(a)), vec({0, 0, 0}), DotPolicy::exact(), {}); })
                .find("zero vector"),
            std::string::npos);
}

}  // namespace
