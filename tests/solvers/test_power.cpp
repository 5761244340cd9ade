// The power method: known spectra, the corrected eigenvalue update (seed 002 prints
// qdot(x_k, x_{k+1}) / c, which gives 1/4 instead of 2 on diag(2, 1)), breakdown and
// bad input.
#include "util.hpp"

#include <ebla/core/error.hpp>
#include <ebla/solvers/power.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <random>

namespace {

using namespace ebla;
using namespace ebla::test;

DotPolicy qdot_policy(double tol) {
  QdotOptions o;
  o.tolerance = tol;
  return DotPolicy::approximate(o);
}

// diag(2, 1) from (1, 1): the Rayleigh quotients rise to 2. The printed update would give
// x_k^T A x_k / c^(3/2) -> 2 / 8 = 1/4.
TEST(PowerMethod, FindsTheLargestEigenvalueOfADiagonalMatrix) {
  PowerOptions o;
  o.tolerance = 1e-12;
  o.max_iterations = 200;
  const PowerResult r = power_method(DenseOperator(dense_view({{2, 0}, {0, 1}})), vec({1, 1}), DotPolicy::exact(), o);
  EXPECT_EQ(r.status, SolverStatus::converged) << r.stop_reason;
  EXPECT_NEAR(r.eigenvalue, 2.0, 1e-11);
  EXPECT_GT(std::fabs(r.eigenvalue - 0.25), 1.0);  // not the printed formula's value
  const auto v = host(r.eigenvector);
  EXPECT_NEAR(std::fabs(v[0]), 1.0, 1e-6);
  EXPECT_LE(r.residual, 1e-5);
  // the first estimate is the Rayleigh quotient of the normalised start: (2 + 1) / 2
  EXPECT_DOUBLE_EQ(r.history.front().eigenvalue, 1.5);
  EXPECT_EQ(r.history.size(), static_cast<std::size_t>(r.iterations) + 1);
}

// Laplacian of the path on 5 vertices: eigenvalues 2 - 2 cos(pi k / 5), k = 0..4.
TEST(PowerMethod, FindsTheLargestEigenvalueOfAPathLaplacian) {
  const int n = 5;
  std::vector<std::vector<double>> a(n, std::vector<double>(n, 0.0));
  for (int i = 0; i + 1 < n; ++i) {
    a[i][i + 1] = a[i + 1][i] = -1;
    a[i][i] += 1;
    a[i + 1][i + 1] += 1;
  }
  const double lambda_max = 2 - 2 * std::cos(M_PI * 4 / 5);
  PowerOptions o;
  o.tolerance = 1e-13;
  o.max_iterations = 1000;
  for (const DotPolicy& d : {DotPolicy::exact(), qdot_policy(1e-10)}) {
    const PowerResult r = power_method(CsrOperator(csr_from_dense(a)), vec({1, 0.2, 0.3, 0.1, 0.5}), d, o);
    EXPECT_EQ(r.status, SolverStatus::converged) << d.to_string();
    EXPECT_NEAR(r.eigenvalue, lambda_max, 1e-6) << d.to_string();
    if (d.kind == DotKind::qdot) {
      for (const auto& it : r.history) EXPECT_TRUE(std::isfinite(it.xy.bound));
    }
  }
}

// A = Q diag(mu) Q^T with a random orthogonal Q (Householder): the eigenvalue and the
// direction of its eigenvector are recovered.
TEST(PowerMethod, RecoversTheDominantPairOfARandomSymmetricMatrix) {
  const std::size_t n = 30;
  std::mt19937_64 gen(5);
  std::normal_distribution<double> g;
  std::vector<double> w(n);
  double ww = 0;
  for (auto& v : w) {
    v = g(gen);
    ww += v * v;
  }
  std::vector<std::vector<double>> q(n, std::vector<double>(n));
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j) q[i][j] = (i == j) - 2 * w[i] * w[j] / ww;
  std::vector<double> mu(n);
  for (std::size_t k = 0; k < n; ++k) mu[k] = 1 + static_cast<double>(k) / n;  // dominant: mu[n-1]
  mu[n - 1] = 3;
  std::vector<std::vector<double>> a(n, std::vector<double>(n, 0.0));
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j)
      for (std::size_t k = 0; k < n; ++k) a[i][j] += q[i][k] * mu[k] * q[j][k];
  PowerOptions o;
  o.tolerance = 1e-14;
  o.max_iterations = 300;
  const PowerResult r = power_method(DenseOperator(dense_view(a)), vec(std::vector<double>(n, 1.0)), DotPolicy::exact(), o);
  EXPECT_EQ(r.status, SolverStatus::converged);
  EXPECT_NEAR(r.eigenvalue, 3.0, 1e-12);
  double align = 0;
  const auto v = host(r.eigenvector);
  for (std::size_t i = 0; i < n; ++i) align += v[i] * q[i][n - 1];
  EXPECT_NEAR(std::fabs(align), 1.0, 1e-6);
}

// The automatic policy on a graph Laplacian with a shift (ebla::laplacian_problem), against
// the exact power method: every Rayleigh quotient and normalisation is certified to the
// accuracy the rule asked, the eigenvalue lands within tau of the exact run's, and the
// iteration count matches (the stopping test moves by at most tau).
TEST(PowerMethod, AutomaticDotsKeepTheEigenvalueWithinTheTolerance) {
  std::size_t checked = 0;
  for (const double tau : {1e-4, 1e-7, 1e-10}) {
    PowerOptions o;
    o.tolerance = tau;
    o.max_iterations = 3000;
    const std::size_t n = 20;
    std::vector<std::vector<double>> a(n, std::vector<double>(n, 0.0));
    for (std::size_t i = 0; i < n; ++i) a[i][i] = 1 + static_cast<double>(i) / n;  // spectrum 1 .. 2 - 1/n
    a[n - 1][n - 1] = 2.5;
    for (std::size_t i = 0; i + 1 < n; ++i) a[i][i + 1] = a[i + 1][i] = 0.01;
    const Vector x0 = vec(std::vector<double>(n, 1.0));
    const PowerResult exact = power_method(DenseOperator(dense_view(a)), x0, DotPolicy::exact(), o);
    const PowerResult r = power_method(DenseOperator(dense_view(a)), x0, DotPolicy::automatic(), o);
    ASSERT_EQ(exact.status, SolverStatus::converged);
    EXPECT_EQ(r.status, SolverStatus::converged) << "tau " << tau;
    EXPECT_LE(std::fabs(r.eigenvalue - exact.eigenvalue), tau / 2) << "tau " << tau;
    EXPECT_EQ(r.iterations, exact.iterations) << "tau " << tau;  // the same stopping decisions
    for (const auto& it : r.history)
      for (const DotRecord* d : {&it.yy, &it.xy})
        if (d->tolerance > 0) {  // qdot: certified to the asked accuracy
          EXPECT_LE(d->bound, d->accuracy * (std::fabs(d->value) - d->bound));
          ++checked;
        }
  }
  EXPECT_GT(checked, 10u);  // the policy did approximate
}

// The decision rule: eta * margin / |lambda| while the change stays far from tau, capped;
// exact (0) in a near tie and where lambda is 0; any accuracy (the cap) before a margin is
// known, since the solver certifies the first decisions with the bounds that come out.
TEST(DotRules, DecisionAccuracyFollowsTheMarginOfTheStoppingTest) {
  const DecisionAccuracy rule(0.25, 0.1, 1e-2);
  DotRequest q;
  q.role = DotRole::power_rayleigh;
  q.target = 1e-6;
  q.scale = 10;
  EXPECT_DOUBLE_EQ(rule.accuracy(q), 1e-2);                  // no margin known yet
  q.margin = 1e-3;
  EXPECT_DOUBLE_EQ(rule.accuracy(q), 0.25 * 1e-3 / 10);      // far from tau
  q.margin = 0.1e-6;
  EXPECT_DOUBLE_EQ(rule.accuracy(q), 0.25 * 0.1e-6 / 10);    // at the edge of a tie
  q.margin = 0.09e-6;
  EXPECT_DOUBLE_EQ(rule.accuracy(q), 0);                     // a near tie: exact
  q.margin = 1;
  EXPECT_DOUBLE_EQ(rule.accuracy(q), 1e-2);                  // capped
  q.scale = 0;
  EXPECT_DOUBLE_EQ(rule.accuracy(q), 0);                     // lambda_k = 0: exact
  q.margin = 0;
  EXPECT_DOUBLE_EQ(rule.accuracy(q), 1e-2);                  // lambda_1: no margin, no lambda yet
  EXPECT_EQ(rule.to_string(), "decision(eta=0.25, tie=0.1, max=0.01)");
  EXPECT_EQ(DotPolicy::automatic(default_power_rule()).to_string(), "auto(" + rule.to_string() + ")");
  EXPECT_TRUE(contains(error_of([] { DecisionAccuracy(0); }), "eta = 0"));
  EXPECT_TRUE(contains(error_of([] { DecisionAccuracy(1, -1); }), "tie = -1"));
  EXPECT_TRUE(contains(error_of([] { DecisionAccuracy(1, 1, 2); }), "delta_max = 2"));
}

// Built so that the stopping test is a near tie: A = diag(2, 1), x0 = (1, 1), the changes
// shrink by 4 a step, and tau a hair above PM's last change. The default rule sees the tie
// coming (exact dot products there) and keeps PM's count; a rule that ignores it (delta =
// 1e-3 throughout) leaves the decision within the bound, and the solver repeats the step
// exactly, records why, and still ends within tau of PM's eigenvalue.
TEST(PowerMethod, AStoppingTestWithinTheBoundIsDecidedExactly) {
  const DenseOperator A(dense_view({{2, 0}, {0, 1}}));
  const Vector x0 = vec({1, 1});
  PowerOptions o;
  o.max_iterations = 200;
  const PowerResult exact = power_method(A, x0, DotPolicy::exact(), o);
  ASSERT_EQ(exact.status, SolverStatus::converged);
  o.tolerance = exact.history.back().change * (1 + 1e-9);  // PM's last change, a hair below tau
  const PowerResult pm = power_method(A, x0, DotPolicy::exact(), o);
  const PowerResult r = power_method(A, x0, DotPolicy::automatic(), o);
  EXPECT_EQ(r.iterations, pm.iterations);
  EXPECT_LE(std::fabs(r.eigenvalue - pm.eigenvalue), o.tolerance / 2);
  EXPECT_EQ(r.history.back().xy.tolerance, 0);  // the tie: exact
  EXPECT_GT(r.history[3].xy.tolerance, 0);      // far from it: qdot

  struct Careless final : DotRule {
    double accuracy(const DotRequest&) const override { return 1e-3; }
    std::string to_string() const override { return "careless"; }
  };
  const PowerResult c = power_method(A, x0, DotPolicy::automatic(std::make_shared<const Careless>()), o);
  ASSERT_EQ(c.status, SolverStatus::converged);
  ASSERT_FALSE(c.events.empty());
  EXPECT_TRUE(contains(c.events.back().what, "the step repeated exactly")) << c.events.back().what;
  EXPECT_EQ(c.history.back().xy.tolerance, 0);
  EXPECT_LE(std::fabs(c.eigenvalue - pm.eigenvalue), o.tolerance);
}

TEST(PowerMethod, StopsAtTheIterationLimit) {
  PowerOptions o;
  o.tolerance = 1e-300;
  o.max_iterations = 2;
  const PowerResult r = power_method(DenseOperator(dense_view({{2, 0}, {0, 1}})), vec({1, 1}), DotPolicy::exact(), o);
  EXPECT_EQ(r.status, SolverStatus::max_iterations);
  EXPECT_EQ(r.iterations, 2);
}

TEST(PowerMethod, BreaksDownWhenTheIterateFallsIntoTheNullSpace) {
  // Laplacian of an edge; the constant vector spans its null space
  const PowerResult r = power_method(DenseOperator(dense_view({{1, -1}, {-1, 1}})), vec({1, 1}), qdot_policy(1e-6), {});
  EXPECT_EQ(r.status, SolverStatus::breakdown);
  EXPECT_NE(r.breakdown.find("null space"), std::string::npos) << r.breakdown;
}

TEST(PowerMethod, RejectsBadInputNamingTheValue) {
  DenseOperator D(dense_view({{2, 0}, {0, 1}}));
  auto expect_message = [](auto&& call, const std::string& needle) {
    const std::string e = error_of(call);
    EXPECT_TRUE(contains(e, needle));
    EXPECT_TRUE(contains(e, "ebla::power_method"));
  };
  PowerOptions o;
  expect_message([&] { power_method(D, vec({0, 0}), DotPolicy::exact(), o); }, "zero vector");
  expect_message([&] { power_method(D, vec({1, NAN}), DotPolicy::exact(), o); }, "NaN");
  expect_message([&] { power_method(D, vec({1, 2, 3}), DotPolicy::exact(), o); }, "x0 has 3");
  o.tolerance = -1;
  expect_message([&] { power_method(D, vec({1, 1}), DotPolicy::exact(), o); }, "tolerance -1");
  o = PowerOptions{};
  o.max_iterations = 0;
  expect_message([&] { power_method(D, vec({1, 1}), DotPolicy::exact(), o); }, "max_iterations 0");
}

}  // namespace
