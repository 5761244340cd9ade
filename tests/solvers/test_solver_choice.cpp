// A solver run stated as text (solver_choice.hpp) and the auto study's sets and sequence
// (auto_study.hpp), called as a library: the source, sizes and operator of a ProblemChoice,
// the kind, tolerance, sweep and rungs of a DotChoice, and every inconsistent choice an
// InvalidArgument naming the field as the caller names it.
#include <ebla/solvers/auto_study.hpp>
#include <ebla/solvers/solver_choice.hpp>

#include <ebla/core/error.hpp>
#include <ebla/solvers/sweep.hpp>

#include "util.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

namespace {

using ebla::DotChoice;
using ebla::ProblemChoice;
using ebla::ProblemUse;
using ebla::test::contains;
using ebla::test::error_of;

const std::string matrices = std::string(EBLA_DATA_DIR) + "/matrices";

// A choice whose `fields` were given, named "run --<field>".
template <class Choice>
Choice given(Choice c, std::set<std::string> fields) {
  c.given = [fields](const std::string& f) { return fields.count(f) > 0; };
  c.name = [](const std::string& option) { return "run" + (option.empty() ? "" : " " + option); };
  return c;
}

// The message of the spec of CG for a default choice after change(c), with `fields` given.
std::string problem_error(void (*change)(ProblemChoice&), std::set<std::string> fields) {
  ProblemChoice c;
  change(c);
  return error_of([&] { ebla::make_problem_spec(given(c, fields), ProblemUse::cg); });
}

std::string dot_error(void (*change)(DotChoice&), std::set<std::string> fields) {
  DotChoice d;
  change(d);
  return error_of([&] { ebla::make_dot_spec(given(d, fields), ProblemUse::cg); });
}

TEST(ProblemChoice, DefaultsAreTheUsesProblems) {
  const ebla::ProblemSpec cg = ebla::make_problem_spec(ProblemChoice{}, ProblemUse::cg);
  EXPECT_EQ(cg.source, ebla::ProblemSource::hpccg);
  EXPECT_EQ(cg.nx, 20);
  const ebla::ProblemSpec power = ebla::make_problem_spec(ProblemChoice{}, ProblemUse::power);
  EXPECT_EQ(power.source, ebla::ProblemSource::laplacian);
  EXPECT_EQ(power.n, 1000u);
}

TEST(ProblemChoice, LaplacianVerticesAndOperator) {
  ProblemChoice c;
  c.problem = "laplacian";
  c.n = "1e4";
  c.shift = 0.5;
  c.op = "dense";
  c = given(c, {"problem", "n", "shift"});
  EXPECT_TRUE(contains(error_of([&] { ebla::make_problem_spec(c, ProblemUse::cg); }), "run --operator"));
  c.n = "2500";
  const ebla::ProblemSpec s = ebla::make_problem_spec(c, ProblemUse::cg);
  EXPECT_EQ(s.n, 2500u);
  EXPECT_EQ(s.op, ebla::OperatorKind::dense);
  EXPECT_EQ(s.shift, 0.5);
  EXPECT_EQ(s.named("degree"), "run --degree");
  c.n = "2500.5";
  EXPECT_TRUE(contains(error_of([&] { ebla::make_problem_spec(c, ProblemUse::cg); }),
                       "run --n: '2500.5' is not a whole number of vertices"));
}

TEST(ProblemChoice, DiffusionTakesTheGridAndTheSeed) {
  ProblemChoice c;
  c.problem = "diffusion";
  c.nx = 6;
  c.seed = 9;
  c = given(c, {"problem", "nx", "seed"});
  const ebla::ProblemSpec cg = ebla::make_problem_spec(c, ProblemUse::cg);
  EXPECT_EQ(cg.source, ebla::ProblemSource::diffusion);
  EXPECT_EQ(cg.nx, 6);
  EXPECT_EQ(cg.ny, 20);
  EXPECT_EQ(cg.seed, 9u);
  EXPECT_EQ(ebla::make_problem_spec(c, ProblemUse::power).source, ebla::ProblemSource::diffusion);
  c.op = "stencil";
  EXPECT_TRUE(contains(error_of([&] { ebla::make_problem_spec(c, ProblemUse::cg); }),
                       "run --operator: stencil is HPCCG's 27-point stencil: only for --problem hpccg, not for "
                       "--problem diffusion"));
  c.op = "dense";
  EXPECT_EQ(ebla::make_problem_spec(c, ProblemUse::cg).op, ebla::OperatorKind::dense);  // 6 x 20 x 20 = 2400 rows
  c.nx = 20;
  EXPECT_TRUE(contains(error_of([&] { ebla::make_problem_spec(c, ProblemUse::cg); }),
                       "run --operator: dense: n = 8000 exceeds 5000"));
}

TEST(ProblemChoice, BadChoicesNameTheOption) {
  using C = ProblemChoice;
  EXPECT_TRUE(contains(problem_error([](C& c) { c.matrix = "a.mtx", c.hdf5 = "a.h5"; }, {"matrix", "hdf5"}),
                       "run: --matrix and --hdf5 both choose the matrix"));
  EXPECT_TRUE(contains(problem_error([](C& c) { c.problem = "poisson"; }, {"problem"}),
                       "run --problem: unknown problem 'poisson'"));
  EXPECT_TRUE(contains(problem_error([](C&) {}, {"degree"}),
                       "run --degree: applies to --problem laplacian, not to --problem hpccg"));
  EXPECT_TRUE(contains(problem_error([](C& c) { c.problem = "diffusion"; }, {"problem", "n"}),
                       "run --n: applies to --problem laplacian, not to --problem diffusion"));
  EXPECT_TRUE(contains(problem_error([](C&) {}, {"seed"}),
                       "run --seed: applies to --problem diffusion or --problem laplacian, not to --problem hpccg"));
  EXPECT_TRUE(contains(problem_error([](C& c) { c.problem = "laplacian", c.shift = 1, c.op = "stencil"; },
                                     {"problem", "shift"}),
                       "run --operator: stencil is HPCCG's 27-point stencil"));
  EXPECT_TRUE(contains(problem_error([](C&) {}, {"matrix"}), "run --matrix: empty file name"));
}

TEST(DotChoice, KindsAndTheirPolicies) {
  EXPECT_EQ(ebla::make_dot_spec(DotChoice{}, ProblemUse::cg).policy.kind, ebla::DotKind::exact);
  DotChoice q;
  q.qdot_tol = "1e-6";
  const ebla::DotSpec qs = ebla::make_dot_spec(given(q, {"qdot-tol"}), ProblemUse::cg);
  EXPECT_EQ(qs.policy.kind, ebla::DotKind::qdot);
  EXPECT_EQ(qs.policy.qdot.tolerance, 1e-6);
  EXPECT_EQ(qs.policy.qdot.plan_margin, ebla::QdotOptions::automatic_margin);  // a single run: the solver's
  EXPECT_EQ(qs.at(1e-3).qdot.plan_margin, 0);                                // a sweep's run: none
  DotChoice a;
  a.qdot_tol = "auto";
  EXPECT_EQ(ebla::make_dot_spec(given(a, {"qdot-tol"}), ProblemUse::power).policy.kind, ebla::DotKind::automatic);
  DotChoice f;
  f.format = "bfloat16";
  const ebla::DotSpec fs = ebla::make_dot_spec(given(f, {"format"}), ProblemUse::cg);
  EXPECT_EQ(fs.policy.kind, ebla::DotKind::fixed);
  EXPECT_EQ(fs.rungs, fs.policy.level_names());
}

TEST(DotChoice, SweepOfDecades) {
  DotChoice d;
  d.sweep = "1e-8:1e-5";
  d.ladder = "binary64,binary32";
  const ebla::DotSpec s = ebla::make_dot_spec(given(d, {"sweep-qdot-tol", "ladder"}), ProblemUse::cg);
  EXPECT_EQ(s.sweep, ebla::decade_tolerances(-8, -5));
  EXPECT_EQ(s.policy.kind, ebla::DotKind::exact);  // the reference
  EXPECT_EQ(s.rungs, (std::vector<std::string>{"binary64", "binary32"}));
  EXPECT_EQ(ebla::parse_decade_range("1000:1e4", "x"), ebla::decade_tolerances(3, 4));
  EXPECT_TRUE(contains(error_of([] { ebla::parse_decade_range("2e-8:1", "x"); }), "x: '2e-8' is not a power of ten"));
  EXPECT_TRUE(contains(error_of([] { ebla::parse_decade_range("1e-3:1e-8", "x"); }), "the first tolerance exceeds the last"));
  EXPECT_TRUE(contains(error_of([] { ebla::parse_decade_range("1e-3", "x"); }), "is not of the form A:B"));
}

TEST(DotChoice, ContradictionsNameTheOption) {
  using D = DotChoice;
  EXPECT_TRUE(contains(dot_error([](D& d) { d.dot = "exact"; }, {"dot", "qdot-tol"}),
                       "run --qdot-tol: implies --dot qdot, which contradicts --dot exact"));
  EXPECT_TRUE(contains(dot_error([](D&) {}, {"ladder"}), "run --ladder: applies to qdot dot products"));
  EXPECT_TRUE(contains(dot_error([](D& d) { d.qdot_tol = "-1"; }, {"qdot-tol"}),
                       "run --qdot-tol: '-1' is not a positive finite tolerance"));
  EXPECT_TRUE(contains(dot_error([](D& d) { d.qdot_tol = "auto", d.qdot_policy = "paper"; }, {"qdot-tol", "qdot-policy"}),
                       "run --qdot-policy: paper: --qdot-tol auto relies"));
  EXPECT_TRUE(contains(dot_error([](D& d) { d.dot = "fixed"; }, {"dot"}), "run --dot fixed: needs --format"));
  EXPECT_TRUE(contains(dot_error([](D& d) { d.format = "binary64"; }, {"format"}),
                       "run --format: binary64 is as precise as double"));
  EXPECT_TRUE(contains(dot_error([](D& d) { d.margin = 65; }, {"qdot-tol", "qdot-margin"}),
                       "run --qdot-margin: 65 is not in 0..64"));
  EXPECT_TRUE(contains(dot_error([](D& d) { d.collectives = 3; }, {}), "run --qdot-collectives: 3 is not 1 or 2"));
}

TEST(DotChoice, ExperimentChoosesItsOwnDots) {
  const ebla::DotSpec s = ebla::experiment_dot_spec(DotChoice{});
  EXPECT_EQ(s.sweep, ebla::decade_tolerances(-12, -3));
  EXPECT_EQ(s.automatic(ProblemUse::cg).kind, ebla::DotKind::automatic);
  DotChoice d;
  d.qdot_tol = "1e-6";
  EXPECT_TRUE(contains(error_of([&] { ebla::experiment_dot_spec(given(d, {"qdot-tol"})); }),
                       "run --qdot-tol: --experiment chooses the dot products itself"));
}

TEST(DotChoice, CheckRejectsABadLadderAndAMarginOnRanks) {
  DotChoice d;
  d.qdot_tol = "1e-8";
  d.ladder = "binary32,binary64";  // least precise first
  const DotChoice names = given(DotChoice{}, {});
  const ebla::DotSpec s = ebla::make_dot_spec(given(d, {"qdot-tol", "ladder"}), ProblemUse::cg);
  EXPECT_TRUE(contains(error_of([&] { ebla::check_dot_spec(s, names, 1); }), "run --ladder"));
  DotChoice m;
  m.qdot_tol = "1e-8";
  m.margin = 4;
  const ebla::DotSpec ms = ebla::make_dot_spec(given(m, {"qdot-tol", "qdot-margin"}), ProblemUse::cg);
  EXPECT_NO_THROW(ebla::check_dot_spec(ms, names, 1));
  EXPECT_TRUE(contains(error_of([&] { ebla::check_dot_spec(ms, names, 2); }), "run --qdot-margin: applies on one process"));
}

TEST(AutoStudy, SetsOfCgAndPower) {
  ebla::CgOptions base;
  base.max_iterations = 77;
  const auto cg = ebla::cg_auto_set(matrices, base);
  ASSERT_EQ(cg.size(), 5u);
  EXPECT_EQ(cg[0].name, "HB/1138_bus");
  EXPECT_EQ(cg[0].spec.matrix, matrices + "/1138_bus.mtx");
  EXPECT_TRUE(cg[0].solver.jacobi);
  EXPECT_FALSE(cg[3].solver.jacobi);
  for (const auto& c : cg) {
    EXPECT_EQ(c.solver.tolerance, 1e-8);
    EXPECT_EQ(c.solver.norm, ebla::Norm::relative);
    EXPECT_EQ(c.solver.max_iterations, 77);
    EXPECT_NO_THROW(ebla::check_problem_spec(c.spec, ProblemUse::cg)) << c.name;
  }
  const auto power = ebla::power_auto_set(matrices, ebla::PowerOptions{});
  ASSERT_EQ(power.size(), 4u);
  EXPECT_EQ(power[1].spec.seed, 3u);
  EXPECT_EQ(power[1].solver.max_iterations, 1000);
  EXPECT_EQ(power[3].spec.source, ebla::ProblemSource::matrix);
  ebla::AutoSetNames names;
  names.matrix_dir = "run --matrix-dir";
  EXPECT_TRUE(contains(error_of([&] { ebla::power_auto_set("/nonexistent", ebla::PowerOptions{}, names); }),
                       "run --matrix-dir: cannot open '/nonexistent/1138_bus.mtx'"));
}

TEST(AutoStudy, SequenceRunsExactEachToleranceThenAuto) {
  ebla::DotSpec dots = ebla::experiment_dot_spec(DotChoice{});
  dots.sweep = ebla::decade_tolerances(-6, -5);
  ebla::AutoReport r("p", "d", "s", "exact CG", "r^T r", "p^T q");
  std::vector<std::string> labels, groups;
  const ebla::AutoRun run = [&](const std::string& label, const ebla::DotPolicy& policy, double tolerance,
                                const std::string& group) {
    labels.push_back(label);
    groups.push_back(group);
    if (tolerance > 0) {
      EXPECT_EQ(policy.qdot.tolerance, tolerance);
    }
    r.add(label, ebla::SolverStatus::converged, true, 10, tolerance, ebla::DotMix{}, ebla::DotMix{});
    return std::vector<ebla::SolverEvent>(label == "auto" ? 2 : 0);
  };
  ebla::run_auto_sequence(r, dots, ProblemUse::cg, run, nullptr);
  EXPECT_EQ(labels, (std::vector<std::string>{"exact", "1e-06", "1e-05", "auto"}));
  EXPECT_EQ(groups.front(), "exact");
  EXPECT_EQ(groups.back(), "auto");
  EXPECT_EQ(r.events.size(), 2u);
  EXPECT_TRUE(r.verdict.iterations_met);
}

}  // namespace
