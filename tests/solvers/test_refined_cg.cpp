// Mixed-precision iterative refinement (binary32 CG inside a binary64 residual loop): HPCCG's
// problem on both operators to a relative true residual of 1e-10 in a few corrections, the
// float stencil against the binary64 one, the other endings, and bad input.
#include "util.hpp"

#include <ebla/core/error.hpp>
#include <ebla/solvers/dots.hpp>
#include <ebla/solvers/problems.hpp>
#include <ebla/solvers/refined_cg.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace {

using namespace ebla;
using namespace ebla::test;

std::vector<float> host_floats(ConstFloatVector v) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  return std::vector<float>(h.data(), h.data() + h.extent(0));
}

FloatVector floats(const std::vector<double>& v) {
  FloatVector x("x", v.size());
  auto h = Kokkos::create_mirror_view(x);
  for (std::size_t i = 0; i < v.size(); ++i) h(i) = static_cast<float>(v[i]);
  Kokkos::deep_copy(x, h);
  return x;
}

void expect_solved(const RefinedCgResult& r, const char* what, double tol) {
  SCOPED_TRACE(what);
  EXPECT_EQ(r.status, SolverStatus::converged) << r.stop_reason;
  EXPECT_LE(r.relative_residual, tol);
  EXPECT_GT(r.outer_iterations, 0);
  EXPECT_LE(r.outer_iterations, 5);  // each float solve gains about 1e-4
  EXPECT_EQ(r.history.size(), static_cast<std::size_t>(r.outer_iterations));
  int inner = 0;
  for (std::size_t k = 0; k < r.history.size(); ++k) {
    inner += r.history[k].inner_iterations;
    EXPECT_GT(r.history[k].inner_iterations, 0);
    if (k > 0) {
      EXPECT_LT(r.history[k].residual, 1e-2 * r.history[k - 1].residual);
    }
  }
  EXPECT_EQ(r.inner_iterations, inner);
  EXPECT_GT(r.seconds, 0);
  EXPECT_LE(r.inner_seconds, r.seconds);
  for (double xi : host(r.x)) ASSERT_NEAR(xi, 1.0, 1e-8);
}

// HPCCG 16^3 (b = A 1, x0 = 0): ||b - A x|| <= 1e-10 ||b|| on CSR and on the stencil.
TEST(RefinedCg, ReachesTheToleranceOnHpccgWithBothOperators) {
  const HpccgProblem p = hpccg_problem(16, 16, 16);
  const CsrOperator csr(p.A);
  const StencilOperator stencil(16, 16, 16);
  RefinedCgOptions o;
  o.tolerance = 1e-10;
  const RefinedCgResult a = refined_cg(csr, p.b, p.x0, o);
  const RefinedCgResult s = refined_cg(stencil, p.b, p.x0, o);
  expect_solved(a, "CSR", o.tolerance);
  expect_solved(s, "stencil", o.tolerance);
  EXPECT_DOUBLE_EQ(a.true_residual, csr.residual_norm(a.x, p.b));
  EXPECT_DOUBLE_EQ(s.true_residual, stencil.residual_norm(s.x, p.b));
  EXPECT_NEAR(a.b_norm, std::sqrt(plain_dot(p.b, p.b)), 1e-12 * a.b_norm);
  EXPECT_DOUBLE_EQ(a.tolerance_used, o.tolerance * a.b_norm);
  EXPECT_NEAR(a.outer_iterations, s.outer_iterations, 1);  // the float operators sum in different orders
  // a tighter inner tolerance: fewer corrections, not fewer than one
  o.inner_tolerance = 1e-6;
  const RefinedCgResult t = refined_cg(stencil, p.b, p.x0, o);
  expect_solved(t, "inner 1e-6", o.tolerance);
  EXPECT_LE(t.outer_iterations, s.outer_iterations);
}

// The float stencil sums what the binary64 one sums, each addition rounded to float: on
// entries of [-1, 1] and lines longer than its chunk of 256, within 40 float roundings of 28.
TEST(RefinedCg, FloatStencilAgreesWithTheBinary64Stencil) {
  for (const auto& g : {std::vector<int>{7, 5, 4}, std::vector<int>{300, 3, 2}, std::vector<int>{1, 1, 1}}) {
    const int nx = g[0], ny = g[1], nz = g[2];
    const std::size_t n = static_cast<std::size_t>(nx) * ny * nz;
    std::vector<double> x(n);
    for (std::size_t i = 0; i < n; ++i) x[i] = static_cast<float>(std::sin(0.37 * static_cast<double>(i) + 1));
    Vector y64("y64", n);
    StencilOperator(nx, ny, nz).apply(vec(x), y64);
    FloatVector y32("y32", n);
    detail::stencil27_apply(nx, ny, nz, floats(x), y32);
    const auto a = host(y64);
    const auto b = host_floats(y32);
    for (std::size_t i = 0; i < n; ++i) ASSERT_NEAR(b[i], a[i], 40 * 28 * 0x1p-24) << "row " << i;
  }
  FloatVector short_y("y", 5);
  EXPECT_TRUE(contains(error_of([&] { detail::stencil27_apply(2, 2, 2, floats(std::vector<double>(8, 1.0)), short_y); }),
                       "y has 5 entries"));
}

TEST(RefinedCg, EndsAtOnceWhereNothingIsLeftToDo) {
  const HpccgProblem p = hpccg_problem(4, 3, 2);
  const StencilOperator S(4, 3, 2);
  const std::size_t n = S.size();
  RefinedCgOptions o;
  // b = 0: x = 0
  const Vector zero("zero", n);
  const RefinedCgResult z = refined_cg(S, zero, vec(std::vector<double>(n, 5.0)), o);
  EXPECT_EQ(z.status, SolverStatus::converged);
  EXPECT_EQ(z.outer_iterations, 0);
  for (double xi : host(z.x)) EXPECT_EQ(xi, 0.0);
  // x0 = the solution: no correction
  const RefinedCgResult s = refined_cg(S, p.b, vec(std::vector<double>(n, 1.0)), o);
  EXPECT_EQ(s.status, SolverStatus::converged);
  EXPECT_EQ(s.outer_iterations, 0);
  EXPECT_EQ(s.inner_iterations, 0);
  EXPECT_EQ(s.true_residual, 0.0);
}

TEST(RefinedCg, StopsAtMaxOuterAndWhereACorrectionGainsNothing) {
  const HpccgProblem p = hpccg_problem(8, 8, 8);
  const CsrOperator A(p.A);
  RefinedCgOptions o;
  o.tolerance = 1e-14;
  o.max_outer = 1;
  const RefinedCgResult one = refined_cg(A, p.b, p.x0, o);
  EXPECT_EQ(one.status, SolverStatus::max_iterations);
  EXPECT_EQ(one.outer_iterations, 1);
  EXPECT_LT(one.true_residual, 1e-3 * one.b_norm);
  // below what binary64 attains: the corrections stop gaining, and the loop says so
  o.tolerance = 1e-30;
  o.max_outer = 50;
  const RefinedCgResult stuck = refined_cg(A, p.b, p.x0, o);
  EXPECT_EQ(stuck.status, SolverStatus::breakdown) << stuck.stop_reason;
  EXPECT_TRUE(contains(stuck.stop_reason, "did not reduce"));
  EXPECT_LT(stuck.outer_iterations, 50);
  EXPECT_LT(stuck.relative_residual, 1e-13);
  // the inner cap is honoured
  o.tolerance = 1e-10;
  o.inner_max_iterations = 5;
  const RefinedCgResult capped = refined_cg(A, p.b, p.x0, o);
  for (const RefinementStep& step : capped.history) EXPECT_LE(step.inner_iterations, 5);
  EXPECT_EQ(capped.status, SolverStatus::converged) << capped.stop_reason;
}

TEST(RefinedCg, RejectsInvalidArgumentsNamingFunctionAndValue) {
  const HpccgProblem p = hpccg_problem(3, 3, 3);
  const StencilOperator S(3, 3, 3);
  const CsrOperator C(p.A);
  const auto message = [&](RefinedCgOptions o, ConstVector b, ConstVector x0) {
    return error_of([&] { refined_cg(S, b, x0, o); });
  };
  RefinedCgOptions o;
  EXPECT_TRUE(contains(message(o, vec({1, 2, 3}), p.x0), "ebla::refined_cg: b has 3 entries, A 27 rows"));
  EXPECT_TRUE(contains(message(o, p.b, vec({0, 0})), "x0 has 2 entries"));
  for (double bad : {0.0, -1.0, std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()}) {
    RefinedCgOptions t;
    t.tolerance = bad;
    EXPECT_TRUE(contains(message(t, p.b, p.x0), "ebla::refined_cg: tolerance")) << bad;
  }
  for (double bad : {0.0, 1.0, 2.0, -1e-3}) {
    RefinedCgOptions t;
    t.inner_tolerance = bad;
    EXPECT_TRUE(contains(message(t, p.b, p.x0), "inner_tolerance")) << bad;
  }
  o.inner_tolerance = 1.0;
  EXPECT_TRUE(contains(message(o, p.b, p.x0), "inner_tolerance 1 must lie in (0, 1)"));
  o = RefinedCgOptions();
  o.max_outer = -1;
  EXPECT_TRUE(contains(message(o, p.b, p.x0), "max_outer -1 is negative"));
  o = RefinedCgOptions();
  o.inner_max_iterations = 0;
  EXPECT_TRUE(contains(message(o, p.b, p.x0), "inner_max_iterations 0 must be at least 1"));
  std::vector<double> b = host(p.b);
  b[4] = std::numeric_limits<double>::quiet_NaN();
  EXPECT_TRUE(contains(message(RefinedCgOptions(), vec(b), p.x0), "b has a NaN or infinite entry"));
  std::vector<double> x0(27, 0.0);
  x0[0] = std::numeric_limits<double>::infinity();
  EXPECT_TRUE(contains(message(RefinedCgOptions(), p.b, vec(x0)), "x0 has a NaN or infinite entry"));
  // ||b||^2 outside the range of the residual norms
  EXPECT_TRUE(contains(message(RefinedCgOptions(), vec(std::vector<double>(27, 1e200)), p.x0), "outside [2^-600, 2^600]"));
  // a matrix value beyond float's range
  const std::vector<std::vector<double>> big{{1e300, 0}, {0, 1}};
  EXPECT_TRUE(contains(error_of([&] { refined_cg(CsrOperator(csr_from_dense(big)), vec({1, 1}), vec({0, 0}), RefinedCgOptions()); }),
                       "ebla::refined_cg: matrix value 1.0000000000000001e+300 (entry 0 of the CSR values) overflows float"));
  EXPECT_TRUE(contains(error_of([&] { refined_cg(C, vec({1}), p.x0, RefinedCgOptions()); }), "b has 1 entries"));
}

}  // namespace
