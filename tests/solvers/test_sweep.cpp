// The qdot-tolerance sweep: one run per tolerance, each the same numbers as a solve of its
// own with that tolerance; the largest tolerance with the exact run's iteration count; the
// per-iteration series of a run.
#include <ebla/solvers/sweep.hpp>

#include <ebla/solvers/cg.hpp>
#include <ebla/solvers/power.hpp>
#include <ebla/solvers/problem_spec.hpp>

#include "util.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <variant>
#include <vector>

namespace {

using ebla::test::host;

ebla::DotPolicy qdot_at(double tolerance) {
  ebla::QdotOptions o;
  o.tolerance = tolerance;
  return ebla::DotPolicy::approximate(o);
}

TEST(Sweep, DecadesAndTheirText) {
  EXPECT_EQ(ebla::decade_tolerances(-2, 1), (std::vector<double>{1e-2, 1e-1, 1, 10}));
  EXPECT_EQ(ebla::decade_tolerances(3, 2), std::vector<double>{});
  EXPECT_EQ(ebla::tolerance_text(1e-8), "1e-08");
  EXPECT_EQ(ebla::tolerance_text(1), "1e+00");
  EXPECT_EQ(ebla::tolerance_text(2.5e-3), "0.0025");
}

TEST(Sweep, LargestWhere) {
  EXPECT_EQ(ebla::largest_where({1e-3, 1e-2, 1e-1}, {true, true, false}), 1e-2);
  EXPECT_TRUE(std::isnan(ebla::largest_where({1e-3, 1e-2}, {false, false})));
}

TEST(Sweep, CgRunsAreThoseOfSingleSolves) {
  ebla::ProblemSpec spec;
  spec.nx = spec.ny = spec.nz = 6;
  const ebla::Problem p = ebla::load_problem(spec, ebla::ProblemUse::cg);
  ebla::CgOptions o;
  const auto solve = [&](const ebla::DotPolicy& dots) {
    return std::visit([&](const auto& A) { return ebla::cg(A, p.b, p.x0, dots, o); }, p.op);
  };
  const std::vector<double> tolerances = {1e-9, 1e-4, 1e0};
  std::vector<double> called;
  const auto s = ebla::sweep_qdot_tolerances(tolerances, qdot_at, [&](const ebla::DotPolicy& dots, double t) {
    called.push_back(t);
    return ebla::record_run(dots, solve(dots));
  });
  EXPECT_EQ(called, (std::vector<double>{0, 1e-9, 1e-4, 1e0}));  // the exact reference first
  EXPECT_EQ(s.reference.policy.kind, ebla::DotKind::exact);
  ASSERT_EQ(s.runs.size(), tolerances.size());
  EXPECT_EQ(s.tolerances, tolerances);
  double largest = std::nan("");
  for (std::size_t i = 0; i < tolerances.size(); ++i) {
    const ebla::CgResult alone = solve(qdot_at(tolerances[i]));
    const ebla::CgResult& r = s.runs[i].result;
    EXPECT_EQ(r.iterations, alone.iterations) << tolerances[i];
    EXPECT_EQ(r.status, alone.status) << tolerances[i];
    EXPECT_EQ(r.recursive_residual, alone.recursive_residual) << tolerances[i];
    EXPECT_EQ(host(r.x), host(alone.x)) << tolerances[i];
    EXPECT_EQ(s.runs[i].rr.rows(), r.history.size());
    const bool same = r.status == ebla::SolverStatus::converged && r.iterations == s.reference.result.iterations;
    EXPECT_EQ(s.same[i], same);
    if (same) largest = tolerances[i];
  }
  EXPECT_EQ(s.same[0], true);  // 1e-9 keeps exact CG's count on this small problem
  if (std::isnan(largest)) EXPECT_TRUE(std::isnan(s.largest_same));
  else EXPECT_EQ(s.largest_same, largest);
}

TEST(Sweep, PowerRunsAreThoseOfSingleSolves) {
  ebla::ProblemSpec spec;
  spec.source = ebla::ProblemSource::laplacian;
  spec.n = 300;
  spec.degree = 8;
  const ebla::Problem p = ebla::load_problem(spec, ebla::ProblemUse::power);
  ebla::PowerOptions o;
  const auto solve = [&](const ebla::DotPolicy& dots) {
    return std::visit([&](const auto& A) { return ebla::power_method(A, p.x0, dots, o); }, p.op);
  };
  const std::vector<double> tolerances = {1e-10, 1e-6};
  const auto s = ebla::sweep_qdot_tolerances(
      tolerances, qdot_at, [&](const ebla::DotPolicy& dots, double) { return ebla::record_run(dots, solve(dots)); });
  ASSERT_EQ(s.runs.size(), 2u);
  const std::vector<double> error = ebla::eigenvalue_errors(s);
  for (std::size_t i = 0; i < tolerances.size(); ++i) {
    const ebla::PowerResult alone = solve(qdot_at(tolerances[i]));
    EXPECT_EQ(s.runs[i].result.iterations, alone.iterations);
    EXPECT_EQ(s.runs[i].result.eigenvalue, alone.eigenvalue);
    EXPECT_EQ(error[i], std::fabs(alone.eigenvalue - s.reference.result.eigenvalue));
    EXPECT_EQ(s.runs[i].yy.rows(), alone.history.size());
    EXPECT_TRUE(std::isnan(s.runs[i].yy.values[0]));  // the start computes no y^T y
  }
}

TEST(Sweep, AGivenReferenceIsNotSolvedAgain) {
  ebla::ProblemSpec spec;
  spec.nx = spec.ny = spec.nz = 4;
  const ebla::Problem p = ebla::load_problem(spec, ebla::ProblemUse::cg);
  const auto solve = [&](const ebla::DotPolicy& dots, double) {
    return std::visit([&](const auto& A) { return ebla::cg(A, p.b, p.x0, dots, ebla::CgOptions{}); }, p.op);
  };
  int calls = 0;
  const auto s = ebla::sweep_qdot_tolerances(solve(ebla::DotPolicy::exact(), 0), {1e-6, 1e-3}, qdot_at,
                                             [&](const ebla::DotPolicy& dots, double t) {
                                               ++calls;
                                               return solve(dots, t);
                                             });
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(s.runs.size(), 2u);
}

}  // namespace
